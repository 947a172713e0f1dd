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

// The config at ROOT or the nearest above it: the one the project means.
std::optional<std::filesystem::path> expected_config(const std::filesystem::path& root);

// Config files below ROOT (ROOT itself excluded), relative to ROOT, sorted. Hidden
// directories, __pycache__, virtual environments and CMake build trees are not searched.
std::vector<std::string> stray_configs(const std::filesystem::path& root);

// The addopts that thin a run: -k, -m, --deselect, --ignore, --ignore-glob, -p no:...
std::vector<std::string> thinning_options(const std::vector<std::string>& addopts);

}  // namespace evgate
