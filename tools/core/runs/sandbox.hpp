// Every pytest process's own HOME and TMPDIR, and the XDG base directories below that HOME.
//
// They live outside the build tree, at a short path that has the same length for every kind of
// process (collection, seed run, rerun, redo apart, alone run, probe, replay), so that what a test
// binds below TMPDIR — multiprocessing's `pymp-XXXXXXXX/listener-XXXXXXXX`, a gRPC or database
// socket — fits in a Unix socket's 108 bytes wherever the build tree is, and no failure follows
// the kind of run:
//
//     <sandbox root>/<8 hex digits of the evidence dir>/<8 hex digits of the process's log>/{home,tmp}
//
// The sandbox root is EVIDENCE_GATE_SANDBOX_DIR when set, else <TMPDIR>/evgate-<uid> when TMPDIR
// is short (kShortTmpdir bytes at most), else /tmp/evgate-<uid>: mode 0700, the user's own,
// checked as the state directory is. A run's sandbox is emptied when it starts and removed when
// it ends; the receipt step removes what an interrupted invocation left of the suite's, and the
// release step the suite's whole directory.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"

namespace evgate {

// The longest TMPDIR the sandbox root goes below; a longer one is passed over for /tmp.
constexpr std::size_t kShortTmpdir = 16;

// The sandbox root (created and checked).
std::filesystem::path sandbox_root();
// The suite's directory below it: every sandbox of the suite's processes.
std::filesystem::path suite_sandboxes(const SuiteConfig& suite);
// The sandbox of the pytest process that writes `log` (created, with home/ and tmp/).
std::filesystem::path sandbox_of(const SuiteConfig& suite, const std::filesystem::path& log);
// Empties it: every run starts with nothing in its HOME and TMPDIR.
void empty_sandbox(const SuiteConfig& suite, const std::filesystem::path& log);
// Removes it, and what a test left in it; never throws (a run's end must not fail over it).
void remove_sandbox(const SuiteConfig& suite, const std::filesystem::path& log) noexcept;
// Removes every sandbox of the suite; never throws.
void remove_suite_sandboxes(const SuiteConfig& suite) noexcept;

// The sandbox of the receipt's collection, whose session serves the forks: a path a module took at
// import (tempfile.gettempdir(), Path.home()) points into it in every fork.
std::filesystem::path collection_sandbox(const SuiteConfig& suite);
// What a sandbox holds, as a digest of every entry's path, kind, size and modification time (the
// directories' own among them: a file made and removed again shows): equal digests, nothing written.
std::string sandbox_fingerprint(const std::filesystem::path& sandbox);

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

}  // namespace evgate
