// The gate: the ledger built from the receipt and every run, and what `ctest` prints of it.
// Suite checks (suite_checks.hpp), then one row per collected test (test_rows.hpp), each gated
// as the verdict table says (verdict_table.hpp); the ledger's text (ledger.hpp) and its summary
// (summary.hpp). Given the same inputs the ledger is byte-identical.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fixtures/fixture_store.hpp"
#include "inputs/baseline.hpp"
#include "inputs/quarantine.hpp"
#include "io/date.hpp"
#include "machines/manifest_diff.hpp"
#include "runs/culprit_runs.hpp"
#include "runs/receipt.hpp"
#include "runs/run_matrix.hpp"
#include "verdicts/ledger.hpp"
#include "verdicts/ledger_row.hpp"
#include "verdicts/summary.hpp"
#include "verdicts/triage.hpp"
#include "verdicts/verdict_table.hpp"

namespace evgate {

struct GateInput {
    Receipt receipt;
    std::string root;  // ROOT, to check what each run saw
    RunMatrix runs;
    std::vector<std::string> expected_runs;     // e.g. seed.0 .. seed.8: each must be there
    std::vector<std::string> repeats_run_here;  // runs that repeat an order, run all the same (a shard's: machines/shards.hpp)
    std::vector<QuarantineEntry> quarantine;
    std::string quarantine_file;  // the configured QUARANTINE: rows name its lines
    std::optional<Baseline> baseline;
    std::string baseline_file;                                        // configured (it may not exist yet)
    std::int64_t baseline_tolerance = 0;                              // tests the collection may drop below the baseline
    std::vector<std::string> runners;                                 // runner columns present in `runs`
    std::map<std::string, std::vector<DriftEntry>> drift;             // column -> manifest drift from local
    std::vector<std::pair<std::string, std::string>> left_out;        // runner bundle -> why it is not a column
    std::map<std::string, std::vector<std::string>> unmapped;         // runner -> JUnit cases matching no test
    std::map<std::string, Culprit> culprits;                          // localisation of order-dependent tests
    std::vector<std::pair<std::string, std::string>> shard_problems;  // shard dir -> why the merge cannot trust it
    std::vector<std::pair<std::string, std::string>> shard_notes;     // shard dir -> how the merge took it
    std::vector<TreeFinding> tree_findings;                           // collections and runs that left the source tree changed
    std::string evgate;                                               // this tool's path and the suite file: `reproduce` commands
    std::filesystem::path suite_file;
    std::string home, tmpdir;  // the user's own HOME and TMPDIR (not the runs'): what a skip reason may name
    Date today;
};

// The suite rows, then a row per receipt test in the receipt's order.
std::vector<LedgerRow> build_ledger(const GateInput& input);
// The rows about the receipt alone: what the receipt step reports when it cannot go on.
std::vector<LedgerRow> receipt_rows(const GateInput& input);

}  // namespace evgate
