// The git state of ROOT for the receipt: HEAD, branch, the dirty list and a digest of what the
// uncommitted files below ROOT hold, read without taking git's optional locks (so nothing
// under .git is rewritten). Two receipts with the same HEAD, dirty list and digest were taken
// over the same sources: what a merge job checks of every shard. Below ROOT only: in a
// repository of several suites, another suite's runs change its own fixture files for a
// moment, and a README edit is no new evidence.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

struct GitState {
    std::string head;
    std::string branch;  // empty on a detached HEAD
    std::string top;     // the top of the work tree
    // `git status --porcelain` lines ("XY path", the path from the top of the work tree) below
    // ROOT, untracked files included (a wholly untracked directory as "?? dir/").
    std::vector<std::string> dirty;
    // "sha256:<hex>" over the path, mode and content (or absence) of every dirty file and every
    // untracked file that is not ignored, directories walked. Build trees (a CMakeCache.txt),
    // hidden directories, __pycache__ and virtual environments are left out: they change with
    // every build and run, not with the sources.
    std::string digest;
};

// git with `args` in ROOT, without optional locks, its output in `scratch` meanwhile; the
// output, or nullopt when git failed (ROOT not in a work tree, git not installed).
std::optional<std::string> run_git(const std::filesystem::path& root, const std::filesystem::path& scratch,
                                   const std::vector<std::string>& args);

// nullopt when ROOT is not in a git work tree (or git is not installed).
std::optional<GitState> read_git_state(const std::filesystem::path& root, const std::filesystem::path& scratch);

// The paths of `dirty` lines ("XY path" -> "path").
std::vector<std::string> dirty_paths(const std::vector<std::string>& dirty);

// The digest of `files` (paths relative to `top`), as read_git_state computes it.
std::string worktree_digest(const std::filesystem::path& top, const std::vector<std::string>& files);

}  // namespace evgate
