#include "pytest_config.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace evgate {
namespace {

bool contains_section(const fs::path& file, const std::string& section) {
    std::ifstream in(file);
    std::string line;
    while (std::getline(in, line)) {
        const auto start = line.find_first_not_of(" \t");
        if (start != std::string::npos && line.compare(start, section.size(), section) == 0) return true;
    }
    return false;
}

bool skipped_directory(const fs::path& dir) {
    const auto name = dir.filename().string();
    if (name.empty() || name[0] == '.' || name == "__pycache__" || name == "node_modules") return true;
    std::error_code ec;
    return fs::exists(dir / "pyvenv.cfg", ec) || fs::exists(dir / "CMakeCache.txt", ec);
}

}  // namespace

std::optional<fs::path> config_in(const fs::path& dir) {
    struct Candidate {
        const char* name;
        const char* section;  // nullptr: the file counts whatever it holds
    };
    static const Candidate candidates[] = {
        {"pytest.ini", nullptr},          {".pytest.ini", nullptr},
        {"pytest.toml", nullptr},         {".pytest.toml", nullptr},
        {"pyproject.toml", "[tool.pytest.ini_options]"},
        {"tox.ini", "[pytest]"},          {"setup.cfg", "[tool:pytest]"},
    };
    std::error_code ec;
    for (const auto& c : candidates) {
        const auto file = dir / c.name;
        if (!fs::is_regular_file(file, ec)) continue;
        if (c.section == nullptr || contains_section(file, c.section)) return file;
    }
    return std::nullopt;
}

std::optional<fs::path> expected_config(const fs::path& root) {
    for (fs::path dir = fs::weakly_canonical(root);; dir = dir.parent_path()) {
        if (auto file = config_in(dir)) return file;
        if (dir == dir.root_path() || dir.empty()) return std::nullopt;
    }
}

std::vector<std::string> stray_configs(const fs::path& root) {
    std::vector<std::string> found;
    std::error_code ec;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
        if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
        if (skipped_directory(it->path())) {
            it.disable_recursion_pending();
            continue;
        }
        if (auto file = config_in(it->path())) found.push_back(fs::relative(*file, root).generic_string());
    }
    std::sort(found.begin(), found.end());
    return found;
}

std::vector<std::string> thinning_options(const std::vector<std::string>& addopts) {
    static const char* const thinning[] = {"-k", "-m", "--deselect", "--ignore-glob", "--ignore", "-p"};
    std::vector<std::string> found;
    for (std::size_t i = 0; i < addopts.size(); ++i) {
        const auto& word = addopts[i];
        for (const char* option : thinning) {
            const std::string o = option;
            const bool joined = word.size() > o.size() && word.compare(0, o.size(), o) == 0;
            if (word != o && !joined) continue;
            std::string value = joined ? word.substr(o.size()) : (i + 1 < addopts.size() ? addopts[i + 1] : "");
            if (!value.empty() && value[0] == '=') value.erase(0, 1);
            if (o == "-p" && value.rfind("no:", 0) != 0) break;  // loading a plugin does not thin
            found.push_back(o + " " + value);
            break;
        }
    }
    return found;
}

}  // namespace evgate
