// The bytecode cache of a suite's pytest processes: evidence/<name>/pycache, every process's
// PYTHONPYCACHEPREFIX (no __pycache__ beside the sources, and no recompiling the suite per run).
// CPython does not check how much of a .pyc reached the file, so a process under a file-size
// limit (ulimit -f) or out of disk can leave one cut short that fails every later import of its
// module. The plugin checks what was written since the cache's stamp as each process starts
// (templates/pytest/evidence_gate_bytecode.py); before the first pytest process of a step, evgate
// has that checker run over the cache on its own (python -I -B: it reads no cached bytecode),
// since pytest's own modules are imported before any plugin.
#pragma once

#include <filesystem>

#include "inputs/suite_config.hpp"

namespace evgate {

// The cache, with its stamp (dated 1970 when new: all of it is checked once).
std::filesystem::path bytecode_cache(const SuiteConfig& suite);

// When the cache holds a .pyc newer than its stamp, runs the plugin's checker over it, which
// removes those that do not load. Cheap when nothing is new (a walk of the cache, no process).
void check_bytecode_cache(const SuiteConfig& suite);

}  // namespace evgate
