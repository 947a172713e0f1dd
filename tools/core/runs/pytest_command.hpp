// How every pytest process of a suite is started: interpreter, plugin, forced rootdir,
// cwd = ROOT, and an environment that keeps caches and bytecode out of the source tree
// (bytecode is cached in evidence/<name>/pycache).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "io/process.hpp"
#include "inputs/suite_config.hpp"

namespace evgate {

// `plugin_args` are --evidence-gate-* options; `log` receives pytest's output. Each process
// gets a HOME and TMPDIR of its own below the evidence directory, named after the log, and the
// XDG base directories below that HOME (sandbox_environment): runs of one suite that go side by
// side never meet in the user's home or temp dir, and nothing evgate hands a test points into
// the user's home (a suite can pin each with ENVIRONMENT). PYTHONPATH is the plugin's directory,
// then a PYTHONPATH the suite's ENVIRONMENT gives, then the inherited one.
ProcessSpec pytest_process(const SuiteConfig& suite, const std::vector<std::string>& plugin_args,
                           const std::filesystem::path& log);

// What the sandbox of one pytest process does to its environment, for the sandbox directory
// `sandbox` (sandbox_of): the variables it points into it ("NAME=path"), their names, the names
// the suite pins itself with ENVIRONMENT, and the inherited user-directory variables it drops so
// that their tools fall back to the sandboxed home (only those set now are listed).
struct SandboxEnvironment {
    std::vector<std::string> set;
    std::vector<std::string> fresh;
    std::vector<std::string> pinned;
    std::vector<std::string> dropped;
};
SandboxEnvironment sandbox_environment(const SuiteConfig& suite, const std::filesystem::path& sandbox);
// That sandbox: evidence/sandbox/<log stem>/{home,tmp}, created if missing.
std::filesystem::path sandbox_of(const SuiteConfig& suite, const std::filesystem::path& log);
// Empties it: every run starts with nothing in its HOME and TMPDIR.
void empty_sandbox(const SuiteConfig& suite, const std::filesystem::path& log);

// `word` as one shell word, quoted only where it must be (for `reproduce` commands).
std::string shell_quote(const std::string& word);

// How pytest ended, in words: "exit 3 (pytest: internal error)".
std::string describe_pytest(const ProcessResult& result);

}  // namespace evgate
