// Commands that judge: ledger, gate, verdict, discover, verdicts.
#include "cli/commands/commands.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>

#include "fixtures/fixture_store.hpp"
#include "inputs/evidence_layout.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/date.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "io/process.hpp"
#include "io/timestamp.hpp"
#include "machines/manifest_diff.hpp"
#include "machines/runner_bundles.hpp"
#include "machines/shards.hpp"
#include "reports/report.hpp"
#include "reports/run_history.hpp"
#include "runs/bytecode_cache.hpp"
#include "runs/ctest_selection.hpp"
#include "runs/culprit_runs.hpp"
#include "runs/discover_cache.hpp"
#include "runs/evidence_reuse.hpp"
#include "runs/receipt.hpp"
#include "runs/replay.hpp"
#include "runs/run_plan.hpp"
#include "verdicts/ctest_entries.hpp"
#include "verdicts/verdict_store.hpp"

namespace fs = std::filesystem;

namespace po = boost::program_options;

namespace evgate {

GateInput gate_input(const SuiteConfig& suite, Receipt receipt) {
    GateInput input;
    input.receipt = std::move(receipt);
    input.root = suite.root.string();
    input.quarantine = load_quarantine(suite);
    input.quarantine_file = suite.quarantine ? suite.quarantine->string() : "";
    // The user's own (ctest's); pytest runs get their own below the evidence directory.
    for (auto [variable, value] : {std::pair{"HOME", &input.home}, std::pair{"TMPDIR", &input.tmpdir}})
        if (const char* set = std::getenv(variable)) *value = set;
    input.baseline = load_baseline(suite);
    input.baseline_file = suite.baseline ? suite.baseline->string() : "";
    input.baseline_tolerance = suite.baseline_tolerance;
    input.today = today_utc();
    input.culprits = load_culprits(suite, input.receipt.run_receipts());
    input.evgate = self_path();
    input.suite_file = suite.source;
    input.tree_findings = FixtureStore(suite).findings({});  // the collections' (the runs' come with them)
    return input;
}

// Writes the ledger and prints the gate; returns the number of blocking rows (receipt step).
int write_and_print(const SuiteConfig& suite, const std::vector<LedgerRow>& rows) {
    write_file_atomic(suite.ledger_file(), ledger_jsonl(rows));
    const int blocked = print_gate(std::cout, suite.name, rows);
    std::cout << "ledger: " << suite.ledger_file().string() << '\n';
    return blocked;
}

namespace {

// Runner bundles as columns, and the manifest drift of every column that is another environment.
void add_machine_columns(const SuiteConfig& suite, GateInput& input) {
    auto bundles = load_runner_bundles(bundle_paths(suite.runner_bundles), input.receipt, suite.manifest_file());
    for (auto& run : bundles.runs) input.runs.add(std::move(run));
    input.runners.insert(input.runners.end(), bundles.names.begin(), bundles.names.end());
    input.drift.insert(bundles.drift.begin(), bundles.drift.end());
    input.left_out = std::move(bundles.left_out);
    input.unmapped = std::move(bundles.unmapped);
    if (fs::exists(suite.perturbed_manifest_file()) && fs::exists(suite.manifest_file()))
        input.drift[RunId::perturbed().str()] = diff_manifests(read_manifest(suite.manifest_file()), read_manifest(suite.perturbed_manifest_file()));
}

// The per-test entries were registered for another collection than the receipt's (one the
// discover fingerprint cannot see): say so, and have the next ctest register them anew.
void check_entries(const SuiteConfig& suite, const Receipt& receipt) {
    std::vector<std::string> ids;
    ids.reserve(receipt.tests.size());
    for (const auto& t : receipt.tests) ids.push_back(t.id);
    if (forget_stale_entries(suite, ids))
        std::cout << "evgate: " << suite.name << ": pytest collects other tests than when ctest registered the per-test "
                  << "entries; the next ctest registers them anew\n";
}

// What the next ctest may keep (runs/evidence_reuse.hpp): every run of this invocation and
// the kept ones, when each finished and is evidence; nullopt when one is not (it runs again).
std::optional<KeptEvidence> evidence_to_keep(const SuiteConfig& suite, const GateInput& input) {
    const auto& receipt = input.receipt;
    if (receipt.key.empty() || !receipt_problems(suite, receipt).empty()) return std::nullopt;
    for (const auto& run : input.runs.runs())
        if (run.plan.column != Column::runner && (!run.problem.empty() || run.records.finished != true)) return std::nullopt;
    KeptEvidence keep;
    keep.key = receipt.key;
    keep.hash_seed = receipt.hash_seed;
    keep.receipts = receipt.kept;
    const auto last = receipt.orders.seeds == 0 ? 0 : receipt.orders.seeds - 1;
    keep.receipts.push_back({receipt.id, iso_time(std::chrono::system_clock::now()), receipt.orders.first, last});
    keep.next_seed = receipt.orders.seeds;
    const auto doc = read_json_file(suite.receipt_file());
    if (const auto* reuse = member(doc, "reuse"); reuse && reuse->IsObject())
        if (const auto* parts = member(*reuse, "parts"); parts && parts->IsObject())
            for (const auto& part : parts->GetObject())
                if (part.value.IsString()) keep.parts[part.name.GetString()] = part.value.GetString();
    return keep;
}

// The ledger from the receipt and every run, with the reports and the per-test verdicts; its
// summary, which the reports print and the caller prints. `keep`: filled with what the next
// ctest may keep of the runs.
GateSummary build_and_write(const SuiteConfig& suite, const Invocation& in, std::optional<KeptEvidence>* keep = nullptr) {
    // The runs are read while the receipt is; its id is needed only once a run is parsed.
    auto loading = std::async(std::launch::async, [&] { return load_receipt(suite.receipt_file()); });
    std::optional<Receipt> receipt;
    const auto receipts = [&] {
        if (!receipt) receipt = loading.get();
        return receipt->run_receipts();
    };
    RunMatrix matrix;
    matrix.add_runs(suite.runs_dir(), receipts);
    GateInput input = gate_input(suite, receipt ? std::move(*receipt) : loading.get());
    input.runs = std::move(matrix);
    std::map<std::string, std::string> leases;  // the executions whose records count: token -> run
    for (const auto& run : input.runs.runs()) leases.emplace(run.plan.lease, run.plan.id.str());
    input.tree_findings = FixtureStore(suite).findings(leases);
    const auto shard = merged_shards().empty() ? this_shard() : std::nullopt;  // a shard's gate expects its own runs
    const auto foreign = foreign_shards(suite);                                // a merge's shards from another environment: runner columns
    const auto expected = [&](const RunId& id, std::uint64_t seed) {
        if (shard) return runs_here(*shard, id, seed);
        return std::none_of(foreign.begin(), foreign.end(), [&](const ForeignShard& f) {
            return runs_here(parse_shard_spec(f.spec, f.dir.string()), id, seed);
        });
    };
    for (std::uint64_t k = 0; k < input.receipt.orders.seeds; ++k) {  // the kept invocations' seeds too
        const auto id = RunId::seed(k);
        // A seed whose order an earlier one runs here is not run (distinct_orders.hpp): no result is due.
        if (expected(id, static_cast<std::uint64_t>(k)) && !repeat_left_out(input.receipt, id))
            input.expected_runs.push_back(id.str());
    }
    if (suite.perturb && expected(RunId::perturbed(), 0)) input.expected_runs.push_back(RunId::perturbed().str());
    for (const auto& [run, earlier] : input.receipt.orders.repeats)
        if (!repeat_left_out(input.receipt, RunId::of(run))) input.repeats_run_here.push_back(run);
    input.shard_problems = shard_problems(suite, input.receipt);
    for (const auto& f : foreign) {
        std::string keys;
        for (const auto& k : drift_keys(f.drift, 5)) keys += (keys.empty() ? "" : ", ") + k;
        input.shard_notes.emplace_back(f.dir.string(), "shard " + f.spec + " ran in another environment (" + keys +
                                                           "): its runs are the runner column " + f.column);
        input.runners.push_back(f.column);
        input.drift[f.column] = f.drift;
    }
    if (in.has("today")) {
        const auto& text = in.get<std::string>("today");
        auto date = parse_date(text);
        if (!date) throw Error("--today is not a date (YYYY-MM-DD): " + quote(text));
        input.today = *date;
    }
    add_machine_columns(suite, input);
    auto rows = build_ledger(input);
    auto summary = summarize(rows);
    ReportInput report{suite.name, &rows, report_columns(input.runs.runs()), &input.receipt, {}};
    report.summary = &summary;
    for (const auto& [column, entries] : input.drift) report.drift.push_back({column, entries});
    const auto extras = run_report_extras(suite, rows, input.receipt.id);  // EVIDENCE_GATE_HISTORY, _COMPARE
    if (extras) report.extras = &*extras;
    // Four files from the same rows, each on its own: written side by side.
    auto store = std::async(std::launch::async, [&] { write_verdict_store(suite, rows); });
    auto reports = std::async(std::launch::async, [&] { write_reports(suite.evidence_dir, report); });
    auto junit = std::async(std::launch::async, [&] { write_run_junit(suite, rows, input.runs); });
    write_ledger(suite.ledger_file(), rows);
    store.get();
    reports.get();
    junit.get();
    check_entries(suite, input.receipt);
    if (keep) *keep = evidence_to_keep(suite, input);
    return summary;
}

// Values a CDash dashboard charts over time, in the form CTest reads from a test's output.
void print_measurements(std::ostream& out, const GateSummary& summary, const SuiteConfig& suite) {
    const std::pair<const char*, std::size_t> values[] = {
        {"tests", static_cast<std::size_t>(summary.tests)},
        {"blocking", static_cast<std::size_t>(summary.blocked + summary.suite_blocks)},
        {"deferred", static_cast<std::size_t>(summary.deferred)},
        {"seeds", static_cast<std::size_t>(suite.seeds)},
        {"runners", summary.runners}};
    for (const auto& [name, value] : values)
        out << "<CTestMeasurement type=\"numeric/double\" name=\"" << name << "\">" << value << "</CTestMeasurement>\n";
}

// evgate-verdict, beside this tool: what the per-test entries run.
std::string verdict_tool() {
    const auto tool = fs::path(self_path()).parent_path() / "evgate-verdict";
    if (!fs::exists(tool)) throw Error("evgate-verdict is missing beside evgate (" + tool.string() + "): build or install both");
    return tool.string();
}

}  // namespace

void ledger_options(Options& accepted) {
    accepted.named.add_options()("today", po::value<std::string>(), "the date quarantine expiry is judged on (default: today, UTC)");
}

void gate_options(Options& accepted) {
    ledger_options(accepted);
    accepted.named.add_options()("from-ledger", "print the ledger the ledger step wrote instead of building it");
}

void verdict_options(Options& accepted) {
    accepted.named.add_options()("test", po::value<std::string>()->required(), "the test's node id");
}

void discover_options(Options& accepted) {
    accepted.named.add_options()("output", po::value<std::string>()->required(), "the CMake file to write")(
        "label", po::value<std::vector<std::string>>()->composing(),
        "a label of the entries (repeatable): when the ctest that runs discover leaves out every test so labelled "
        "(-LE evidence), nothing is collected");
}

int cmd_ledger(Invocation& in) {
    const auto& suite = in.suite();
    // The runs are over: a restore a killed run left pending (its step was ended by its CTest
    // TIMEOUT) is completed before anyone reads the fixtures again.
    say_restored(suite, FixtureStore(suite).restore_if_pending());
    std::optional<KeptEvidence> keep;
    const auto summary = build_and_write(suite, in, &keep);
    if (keep) write_kept_evidence(suite, *keep);
    print_summary(std::cout, suite.name, summary);  // the gate step prints the rows
    std::cout << "ledger: " << suite.ledger_file().string() << "\nreport: " << (suite.evidence_dir / evidence::kReportHtml).string() << '\n';
    archive_if_asked(suite, std::cout);
    // Here, not in the gate: the gate's output is what --output-on-failure shows when rows
    // block, and these lines are for CDash, not for people; this step passes when it gets here.
    print_measurements(std::cout, summary, suite);
    return 0;
}

int cmd_gate(Invocation& in) {
    const auto& suite = in.suite();
    const auto summary = in.has("from-ledger") ? read_gate_summary(suite.ledger_file()) : build_and_write(suite, in);
    const int blocked = print_gate(std::cout, suite.name, summary);
    std::cout << "ledger: " << suite.ledger_file().string() << "\nreport: " << (suite.evidence_dir / evidence::kReportHtml).string() << '\n';
    return blocked > 0 ? 1 : 0;
}

int cmd_verdict(Invocation& in) {
    const auto output = entry_output(verdict_store_file(in.suite()), in.get<std::string>("test"));
    std::cout << output.text;
    return output.status;
}

int cmd_discover(Invocation& in) {
    const auto& suite = in.suite();
    const fs::path output = in.get<std::string>("output");
    if (in.has("label") && !ctest_labels_select(parent_ctest_arguments(), in.get<std::vector<std::string>>("label"))) {
        std::cout << "evgate: " << suite.name << ": ctest's label options leave out every per-test entry: not collecting\n";
        return 0;
    }
    const auto fingerprint = collection_fingerprint(suite, output, self_path(), environment_with(suite.environment));
    if (entries_current(suite, output, fingerprint)) return 0;
    // The first pytest process of a ctest invocation: the tree is taken alone and snapshotted
    // before it collects, and what its imports changed is put back and blocks at the gate.
    Receipt collected;
    check_bytecode_cache(suite);
    FixtureStore(suite).guard_collection("discovery", "collection at ctest start (discovery)",
                                         [&] { collected = collection_now(suite); });
    std::vector<std::string> ids;
    for (const auto& test : collected.tests) ids.push_back(test.id);
    write_file_atomic(output, ctest_entries(suite, ids, verdict_tool()));
    // A collection with errors (a module not built yet) is not kept: the next ctest collects again.
    if (collected.errors.empty()) remember_entries(suite, output, fingerprint, ids);
    return 0;
}

int cmd_verdicts(Invocation&) {
    std::cout << verdict_table_json();
    return 0;
}

}  // namespace evgate
