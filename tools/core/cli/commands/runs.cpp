// Commands that run pytest: fixtures, manifest, receipt, run, perturbed, rerun, localise, replay.
#include "cli/commands/commands.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <iomanip>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "fixtures/fixture_store.hpp"
#include "inputs/evidence_layout.hpp"
#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "io/error.hpp"
#include "machines/shards.hpp"
#include "runs/alone_budget.hpp"
#include "runs/bytecode_cache.hpp"
#include "runs/confirm_alone.hpp"
#include "runs/confirm_fresh.hpp"
#include "runs/culprit_runs.hpp"
#include "runs/env_manifest.hpp"
#include "runs/evidence_reuse.hpp"
#include "runs/fork_server.hpp"
#include "runs/order_run.hpp"
#include "runs/perturbation.hpp"
#include "runs/receipt.hpp"
#include "runs/replay.hpp"
#include "runs/rerun_planner.hpp"
#include "runs/sandbox.hpp"
#include "runs/shuffle.hpp"
#include "verdicts/triage.hpp"

namespace fs = std::filesystem;

namespace po = boost::program_options;

namespace evgate {

void seed_option(Options& accepted) {
    accepted.named.add_options()("seed", po::value<std::uint64_t>()->required(), "the seed");
}

void rerun_options(Options& accepted) {
    accepted.named.add_options()("reruns", po::value<int>(), "repeats of each order (default: the suite's)");
}

void replay_options(Options& accepted) {
    accepted.named.add_options()("test", po::value<std::vector<std::string>>(), "a test, in order (repeatable)")(
        "seed", po::value<std::uint64_t>(), "the seed: its order with --through, and `random`'s reseeding")(
        "through", po::value<std::string>(), "run the seed's order up to and including this test")(
        "repeat", po::value<int>()->default_value(1), "runs at most, until it reproduces")(
        "env", po::value<std::vector<std::string>>(), "VAR=value for the runs (repeatable)");
}

int cmd_fixtures(Invocation& in) {
    const auto& suite = in.suite();
    FixtureStore store(suite);
    say_restored(suite, store.restore_if_pending());
    for (const auto& note : store.snapshot()) std::cout << "evgate: " << suite.name << ": " << note << '\n';
    std::cout << "evgate: " << suite.name << ": " << store.groups().size() << " fixture groups leased\n";
    return 0;
}

int cmd_manifest(Invocation& in) {
    const auto& suite = in.suite();
    check_bytecode_cache(suite);
    write_env_manifest(suite, suite.manifest_file());
    std::cout << "evgate: wrote " << suite.manifest_file().string() << '\n';
    return 0;
}

namespace {

// The runs, partners and probes of an earlier invocation: cleared unless this one keeps them.
void clear_runs(const SuiteConfig& suite) {
    fs::remove_all(suite.runs_dir());
    fs::remove_all(suite.evidence_dir / evidence::kLocaliseRuns);
    fs::remove(suite.evidence_dir / evidence::kLocalise);
}

// The hooks of the receipt's collection: the fork server's, and evidence reuse's (the kept
// runs' hash seed for the collection, and the decision in the receipt).
ReceiptHooks receipt_hooks(const SuiteConfig& suite, ForkServerStart& serving, const std::optional<KeptEvidence>& kept,
                           ReuseDecision& decision) {
    auto hooks = serving.hooks();
    hooks.prepare = [&kept, serve = hooks.prepare](ProcessSpec& spec) {
        const bool set = std::any_of(spec.environment.begin(), spec.environment.end(),
                                     [](const std::string& e) { return e.rfind("PYTHONHASHSEED=", 0) == 0; });
        if (kept && !kept->hash_seed.empty() && !set) spec.environment.push_back("PYTHONHASHSEED=" + kept->hash_seed);
        serve(spec);
    };
    hooks.annotate = [&suite, &kept, &decision, serve = hooks.annotate](rapidjson::Document& doc) {
        serve(doc);
        decision = add_reuse(doc, suite, kept);
    };
    return hooks;
}

void say_reuse(const SuiteConfig& suite, const Receipt& receipt, const ReuseDecision& decision) {
    if (decision.keeps) {
        std::size_t runs = 0;
        for (const auto& plan : run_plan_files(suite.runs_dir())) runs += !plan.empty();
        std::cout << "evgate: " << suite.name << ": nothing the runs depend on changed since the ctest of "
                  << receipt.kept.front().at << ": its " << runs << " run(s) are kept, and this one runs seeds "
                  << receipt.orders.first << ".." << receipt.orders.first + static_cast<std::uint64_t>(suite.seeds)
                  << " (new orders), the tests not yet run alone and what the new runs call for\n";
    } else if (!decision.why_not.empty()) {
        std::cout << "evgate: " << suite.name << ": " << decision.why_not << " since the last ctest: every run starts over\n";
    }
}

}  // namespace

int cmd_receipt(Invocation& in) {
    const auto& suite = in.suite();
    validate_inputs(suite);                       // fail before any run, not at the gate
    const auto kept = take_kept_evidence(suite);  // the runs are evidence for this invocation only if it keeps them
    // Nor is an earlier ledger, report or per-test verdict: when a step of this invocation is
    // killed (Ctrl-C) before the ledger step, an earlier verdict must not be left to be read as this one's.
    for (const char* stale : {evidence::kLedger, evidence::kReportHtml, evidence::kReportMarkdown, evidence::kJunit,
                              evidence::kVerdictStore})
        fs::remove(suite.evidence_dir / stale);
    if (!kept) clear_runs(suite);
    // The collection is a pytest process like any run: the tree is snapshotted before it, and
    // what its imports changed is put back and blocks (never taken for pristine).
    Receipt receipt;
    FixtureStore store(suite);
    // Its pytest stays, collected, as the server of every run's fork (fork_server.hpp).
    ForkServerStart serving(suite);
    check_bytecode_cache(suite);
    ReuseDecision decision;
    try {
        const auto changed = store.guard_collection("receipt", "collection (receipt)", [&] {
            const auto pristine = store.pristine_files();  // the snapshot just taken: what the collection runs over
            receipt = take_receipt(suite, &pristine, receipt_hooks(suite, serving, kept, decision));
        });
        if (!decision.keeps) clear_runs(suite);
        say_reuse(suite, receipt, decision);
        if (changed.changed())
            std::cout << "evgate: " << suite.name << ": the collection changed the tree outside any test; restored (the gate blocks)\n";
    } catch (...) {
        clear_runs(suite);
        throw;
    }
    std::cout << "evgate: " << suite.name << ": rootdir " << receipt.rootdir << ", configfile "
              << receipt.configfile.value_or("(none)") << ", " << receipt.conftests.size() << " conftest file(s), "
              << receipt.tests.size() << " tests collected\n";
    for (const auto& error : receipt.errors) std::cout << "  collection error: " << error << '\n';
    for (const auto& file : receipt.built)
        std::cout << "  built file under test: " << file.path << (file.target.empty() ? "" : " (" + file.target + ")") << ", "
                  << file.size << " bytes, " << file.digest << '\n';
    for (const auto& stray : receipt.stray_configs) std::cout << "  stray config file: " << stray << '\n';
    if (!receipt.stray_configs_ignored.empty())
        std::cout << "  " << receipt.stray_configs_ignored.size()
                  << " other config file(s) below ROOT, where no collected test lies: ignored\n";
    const auto& isolation = serving.isolation();
    if (isolation.forks)
        std::cout << "evgate: " << suite.name << ": the collected session serves every run as a fork (pid " << isolation.server->pid << ")\n";
    else
        std::cout << "evgate: " << suite.name << ": every run starts its own pytest processes: " << isolation.why << '\n';
    const auto problems = receipt_problems(suite, receipt);
    if (problems.empty()) return 0;
    // No run can be trusted: the ledger says why now, since the gate will not run.
    write_and_print(suite, receipt_rows(gate_input(suite, receipt)));
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
    static std::mutex one_line_at_a_time;  // reruns report from several threads
    const std::lock_guard<std::mutex> lock(one_line_at_a_time);
    // From what evgate wrote, not from the file: a test may have changed that (the gate says so).
    std::cout << "evgate: " << suite.name << ": " << plan.id << ": " << summary.results << " of "
              << plan.tests.size() << " tests ran, " << summary.failed << " failed, " << summary.interrupted.size()
              << " interrupted, " << summary.processes << " pytest process(es) (" << summary.isolation << ")"
              << (summary.note.empty() ? "" : "; " + summary.note) << std::endl;  // as it happens, under ctest -V
}

// Runs a plan and says how it went; 1 only when pytest never ran the tests (a failing test
// is data, a suite that never started is not).
int run_and_report(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, const RunPlan& plan,
                   bool quiet = false) {
    const auto summary = run_order(suite, receipt, store, plan);
    if (!quiet || !summary.complete || !summary.note.empty()) report_run(plan, summary, suite);
    if (summary.harness_ok) return 0;
    std::cerr << "evgate: error: " << plan.id << ": " << summary.note << '\n';
    return 1;
}

// A run whose order an earlier seed runs already (distinct_orders.hpp): said, and not run again.
bool repeats_an_order(const SuiteConfig& suite, const Receipt& receipt, const RunId& run_id) {
    if (!repeat_left_out(receipt, run_id)) return false;
    const auto repeat = receipt.orders.repeats.find(run_id.str());
    std::cout << "evgate: " << suite.name << ": " << run_id << " would run the order " << repeat->second << " runs ("
              << receipt.tests.size() << (receipt.tests.size() == 1 ? " test" : " tests") << " collected): not run again\n";
    return true;
}

int cmd_run(Invocation& in) {
    const auto& suite = in.suite();
    const auto& receipt = in.receipt();
    auto& store = in.store();
    RunPlan plan;
    // Step k runs the k-th seed after those an earlier ctest's kept runs ran (evidence_reuse.hpp).
    plan.seed = receipt.orders.first + in.get<std::uint64_t>("seed");
    plan.id = RunId::seed(plan.seed);
    plan.order = plan.id.str();
    plan.tests = seed_order(receipt.collected(), plan.seed, suite.orders);
    if (repeats_an_order(suite, receipt, plan.id)) return 77;
    plan.access = store.access_for(receipt.declares_writes());
    if (auto status = shard_step(suite, receipt, plan)) return *status;
    return run_and_report(suite, receipt, store, plan);
}

// A run an earlier ctest ran on the same key (evidence_reuse.hpp): said, and not run again.
bool kept_run(const SuiteConfig& suite, const Receipt& receipt, const RunId& run_id) {
    if (receipt.kept.empty() || !fs::exists(plan_file(suite, run_id))) return false;
    std::cout << "evgate: " << suite.name << ": " << run_id << ": kept from an earlier ctest (nothing it depends on changed)\n";
    return true;
}

int cmd_perturbed(Invocation& in) {
    const auto& suite = in.suite();
    const auto& receipt = in.receipt();
    if (kept_run(suite, receipt, RunId::perturbed())) return 0;
    RunPlan plan;
    plan.id = RunId::perturbed();
    plan.order = plan.id.str();
    plan.column = Column::perturbed;
    plan.tests = shuffled_order(receipt.collected(), 0);
    if (auto status = shard_step(suite, receipt, plan)) return *status;
    FixtureStore store(suite);  // not before: another shard's run leaves the fixture groups alone
    store.restore_if_pending();
    const auto perturbation = choose_perturbation(suite);
    write_env_manifest(suite, suite.perturbed_manifest_file(), perturbation.environment, perturbation.cpus);
    plan.environment = perturbation.environment;
    plan.cpus = perturbation.cpus;
    plan.access = store.access_for(receipt.declares_writes());
    std::cout << "evgate: " << suite.name << ": perturbed: ";
    for (std::size_t i = 0; i < perturbation.changes.size(); ++i) std::cout << (i ? ", " : "") << perturbation.changes[i];
    std::cout << '\n';
    return run_and_report(suite, receipt, store, plan);
}

int cmd_release(Invocation& in) {
    const auto& suite = in.suite();
    const auto stopped = stop_fork_server(suite);
    remove_suite_sandboxes(suite);  // the collection's, and what an interrupted invocation left
    std::cout << "evgate: " << suite.name << ": " << (stopped.empty() ? "no collected session was serving" : stopped) << '\n';
    return 0;
}

int cmd_localise(Invocation& in) {
    const auto& suite = in.suite();
    int runs = 0;
    LocaliseProgress progress;  // a line as each search starts and ends, flushed: ctest -V shows them as they come
    progress.starting = [&](const std::string& test) {
        std::cout << "evgate: " << suite.name << ": localising " << test << " (at most " << suite.localise_runs
                  << " pytest runs)" << std::endl;
    };
    progress.done = [&](const Culprit& c) {
        const auto& f = c.found;
        runs += f.runs_used;
        std::cout << "evgate: " << suite.name << ": " << f.test << ": " << to_string(f.role);
        if (!f.partners.empty()) std::cout << ", " << f.partner_role << " " << f.partners.front() << (f.partners.size() > 1 ? " and more" : "");
        std::cout << " (" << f.runs_used << " runs)" << (f.note.empty() ? "" : "; " + f.note) << std::endl;
    };
    progress.sweeping = [&](const RunPlan& sweep, const std::vector<std::string>& partners) {
        std::cout << "evgate: " << suite.name << ": " << sweep.id << ": " << partners.front() << (partners.size() > 1 ? " and more" : "")
                  << " first, then every other test, for more victims of the polluters found" << std::endl;
    };
    progress.swept = [&](const RunPlan& sweep, const std::vector<std::string>& found) {
        std::cout << "evgate: " << suite.name << ": " << sweep.id << ": " << found.size() << " more order-dependent test(s)" << std::endl;
    };
    progress.unswept = [&](const std::vector<std::string>& polluters, const std::string& why) {
        std::cout << "evgate: " << suite.name << ": not swept for more victims: " << polluters.front()
                  << (polluters.size() > 1 ? " and " + std::to_string(polluters.size() - 1) + " more" : "") << " (" << why
                  << "); their other victims show only where an order ran them after it" << std::endl;
    };
    const auto culprits = localise_suite(suite, in.receipt(), in.store(), suite.localise_runs, triage_answers(), progress);
    std::cout << "evgate: " << suite.name << ": localised " << culprits.size() << " order-dependent test(s) in " << runs << " pytest runs\n";
    return 0;
}

int cmd_replay(Invocation& in) {
    ReplayRequest request;
    if (in.has("test")) request.tests = in.get<std::vector<std::string>>("test");
    if (in.has("seed")) request.seed = in.get<std::uint64_t>("seed");
    if (in.has("through")) request.through = in.get<std::string>("through");
    if (in.has("env")) request.environment = in.get<std::vector<std::string>>("env");
    request.repeat = in.get<int>("repeat");
    return replay(in.suite(), request, std::cout);
}

namespace {

// A run that went beside a run that changed the fixture groups may have read what that run
// wrote, and a run whose tests changed them beside another run may be blamed for what that run
// did: either is done again, alone. `plan` as written, with the lease it ran under; the redo's
// records replace the first.
int redo_if_overlapped(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, RunPlan plan) {
    const bool read_a_change = store.overlapped_a_change(plan.lease);
    if (!read_a_change && !changed_beside_another(read_spans(suite.root), plan.lease)) return 0;
    std::cout << "evgate: " << suite.name << ": " << plan.id
              << (read_a_change ? " ran beside a run that changed the fixture groups"
                                : " changed the fixture groups while another run went beside it")
              << "; running it again, alone\n";
    plan.access = TreeAccess::exclusive;
    return run_and_report(suite, receipt, store, plan);
}

// Runs `plans`, side by side where the fixture groups allow it; then every run that went beside
// a run that changed the groups (it may have read what that run wrote) is done again, alone.
// `quiet`: a line for a run only when it did not go as planned (the alone pass: a run a test).
int run_all(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, std::vector<RunPlan> plans,
            bool quiet = false) {
    const auto access = store.access_for(receipt.declares_writes());
    const auto workers = access == TreeAccess::shared ? std::max(1u, std::thread::hardware_concurrency()) : 1u;
    std::atomic<std::size_t> next{0};
    std::atomic<int> status{0};
    std::mutex failure_mutex;
    std::exception_ptr failure;  // the first error (a stop request among them): no more runs start
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w) {
        threads.emplace_back([&] {
            for (std::size_t i; (i = next++) < plans.size();) {
                plans[i].access = access;
                try {
                    status |= run_and_report(suite, receipt, store, plans[i], quiet);
                } catch (...) {
                    const std::lock_guard<std::mutex> lock(failure_mutex);
                    if (!failure) failure = std::current_exception();
                    next = plans.size();
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    for (const auto& plan : plans) status |= redo_if_overlapped(suite, receipt, store, read_plan(plan_file(suite, plan.id)));
    return status;
}

// The runs of earlier ctests this invocation keeps: their records name a kept receipt.
std::set<std::string> kept_runs(const SuiteConfig& suite, const Receipt& receipt) {
    std::set<std::string> kept;
    if (receipt.kept.empty()) return kept;
    for (const auto& run : load_runs(suite, receipt.run_receipts()))
        if (run.records.receipt != receipt.id) kept.insert(run.plan.id.str());
    return kept;
}

// What a kept localisation settled (rerun_planner.hpp): none without kept evidence.
std::set<std::string> settled_by_kept(const SuiteConfig& suite, const Receipt& receipt, const std::vector<LoadedRun>& runs) {
    if (receipt.kept.empty()) return {};
    std::map<std::string, Localisation> found;
    for (auto& [test, culprit] : load_culprits(suite, receipt.run_receipts())) found.emplace(test, std::move(culprit.found));
    return settled_by_partners(found, runs, receipt.id);
}

bool is_seed(const RunPlan& plan) { return plan.column == Column::local && plan.id.str() == plan.order && plan.order != kAloneOrder; }

// Every disagreement between outcomes rests on outcomes seen in runs that overlapped no other
// run (runs_to_confirm): the runs it does not are done again, alone, each as a run of its own
// beside the first (whose records stay evidence), until it does or every such run was redone.
// `runs`: every run as it stands; what comes back is every run once that holds (read again
// after each redo).
std::vector<LoadedRun> confirm_alone(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, bool failures,
                                     std::vector<LoadedRun> runs, int& status) {
    for (;;) {  // each run is done again alone at most once
        const auto spans = read_spans(suite.root);
        const auto redo = runs_to_confirm(
            runs, [&](const std::string& lease) { return overlapped_another(spans, lease); }, failures);
        if (redo.empty()) return runs;
        for (const auto& id : redo) {
            const auto plan = apart_plan(read_plan(plan_file(suite, id)));
            std::cout << "evgate: " << suite.name << ": " << id
                      << " ran beside other runs and holds an outcome no run alone confirms; running it again, alone, as "
                      << plan.id << "\n";
            status |= run_and_report(suite, receipt, store, plan);
        }
        runs = load_runs(suite, receipt.run_receipts());
    }
}

// What forks showed that blocks is checked in fresh processes (runs/confirm_fresh.hpp): a first
// round of one per order (a failure there confirms the forks), then the rest where it passed,
// then what those showed (a change a fresh process made is replayed alone in turn); each round
// confirmed alone where it went beside other runs.
void confirm_fresh(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, std::vector<LoadedRun> runs, int& status) {
    constexpr int kRounds = 3;
    for (int round = 0; round < kRounds; ++round) {
        const auto plans = plan_fresh(runs, receipt, FreshLimits{}, triage_answers());
        if (plans.empty()) return;
        std::cout << "evgate: " << suite.name << ": " << plans.size()
                  << " fresh process(es) to confirm what forks showed: " << plans.front().id
                  << (plans.size() > 1 ? " and " + std::to_string(plans.size() - 1) + " more" : "") << std::endl;
        status |= run_all(suite, receipt, store, plans);
        runs = confirm_alone(suite, receipt, store, true, load_runs(suite, receipt.run_receipts()), status);
    }
}

}  // namespace

int cmd_rerun(Invocation& in) {
    const auto& suite = in.suite();
    const auto& receipt = in.receipt();
    auto& store = in.store();
    int status = 0;
    // Runs an earlier ctest left on the same key stay as they are (evidence_reuse.hpp).
    const auto kept = kept_runs(suite, receipt);
    // The seed steps went side by side: those that ran beside a change go again first.
    for (const auto& run : load_plans(suite.runs_dir()))
        if (!kept.count(run.plan.id.str()) && (is_seed(run.plan) || (run.plan.column == Column::perturbed && run.plan.confirms.empty())))
            status |= redo_if_overlapped(suite, receipt, store, run.plan);
    for (const auto& run : load_plans(suite.runs_dir())) {
        const bool stays = kept.count(run.plan.id.str()) || is_seed(run.plan) || is_alone_pass(run.plan) || run.plan.column != Column::local;
        if (!stays || (!kept.count(run.plan.id.str()) && !run.plan.confirms.empty())) {  // a rerun or a redo of this step's earlier try
            fs::remove(records_file(suite, run.plan.id));
            fs::remove(plan_file(suite, run.plan.id));
        }
    }
    // The reruns are planned from what the seeds show alone.
    auto runs = confirm_alone(suite, receipt, store, false, load_runs(suite, receipt.run_receipts()), status);
    std::vector<LoadedRun> seeds;  // and the alone pass's runs: a test that failed first after the collection is rerun so too
    for (const auto& run : runs)
        if (is_seed(run.plan) || is_alone_pass(run.plan)) seeds.push_back(run);
    RerunLimits limits;
    limits.reruns = in.has("reruns") ? in.get<int>("reruns") : suite.reruns;
    limits.settled = settled_by_kept(suite, receipt, runs);
    const auto plans = not_run_yet(plan_reruns(seeds, limits), runs);
    // What this step will do before it does it (a line per run follows as each ends).
    std::cout << "evgate: " << suite.name << ": " << plans.size() << " rerun(s) to run";
    constexpr std::size_t named = 8;
    for (std::size_t i = 0; i < std::min(plans.size(), named); ++i) std::cout << (i == 0 ? ": " : ", ") << plans[i].id;
    if (plans.size() > named) std::cout << " and " << plans.size() - named << " more";
    std::cout << std::endl;
    status |= run_all(suite, receipt, store, plans);
    // Without reruns the runs are as read above: read only once when nothing needs doing again.
    runs = confirm_alone(suite, receipt, store, true, plans.empty() ? std::move(runs) : load_runs(suite, receipt.run_receipts()), status);
    std::cout << "evgate: " << suite.name << ": " << plans.size() << " rerun(s) done\n";
    confirm_fresh(suite, receipt, store, std::move(runs), status);
    return status;
}

namespace {

std::size_t count_failed_alone(const SuiteConfig& suite, const std::vector<RunPlan>& plans) {
    std::size_t failed = 0;
    for (const auto& plan : plans) {
        try {
            const auto records = read_run_records(records_file(suite, plan));
            const auto result = records.results.find(plan.tests.front());
            failed += result == records.results.end() || outcome_class(result->second.outcome) == OutcomeClass::fail;
        } catch (const InputError&) {  // records a test damaged: the gate's row says so; here it is no result
            ++failed;
        }
    }
    return failed;
}

}  // namespace

// The alone pass: every test once as the first test after the collection, a fork (or a process)
// each: the direct way to find a test that needs an earlier one to set state up. Runs first.<n>,
// n the test's place in the collection, side by side where the fixture groups allow; a test an
// earlier ctest's kept runs ran alone is not run again, and ALONE AUTO stops at its budget (the
// rest run in the next ctest on the same tree).
int cmd_alone(Invocation& in) {
    const auto& suite = in.suite();
    const auto& receipt = in.receipt();
    auto& store = in.store();
    const auto seed_seconds = seed_run_seconds(suite, receipt.orders.seeds);
    if (!alone_pass_runs(suite.alone, seed_seconds.has_value(), receipt.tests.size())) {
        std::cout << "evgate: " << suite.name << ": the alone pass is off"
                  << (suite.alone == "off" ? " (ALONE OFF)" : " for " + std::to_string(receipt.tests.size()) + " tests with no seed run to budget it by (ALONE AUTO: up to " + std::to_string(kAloneAutoLimit) + "; ALONE ON runs it)")
                  << '\n';
        return 0;
    }
    const auto shard = this_shard();
    const bool merging = !merged_shards().empty();
    std::vector<RunPlan> plans;
    std::size_t imported = 0, kept = 0;
    const auto collected = receipt.collected();
    for (std::size_t n = 1; n <= collected.size(); ++n) {
        RunPlan plan;
        plan.id = RunId::first(n);
        plan.order = std::string(kAloneOrder);
        plan.tests = {collected[n - 1].id};
        if (repeats_an_order(suite, receipt, plan.id)) continue;
        if (merging) {  // a merge job takes each from the shard that ran it
            imported += import_run(suite, receipt, plan.id);
            continue;
        }
        if (shard && !runs_here(*shard, plan.id, n)) continue;  // spread over the shards by place
        if (!receipt.kept.empty() && fs::exists(plan_file(suite, plan.id))) {
            ++kept;
            continue;
        }
        plans.push_back(std::move(plan));
    }
    if (collected.size() == 1 && repeat_left_out(receipt, RunId::first(1))) return 77;  // the pass is seed.0's order
    if (merging) {
        std::cout << "evgate: " << suite.name << ": " << imported << " of " << collected.size() << " tests run alone taken from their shards\n";
        return 0;
    }
    // In chunks of a few runs a worker, until the budget is spent.
    const auto budget = alone_budget(suite.alone, static_cast<std::uint64_t>(suite.seeds), seed_seconds, plans.size());
    const auto started = std::chrono::steady_clock::now();
    const std::size_t chunk = std::size_t{4} * std::max(1u, std::thread::hardware_concurrency());
    std::vector<RunPlan> ran;
    int status = 0;
    const auto seconds_since = [](std::chrono::steady_clock::time_point t) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    double last_chunk = 0;
    for (std::size_t at = 0; at < plans.size(); at += chunk) {
        if (!next_chunk_fits(budget, seconds_since(started), last_chunk)) break;
        const auto chunk_started = std::chrono::steady_clock::now();
        std::vector<RunPlan> some(plans.begin() + static_cast<std::ptrdiff_t>(at),
                                  plans.begin() + static_cast<std::ptrdiff_t>(std::min(plans.size(), at + chunk)));
        status |= run_all(suite, receipt, store, some, /*quiet=*/true);
        ran.insert(ran.end(), some.begin(), some.end());
        last_chunk = seconds_since(chunk_started);
    }
    std::cout << "evgate: " << suite.name << ": " << ran.size() << " test(s) run alone, first after the collection; "
              << count_failed_alone(suite, ran) << " failed or gave no result";
    if (kept > 0) std::cout << "; " << kept << " kept from an earlier ctest";
    if (ran.size() < plans.size())
        std::cout << "; " << plans.size() - ran.size() << " left for the next ctest on this tree (" << alone_budget_rule() << ": "
                  << std::fixed << std::setprecision(1) << *budget << " s here)";
    std::cout << '\n';
    return status;
}

}  // namespace evgate
