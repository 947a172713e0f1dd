#include "cli.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "baseline.hpp"
#include "date.hpp"
#include "ctest_entries.hpp"
#include "culprits.hpp"
#include "env_manifest.hpp"
#include "error.hpp"
#include "fixture_manifest.hpp"
#include "fixture_store.hpp"
#include "gate.hpp"
#include "json_io.hpp"
#include "manifest_diff.hpp"
#include "perturbation.hpp"
#include "quarantine.hpp"
#include "replay.hpp"
#include "receipt.hpp"
#include "report.hpp"
#include "rerun_planner.hpp"
#include "runner_bundles.hpp"
#include "seed_runner.hpp"
#include "shards.hpp"
#include "shuffle.hpp"
#include "suite_config.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace evgate {
namespace {

using Args = std::vector<std::string>;

struct Command {
    const char* name;
    const char* summary;
    int (*handler)(const Args& args);
};

// Parses `args` strictly (no guessing of abbreviated option names); nullopt after --help.
std::optional<po::variables_map> parse(const char* name, const Args& args, po::options_description& options) {
    options.add_options()("help,h", "show this help");
    po::variables_map vm;
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(options).style(style).run(), vm);
    if (vm.count("help")) {
        std::cout << "usage: evgate " << name << " [options]\n" << options;
        return std::nullopt;
    }
    po::notify(vm);
    return vm;
}

po::options_description suite_options(const char* caption) {
    po::options_description options(caption);
    options.add_options()("suite", po::value<std::string>()->required(), "suite.json written by evidence_gate_add_suite()");
    return options;
}

SuiteConfig suite_of(const po::variables_map& vm) { return load_suite_config(vm["suite"].as<std::string>()); }

std::vector<QuarantineEntry> load_quarantine(const SuiteConfig& suite) {
    if (!suite.quarantine) return {};
    std::ifstream in(*suite.quarantine);
    if (!in) throw InputError(suite.quarantine->string(), 0, "cannot read the quarantine file");
    return parse_quarantine(in, suite.quarantine->string());
}

// A baseline that is configured but not written yet is not an input error: the gate blocks
// on it with the command that writes it.
std::optional<Baseline> load_baseline(const SuiteConfig& suite) {
    if (!suite.baseline || !fs::exists(*suite.baseline)) return std::nullopt;
    return parse_baseline(read_file(*suite.baseline), suite.baseline->string());
}

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

// Every user input file parses; throws the first error, naming file, line and value.
std::size_t validate_inputs(const SuiteConfig& suite) {
    const FixtureStore store(suite);
    load_quarantine(suite);
    load_baseline(suite);
    return store.groups().size();
}

int cmd_check(const Args& args) {
    auto options = suite_options("check: validate the suite's input files");
    auto vm = parse("check", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto groups = validate_inputs(suite);
    std::cout << "evgate: " << suite.name << ": inputs are valid (" << groups << " fixture groups)\n";
    return 0;
}

int cmd_fixtures(const Args& args) {
    auto options = suite_options("fixtures: complete a pending restore, then snapshot the fixture groups as pristine");
    auto vm = parse("fixtures", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    FixtureStore store(suite);
    if (store.restore_if_pending()) std::cout << "evgate: restored fixture groups left dirty by an interrupted run\n";
    store.snapshot();
    std::cout << "evgate: " << suite.name << ": " << store.groups().size() << " fixture groups leased\n";
    return 0;
}

int cmd_manifest(const Args& args) {
    auto options = suite_options("manifest: record the environment the tests run in");
    auto vm = parse("manifest", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    write_env_manifest(suite, suite.manifest_file());
    std::cout << "evgate: wrote " << suite.manifest_file().string() << '\n';
    return 0;
}

int cmd_receipt(const Args& args) {
    auto options = suite_options("receipt: collect the suite and record what pytest really used");
    auto vm = parse("receipt", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    validate_inputs(suite);  // fail before any run, not at the gate
    fs::remove_all(suite.runs_dir());  // runs of an earlier invocation are not evidence for this one
    const auto receipt = take_receipt(suite);
    std::cout << "evgate: " << suite.name << ": rootdir " << receipt.rootdir << ", configfile "
              << receipt.configfile.value_or("(none)") << ", " << receipt.conftests.size() << " conftest file(s), "
              << receipt.tests.size() << " tests collected\n";
    for (const auto& error : receipt.errors) std::cout << "  collection error: " << error << '\n';
    for (const auto& stray : receipt.stray_configs) std::cout << "  stray config file: " << stray << '\n';
    const auto problems = receipt_problems(suite, receipt);
    if (problems.empty()) return 0;
    // No run can be trusted: the ledger says why now, since the gate will not run.
    write_and_print(suite, receipt_rows(gate_input(suite, receipt)), 0);
    std::cerr << "evgate: error: the receipt of suite '" << suite.name << "' does not hold:\n";
    for (const auto& p : problems) std::cerr << "  " << p << '\n';
    std::cerr << "  Path: '" << suite.receipt_file().string() << "'\n";
    return 1;
}

// A seed step in a sharded matrix: 77 (skipped) for another shard's run, 0 once a merge job
// imported it from the shard that ran it; nullopt when this job runs it itself.
std::optional<int> shard_step(const SuiteConfig& suite, const Receipt& receipt, const RunPlan& plan) {
    if (!merged_shards().empty()) {
        const bool imported = import_run(suite, receipt, plan.id);
        std::cout << "evgate: " << suite.name << ": " << plan.id
                  << (imported ? ": taken from its shard" : ": no shard holds it (the gate blocks on it)") << '\n';
        return 0;
    }
    if (auto shard = this_shard(); shard && !runs_here(*shard, plan.id, plan.seed)) {
        std::cout << "evgate: " << suite.name << ": " << plan.id << " belongs to another shard than " << shard->text() << '\n';
        return 77;
    }
    return std::nullopt;
}

void report_run(const RunPlan& plan, const RunSummary& summary, const SuiteConfig& suite) {
    const auto records = read_run_records(records_file(suite, plan.id));
    int failed = 0;
    for (const auto& [test, result] : records.results) failed += outcome_class(result.outcome) == "fail";
    std::cout << "evgate: " << suite.name << ": " << plan.id << ": " << records.results.size() << " of "
              << plan.tests.size() << " tests ran, " << failed << " failed, " << summary.interrupted.size()
              << " interrupted, " << summary.processes << " pytest process(es)"
              << (summary.note.empty() ? "" : "; " + summary.note) << '\n';
}

// Runs a plan and says how it went; 1 only when pytest never ran the tests (a failing test
// is data, a suite that never started is not).
int run_and_report(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, const RunPlan& plan) {
    const auto summary = run_plan(suite, receipt, store, plan);
    report_run(plan, summary, suite);
    if (summary.harness_ok) return 0;
    std::cerr << "evgate: error: " << plan.id << ": " << summary.note << '\n';
    return 1;
}

int cmd_run(const Args& args) {
    auto options = suite_options("run: run the suite in one seed's order (seed 0: collection order)");
    options.add_options()("seed", po::value<std::uint64_t>()->required(), "the seed");
    auto vm = parse("run", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    FixtureStore store(suite);
    store.restore_if_pending();
    RunPlan plan;
    plan.seed = (*vm)["seed"].as<std::uint64_t>();
    plan.id = plan.order = "seed." + std::to_string(plan.seed);
    plan.tests = shuffled_order(receipt.collected(), plan.seed);
    if (auto status = shard_step(suite, receipt, plan)) return *status;
    return run_and_report(suite, receipt, store, plan);
}

int cmd_perturbed(const Args& args) {
    auto options = suite_options("perturbed: run the collection order once more in a deliberately different environment");
    auto vm = parse("perturbed", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    RunPlan plan;
    plan.id = plan.order = "perturbed";
    plan.column = Column::perturbed;
    plan.tests = shuffled_order(receipt.collected(), 0);
    if (auto status = shard_step(suite, receipt, plan)) return *status;
    FixtureStore store(suite);
    store.restore_if_pending();
    fs::remove_all(suite.evidence_dir / "perturbed");
    const auto perturbation = choose_perturbation(suite);
    write_env_manifest(suite, suite.perturbed_manifest_file(), perturbation.environment, perturbation.cpus);
    plan.environment = perturbation.environment;
    plan.cpus = perturbation.cpus;
    std::cout << "evgate: " << suite.name << ": perturbed: ";
    for (std::size_t i = 0; i < perturbation.changes.size(); ++i) std::cout << (i ? ", " : "") << perturbation.changes[i];
    std::cout << '\n';
    return run_and_report(suite, receipt, store, plan);
}

int cmd_localise(const Args& args) {
    auto options = suite_options("localise: name the partner of every order-dependent test, within a budget of pytest runs");
    auto vm = parse("localise", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    FixtureStore store(suite);
    store.restore_if_pending();
    const auto culprits = localise_suite(suite, receipt, store, suite.localise_runs);
    int runs = 0;
    for (const auto& c : culprits) {
        const auto& f = c.found;
        runs += f.runs_used;
        std::cout << "evgate: " << suite.name << ": " << f.test << ": " << to_string(f.role);
        if (!f.partners.empty()) std::cout << ", " << f.partner_role << " " << f.partners.front() << (f.partners.size() > 1 ? " and more" : "");
        std::cout << " (" << f.runs_used << " runs)" << (f.note.empty() ? "" : "; " + f.note) << '\n';
    }
    std::cout << "evgate: " << suite.name << ": localised " << culprits.size() << " order-dependent test(s) in " << runs << " pytest runs\n";
    return 0;
}

int cmd_replay(const Args& args) {
    auto options = suite_options("replay: run an exact order (or a seed's order up to a test) and say whether the failure reproduced");
    options.add_options()("test", po::value<std::vector<std::string>>(), "a test, in order (repeatable)")(
        "seed", po::value<std::uint64_t>(), "the seed: its order with --through, and `random`'s reseeding")(
        "through", po::value<std::string>(), "run the seed's order up to and including this test")(
        "repeat", po::value<int>()->default_value(1), "runs at most, until it reproduces")(
        "env", po::value<std::vector<std::string>>(), "VAR=value for the runs (repeatable)");
    auto vm = parse("replay", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    ReplayRequest request;
    if (vm->count("test")) request.tests = (*vm)["test"].as<std::vector<std::string>>();
    if (vm->count("seed")) request.seed = (*vm)["seed"].as<std::uint64_t>();
    if (vm->count("through")) request.through = (*vm)["through"].as<std::string>();
    if (vm->count("env")) request.environment = (*vm)["env"].as<std::vector<std::string>>();
    request.repeat = (*vm)["repeat"].as<int>();
    return replay(suite, request, std::cout);
}

int cmd_rerun(const Args& args) {
    auto options = suite_options("rerun: rerun the orders that tell order dependence from nondeterminism");
    options.add_options()("reruns", po::value<int>(), "repeats of each order (default: the suite's)");
    auto vm = parse("rerun", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    std::vector<LoadedRun> seeds;
    for (auto& run : load_runs(suite, receipt.id)) {
        const bool is_seed = run.plan.column == Column::local && run.plan.id == run.plan.order && run.plan.order != "alone";
        if (is_seed) {
            seeds.push_back(std::move(run));
        } else if (run.plan.column == Column::local) {  // a rerun of an earlier invocation
            fs::remove(records_file(suite, run.plan.id));
            fs::remove(plan_file(suite, run.plan.id));
        }
    }
    RerunLimits limits;
    limits.reruns = vm->count("reruns") ? (*vm)["reruns"].as<int>() : suite.reruns;
    const auto plans = plan_reruns(seeds, limits);
    FixtureStore store(suite);
    store.restore_if_pending();
    int status = 0;
    for (const auto& plan : plans) status |= run_and_report(suite, receipt, store, plan);
    std::cout << "evgate: " << suite.name << ": " << plans.size() << " rerun(s)\n";
    return status;
}

// Runner bundles as columns, and the manifest drift of every column that is another environment.
void add_machine_columns(const SuiteConfig& suite, GateInput& input) {
    auto bundles = load_runner_bundles(bundle_paths(suite.runner_bundles), input.receipt, suite.manifest_file());
    for (auto& run : bundles.runs) input.runs.push_back(std::move(run));
    input.runners = std::move(bundles.names);
    input.drift = std::move(bundles.drift);
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
    for (int k = 0; k <= suite.seeds; ++k) {
        const std::string id = "seed." + std::to_string(k);
        if (!shard || runs_here(*shard, id, static_cast<std::uint64_t>(k))) input.expected_runs.push_back(id);
    }
    if (suite.perturb && (!shard || runs_here(*shard, "perturbed", 0))) input.expected_runs.push_back("perturbed");
    input.shard_problems = shard_problems(suite, input.receipt);
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

// Values a CDash dashboard charts over time, in the form CTest reads from a test's output.
void print_measurements(std::ostream& out, const std::vector<LedgerRow>& rows, const SuiteConfig& suite) {
    int tests = 0, blocking = 0, deferred = 0;
    for (const auto& row : rows) {
        blocking += row.gate == "block";
        if (row.suite_scope) continue;
        ++tests;
        deferred += row.gate == "defer";
    }
    const std::pair<const char*, std::size_t> values[] = {
        {"tests", tests}, {"blocking", blocking}, {"deferred", deferred},
        {"seeds", static_cast<std::size_t>(suite.seeds)}, {"runners", suite.runner_bundles.size()}};
    for (const auto& [name, value] : values)
        out << "<CTestMeasurement type=\"numeric/double\" name=\"" << name << "\">" << value << "</CTestMeasurement>\n";
}

int cmd_gate(const Args& args) {
    auto options = ledger_options("gate: build the ledger, print it, fail when a row blocks");
    options.add_options()("from-ledger", "print the ledger the ledger step wrote instead of building it");
    auto vm = parse("gate", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    std::size_t runs = 0;
    const auto rows = vm->count("from-ledger") ? read_ledger(suite.ledger_file()) : build_and_write(suite, *vm, runs);
    if (vm->count("from-ledger")) runs = load_runs(suite, load_receipt(suite.receipt_file()).id).size();
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

int cmd_baseline(const Args& args) {
    auto options = suite_options("baseline: write the collection baseline from a fresh collection");
    options.add_options()("output", po::value<std::string>(), "where to write it (default: the suite's BASELINE)")(
        "when-requested", "write only when EVIDENCE_GATE_UPDATE_BASELINE=1 is set (else exit 77: skipped)");
    auto vm = parse("baseline", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const char* requested = std::getenv("EVIDENCE_GATE_UPDATE_BASELINE");
    if (vm->count("when-requested") && (requested == nullptr || std::string(requested) != "1")) {
        std::cout << "evgate: " << suite.name << ": not writing the baseline; run EVIDENCE_GATE_UPDATE_BASELINE=1 ctest -R '"
                  << suite.name << "\\.baseline-update' to write it\n";
        return 77;
    }
    fs::path output = vm->count("output") ? fs::path((*vm)["output"].as<std::string>())
                                          : suite.baseline.value_or(suite.evidence_dir / "baseline.json");
    const auto receipt = take_receipt(suite);
    if (!receipt.errors.empty()) throw Error("collection has errors; fix them before writing a baseline: " + receipt.errors.front());
    Baseline baseline;
    baseline.collected = static_cast<std::int64_t>(receipt.tests.size());
    baseline.lists_tests = true;
    for (const auto& t : receipt.tests) baseline.tests.push_back(t.id);
    write_file_atomic(output, baseline_json(baseline));
    std::cout << "evgate: wrote " << output.string() << " (" << baseline.collected << " tests)\n";
    return 0;
}

int cmd_restore(const Args& args) {
    auto options = suite_options("restore: bring the fixture groups back to their pristine content");
    auto vm = parse("restore", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    FixtureStore store(suite);
    const auto changed = store.restore();
    for (const auto& line : changed) std::cout << "evgate: " << line << '\n';
    std::cout << "evgate: " << suite.name << ": fixture groups are pristine\n";
    return 0;
}

int cmd_order(const Args& args) {
    auto options = suite_options("order: print the test order of a seed, one node id a line (JSON strings)");
    options.add_options()("seed", po::value<std::uint64_t>()->required(), "the seed");
    auto vm = parse("order", args, options);
    if (!vm) return 0;
    const auto suite = suite_of(*vm);
    const auto receipt = load_receipt(suite.receipt_file());
    for (const auto& id : shuffled_order(receipt.collected(), (*vm)["seed"].as<std::uint64_t>()))
        std::cout << json_string(id) << '\n';
    return 0;
}

// Two files as positionals: evgate diff <local.json> <runner.json>. Exit 1 when they differ.
int cmd_diff(const Args& args) {
    po::options_description options("diff: compare two environment manifests, most suspicious difference first");
    options.add_options()("help,h", "show this help");
    po::options_description files;
    files.add_options()("local", po::value<std::string>())("runner", po::value<std::string>());
    po::options_description all;
    all.add(options).add(files);
    po::positional_options_description positional;
    positional.add("local", 1).add("runner", 1);
    po::variables_map vm;
    const auto style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(), vm);
    if (vm.count("help")) {
        std::cout << "usage: evgate diff <local.json> <runner.json>\n" << options;
        return 0;
    }
    if (!vm.count("runner")) throw Error("diff needs two manifests: evgate diff <local.json> <runner.json>");
    const auto local = vm["local"].as<std::string>(), runner = vm["runner"].as<std::string>();
    const auto drift = diff_manifests(read_manifest(local), read_manifest(runner));
    if (drift.empty()) {
        std::cout << "evgate: the manifests agree\n";
        return 0;
    }
    std::cout << "evgate: " << drift.size() << " key(s) differ between " << local << " (local) and " << runner
              << " (runner), most suspicious first:\n"
              << format_drift(drift, "runner", drift.size());
    return 1;
}

const Command kCommands[] = {
    {"check", "validate the suite's fixture manifest, quarantine and baseline", cmd_check},
    {"fixtures", "snapshot the fixture groups (after completing a pending restore)", cmd_fixtures},
    {"manifest", "record the environment manifest", cmd_manifest},
    {"receipt", "collect and record the workspace receipt", cmd_receipt},
    {"run", "run the suite in one seed's order", cmd_run},
    {"perturbed", "run the suite in a deliberately different environment", cmd_perturbed},
    {"rerun", "rerun orders to tell order dependence from nondeterminism", cmd_rerun},
    {"localise", "name the partner of every order-dependent test", cmd_localise},
    {"replay", "replay an order and say whether the failure reproduced", cmd_replay},
    {"ledger", "build the ledger, reports and per-test verdicts", cmd_ledger},
    {"gate", "print the gate and fail when a row blocks", cmd_gate},
    {"discover", "write one CTest entry per test", cmd_discover},
    {"baseline", "write the collection baseline", cmd_baseline},
    {"restore", "restore the fixture groups to pristine", cmd_restore},
    {"order", "print a seed's test order", cmd_order},
    {"diff", "compare two environment manifests, most suspicious first", cmd_diff},
};

void usage(std::ostream& out) {
    out << "usage: evgate <command> [options]   (evgate <command> --help for its options)\n\ncommands:\n";
    for (const auto& c : kCommands) out << "  " << c.name << std::string(10 - std::string(c.name).size(), ' ') << c.summary << '\n';
}

}  // namespace

int run_cli(int argc, char** argv) {
    const Args words(argv + 1, argv + argc);
    if (words.empty() || words[0] == "--help" || words[0] == "-h" || words[0] == "help") {
        usage(words.empty() ? std::cerr : std::cout);
        return words.empty() ? 2 : 0;
    }
    for (const auto& command : kCommands) {
        if (words[0] != command.name) continue;
        try {
            return command.handler(Args(words.begin() + 1, words.end()));
        } catch (const po::error& e) {
            std::cerr << "evgate: error: " << command.name << ": " << e.what() << '\n';
            return 2;
        } catch (const Error& e) {
            std::cerr << "evgate: error: " << e.what() << '\n';
            return 2;
        } catch (const std::exception& e) {
            std::cerr << "evgate: internal error: " << command.name << ": " << e.what() << '\n';
            return 3;
        }
    }
    std::cerr << "evgate: error: unknown command " << quote(words[0]) << "\n";
    usage(std::cerr);
    return 2;
}

}  // namespace evgate
