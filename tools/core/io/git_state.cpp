#include "io/git_state.hpp"

#include <algorithm>

#include "io/error.hpp"
#include "io/file_identity.hpp"
#include "io/json_io.hpp"
#include "io/process.hpp"

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

// What changes with builds and runs rather than with the sources.
bool generated_directory(const fs::path& dir) {
    const auto name = dir.filename().string();
    if (name.empty() || name[0] == '.' || name == "__pycache__") return true;
    std::error_code ec;
    return fs::exists(dir / "CMakeCache.txt", ec) || fs::exists(dir / "pyvenv.cfg", ec);
}

// The files below the untracked directory `dir` (relative to `top`), generated ones left out.
void untracked_files(const fs::path& top, const std::string& dir, std::vector<std::string>& out) {
    const auto start = top / dir;
    if (generated_directory(start)) return;
    std::error_code ec;
    fs::recursive_directory_iterator it(start, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        const bool link = it->is_symlink(ec);
        if (!link && it->is_directory(ec)) {
            if (generated_directory(it->path())) it.disable_recursion_pending();
            continue;
        }
        out.push_back(fs::relative(it->path(), top).generic_string());
    }
}

}  // namespace

std::vector<std::string> dirty_paths(const std::vector<std::string>& dirty) {
    std::vector<std::string> paths;
    for (const auto& line : dirty)
        if (line.size() > 3) paths.push_back(line.substr(3));
    std::sort(paths.begin(), paths.end());
    return paths;
}

std::string worktree_digest(const fs::path& top, const std::vector<std::string>& files) {
    std::vector<std::string> sorted = files;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    std::string listing;
    for (const auto& file : sorted) {
        listing += file + '\0';
        try {
            const auto state = file_state(top / file);
            listing += state ? state->identity + '\0' + std::to_string(state->mode) : std::string("absent");
        } catch (const Error& e) {
            listing += std::string("unreadable: ") + e.what();
        }
        listing += '\n';
    }
    return "sha256:" + sha256_hex(listing);
}

std::optional<GitState> read_git_state(const fs::path& root, const fs::path& scratch) {
    auto inside = run_git(root, scratch, {"rev-parse", "--is-inside-work-tree"});
    if (!inside || first_line(*inside) != "true") return std::nullopt;
    GitState state;
    state.head = first_line(run_git(root, scratch, {"rev-parse", "HEAD"}).value_or(""));
    state.branch = first_line(run_git(root, scratch, {"branch", "--show-current"}).value_or(""));
    const fs::path top = first_line(run_git(root, scratch, {"rev-parse", "--show-toplevel"}).value_or(root.string()));
    state.top = top.string();
    // -z: paths as they are, unquoted; --no-renames: one path an entry. Porcelain paths are
    // relative to the top of the work tree, wherever git runs; "-- ." keeps to ROOT.
    const auto status =
        run_git(root, scratch, {"status", "--porcelain=v1", "-z", "--no-renames", "--untracked-files=normal", "--", "."});
    std::vector<std::string> files;
    const std::string text = status.value_or("");
    for (std::size_t start = 0; start < text.size();) {
        const auto end = std::min(text.find('\0', start), text.size());
        const auto entry = text.substr(start, end - start);
        start = end + 1;
        if (entry.size() < 4) continue;
        state.dirty.push_back(entry);
        const auto path = entry.substr(3);
        if (entry.compare(0, 2, "??") == 0 && path.back() == '/') untracked_files(top, path.substr(0, path.size() - 1), files);
        else files.push_back(path);
    }
    state.digest = worktree_digest(top, files);
    return state;
}

}  // namespace evgate
