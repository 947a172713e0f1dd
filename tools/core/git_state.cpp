#include "git_state.hpp"

#include <sstream>

#include "json_io.hpp"
#include "process.hpp"

namespace fs = std::filesystem;

namespace evgate {

std::optional<std::string> run_git(const fs::path& root, const fs::path& scratch, const std::vector<std::string>& args) {
    ProcessSpec spec;
    spec.argv = {"git", "--no-optional-locks", "-C", root.string()};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.cwd = root;
    spec.environment = environment_with({"LC_ALL=C"});
    spec.output = scratch;
    spec.timeout = std::chrono::seconds(60);
    fs::remove(scratch);
    const auto result = run_process(spec);
    std::string text = fs::exists(scratch) ? read_file(scratch) : "";
    fs::remove(scratch);
    if (!result.exited_with(0)) return std::nullopt;
    return text;
}

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

std::optional<GitState> read_git_state(const fs::path& root, const fs::path& scratch) {
    auto inside = run_git(root, scratch, {"rev-parse", "--is-inside-work-tree"});
    if (!inside || first_line(*inside) != "true") return std::nullopt;
    GitState state;
    state.head = first_line(run_git(root, scratch, {"rev-parse", "HEAD"}).value_or(""));
    state.branch = first_line(run_git(root, scratch, {"branch", "--show-current"}).value_or(""));
    std::istringstream status(run_git(root, scratch, {"status", "--porcelain", "--", "."}).value_or(""));
    for (std::string line; std::getline(status, line);)
        if (!line.empty()) state.dirty.push_back(line);
    return state;
}

}  // namespace evgate
