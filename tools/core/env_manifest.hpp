// The environment manifest: what the interpreter that runs the tests sees (names of
// environment variables, never their values, but for a short allowlist), plus the host.
#pragma once

#include "suite_config.hpp"

namespace evgate {

void write_env_manifest(const SuiteConfig& suite);

}  // namespace evgate
