// The evidence directory's layout: every file and folder name under evidence/<name>/, spelled
// here once. The same names hold in every copy of an evidence directory: a shard or a runner
// bundle handed over by another machine (machines/shards, machines/runner_bundles) and an entry of
// the history archive (reports/history_archive). A path is the directory joined with a name:
// `suite.evidence_dir / evidence::kLedger`, `runs_dir / evidence::plan_name(id)`.
//
// Two names are also spelled by modules/EvidenceGate.cmake, which cannot include a header:
// kSuite and kCtestEntries. Change them in both places.
#pragma once

#include <string>

namespace evgate::evidence {

// --- The suite and its CTest entries -------------------------------------------------------------
inline constexpr char kSuite[] = "suite.json";                          // the suite as evidence_gate_add_suite() configured it
inline constexpr char kCtestEntries[] = "ctest-entries.cmake";          // one CTest entry per test (`evgate discover`)
inline constexpr char kDiscoverFingerprint[] = "discover.fingerprint";  // what `evgate discover` last looked at

// --- The invocation's inputs and what it recorded of them ----------------------------------------
inline constexpr char kCtestClaim[] = "ctest.claim";                     // the ctest invocation that holds the directory
inline constexpr char kReceipt[] = "receipt.json";                       // what pytest collected and used, with its digest
inline constexpr char kSources[] = "sources.json";                       // every source file the receipt was taken over, digested
inline constexpr char kManifest[] = "manifest.json";                     // the environment the runs saw
inline constexpr char kPerturbedManifest[] = "manifest.perturbed.json";  // the environment of the perturbed run
inline constexpr char kReuse[] = "reuse.json";                           // what the next ctest may keep of the runs (runs/evidence_reuse.hpp)
inline constexpr char kBaseline[] = "baseline.json";                     // `evgate baseline` writes here when the suite names no BASELINE

// --- Verdicts and reports ------------------------------------------------------------------------
inline constexpr char kLocalise[] = "localise.json";       // the partners the localise step found per order-dependent test
inline constexpr char kLedger[] = "ledger.jsonl";          // one row per test and per suite check: the gate's input and output
inline constexpr char kVerdictStore[] = "verdicts.store";  // each test's verdict, read by its own CTest entry
inline constexpr char kOldVerdicts[] = "verdicts";         // a file per test, as versions before the store wrote them: removed
inline constexpr char kReportHtml[] = "report.html";       // the ledger for people, in a browser
inline constexpr char kReportMarkdown[] = "report.md";     // the same for a CI job summary
inline constexpr char kJunit[] = "junit.xml";              // the ledger for CI test dashboards

// --- Folders -------------------------------------------------------------------------------------
inline constexpr char kRuns[] = "runs";              // every run of the invocation: its plan, records and order (below)
inline constexpr char kReplay[] = "replay";          // the same for `evgate replay`
inline constexpr char kLocaliseRuns[] = "localise";  // the same for the localise step's partner search
inline constexpr char kLogs[] = "logs";              // pytest's output: <run id>.log, receipt.log, discover.log, manifest.log
// Each pytest process's HOME and TMPDIR are outside the evidence directory (runs/sandbox.hpp).
inline constexpr char kHome[] = "home";                              // HOME inside a process's sandbox
inline constexpr char kTmp[] = "tmp";                                // TMPDIR beside it
inline constexpr char kPycache[] = "pycache";                        // PYTHONPYCACHEPREFIX: bytecode, never beside the sources
inline constexpr char kBytecodeStamp[] = ".evidence-gate-verified";  // in pycache/: when the plugin last checked it
inline constexpr char kFixtures[] = "fixtures";                      // the fixture store of this build tree (below)

// --- In a runs folder (runs/, replay/, localise/): a run's files, named after its id -------------
inline constexpr char kPlanSuffix[] = ".plan.json";     // <id>.plan.json: what the run is to run
inline constexpr char kRecordsSuffix[] = ".jsonl";      // <id>.jsonl: its records, written by evgate
inline constexpr char kOrderSuffix[] = ".order.jsonl";  // <id>.order.jsonl: the rest of its order, while it runs
inline std::string plan_name(const std::string& run_id) { return run_id + kPlanSuffix; }
inline std::string records_name(const std::string& run_id) { return run_id + kRecordsSuffix; }
inline std::string order_name(const std::string& run_id) { return run_id + kOrderSuffix; }
// logs/<id>.log: a run's or a step's pytest output
inline std::string log_name(const std::string& id) { return id + ".log"; }

// --- Scratch files, gone when their step ends ----------------------------------------------------
// <purpose>.collect.json: what a --collect-only run listed ("receipt", "discover")
inline std::string collection_name(const std::string& purpose) { return purpose + ".collect.json"; }
inline constexpr char kGitScratch[] = "git.out";            // git's output while the receipt reads the git state
inline constexpr char kFromPythonSuffix[] = ".python";      // <manifest>.python: the manifest as Python wrote it
inline constexpr char kForkServer[] = "fork-server.json";   // the server the receipt's pytest forked, or why none
inline constexpr char kForksDeclined[] = "forks.declined";  // why no run of the invocation forks any more (fork_session.hpp)

// --- In fixtures/ (fixtures/fixture_store.hpp) ---------------------------------------------------
namespace fixtures {
inline constexpr char kLeaseFile[] = "groups.json";           // the groups as pristine: what the plugin leases
inline constexpr char kTreeFile[] = "tree.json";              // the guarded source tree outside the groups
inline constexpr char kStamps[] = "stamps.json";              // lstat metadata of every pristine file: what needs no rehash
inline constexpr char kPristine[] = "pristine";               // pristine/<path>: a copy of every guarded regular file
inline constexpr char kObjects[] = "objects";                 // objects/<sha256 hex>: a second copy, named by its content
inline constexpr char kPending[] = "pending";                 // pending/<token>: a marker per live run (flock-held)
inline constexpr char kPendingTemp[] = "pending.";            // pending.<token>: a marker being created, locked
inline constexpr char kExclusive[] = "exclusive";             // a run of this invocation changed the tree: the rest go alone
inline constexpr char kTreeChanges[] = "tree-changes.jsonl";  // what each run left changed in the source tree
inline constexpr char kReplaced[] = "replaced";               // replaced/<ns>/: what a restore replaced in the source tree
inline constexpr char kInterrupted[] = "interrupted";         // interrupted/<ns>/: what a killed run's restore replaced
inline constexpr char kGitScratchPrefix[] = "git.";           // git.<pid>.<n>.out: git's output while the tree is listed
// collection.<key>.json: what a collection ("discovery", "receipt") left changed, for the gate
inline std::string collection_record_name(const std::string& key) { return "collection." + key + ".json"; }
}  // namespace fixtures

}  // namespace evgate::evidence
