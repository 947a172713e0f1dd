// The workspace receipt: what pytest really collected, from where, with which config and
// conftest files — taken before any run, and what every run is checked against afterwards.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <rapidjson/document.h>

#include "fixtures/lease_file.hpp"
#include "inputs/suite_config.hpp"
#include "io/process.hpp"
#include "runs/distinct_orders.hpp"
#include "runs/evidence_reuse.hpp"
#include "runs/receipt_sources.hpp"
#include "runs/shuffle.hpp"

namespace evgate {

struct EnvSensitive {
    std::string until;
    std::string owner;
    std::string reason;
};

struct ReceiptTest {
    std::string id;
    bool serial = false;
    std::vector<std::string> writes;
    std::optional<EnvSensitive> env_sensitive;
};

// A test the receipt's collection found and a hook took out of the items again.
struct LostTest {
    std::string id;
    std::string by;  // who called pytest_deselected ("conftest.py:7 (pytest_collection_modifyitems)",
                     // "pytest's -k/-m"); "" when it was removed without pytest_deselected
};

struct Receipt {
    std::string id;  // binds the runs of one ctest invocation to this receipt
    std::string rootdir;
    std::optional<std::string> configfile;
    std::vector<std::string> conftests;
    std::vector<ReceiptTest> tests;
    std::vector<std::string> errors;  // collection errors, "nodeid: message"
    int exitstatus = 0;
    std::optional<std::string> expected_configfile;        // the one at or above ROOT: the project's
    std::vector<std::string> stray_configs;                // below ROOT, relative to it, that could re-root the collection
    std::vector<std::string> stray_configs_ignored;        // the other stray config files below ROOT (pytest_config.hpp)
    std::vector<std::string> stray_configs_in_submodules;  // of those, the ones in git submodules
    std::vector<std::string> thinning;                     // options that thin the run, "-k x (PYTEST_ADDOPTS)"
    std::vector<std::string> hollow;                       // options under which pytest never calls the tests
    std::vector<std::string> set_aside;                    // what every run sets aside of the suite's own pytest
                                                           // setup, a phrase per plugin (evidence_gate_aside.py)
    std::vector<LostTest> deselected;                      // collected, then deselected or removed by a hook
    std::vector<std::string> pytest_plugins;               // what PYTEST_PLUGINS in the environment loads
    std::string git_head;                                  // "" outside a git work tree
    std::vector<std::string> git_dirty;                    // `git status --porcelain` lines of the work tree
    std::string git_digest;                                // of the dirty and untracked files (git_state.hpp)
    std::string sources_digest;                            // of every source file (receipt_sources.hpp); "" when not taken
    std::vector<std::string> sources_outside;              // the imported files among them outside the tree listing
    std::vector<BuiltFile> built;                          // the binaries under test: DEPENDS files, modules imported from a build tree
    std::string sandbox_dir;                               // where each run's own HOME and TMPDIR are made
    std::vector<std::string> sandboxed;                    // which of HOME, TMPDIR each run gets fresh (the rest pinned)
    DistinctOrders orders;                                 // which seed runs (and alone runs) would repeat an earlier order
    std::string key;                                       // of what the runs depend on (evidence_reuse.hpp)
    std::vector<KeptReceipt> kept;                         // earlier invocations whose runs this one keeps, oldest first
    std::string hash_seed;                                 // PYTHONHASHSEED of every run
    std::string shard;                                     // "k/n" for a shard's receipt, else ""
    std::string suite;

    std::vector<CollectedTest> collected() const;
    // The receipts whose runs are this invocation's evidence: the kept ones, then its own.
    std::vector<std::string> run_receipts() const;
    // Whether a test declares the fixture groups it writes (FixtureStore::access_for).
    bool declares_writes() const;
};

// What a caller adds to the receipt's collection (fork_server.hpp: the collected session left
// serving forks): `prepare` adjusts its pytest process before it starts, `annotate` adds fields
// to the receipt before its digest is taken.
struct ReceiptHooks {
    std::function<void(ProcessSpec& spec)> prepare;
    std::function<void(rapidjson::Document& receipt)> annotate;
};

// Collects with the suite's own command line and environment; writes receipt.json. With
// `pristine` (the fixture store's files at the snapshot before this collection), also the
// digest of the sources (receipt_sources.hpp) and their listing, sources.json.
Receipt take_receipt(const SuiteConfig& suite, const std::vector<FixtureFile>* pristine = nullptr,
                     const ReceiptHooks& hooks = {});
Receipt load_receipt(const std::filesystem::path& file);

// The node ids pytest collects now, with the suite's command line and environment.
std::vector<std::string> collected_ids(const SuiteConfig& suite);
// The same collection whole: the ids and the collection errors (discovery keeps no collection
// that had errors: the next ctest collects again, once the project is built, say).
Receipt collection_now(const SuiteConfig& suite);

// Two config paths name the same file (or are both absent).
bool same_config(const std::optional<std::string>& a, const std::optional<std::string>& b);

// Node ids pytest collected more than once (custom collectors that name two items alike), with
// how often, in collection order: a run could not tell their results apart.
std::vector<std::pair<std::string, int>> duplicate_ids(const Receipt& receipt);
// "'a' (2 times), 'b' (3 times)".
std::string describe_duplicates(const std::vector<std::pair<std::string, int>>& duplicates);

// Why the receipt cannot be trusted at all (empty when it can); the receipt step fails then.
std::vector<std::string> receipt_problems(const SuiteConfig& suite, const Receipt& receipt);

}  // namespace evgate
