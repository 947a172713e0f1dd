// Which pytest configuration file a directory tree holds, as pytest 7+ would find it: the
// file the project means (at or above ROOT) and stray ones below ROOT that would re-root
// pytest if it were started there.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace evgate {

// The file in `dir` that pytest would take as its config (pytest.ini, .pytest.ini,
// pytest.toml, pyproject.toml with [tool.pytest.ini_options], tox.ini with [pytest],
// setup.cfg with [tool:pytest]), in pytest's order of preference.
std::optional<std::filesystem::path> config_in(const std::filesystem::path& dir);

// The config at ROOT or the nearest above it: the one the project means. `pyproject_fallback`:
// pytest 8.1 and later take the nearest pyproject.toml as the config file even without a
// [tool.pytest.ini_options] table when no other candidate is found up to /.
std::optional<std::filesystem::path> expected_config(const std::filesystem::path& root, bool pyproject_fallback = false);

// Whether a pytest version ("9.2.0") takes a pyproject.toml without a pytest table as its config
// file when nothing else is found (8.1 and later); false for a version it cannot read.
bool takes_bare_pyproject(const std::string& pytest_version);

// Config files below ROOT (ROOT itself excluded), relative to ROOT, sorted. Hidden
// directories, __pycache__, virtual environments and CMake build trees are not searched.
std::vector<std::string> stray_configs(const std::filesystem::path& root);

// Stray config files split by whether they could re-root this suite's collection: pytest run on
// a test of the suite (or started in its directory) takes the first config file at or above the
// test's directory, so only a stray file in such a directory could. The others (a vendored
// library's setup.cfg, a git submodule's pytest.ini, a docs folder's tox.ini) concern other
// suites.
struct StrayConfigs {
    std::vector<std::string> rerooting;      // in a directory at or above a collected test
    std::vector<std::string> ignored;        // the rest
    std::vector<std::string> in_submodules;  // of `ignored`, those below a nested git work tree (a submodule)
};
// `strays` as stray_configs() gives them; `test_files`: the collected tests' files (and the files
// of collection errors), relative to ROOT.
StrayConfigs sort_stray_configs(const std::filesystem::path& root, const std::vector<std::string>& strays,
                                const std::vector<std::string>& test_files);

// One option in a pytest argument list, read the way pytest's own parser (argparse, no
// abbreviations) reads it: `-kx`, `-k x`, `-k=x`, `-qk x`, `--deselect=x`, `--deselect x`.
struct PytestOption {
    std::string name;   // as written: "-o", "--override-ini"
    std::string value;  // "" for a flag
    std::string text() const { return value.empty() ? name : name + " " + value; }
};

// The options in `args` that pytest knows (plugin options it does not know are skipped,
// their values read as positionals). `overrides_apply` false: `-o`/`--override-ini` are
// dropped, as pytest drops them from the ini file's addopts (read after the overrides).
std::vector<PytestOption> pytest_options(const std::vector<std::string>& args, bool overrides_apply = true);

// What an option does to the evidence of a run.
enum class OptionEffect {
    none,
    thins,   // fewer tests collected or run, or failures turned into passes: -k, -m, --deselect,
             // --ignore, --ignore-glob, -p no:... (but the plugins evgate blocks anyway),
             // --noconftest, --confcutdir, --pyargs, -o python_files/python_classes/
             // python_functions/testpaths/norecursedirs/addopts/filterwarnings=...,
             // -o xfail_strict=false, --reruns (pytest-rerunfailures)
    hollow,  // tests reported without being called: --setup-only, --setup-plan, --collect-only
};
OptionEffect option_effect(const PytestOption& option);

// The options in `args` with that effect, as text ("-m not slow", "-o python_functions=test_ok").
std::vector<std::string> thinning_options(const std::vector<std::string>& args, bool overrides_apply = true);
std::vector<std::string> hollow_options(const std::vector<std::string>& args, bool overrides_apply = true);

}  // namespace evgate
