#include "runs/order_run.hpp"

#include <algorithm>
#include <iostream>
#include <set>

#include <sys/stat.h>

#include <gsl/gsl>

#include "inputs/evidence_layout.hpp"
#include "inputs/outcome.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/fork_session.hpp"
#include "runs/process_checks.hpp"
#include "runs/protocol.hpp"
#include "runs/pytest_command.hpp"
#include "runs/record_channel.hpp"
#include "runs/run_records.hpp"
#include "runs/sandbox.hpp"

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
    w.Key(protocol::field::event), w.String(protocol::event::interrupted);
    w.Key(protocol::field::test), w.String(test);
    w.Key(protocol::field::reason), w.String(reason);
    w.EndObject();
    return std::string(json.text());
}

// What was left of pytest's last line when its channel closed: a record cut short.
std::string torn_record(std::size_t bytes) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::event), w.String(protocol::event::torn);
    w.Key(protocol::field::bytes), w.Uint64(bytes);
    w.EndObject();
    return std::string(json.text());
}

std::string finished_record(const RunSummary& summary, const std::string& receipt_id) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    namespace field = protocol::field;
    w.Key(field::event), w.String(protocol::event::finished);
    w.Key(field::complete), w.Bool(summary.complete);
    w.Key(field::receipt), w.String(receipt_id);
    w.Key(field::processes), w.Int(summary.processes);
    w.Key(field::isolation), w.String(summary.isolation);  // how they were started: fork, process
    if (!summary.isolation_note.empty()) w.Key(field::isolation_note), w.String(summary.isolation_note);
    w.Key(field::note), w.String(summary.note);
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

// A test the process started and did not finish.
bool in_flight(const RunRecords& process) {
    return std::any_of(process.started.begin(), process.started.end(), [&](const std::string& test) { return process.results.count(test) == 0; });
}

// `tests` less those that have a result in `records`, in their order.
std::vector<std::string> without_results(const std::vector<std::string>& tests, const RunRecords& records) {
    std::vector<std::string> rest;
    for (const auto& test : tests)
        if (records.results.count(test) == 0) rest.push_back(test);
    return rest;
}

// The tests of `plan` after `position` that have no result yet.
std::vector<std::string> rest_of(const RunPlan& plan, std::size_t position, const RunRecords& records) {
    if (position >= plan.tests.size()) return {};
    return without_results({plan.tests.begin() + static_cast<std::ptrdiff_t>(position) + 1, plan.tests.end()}, records);
}

// What one run holds while its order runs: the files it writes and the lease on the tree.
struct OrderSetup {
    const SuiteConfig& suite;
    const Receipt& receipt;
    FixtureStore& store;
    const RunPlan& plan;
    fs::path order;  // the rest of the order, for the next process
    fs::path log;
    RecordsFile& records;
    FixtureStore::Lease& lease;
};

// The order, process after process, until every test has run, the order was given up, or
// pytest could not run it.
class OrderRun {
public:
    explicit OrderRun(OrderSetup setup)
        : at_(std::move(setup)), source_(at_.records.path().string()), verified_ns_(listed_ns(at_.store)), remaining_(at_.plan.tests), forks_(at_.suite, at_.receipt) {
        if (!at_.plan.environment.empty() || !at_.plan.cpus.empty())
            forks_.decline("its environment is not the collection's: a fresh interpreter");
        if (at_.plan.fresh) forks_.decline("it confirms in a fresh process what forks showed");
    }

    RunSummary run() {
        while (!remaining_.empty())
            if (!one_process()) break;
        return finish();
    }

private:
    bool one_process();
    LaunchSpec pytest_spec(RecordChannel& channel) const;
    void take(std::string_view lines, std::string& taken);
    [[noreturn]] void stop(const LaunchResult& result);
    void record_channel_trouble(const RecordChannel& channel, const std::string& lines);
    bool order_again(const std::vector<FixtureChange>& put_back, const RunRecords& process);
    void start_over();
    bool carry_on(const RunRecords& process, const LaunchResult& result);
    std::size_t mark_interrupted(const RunRecords& process, const LaunchResult& result);
    RunSummary finish();

    const OrderSetup at_;
    const std::string source_;
    // A time after which every change to the groups shows in a file's ctime, and before which
    // they were as listed: the plugin looks again at what changed since, so a change made
    // before its leases start (a conftest imported at start-up) is seen. For the first process,
    // when the groups were listed (the snapshot); then, the restore check after each process.
    std::int64_t verified_ns_;
    RunSummary summary_;
    std::vector<std::string> remaining_;
    RunRecords seen_;
    LaunchResult last_;
    bool scanning_ = false;                  // leases by stat scan: the change notifications missed a change
    std::vector<std::string> missed_first_;  // the groups they missed, the first time
    std::string lease_note_;
    std::size_t results_ = 0;
    ForkSession forks_;                                                  // forks of the collected session, while its server serves this run, else processes
    std::optional<std::chrono::steady_clock::time_point> test_started_;  // the test running now, when its start came
    std::string running_;                                                // that test's id
};

// One pytest process over the rest of the order; false when the order is over.
bool OrderRun::one_process() {
    write_order(at_.order, remaining_);
    std::string lines;  // this process's records, as pytest sent them
    RecordChannel channel([&](std::string_view whole) { take(whole, lines); });
    test_started_.reset();
    running_.clear();
    // A fork of the collected session while its server serves this run, else a process.
    const auto result = forks_.run(pytest_spec(channel));
    last_ = result;
    ++summary_.processes;
    verified_ns_ = wall_clock_ns();
    const auto put_back = at_.lease.restore();
    if (result.process.stopped != 0) stop(result);
    if (forks_.forked() && forks_.shared_the_collection_sandbox()) {  // what it showed was not a fresh pytest's
        start_over();
        return true;
    }
    record_channel_trouble(channel, lines);
    const auto process = parse_run_records(lines, source_);
    if (order_again(put_back, process)) return true;
    // A fork lost with its server (a test of this run or one beside it may have killed the
    // server) before it sent a byte ran nothing of the order: the order goes on in a process.
    if (result.server_lost && lines.empty() && channel.pytest_tail().empty()) return true;
    if (const auto diverged = order_divergence(collected_part(remaining_, process), process.started))
        at_.records.append_record(reason_record(protocol::event::order, *diverged));
    // Killed with its server between tests: the order goes on in a process with the tests it
    // did not reach, and the run says what happened: a test of this run or of one beside it
    // killed the server, and nobody can tell which, so it is never green. Killed inside a
    // test, that test is interrupted, below; having run every test, its end is checked as any
    // process's.
    if (result.server_lost && !in_flight(process)) {
        auto rest = without_results(remaining_, process);
        if (!rest.empty()) {
            at_.records.append_record(reason_record(
                protocol::event::status, "the fork server ended (" + result.note + ") while this run's fork was between tests, after " +
                                             std::to_string(process.results.size()) + " of them: a test of this run, or of a run beside it, "
                                                                                      "may have ended it; the rest of the order went on in a process"));
            seen_ = parse_run_records(at_.records.text(), source_);
            remaining_ = std::move(rest);
            return true;
        }
    }
    if (const auto problem = exit_status_problem(process, result)) at_.records.append_record(reason_record(protocol::event::status, *problem));
    return carry_on(process, result);
}

// pytest's whole lines as they come, each checked: a record goes to the run's records (and
// `taken`), a line that is not one (a test wrote on the channel's descriptor) becomes a `noise`
// record naming the test that ran. TEST_TIMEOUT counts from a test's start record to its result.
void OrderRun::take(std::string_view lines, std::string& taken) {
    const auto before = taken.size();
    while (!lines.empty()) {
        const auto end = lines.find('\n');
        const auto line = lines.substr(0, end);
        lines.remove_prefix(end == std::string_view::npos ? lines.size() : end + 1);
        auto seen = check_channel_line(line);
        if (!seen.record) {
            taken += noise_record(line, running_) + "\n";
            continue;
        }
        if (seen.event == RunRecord::Event::start) {
            test_started_ = std::chrono::steady_clock::now();
            running_ = std::move(seen.test);
        } else if (seen.event == RunRecord::Event::result) {
            test_started_.reset();
            running_.clear();
            ++results_;
        }
        taken.append(line).append("\n");
    }
    at_.records.append(std::string_view(taken).substr(before));
}

LaunchSpec OrderRun::pytest_spec(RecordChannel& channel) const {
    const auto& plan = at_.plan;
    namespace option = protocol::option;
    std::vector<std::string> args = {std::string(option::channel) + "=" + std::to_string(channel.child_end()),
                                     std::string(option::run) + "=" + plan.id.str(),
                                     std::string(option::seed) + "=" + std::to_string(plan.seed),
                                     std::string(option::order) + "=" + at_.order.string()};
    if (!at_.store.empty()) {
        args.push_back(std::string(option::groups) + "=" + at_.store.lease_file().string());
        args.push_back(std::string(option::verified_ns) + "=" + std::to_string(verified_ns_));
    }
    if (scanning_) args.push_back(std::string(option::lease) + "=scan");

    LaunchSpec launch;
    launch.process = pytest_process(at_.suite, args, at_.log);
    auto& spec = launch.process;
    // The collection's hash seed, fork or process, unless the run's own environment says
    // otherwise (the perturbed run's).
    if (!forks_.hash_seed().empty())
        spec.environment = environment_with(std::move(spec.environment), {"PYTHONHASHSEED=" + forks_.hash_seed()});
    spec.environment = environment_with(std::move(spec.environment), plan.environment);
    if (at_.suite.test_timeout_seconds > 0) {
        launch.test_timeout = std::chrono::seconds(at_.suite.test_timeout_seconds);
        spec.deadline = [this, bound = launch.test_timeout]() -> std::optional<std::chrono::steady_clock::time_point> {
            if (!test_started_) return std::nullopt;
            return *test_started_ + bound;
        };
    }
    spec.cpus = plan.cpus;
    spec.channel = &channel;
    spec.return_when_stopped = true;                             // the restore comes first
    spec.progress = [this](std::chrono::milliseconds elapsed) {  // a long run says where it is
        std::cout << "evgate: " << at_.suite.name << ": " << at_.plan.id << ": " << results_ << " of "
                  << at_.plan.tests.size() << " tests, " << elapsed.count() / 1000 << " s" << std::endl;
    };
    return launch;
}

void OrderRun::stop(const LaunchResult& result) {
    summary_.note = result.describe() + " while pytest ran; its processes were killed and the fixture groups restored";
    summary_.isolation = forks_.isolation(summary_.processes);
    summary_.isolation_note = forks_.why();
    at_.records.finish(finished_record(summary_, at_.receipt.id));
    fs::remove(at_.order);
    throw Stopped(result.process.stopped);
}

void OrderRun::record_channel_trouble(const RecordChannel& channel, const std::string& lines) {
    if (!channel.pytest_tail().empty())
        at_.records.append_record(torn_record(channel.pytest_tail().size()));
    // Only the process evgate started speaks for the run; what others sent is reported.
    for (const auto& sender : channel.foreign()) at_.records.append_record(foreign_record(sender, lines));
}

// The restore checks what the records reported. Change notifications miss a write through a
// memory mapping kept open: then the order runs again, from its start, with stat scans, which
// see it in the test that made it (true: it starts again) — in a fresh process, since a mapping a
// module made at import is the collection's in a fork, of a file the restore has replaced since.
// What the scans do not see either was changed after pytest's session ended, or outside the
// tests: the first sighting stands as an `outside` record either way.
bool OrderRun::order_again(const std::vector<FixtureChange>& put_back, const RunRecords& process) {
    const auto reported = reported_changes(process);
    if (!reported.empty()) at_.lease.touched();
    const auto missed = unreported(put_back, reported);
    if (missed.empty()) return false;
    const bool notified = !process.sessions.empty() && process.sessions.front().lease == "inotify";
    if (notified && !scanning_) {
        scanning_ = true;
        missed_first_ = missed;
        lease_note_ = "the change notifications missed a change to " + quoted(missed) + "; the order ran again with stat scans";
        forks_.decline("the change notifications missed a change: the order runs again with stat scans in a fresh process");
        start_over();
        return true;
    }
    at_.records.append_record(outside_record("exit", missed));
    lease_note_ += (lease_note_.empty() ? "" : "; ") + quoted(missed) + " changed after pytest's session ended";
    return false;
}

// The order from its start, as if nothing had run: what ran is no evidence.
void OrderRun::start_over() {
    forks_.start_over();
    at_.records.clear();
    seen_ = RunRecords{};
    remaining_ = at_.plan.tests;
    summary_ = RunSummary{};
    results_ = 0;
}

// After a process: whether the rest of the order gets a fresh one.
bool OrderRun::carry_on(const RunRecords& process, const LaunchResult& result) {
    if (process.sessions.empty()) {  // pytest never reached our session record
        summary_.harness_ok = false;
        summary_.note = "pytest did not start the tests (" + describe_pytest(result) + "); see " + at_.log.string();
        seen_ = parse_run_records(at_.records.text(), source_);
        return false;
    }
    const auto position = mark_interrupted(process, result);
    seen_ = parse_run_records(at_.records.text(), source_);
    if (position == at_.plan.tests.size()) {
        if (process.processes_ended == 0) summary_.note = "pytest died outside any test (" + describe_pytest(result) + "); see " + at_.log.string();
        return false;
    }
    remaining_ = rest_of(at_.plan, position, seen_);
    if (summary_.processes >= kMaxProcesses && !remaining_.empty()) {
        summary_.note = "gave up after " + std::to_string(kMaxProcesses) + " interpreter deaths; " +
                        std::to_string(remaining_.size()) + " tests did not run";
        return false;
    }
    return true;
}

// The interpreter died, or pytest stopped (an INTERNALERROR, pytest.exit) inside a test: that
// test is interrupted, and the rest of the order runs afresh. Returns its position in the plan
// (the plan's size when no test was cut short).
std::size_t OrderRun::mark_interrupted(const RunRecords& process, const LaunchResult& result) {
    const auto& tests = at_.plan.tests;
    for (auto it = process.started.rbegin(); it != process.started.rend(); ++it) {
        if (process.results.count(*it) != 0) continue;
        at_.records.append_record(interrupted_record(*it, describe_pytest(result)));
        summary_.interrupted.push_back(*it);
        return static_cast<std::size_t>(std::find(tests.begin(), tests.end(), *it) - tests.begin());
    }
    return tests.size();
}

RunSummary OrderRun::finish() {
    // A change the notifications missed, which the stat-scan run did not see again: the first
    // sighting stands (the write may have gone through a mapping only the first run had).
    if (scanning_) {
        const auto reported = reported_changes(seen_);
        std::vector<std::string> unseen;
        for (const auto& group : missed_first_)
            if (!reported.count(group)) unseen.push_back(group);
        if (!unseen.empty()) at_.records.append_record(outside_record("unseen", unseen));
    }
    const auto& tests = at_.plan.tests;
    const std::set<std::string> interrupted(summary_.interrupted.begin(), summary_.interrupted.end());
    summary_.complete = summary_.harness_ok && std::all_of(tests.begin(), tests.end(), [&](const std::string& t) {
                            return seen_.results.count(t) != 0 || interrupted.count(t) != 0;
                        });
    summary_.results = seen_.results.size();
    for (const auto& [test, result] : seen_.results) summary_.failed += outcome_class(result.outcome) == OutcomeClass::fail;
    if (!summary_.complete && summary_.note.empty())
        summary_.note = "some planned tests have no result (" + describe_pytest(last_) + "); see " + at_.log.string();
    if (!lease_note_.empty()) summary_.note = lease_note_ + (summary_.note.empty() ? "" : "; " + summary_.note);
    summary_.isolation = forks_.isolation(summary_.processes);
    summary_.isolation_note = forks_.why();
    at_.records.finish(finished_record(summary_, at_.receipt.id));
    fs::remove(at_.order);
    return summary_;
}

}  // namespace

RunSummary run_order(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, const RunPlan& plan) {
    const auto dir = plan.runs_dir.empty() ? suite.runs_dir() : plan.runs_dir;
    const auto log = log_file(suite, plan.id);
    fs::create_directories(dir);
    fs::create_directories(log.parent_path());
    fs::remove(log);
    empty_sandbox(suite, log);
    const auto removed = gsl::finally([&] { remove_sandbox(suite, log); });  // whatever ends the run
    // evgate writes the records itself, from what pytest sends on its channel.
    RecordsFile records(records_file(suite, plan));
    FixtureStore::Lease lease(store, plan.access, plan.id.str());  // from the first process to the last restore
    RunPlan written = plan;
    written.lease = lease.token();
    write_plan(dir / evidence::plan_name(plan.id.str()), written);
    return OrderRun({suite, receipt, store, plan, dir / evidence::order_name(plan.id.str()), log, records, lease}).run();
}

}  // namespace evgate
