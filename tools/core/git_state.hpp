// The git state of ROOT for the receipt: HEAD, branch and the dirty list, read without
// taking git's optional locks (so nothing under .git is rewritten).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

struct GitState {
    std::string head;
    std::string branch;  // empty on a detached HEAD
    std::vector<std::string> dirty;  // `git status --porcelain` lines
};

// nullopt when ROOT is not in a git work tree (or git is not installed).
std::optional<GitState> read_git_state(const std::filesystem::path& root, const std::filesystem::path& scratch);

}  // namespace evgate
