#include "runs/seed_runner.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include <sys/stat.h>

#include "io/error.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "io/natural_order.hpp"
#include "runs/process_checks.hpp"
#include "runs/pytest_command.hpp"
#include "runs/record_channel.hpp"
#include "runs/run_records.hpp"

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

// The groups this process's records say changed: in its tests, declared or not, and outside them.
std::set<std::string> reported_changes(const RunRecords& process) {
    std::set<std::string> groups(process.changed_outside.begin(), process.changed_outside.end());
    for (const auto& [test, result] : process.results) {
        groups.insert(result.changed.begin(), result.changed.end());
        groups.insert(result.dirty.begin(), result.dirty.end());
    }
    return groups;
}

// Groups the restore had to put back that no record of the process reported changing.
std::vector<std::string> unreported(const std::vector<FixtureChange>& put_back, const std::set<std::string>& reported) {
    std::set<std::string> groups;
    for (const auto& change : put_back)
        if (!reported.count(change.group)) groups.insert(change.group);
    return {groups.begin(), groups.end()};
}

std::string quoted(const std::vector<std::string>& groups) {
    std::string out;
    for (const auto& g : groups) out += (out.empty() ? "'" : ", '") + g + "'";
    return out;
}

// The order a process was given, without what it did not collect (those have no result: the
// gate says so), as the tests it started must follow it.
std::vector<std::string> collected_part(const std::vector<std::string>& order, const RunRecords& process) {
    if (process.sessions.empty() || process.sessions.front().absent.empty()) return order;
    const std::set<std::string> absent(process.sessions.front().absent.begin(), process.sessions.front().absent.end());
    std::vector<std::string> out;
    for (const auto& test : order)
        if (!absent.count(test)) out.push_back(test);
    return out;
}

// When the lease file was written: the snapshot that listed the groups from the tree as it was.
// Files whose ctime is older are unchanged since; never later than now.
std::int64_t listed_ns(const FixtureStore& store) {
    struct stat st {};
    const auto now = wall_clock_ns();
    if (::stat(store.lease_file().c_str(), &st) != 0) return now;
    return std::min(now, static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec);
}

std::size_t results_in(std::string_view lines) {
    std::size_t n = 0;
    for (auto at = lines.find("\"event\":\"result\""); at != std::string_view::npos; at = lines.find("\"event\":\"result\"", at + 1)) ++n;
    return n;
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
    const auto order = dir / (plan.id + ".order.jsonl");
    const auto log = log_file(suite, plan.id);
    fs::create_directories(dir);
    fs::create_directories(log.parent_path());
    fs::remove(log);
    empty_sandbox(suite, log);
    // evgate writes the records itself, from what pytest sends on its channel.
    RecordsFile records(records_file(suite, plan));
    const auto source = records.path().string();
    FixtureStore::Lease lease(store, plan.access, plan.id);  // from the first process to the last restore
    RunPlan written = plan;
    written.lease = lease.token();
    write_plan(dir / (plan.id + ".plan.json"), written);
    // A time after which every change to the groups shows in a file's ctime, and before which
    // they were as listed: the plugin looks again at what changed since, so a change made
    // before its leases start (a conftest imported at start-up) is seen. For the first process,
    // when the groups were listed (the snapshot); then, the restore check after each process.
    auto verified_ns = listed_ns(store);

    RunSummary summary;
    std::vector<std::string> remaining = plan.tests;
    RunRecords seen;
    ProcessResult last;
    bool scanning = false;  // leases by stat scan: the change notifications missed a change
    std::string lease_note;
    std::size_t results = 0;
    while (!remaining.empty()) {
        write_order(order, remaining);
        std::string lines;  // this process's records, as pytest sent them
        RecordChannel channel([&](std::string_view whole) {
            records.append(whole);
            lines.append(whole);
            results += results_in(whole);
        });
        std::vector<std::string> args = {"--evidence-gate-channel=" + std::to_string(channel.child_end()),
                                         "--evidence-gate-run=" + plan.id,
                                         "--evidence-gate-seed=" + std::to_string(plan.seed),
                                         "--evidence-gate-order=" + order.string()};
        if (!store.empty()) {
            args.push_back("--evidence-gate-groups=" + store.lease_file().string());
            args.push_back("--evidence-gate-verified-ns=" + std::to_string(verified_ns));
        }
        if (scanning) args.push_back("--evidence-gate-lease=scan");

        auto spec = pytest_process(suite, args, log);
        spec.environment = environment_with(std::move(spec.environment), plan.environment);
        spec.cpus = plan.cpus;
        spec.channel = &channel;
        spec.return_when_stopped = true;  // the restore comes first
        spec.progress = [&](std::chrono::milliseconds elapsed) {  // a long run says where it is
            std::cout << "evgate: " << suite.name << ": " << plan.id << ": " << results << " of "
                      << plan.tests.size() << " tests, " << elapsed.count() / 1000 << " s" << std::endl;
        };
        const auto result = run_process(spec);
        last = result;
        ++summary.processes;
        verified_ns = wall_clock_ns();
        const auto put_back = lease.restore();
        if (result.stopped != 0) {
            summary.note = result.describe() + " while pytest ran; its processes were killed and the fixture groups restored";
            records.finish(finished_record(summary, receipt.id));
            fs::remove(order);
            throw Stopped(result.stopped);
        }
        if (!channel.pytest_tail().empty())
            records.append_record("{\"event\":\"torn\",\"bytes\":" + std::to_string(channel.pytest_tail().size()) + "}");
        // Only the process evgate started speaks for the run; what others sent is reported.
        for (const auto& sender : channel.foreign()) records.append_record(foreign_record(sender, lines));
        const auto process = parse_run_records(lines, source);
        const auto reported = reported_changes(process);
        if (!reported.empty()) lease.touched();
        // The restore checks what the records reported. Change notifications miss a write
        // through a memory mapping kept open: then the order runs again, from its start, with
        // stat scans, which see it in the test that made it. What the scans do not see either
        // was changed after the session ended.
        if (const auto missed = unreported(put_back, reported); !missed.empty()) {
            const bool notified = !process.sessions.empty() && process.sessions.front().lease == "inotify";
            if (notified && !scanning) {
                scanning = true;
                lease_note = "the change notifications missed a change to " + quoted(missed) + "; the order ran again with stat scans";
                records.clear();
                seen = RunRecords{};
                remaining = plan.tests;
                summary = RunSummary{};
                results = 0;
                continue;
            }
            records.append_record(outside_record("exit", missed));
            lease_note += (lease_note.empty() ? "" : "; ") + quoted(missed) + " changed after pytest's session ended";
        }
        if (const auto diverged = order_divergence(collected_part(remaining, process), process.started))
            records.append_record(reason_record("order", *diverged));
        if (const auto problem = exit_status_problem(process, result)) records.append_record(reason_record("status", *problem));

        if (process.sessions.empty()) {  // pytest never reached our session record
            summary.harness_ok = false;
            summary.note = "pytest did not start the tests (" + describe_pytest(result) + "); see " + log.string();
            seen = parse_run_records(records.text(), source);
            break;
        }
        // The interpreter died, or pytest stopped (an INTERNALERROR, pytest.exit) inside a
        // test: that test is interrupted, and the rest of the order runs afresh.
        std::size_t position = plan.tests.size();
        for (auto it = process.started.rbegin(); it != process.started.rend(); ++it) {
            if (process.results.count(*it) != 0) continue;
            records.append_record(interrupted_record(*it, describe_pytest(result)));
            summary.interrupted.push_back(*it);
            position = static_cast<std::size_t>(std::find(plan.tests.begin(), plan.tests.end(), *it) - plan.tests.begin());
            break;
        }
        seen = parse_run_records(records.text(), source);
        if (position == plan.tests.size()) {
            if (process.processes_ended == 0) summary.note = "pytest died outside any test (" + describe_pytest(result) + "); see " + log.string();
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
    summary.results = seen.results.size();
    for (const auto& [test, result] : seen.results) summary.failed += outcome_class(result.outcome) == "fail";
    if (!summary.complete && summary.note.empty())
        summary.note = "some planned tests have no result (" + describe_pytest(last) + "); see " + log.string();
    if (!lease_note.empty()) summary.note = lease_note + (summary.note.empty() ? "" : "; " + summary.note);
    records.finish(finished_record(summary, receipt.id));
    fs::remove(order);
    return summary;
}

}  // namespace evgate
