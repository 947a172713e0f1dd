// The environment manifest: what the interpreter that runs the tests sees (names of
// environment variables, never their values, but for a short allowlist), plus the host.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

// Takes the manifest with the suite's interpreter and environment, plus `environment`
// (VAR=value) and `cpus` on top for the perturbed run, and writes it to `out`.
void write_env_manifest(const SuiteConfig& suite, const std::filesystem::path& out,
                        const std::vector<std::string>& environment = {}, const std::vector<int>& cpus = {});

}  // namespace evgate
