#include "seed_runner.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>

#include "error.hpp"
#include "json_io.hpp"
#include "natural_order.hpp"
#include "pytest_command.hpp"
#include "run_records.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

// Interpreter deaths one run survives before it gives up on the rest of its order.
constexpr int kMaxProcesses = 16;

void write_order(const fs::path& file, const std::vector<std::string>& tests) {
    std::string text;
    for (const auto& id : tests) text += json_string(id) + "\n";
    write_file_atomic(file, text);
}

std::string interrupted_record(const std::string& test, const std::string& reason) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("event"), w.String("interrupted");
    w.Key("test"), w.String(test);
    w.Key("reason"), w.String(reason);
    w.EndObject();
    return std::string(json.text());
}

std::string finished_record(const RunSummary& summary, const std::string& receipt_id) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("event"), w.String("finished");
    w.Key("complete"), w.Bool(summary.complete);
    w.Key("receipt"), w.String(receipt_id);
    w.Key("processes"), w.Int(summary.processes);
    w.Key("note"), w.String(summary.note);
    w.EndObject();
    return std::string(json.text());
}

// Result records so far (the file grows while pytest runs); cheap enough every few seconds.
std::size_t count_results(const fs::path& records) {
    std::ifstream in(records, std::ios::binary);
    std::size_t results = 0;
    for (std::string line; std::getline(in, line);) results += line.find("\"event\":\"result\"") != std::string::npos;
    return results;
}

// The groups the tests that started at `first` or later reported changed, declared or not.
std::set<std::string> reported_changes(const RunRecords& records, std::size_t first) {
    std::set<std::string> groups;
    for (std::size_t i = first; i < records.started.size(); ++i) {
        const auto it = records.results.find(records.started[i]);
        if (it == records.results.end()) continue;
        groups.insert(it->second.changed.begin(), it->second.changed.end());
        groups.insert(it->second.dirty.begin(), it->second.dirty.end());
    }
    return groups;
}

// Groups the restore had to put back that no test reported changing, quoted for a message.
std::string unreported(const std::vector<FixtureChange>& put_back, const std::set<std::string>& reported) {
    std::set<std::string> groups;
    for (const auto& change : put_back)
        if (!reported.count(change.group)) groups.insert("'" + change.group + "'");
    std::string out;
    for (const auto& g : groups) out += (out.empty() ? "" : ", ") + g;
    return out;
}

// The tests of `plan` after `position` that have no result yet.
std::vector<std::string> rest_of(const RunPlan& plan, std::size_t position, const RunRecords& records) {
    std::vector<std::string> rest;
    for (std::size_t i = position + 1; i < plan.tests.size(); ++i)
        if (records.results.count(plan.tests[i]) == 0) rest.push_back(plan.tests[i]);
    return rest;
}

}  // namespace

fs::path records_file(const SuiteConfig& suite, const std::string& run_id) { return suite.runs_dir() / (run_id + ".jsonl"); }
fs::path plan_file(const SuiteConfig& suite, const std::string& run_id) { return suite.runs_dir() / (run_id + ".plan.json"); }
fs::path log_file(const SuiteConfig& suite, const std::string& run_id) { return suite.evidence_dir / "logs" / (run_id + ".log"); }

fs::path records_file(const SuiteConfig& suite, const RunPlan& plan) {
    return plan.runs_dir.empty() ? records_file(suite, plan.id) : plan.runs_dir / (plan.id + ".jsonl");
}

void write_plan(const fs::path& file, const RunPlan& plan) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key("id"), w.String(plan.id);
    w.Key("order"), w.String(plan.order);
    w.Key("seed"), w.Uint64(plan.seed);
    w.Key("column"), w.String(std::string(to_string(plan.column)));
    w.Key("environment"), w.StartArray();
    for (const auto& e : plan.environment) w.String(e);
    w.EndArray();
    if (!plan.cpus.empty()) {
        w.Key("cpus"), w.StartArray();
        for (int cpu : plan.cpus) w.Int(cpu);
        w.EndArray();
    }
    if (!plan.lease.empty()) w.Key("lease"), w.String(plan.lease);
    w.Key("tests"), w.StartArray();
    for (const auto& t : plan.tests) w.String(t);
    w.EndArray();
    w.EndObject();
    write_file_atomic(file, std::string(json.text()) + "\n");
}

RunPlan plan_header(const rapidjson::Value& doc, const std::string& source) {
    RunPlan plan;
    plan.id = string_member(doc, "id", source);
    plan.order = string_member(doc, "order", source);
    const auto* seed = member(doc, "seed");
    if (seed == nullptr || !seed->IsUint64()) throw InputError(source, 0, "'seed' is not an unsigned integer");
    plan.seed = seed->GetUint64();
    plan.environment = string_array(doc, "environment", source);
    if (const auto* cpus = member(doc, "cpus"); cpus && cpus->IsArray())
        for (const auto& cpu : cpus->GetArray())
            if (cpu.IsInt()) plan.cpus.push_back(cpu.GetInt());
    plan.lease = optional_string(doc, "lease", source).value_or("");
    const auto column = optional_string(doc, "column", source).value_or("local");
    if (!parse_column(column, plan.column)) throw InputError(source, 0, "unknown column " + quote(column));
    return plan;
}

RunPlan read_plan(const fs::path& file) {
    const auto doc = read_json_file(file);
    auto plan = plan_header(doc, file.string());
    plan.tests = string_array(doc, "tests", file.string());
    return plan;
}

namespace {

const std::string kPlanSuffix = ".plan.json";

std::string run_id_of(const fs::path& plan_file) {
    const auto name = plan_file.filename().string();
    return name.substr(0, name.size() - kPlanSuffix.size());
}

}  // namespace

fs::path records_beside(const fs::path& plan_file) { return plan_file.parent_path() / (run_id_of(plan_file) + ".jsonl"); }

std::vector<fs::path> run_plan_files(const fs::path& runs_dir) {
    std::vector<fs::path> plans;
    if (!fs::exists(runs_dir)) return plans;
    for (const auto& entry : fs::directory_iterator(runs_dir)) {
        const auto name = entry.path().filename().string();
        if (name.size() > kPlanSuffix.size() && name.compare(name.size() - kPlanSuffix.size(), kPlanSuffix.size(), kPlanSuffix) == 0)
            plans.push_back(entry.path());
    }
    std::sort(plans.begin(), plans.end(), [](const fs::path& a, const fs::path& b) {
        const auto x = run_id_of(a), y = run_id_of(b);
        const bool x_seed = x.rfind("seed.", 0) == 0, y_seed = y.rfind("seed.", 0) == 0;
        return x_seed != y_seed ? x_seed : natural_less(x, y);
    });
    return plans;
}

LoadedRun load_run(const fs::path& plan_file, const RunReader& read) {
    LoadedRun run;
    try {
        read(plan_file, run);
        if (run.plan.id != run_id_of(plan_file)) throw Error("its plan names the run " + quote(run.plan.id));
    } catch (const Error& e) {
        run.plan.id = run_id_of(plan_file);
        run.problem = std::string("its records cannot be read: ") + e.what();
    }
    return run;
}

void check_receipt(LoadedRun& run, const std::string& receipt_id) {
    if (run.problem.empty() && run.records.finished && run.records.receipt != receipt_id)
        run.problem = "the run belongs to an earlier receipt (" + run.records.receipt + ")";
}

std::vector<LoadedRun> load_runs(const SuiteConfig& suite, const std::string& receipt_id) {
    return load_runs(suite.runs_dir(), receipt_id);
}

std::vector<LoadedRun> load_runs(const fs::path& runs_dir, const std::string& receipt_id) {
    std::vector<LoadedRun> runs;
    for (const auto& plan_file : run_plan_files(runs_dir)) {
        runs.push_back(load_run(plan_file, [](const fs::path& file, LoadedRun& run) {
            run.plan = read_plan(file);
            run.records = read_run_records(records_beside(file));
        }));
        check_receipt(runs.back(), receipt_id);
    }
    return runs;
}

RunSummary run_plan(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, const RunPlan& plan) {
    const auto dir = plan.runs_dir.empty() ? suite.runs_dir() : plan.runs_dir;
    const auto records = records_file(suite, plan);
    const auto order = dir / (plan.id + ".order.jsonl");
    const auto log = log_file(suite, plan.id);
    fs::create_directories(dir);
    fs::create_directories(log.parent_path());
    fs::remove(records);
    fs::remove(log);
    empty_sandbox(suite, log);
    FixtureStore::Lease lease(store, plan.access, plan.id);  // from the first process to the last restore
    RunPlan written = plan;
    written.lease = lease.token();
    write_plan(dir / (plan.id + ".plan.json"), written);

    RunSummary summary;
    std::vector<std::string> remaining = plan.tests;
    RunRecords seen;
    ProcessResult last;
    bool scanning = false;  // leases by stat scan: the change notifications missed a change
    std::string lease_note;
    while (!remaining.empty()) {
        write_order(order, remaining);
        std::vector<std::string> args = {"--evidence-gate-records=" + records.string(),
                                         "--evidence-gate-run=" + plan.id,
                                         "--evidence-gate-seed=" + std::to_string(plan.seed),
                                         "--evidence-gate-order=" + order.string()};
        if (!store.empty()) args.push_back("--evidence-gate-groups=" + store.lease_file().string());
        if (scanning) args.push_back("--evidence-gate-lease=scan");
        const std::size_t started_before = seen.started.size();
        const std::size_t sessions_before = seen.sessions.size();
        const int ended_before = seen.processes_ended;

        auto spec = pytest_process(suite, args, log);
        spec.environment = environment_with(std::move(spec.environment), plan.environment);
        spec.cpus = plan.cpus;
        spec.progress = [&](std::chrono::milliseconds elapsed) {  // a long run says where it is
            std::cout << "evgate: " << suite.name << ": " << plan.id << ": " << count_results(records) << " of "
                      << plan.tests.size() << " tests, " << elapsed.count() / 1000 << " s" << std::endl;
        };
        const auto result = run_process(spec);
        last = result;
        ++summary.processes;
        const auto put_back = lease.restore();
        if (auto cut = cut_torn_tail(records); cut > 0)
            append_record(records, "{\"event\":\"torn\",\"bytes\":" + std::to_string(cut) + "}");
        seen = read_run_records(records);
        const auto reported = reported_changes(seen, started_before);
        if (!reported.empty()) lease.touched();
        // The restore checks what the leases reported. Change notifications miss a write
        // through a memory mapping kept open: then the order runs again, from its start, with
        // stat scans, which see it in the test that made it.
        if (const auto missed = unreported(put_back, reported); !missed.empty()) {
            const bool notified = seen.sessions.size() > sessions_before && seen.sessions[sessions_before].lease == "inotify";
            if (notified && !scanning) {
                scanning = true;
                lease_note = "the change notifications missed a change to " + missed + "; the order ran again with stat scans";
                fs::remove(records);
                seen = RunRecords{};
                remaining = plan.tests;
                summary = RunSummary{};
                continue;
            }
            lease_note += (lease_note.empty() ? "" : "; ") + ("no test reported the change to " + missed +
                                                               " (made outside any test: at session start or end?)");
        }

        const bool ended = seen.processes_ended > ended_before;  // pytest itself finished the session
        if (seen.sessions.size() == sessions_before) {  // pytest never reached our session record
            summary.harness_ok = false;
            summary.note = "pytest did not start the tests (" + describe_pytest(result) + "); see " + log.string();
            break;
        }
        // The interpreter died, or pytest stopped (an INTERNALERROR, pytest.exit) inside a
        // test: that test is interrupted, and the rest of the order runs afresh.
        std::size_t position = plan.tests.size();
        for (std::size_t i = seen.started.size(); i > started_before; --i) {
            const auto& test = seen.started[i - 1];
            if (seen.results.count(test) == 0) {
                append_record(records, interrupted_record(test, describe_pytest(result)));
                summary.interrupted.push_back(test);
                position = static_cast<std::size_t>(std::find(plan.tests.begin(), plan.tests.end(), test) - plan.tests.begin());
                break;
            }
        }
        if (position == plan.tests.size()) {
            if (!ended) summary.note = "pytest died outside any test (" + describe_pytest(result) + "); see " + log.string();
            break;
        }
        remaining = rest_of(plan, position, seen);
        if (summary.processes >= kMaxProcesses && !remaining.empty()) {
            summary.note = "gave up after " + std::to_string(kMaxProcesses) + " interpreter deaths; " +
                           std::to_string(remaining.size()) + " tests did not run";
            break;
        }
    }
    const std::set<std::string> interrupted(summary.interrupted.begin(), summary.interrupted.end());
    summary.complete = summary.harness_ok && std::all_of(plan.tests.begin(), plan.tests.end(), [&](const std::string& t) {
        return seen.results.count(t) != 0 || interrupted.count(t) != 0;
    });
    if (!summary.complete && summary.note.empty())
        summary.note = "some planned tests have no result (" + describe_pytest(last) + "); see " + log.string();
    if (!lease_note.empty()) summary.note = lease_note + (summary.note.empty() ? "" : "; " + summary.note);
    append_record(records, finished_record(summary, receipt.id));
    fs::remove(order);
    return summary;
}

}  // namespace evgate
