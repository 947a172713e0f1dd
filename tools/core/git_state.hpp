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

// git with `args` in ROOT, without optional locks, its output in `scratch` meanwhile; the
// output, or nullopt when git failed (ROOT not in a work tree, git not installed).
std::optional<std::string> run_git(const std::filesystem::path& root, const std::filesystem::path& scratch,
                                   const std::vector<std::string>& args);

// nullopt when ROOT is not in a git work tree (or git is not installed).
std::optional<GitState> read_git_state(const std::filesystem::path& root, const std::filesystem::path& scratch);

}  // namespace evgate
