// PYTHON_PATH_PREPEND and LIBRARY_PATH_PREPEND: the directories every pytest process of a suite
// searches first, for a module or a shared library the project's own build made.
#pragma once

#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

// `paths` joined with ':' before `current` (when it is not empty).
std::string prepended(const std::vector<std::string>& paths, const char* current);

// Puts the suite's search paths in front of PYTHONPATH and LD_LIBRARY_PATH in this process's
// own environment, once its suite is loaded and before it starts anything: every process it
// starts inherits them (collections, runs, probes, the manifest, a replay), and pytest's
// command line puts the plugin's directory before them, so nothing displaces it.
void export_search_paths(const SuiteConfig& suite);

}  // namespace evgate
