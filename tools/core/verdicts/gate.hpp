// The gate: the ledger built from the receipt and every run, the policy that decides which
// rows block, and what `ctest` prints. Given the same inputs the ledger is byte-identical.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <initializer_list>
#include <map>
#include <memory>
#include <unordered_map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs/baseline.hpp"
#include "runs/culprits.hpp"
#include "io/date.hpp"
#include "fixtures/fixture_store.hpp"
#include "verdicts/manifest_diff.hpp"
#include "inputs/quarantine.hpp"
#include "runs/receipt.hpp"
#include "verdicts/run_matrix.hpp"
#include "verdicts/triage.hpp"

namespace evgate {

struct GateInput {
    Receipt receipt;
    std::string root;  // ROOT, to check what each run saw
    RunMatrix runs;
    std::vector<std::string> expected_runs;  // e.g. seed.0 .. seed.8: each must be there
    std::vector<QuarantineEntry> quarantine;
    std::string quarantine_file;  // the configured QUARANTINE: rows name its lines
    std::optional<Baseline> baseline;
    std::string baseline_file;  // configured (it may not exist yet)
    std::int64_t baseline_tolerance = 0;  // tests the collection may drop below the baseline
    std::vector<std::string> runners;      // runner columns present in `runs`
    std::map<std::string, std::vector<DriftEntry>> drift;         // column -> manifest drift from local
    std::vector<std::pair<std::string, std::string>> left_out;    // runner bundle -> why it is not a column
    std::map<std::string, std::vector<std::string>> unmapped;     // runner -> JUnit cases matching no test
    std::map<std::string, Culprit> culprits;  // localisation of order-dependent tests
    std::vector<std::pair<std::string, std::string>> shard_problems;  // shard dir -> why the merge cannot trust it
    std::vector<std::pair<std::string, std::string>> shard_notes;     // shard dir -> how the merge took it
    std::vector<TreeFinding> tree_findings;   // collections and runs that left the source tree changed
    std::string evgate;                       // this tool's path and the suite file: `reproduce` commands
    std::filesystem::path suite_file;
    std::string home, tmpdir;  // the user's own HOME and TMPDIR (not the runs'): what a skip reason may name
    Date today;
};

// A row's run -> outcome pairs, every attempt. Rows with the same attempts share one list (in a
// large suite most rows: passed in every run), so rows grow with the tests, not tests x runs.
// A list is copied before it is changed while another row shares it.
class Outcomes {
public:
    using List = std::vector<std::pair<std::string, std::string>>;

    Outcomes() = default;
    Outcomes(List list) : list_(std::make_shared<List>(std::move(list))) {}
    Outcomes(std::initializer_list<List::value_type> list) : Outcomes(List(list)) {}

    List::const_iterator begin() const { return list().begin(); }
    List::const_iterator end() const { return list().end(); }
    std::size_t size() const { return list().size(); }
    bool empty() const { return list().empty(); }
    const List::value_type& operator[](std::size_t i) const { return list()[i]; }
    template <typename... Args>
    void emplace_back(Args&&... args) {
        if (!list_ || list_.use_count() > 1) list_ = std::make_shared<List>(list());
        list_->emplace_back(std::forward<Args>(args)...);
    }

private:
    const List& list() const;
    std::shared_ptr<List> list_;
};

struct LedgerRow {
    std::string test;
    bool suite_scope = false;
    bool warning = false;  // a suite row that passes but wants a reader's attention
    std::string verdict;
    std::string gate;  // pass defer block
    std::string reason;
    Outcomes outcomes;
    std::vector<std::string> also;
    std::vector<std::string> dirty;
    std::optional<std::string> until;
    std::optional<std::string> owner;
    std::optional<std::string> partner;       // the test an order dependence hangs on ("a + b" for a set)
    std::vector<std::string> partners;        // the minimal set it hangs on (ledger: a list when more than one)
    std::vector<std::string> cleaners;        // tests that, run between polluter and victim, make it pass
    std::optional<std::string> partner_role;  // polluter or state-setter
    std::optional<std::string> reproduce;     // one shell command, runnable from any directory
};

std::vector<LedgerRow> build_ledger(const GateInput& input);
// The rows about the receipt alone: what the receipt step reports when it cannot go on.
std::vector<LedgerRow> receipt_rows(const GateInput& input);
std::string ledger_jsonl(const std::vector<LedgerRow>& rows);
// The same into `file`, atomically, a piece at a time.
void write_ledger(const std::filesystem::path& file, const std::vector<LedgerRow>& rows);
// What the gate prints of a ledger: the rows that block, defer or warn (test, scope, warning,
// verdict, gate, reason), and the counts.
struct GateSummary {
    std::vector<LedgerRow> shown;  // in ledger order
    int tests = 0, blocked = 0, deferred = 0;  // of the test rows
    int suite_blocks = 0;
    std::size_t runners = 0;  // runner columns that made it into the ledger (passing runner: rows)
    std::size_t runs = 0;     // run ids the rows' outcomes name (read_gate_summary only)

    void add(const LedgerRow& row);
};

GateSummary summarize(const std::vector<LedgerRow>& rows);
// The summary of ledger.jsonl in one pass that keeps nothing else; the rows are checked as
// the ledger promises them (test, verdict, gate and reason strings; until and owner strings).
GateSummary read_gate_summary(const std::filesystem::path& file);

// BLOCK/DEFER/WARN lines, then a one-line summary; the print functions return the number
// of blocking rows.
void print_rows(std::ostream& out, const GateSummary& summary);
int print_summary(std::ostream& out, const std::string& suite, const GateSummary& summary, std::size_t runs);
int print_gate(std::ostream& out, const std::string& suite, const GateSummary& summary, std::size_t runs);
int print_gate(std::ostream& out, const std::string& suite, const std::vector<LedgerRow>& rows, std::size_t runs);

}  // namespace evgate
