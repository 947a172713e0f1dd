// Commands that judge: ledger, gate, discover.
#include "commands.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include "ctest_entries.hpp"
#include "culprits.hpp"
#include "date.hpp"
#include "error.hpp"
#include "json_io.hpp"
#include "manifest_diff.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "runner_bundles.hpp"
#include "seed_runner.hpp"
#include "shards.hpp"

namespace fs = std::filesystem;

namespace po = boost::program_options;

namespace evgate {

GateInput gate_input(const SuiteConfig& suite, Receipt receipt) {
    GateInput input;
    input.receipt = std::move(receipt);
    input.root = suite.root.string();
    input.quarantine = load_quarantine(suite);
    input.baseline = load_baseline(suite);
    input.baseline_file = suite.baseline ? suite.baseline->string() : "";
    input.baseline_tolerance = suite.baseline_tolerance;
    input.today = today_utc();
    input.culprits = load_culprits(suite, input.receipt.id);
    input.evgate = self_path();
    input.suite_file = suite.source;
    return input;
}

// Writes the ledger and prints the gate; returns the number of blocking rows (receipt step).
int write_and_print(const SuiteConfig& suite, const std::vector<LedgerRow>& rows, std::size_t runs) {
    write_file_atomic(suite.ledger_file(), ledger_jsonl(rows));
    const int blocked = print_gate(std::cout, suite.name, rows, runs);
    std::cout << "ledger: " << suite.ledger_file().string() << '\n';
    return blocked;
}

namespace {

// Runner bundles as columns, and the manifest drift of every column that is another environment.
void add_machine_columns(const SuiteConfig& suite, GateInput& input) {
    auto bundles = load_runner_bundles(bundle_paths(suite.runner_bundles), input.receipt, suite.manifest_file());
    for (auto& run : bundles.runs) input.runs.push_back(std::move(run));
    input.runners.insert(input.runners.end(), bundles.names.begin(), bundles.names.end());
    input.drift.insert(bundles.drift.begin(), bundles.drift.end());
    input.left_out = std::move(bundles.left_out);
    input.unmapped = std::move(bundles.unmapped);
    if (fs::exists(suite.perturbed_manifest_file()) && fs::exists(suite.manifest_file()))
        input.drift["perturbed"] = diff_manifests(read_manifest(suite.manifest_file()), read_manifest(suite.perturbed_manifest_file()));
}

// The ledger from the receipt and every run, with the reports and per-test verdict files.
std::vector<LedgerRow> build_and_write(const SuiteConfig& suite, const po::variables_map& vm, std::size_t& runs) {
    GateInput input = gate_input(suite, load_receipt(suite.receipt_file()));
    input.runs = load_runs(suite, input.receipt.id);
    const auto shard = merged_shards().empty() ? this_shard() : std::nullopt;  // a shard's gate expects its own runs
    const auto foreign = foreign_shards(suite);  // a merge's shards from another environment: runner columns
    const auto expected = [&](const std::string& id, std::uint64_t seed) {
        if (shard) return runs_here(*shard, id, seed);
        return std::none_of(foreign.begin(), foreign.end(), [&](const ForeignShard& f) {
            return runs_here(parse_shard_spec(f.spec, f.dir.string()), id, seed);
        });
    };
    for (int k = 0; k <= suite.seeds; ++k) {
        const std::string id = "seed." + std::to_string(k);
        if (expected(id, static_cast<std::uint64_t>(k))) input.expected_runs.push_back(id);
    }
    if (suite.perturb && expected("perturbed", 0)) input.expected_runs.push_back("perturbed");
    input.shard_problems = shard_problems(suite, input.receipt);
    for (const auto& f : foreign) {
        std::string keys;
        for (const auto& k : drift_keys(f.drift, 5)) keys += (keys.empty() ? "" : ", ") + k;
        input.shard_notes.emplace_back(f.dir.string(), "shard " + f.spec + " ran in another environment (" + keys +
                                                           "): its runs are the runner column " + f.column);
        input.runners.push_back(f.column);
        input.drift[f.column] = f.drift;
    }
    if (vm.count("today")) {
        const auto text = vm["today"].as<std::string>();
        auto date = parse_date(text);
        if (!date) throw Error("--today is not a date (YYYY-MM-DD): " + quote(text));
        input.today = *date;
    }
    add_machine_columns(suite, input);
    auto rows = build_ledger(input);
    write_file_atomic(suite.ledger_file(), ledger_jsonl(rows));
    write_verdict_files(suite, rows);
    ReportInput report{suite.name, &rows, report_columns(input.runs), &input.receipt, {}};
    for (const auto& [column, entries] : input.drift) report.drift.push_back({column, entries});
    write_reports(suite.evidence_dir, report);
    runs = input.runs.size();
    return rows;
}

po::options_description ledger_options(const char* caption) {
    auto options = suite_options(caption);
    options.add_options()("today", po::value<std::string>(), "the date quarantine expiry is judged on (default: today, UTC)");
    return options;
}

// The runs a ledger speaks of: every run id in any row's outcomes.
std::size_t runs_in(const std::vector<LedgerRow>& rows) {
    std::set<std::string> ids;
    for (const auto& row : rows)
        for (const auto& [run, outcome] : row.outcomes) ids.insert(run);
    return ids.size();
}

// Values a CDash dashboard charts over time, in the form CTest reads from a test's output.
void print_measurements(std::ostream& out, const std::vector<LedgerRow>& rows, const SuiteConfig& suite) {
    int tests = 0, blocking = 0, deferred = 0;
    std::size_t runners = 0;  // runner columns that made it into the ledger
    for (const auto& row : rows) {
        runners += row.suite_scope && row.test.rfind("runner:", 0) == 0 && row.gate == "pass";
        blocking += row.gate == "block";
        if (row.suite_scope) continue;
        ++tests;
        deferred += row.gate == "defer";
    }
    const std::pair<const char*, std::size_t> values[] = {
        {"tests", tests}, {"blocking", blocking}, {"deferred", deferred},
        {"seeds", static_cast<std::size_t>(suite.seeds)}, {"runners", runners}};
    for (const auto& [name, value] : values)
        out << "<CTestMeasurement type=\"numeric/double\" name=\"" << name << "\">" << value << "</CTestMeasurement>\n";
}

}  // namespace

int cmd_ledger(const Args& args) {
    auto options = ledger_options("ledger: build the ledger, the reports and the per-test verdicts (exit 0 when built)");
    auto vm = parse("ledger", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    std::size_t runs = 0;
    const auto rows = build_and_write(suite, *vm, runs);
    print_summary(std::cout, suite.name, rows, runs);  // the gate step prints the rows
    std::cout << "ledger: " << suite.ledger_file().string() << "\nreport: " << (suite.evidence_dir / "report.html").string() << '\n';
    return 0;
}

int cmd_gate(const Args& args) {
    auto options = ledger_options("gate: build the ledger, print it, fail when a row blocks");
    options.add_options()("from-ledger", "print the ledger the ledger step wrote instead of building it");
    auto vm = parse("gate", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    std::size_t runs = 0;
    const auto rows = vm->count("from-ledger") ? read_ledger(suite.ledger_file()) : build_and_write(suite, *vm, runs);
    if (vm->count("from-ledger")) runs = runs_in(rows);
    const int blocked = print_gate(std::cout, suite.name, rows, runs);
    std::cout << "ledger: " << suite.ledger_file().string() << "\nreport: " << (suite.evidence_dir / "report.html").string() << '\n';
    print_measurements(std::cout, rows, suite);
    return blocked > 0 ? 1 : 0;
}

int cmd_discover(const Args& args) {
    auto options = suite_options("discover: collect and write one CTest entry per test (run by ctest itself)");
    options.add_options()("cmake", po::value<std::string>()->required(), "the cmake executable the entries run")(
        "output", po::value<std::string>()->required(), "the CMake file to write");
    auto vm = parse("discover", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto ids = collected_ids(suite);
    write_file_atomic((*vm)["output"].as<std::string>(), ctest_entries(suite, ids, (*vm)["cmake"].as<std::string>()));
    return 0;
}

}  // namespace evgate
