#include "inputs/pytest_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>

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
        {"pytest.ini", nullptr},
        {".pytest.ini", nullptr},
        {"pytest.toml", nullptr},
        {".pytest.toml", nullptr},
        {"pyproject.toml", "[tool.pytest.ini_options]"},
        {"tox.ini", "[pytest]"},
        {"setup.cfg", "[tool:pytest]"},
    };
    std::error_code ec;
    for (const auto& c : candidates) {
        const auto file = dir / c.name;
        if (!fs::is_regular_file(file, ec)) continue;
        if (c.section == nullptr || contains_section(file, c.section)) return file;
    }
    return std::nullopt;
}

std::optional<fs::path> expected_config(const fs::path& root, bool pyproject_fallback) {
    std::optional<fs::path> nearest_pyproject;
    std::error_code ec;
    for (fs::path dir = fs::weakly_canonical(root);; dir = dir.parent_path()) {
        if (auto file = config_in(dir)) return file;
        if (pyproject_fallback && !nearest_pyproject && fs::is_regular_file(dir / "pyproject.toml", ec))
            nearest_pyproject = dir / "pyproject.toml";
        if (dir == dir.root_path() || dir.empty()) return nearest_pyproject;
    }
}

bool takes_bare_pyproject(const std::string& pytest_version) {
    int major = 0, minor = 0;
    if (std::sscanf(pytest_version.c_str(), "%d.%d", &major, &minor) != 2) return false;
    return major > 8 || (major == 8 && minor >= 1);
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

StrayConfigs sort_stray_configs(const fs::path& root, const std::vector<std::string>& strays,
                                const std::vector<std::string>& test_files) {
    std::set<std::string> test_dirs;  // every directory at or above a test's file, below ROOT
    for (const auto& file : test_files)
        for (auto dir = fs::path(file).lexically_normal().parent_path(); !dir.empty(); dir = dir.parent_path())
            if (!test_dirs.insert(dir.generic_string()).second) break;  // its parents are in already
    StrayConfigs sorted;
    std::error_code ec;
    for (const auto& stray : strays) {
        const auto dir = fs::path(stray).parent_path();
        if (test_dirs.count(dir.generic_string())) {
            sorted.rerooting.push_back(stray);
            continue;
        }
        sorted.ignored.push_back(stray);
        for (auto up = dir; !up.empty(); up = up.parent_path()) {
            if (fs::exists(root / up / ".git", ec)) {
                sorted.in_submodules.push_back(stray);
                break;
            }
        }
    }
    return sorted;
}

namespace {

// pytest's short options that take a value, and those that do not (`-qk x` is `-q -k x`).
constexpr std::string_view kShortWithValue = "kmrWcpo";
constexpr std::string_view kShortFlags = "xsvqlVh";

// pytest's long options (and those of plugins that change what runs) that take a value; any
// other long option is read as a flag, its value (if it has one) as a positional.
bool long_takes_value(const std::string& name) {
    static const std::set<std::string> with_value = {
        "--override-ini", "--deselect", "--ignore", "--ignore-glob", "--confcutdir", "--pythonwarnings",
        "--rootdir", "--config-file", "--inifile", "--maxfail", "--tb", "--capture", "--basetemp", "--import-mode", "--junitxml",
        "--junit-xml", "--junitprefix", "--junit-prefix", "--durations", "--durations-min", "--verbosity",
        "--show-capture", "--color", "--code-highlight", "--pastebin", "--pdbcls", "--doctest-report",
        "--doctest-glob", "--lfnf", "--last-failed-no-failures", "--assert", "--log-level", "--log-format",
        "--log-date-format", "--log-cli-level", "--log-cli-format", "--log-cli-date-format", "--log-file",
        "--log-file-level", "--log-file-format", "--log-file-date-format", "--log-auto-indent",
        "--reruns", "--reruns-delay", "--only-rerun"};
    return with_value.count(name) != 0;
}

bool starts_with(const std::string& text, std::string_view prefix) { return text.compare(0, prefix.size(), prefix) == 0; }

// pytest's reading of a boolean ini value (_strtobool): false for n, no, f, false, off, 0.
bool false_word(std::string value) {
    for (auto& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return value == "n" || value == "no" || value == "f" || value == "false" || value == "off" || value == "0";
}

// The ini keys whose override changes which tests are collected, or lets a failure pass.
OptionEffect override_effect(const std::string& assignment) {
    static const std::set<std::string> collection = {"python_files", "python_classes", "python_functions",
                                                     "testpaths", "norecursedirs", "addopts",
                                                     "collect_imported_tests", "filterwarnings"};
    const auto eq = assignment.find('=');
    const auto key = assignment.substr(0, eq);
    if (collection.count(key)) return OptionEffect::thins;
    if (key == "xfail_strict" && eq != std::string::npos && false_word(assignment.substr(eq + 1))) return OptionEffect::thins;
    return OptionEffect::none;
}

std::vector<std::string> with_effect(const std::vector<std::string>& args, bool overrides_apply, OptionEffect effect) {
    std::vector<std::string> found;
    for (const auto& option : pytest_options(args, overrides_apply))
        if (option_effect(option) == effect) found.push_back(option.text());
    return found;
}

}  // namespace

std::vector<PytestOption> pytest_options(const std::vector<std::string>& args, bool overrides_apply) {
    std::vector<PytestOption> found;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const auto& word = args[i];
        if (word == "--") break;  // the rest are paths
        if (word.size() < 2 || word[0] != '-') continue;
        const auto next = [&] { return i + 1 < args.size() ? args[++i] : std::string(); };
        if (word[1] == '-') {
            const auto eq = word.find('=');
            auto name = word.substr(0, eq);
            if (eq != std::string::npos) found.push_back({std::move(name), word.substr(eq + 1)});
            else found.push_back({name, long_takes_value(name) ? next() : std::string()});
            continue;
        }
        for (std::size_t j = 1; j < word.size(); ++j) {  // -x, -kexpr, -qk expr
            const std::string name{'-', word[j]};
            if (kShortWithValue.find(word[j]) != std::string_view::npos) {
                auto value = word.substr(j + 1);
                if (j == 1 && starts_with(value, "=")) value.erase(0, 1);  // -k=expr
                found.push_back({name, value.empty() ? next() : value});
                break;
            }
            if (kShortFlags.find(word[j]) == std::string_view::npos) break;  // a plugin's option
            found.push_back({name, ""});
        }
    }
    if (!overrides_apply)
        found.erase(std::remove_if(found.begin(), found.end(),
                                   [](const PytestOption& o) { return o.name == "-o" || o.name == "--override-ini"; }),
                    found.end());
    return found;
}

OptionEffect option_effect(const PytestOption& option) {
    // Another config file or rootdir is another suite: its python_files, testpaths, addopts.
    static const std::set<std::string> thins = {"-k", "-m", "--deselect", "--ignore", "--ignore-glob",
                                                "--noconftest", "--confcutdir", "--pyargs",
                                                "-c", "--config-file", "--inifile", "--rootdir"};
    static const std::set<std::string> hollow = {"--setup-only", "--setuponly", "--setup-plan", "--setupplan",
                                                 "--collect-only", "--collectonly", "--co"};
    const auto& name = option.name;
    if (hollow.count(name)) return OptionEffect::hollow;
    if (thins.count(name)) return OptionEffect::thins;
    if (name == "-p") {
        // evgate itself blocks these in every run (stepwise goes with the cache): the same again thins nothing.
        static const std::set<std::string> blocked_anyway = {"no:cacheprovider", "no:stepwise", "no:randomly",
                                                             "no:random_order"};
        return starts_with(option.value, "no:") && !blocked_anyway.count(option.value) ? OptionEffect::thins
                                                                                       : OptionEffect::none;
    }
    if (name == "-o" || name == "--override-ini") return override_effect(option.value);
    return OptionEffect::none;
}

std::vector<std::string> thinning_options(const std::vector<std::string>& args, bool overrides_apply) {
    return with_effect(args, overrides_apply, OptionEffect::thins);
}

std::vector<std::string> hollow_options(const std::vector<std::string>& args, bool overrides_apply) {
    return with_effect(args, overrides_apply, OptionEffect::hollow);
}

}  // namespace evgate
