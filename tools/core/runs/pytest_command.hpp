// How every pytest process of a suite is started: interpreter, plugin, forced rootdir,
// cwd = ROOT, and an environment that keeps caches and bytecode out of the source tree
// (bytecode is cached in evidence/<name>/pycache).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"
#include "io/process.hpp"
#include "runs/launcher.hpp"

namespace evgate {

// `plugin_args` are --evidence-gate-* options; `log` receives pytest's output. Each process
// gets a HOME and TMPDIR of its own, named after the log, and the XDG base directories below
// that HOME (runs/sandbox.hpp): runs of one suite that go side by side never meet in the user's
// home or temp dir, and nothing evgate hands a test points into the user's home (a suite can
// pin each with ENVIRONMENT). PYTHONPATH is the plugin's directory,
// then a PYTHONPATH the suite's ENVIRONMENT gives, then the inherited one.
ProcessSpec pytest_process(const SuiteConfig& suite, const std::vector<std::string>& plugin_args,
                           const std::filesystem::path& log);

// `word` as one shell word, quoted only where it must be (for `reproduce` commands).
std::string shell_quote(const std::string& word);

// How pytest ended, in words: "exit 3 (pytest: internal error)".
std::string describe_pytest(const LaunchResult& result);

}  // namespace evgate
