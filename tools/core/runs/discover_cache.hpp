// Reusing the per-test CTest entries at ctest start. `evgate discover` runs a pytest
// collection (most of a second) only when something collection depends on changed since it
// wrote the entries: suite.json, the interpreter, this tool and the plugin, the environment
// variables that reach pytest (PYTEST_*, PYTHON*), and every Python file and pytest config file
// below ROOT (and config files above it), by lstat stamp. A SHA-256 fingerprint of them is all
// that is written: never a value. What it cannot see (data a parametrize reads, installed
// packages) the ledger step notices against the receipt, and the next ctest collects again.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

// `environment`: what pytest would start with (VAR=value); `tool`: this program.
std::string collection_fingerprint(const SuiteConfig& suite, const std::filesystem::path& entries,
                                   const std::filesystem::path& tool, const std::vector<std::string>& environment);

// `entries` is still the file discover wrote for `fingerprint`.
bool entries_current(const SuiteConfig& suite, const std::filesystem::path& entries, const std::string& fingerprint);
// Records that `entries` was just written for `fingerprint` and these collected ids.
void remember_entries(const SuiteConfig& suite, const std::filesystem::path& entries, const std::string& fingerprint,
                      const std::vector<std::string>& ids);
// The ledger step, with the ids the receipt collected: when they are not those the entries
// were written for, forgets the entries, so the next ctest collects again. True when it did.
bool forget_stale_entries(const SuiteConfig& suite, const std::vector<std::string>& collected);

}  // namespace evgate
