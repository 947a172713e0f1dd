#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixtures/shared_tree.hpp"
#include "io/json_io.hpp"
#include "runs/process_checks.hpp"
#include "runs/record_channel.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

void send(int fd, const std::string& text) { REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size())); }

// A channel whose "pytest" is this process; what it was handed, line by line.
struct Heard {
    std::string lines;
    int calls = 0;
    RecordChannel channel{[this](std::string_view whole) {
        lines.append(whole);
        ++calls;
    }};
};

RunRecords process(const std::vector<std::string>& started, const std::map<std::string, std::string>& outcomes,
                   std::vector<int> ends = {0}, std::vector<int> finals = {}, std::vector<int> finishes = {}) {
    RunRecords r;
    r.started = started;
    for (const auto& [test, outcome] : outcomes) r.results[test].outcome = parse_outcome(outcome).value();
    r.exit_statuses = std::move(ends);
    r.final_statuses = finals.empty() ? r.exit_statuses : std::move(finals);
    r.finish_statuses = std::move(finishes);
    r.processes_ended = static_cast<int>(r.exit_statuses.size());
    return r;
}

LaunchResult exited(int code) {
    LaunchResult r;
    r.process.exit_code = code;
    return r;
}

}  // namespace

TEST_CASE("the channel hands on pytest's whole lines and keeps another sender's apart", "[record_channel]") {
    Heard heard;
    heard.channel.started(::getpid());
    const int fd = heard.channel.child_end();
    send(fd, R"({"event":"start","test":"t::fork"})"
             "\n"
             R"({"event":"res)");
    const pid_t child = ::fork();
    if (child == 0) {  // a fork of "pytest": its bytes come stamped with its own pid
        const std::string forged = R"({"event":"result","test":"t::fork","outcome":"passed"})"
                                   "\n"
                                   R"({"event":"end","exitstatus":0})"
                                   "\n"
                                   "{\"torn";
        (void)!::write(fd, forged.data(), forged.size());
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    send(fd, R"(ult","test":"t::fork","outcome":"failed"})"
             "\n");
    heard.channel.close_child_end();
    heard.channel.drain();
    CHECK(heard.lines == R"({"event":"start","test":"t::fork"})"
                         "\n"
                         R"({"event":"result","test":"t::fork","outcome":"failed"})"
                         "\n");
    CHECK(heard.channel.pytest_tail().empty());
    CHECK(heard.channel.our_end() == -1);  // every writer has closed it
    REQUIRE(heard.channel.foreign().size() == 1);
    const auto& foreign = heard.channel.foreign().front();
    CHECK(foreign.pid == child);
    CHECK(foreign.count == 2);
    CHECK(foreign.torn == 6);
    CHECK(foreign.lines == R"({"event":"result","test":"t::fork","outcome":"passed"})"
                           "\n"
                           R"({"event":"end","exitstatus":0})"
                           "\n");
    // When its first bytes came, pytest had handed on its start record and nothing more.
    CHECK(foreign.after == std::string(R"({"event":"start","test":"t::fork"})"
                                       "\n")
                               .size());
}

TEST_CASE("bytes under pytest's pid after it was reaped are not pytest's", "[record_channel]") {
    Heard heard;
    heard.channel.started(4242);
    heard.channel.receive(4242, "{\"event\":\"start\",\"test\":\"t::a\"}\n{\"event\":");
    heard.channel.child_reaped();
    heard.channel.receive(4242, "\"end\"}\n");
    CHECK(heard.lines == "{\"event\":\"start\",\"test\":\"t::a\"}\n");
    CHECK(heard.channel.pytest_tail() == "{\"event\":");
    REQUIRE(heard.channel.foreign().size() == 1);
    CHECK(heard.channel.foreign().front().reused_pid);
    CHECK(heard.channel.foreign().front().count == 1);
}

TEST_CASE("a foreign sender's lines are kept whole up to a bound and counted beyond it", "[record_channel]") {
    Heard heard;
    heard.channel.started(1);
    const std::string line(1000, 'x');
    for (int i = 0; i < 100; ++i) heard.channel.receive(7, line + "\n");
    heard.channel.receive(7, std::string(RecordChannel::kKeptBytes + 10, 'y'));  // a torn line larger than the bound
    const auto& f = heard.channel.foreign().front();
    CHECK(f.count == 100);
    CHECK(f.lines.size() == std::size_t{65} * 1001);  // whole lines only, within kKeptBytes
    CHECK(f.torn == RecordChannel::kKeptBytes + 10);
    CHECK(heard.calls == 0);
}

TEST_CASE("run_process reads the channel while the child runs; a subshell's writes are foreign", "[record_channel]") {
    TempDir dir;
    std::string lines;
    RecordChannel channel([&](std::string_view whole) { lines.append(whole); });
    const auto fd = std::to_string(channel.child_end());
    ProcessSpec spec;
    // bash's printf is a builtin: the same process; ( ... ) forks a subshell. (Not dash: its
    // redirections stop at descriptor 9, and the channel is at RecordChannel::kChannelFloor.)
    CHECK(channel.child_end() >= RecordChannel::kChannelFloor);
    spec.argv = {"/bin/bash", "-c", "printf 'one\\n' >&" + fd + "; (printf 'from a fork\\n' >&" + fd + "); printf 'two\\n' >&" + fd + "; printf 'torn' >&" + fd};
    spec.cwd = dir.path;
    spec.environment = environment_with({});
    spec.output = dir.path / "out.log";
    spec.channel = &channel;
    const auto result = run_process(spec);
    CHECK(result.exited_with(0));
    CHECK(lines == "one\ntwo\n");
    CHECK(channel.pytest_tail() == "torn");
    REQUIRE(channel.foreign().size() == 1);
    CHECK(channel.foreign().front().lines == "from a fork\n");
    CHECK(channel.foreign().front().pid != channel.pytest_pid());
}

TEST_CASE("run_process ends a child past its moving deadline; none, no bound", "[process]") {
    TempDir dir;
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", "sleep 30"};
    spec.cwd = dir.path;
    spec.environment = environment_with({});
    spec.output = dir.path / "out.log";
    spec.timeout = std::chrono::seconds(60);
    const auto started = std::chrono::steady_clock::now();
    spec.deadline = [&]() -> std::optional<std::chrono::steady_clock::time_point> { return started + std::chrono::milliseconds(300); };
    const auto result = run_process(spec);
    CHECK(result.elapsed < std::chrono::seconds(10));
    CHECK(result.deadline_passed);
    CHECK_FALSE(result.timed_out);
    CHECK_FALSE(result.exited_with(0));
    CHECK(result.describe() == "ended at its deadline after 0 s");
    SECTION("no deadline now: no bound") {
        spec.argv = {"/bin/sh", "-c", "sleep 0.5"};
        spec.deadline = []() -> std::optional<std::chrono::steady_clock::time_point> { return std::nullopt; };
        CHECK(run_process(spec).exited_with(0));
    }
}

TEST_CASE("how a pytest process ended, in words", "[launcher]") {
    LaunchResult r;
    r.process.exit_code = 1;
    CHECK(r.describe() == "exit 1");
    r.test_timed_out = std::chrono::seconds(120);
    r.process.deadline_passed = true;
    r.process.signal = 15;
    CHECK(r.describe() == "exceeded TEST_TIMEOUT (120 s)");
    r = LaunchResult{};
    r.note = "the fork server did not say how its worker ended";
    CHECK(r.describe() == "ended, how is not known: the fork server did not say how its worker ended");
    r.process.signal = 9;
    CHECK(r.describe() == "killed by signal 9 (SIGKILL); the fork server did not say how its worker ended");
    r = LaunchResult{};
    r.process.stopped = 2;
    CHECK(r.describe() == "stopped by SIGINT");
}

TEST_CASE("ordinals", "[process_checks]") {
    CHECK(ordinal(1) == "1st");
    CHECK(ordinal(2) == "2nd");
    CHECK(ordinal(3) == "3rd");
    CHECK(ordinal(4) == "4th");
    CHECK(ordinal(11) == "11th");
    CHECK(ordinal(12) == "12th");
    CHECK(ordinal(13) == "13th");
    CHECK(ordinal(21) == "21st");
    CHECK(ordinal(102) == "102nd");
    CHECK(ordinal(111) == "111th");
}

TEST_CASE("the order a process ran against the order it was given", "[process_checks]") {
    const std::vector<std::string> planned = {"t::a", "t::b", "t::c", "t::d"};
    CHECK_FALSE(order_divergence(planned, planned));
    CHECK_FALSE(order_divergence(planned, {"t::a", "t::b"}));  // it died or stopped: the missing results say so
    CHECK_FALSE(order_divergence(planned, {}));
    CHECK(order_divergence(planned, {"t::d", "t::c", "t::b", "t::a"}) ==
          std::string("t::d ran 1st, planned 4th: a plugin or conftest re-ordered the tests after evidence-gate"));
    CHECK(order_divergence(planned, {"t::a", "t::b", "t::a"}) ==
          std::string("t::a ran twice (1st and 3rd): a plugin or conftest ran it again after evidence-gate ordered the tests"));
    CHECK(order_divergence(planned, {"t::a", "t::x"}) ==
          std::string("t::x ran 2nd, but evidence-gate did not plan it in this process: a plugin or conftest added it"));
    CHECK(order_divergence(planned, {"t::a", "t::c", "t::d"}) ==
          std::string("t::b was planned 2nd and never ran, t::c ran in its place (planned 3rd): a plugin or conftest "
                      "dropped it after evidence-gate ordered the tests"));
    CHECK_THAT(*order_divergence(planned, {"t::a", "t::b", "t::c", "t::d", "t::a"}), Catch::StartsWith("t::a ran twice (1st and 5th)"));
}

TEST_CASE("pytest's exit status must be the one its results call for", "[process_checks]") {
    const auto passed = process({"t::a", "t::b"}, {{"t::a", "passed"}, {"t::b", "xfailed"}});
    CHECK_FALSE(exit_status_problem(passed, exited(0)));
    const auto failed = process({"t::a", "t::b"}, {{"t::a", "failed"}, {"t::b", "skipped"}}, {1});
    CHECK_FALSE(exit_status_problem(failed, exited(1)));
    CHECK_FALSE(exit_status_problem(process({"t::a"}, {{"t::a", "error"}}, {1}), exited(1)));
    CHECK_FALSE(exit_status_problem(process({"t::a"}, {{"t::a", "xpassed"}}), exited(0)));  // xpass, not strict

    CHECK(exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {0}, {1}), exited(1)) ==
          std::string("a pytest_sessionfinish hook changed pytest's exit status from 0 to 1 while its records say every "
                      "test it ran passed, skipped or xfailed (status 0)"));
    CHECK(exit_status_problem(process({"t::a", "t::b"}, {{"t::a", "failed"}, {"t::b", "error"}}, {1}, {0}), exited(0)) ==
          std::string("a pytest_sessionfinish hook changed pytest's exit status from 1 to 0 while its records say t::a "
                      "failed (and 1 more) (status 1)"));
    // The plugin says the status after pytest_sessionfinish and after the conftests' pytest_unconfigure:
    // the phase that changed it is named.
    CHECK(exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {0}, {1}, {1}), exited(1)) ==
          std::string("a pytest_sessionfinish hook changed pytest's exit status from 0 to 1 while its records say every "
                      "test it ran passed, skipped or xfailed (status 0)"));
    CHECK(exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {0}, {1}, {0}), exited(1)) ==
          std::string("a pytest_unconfigure hook changed pytest's exit status from 0 to 1 while its records say every "
                      "test it ran passed, skipped or xfailed (status 0)"));
    CHECK(exit_status_problem(process({"t::a"}, {{"t::a", "failed"}}, {1}, {0}, {1}), exited(0)) ==
          std::string("a pytest_unconfigure hook changed pytest's exit status from 1 to 0 while its records say t::a "
                      "failed (status 1)"));
    CHECK_THAT(*exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {2}), exited(2)),
               Catch::StartsWith("pytest ended its session with exit status 2 while its records say every test"));
    CHECK_THAT(*exit_status_problem(passed, exited(4)),
               Catch::StartsWith("pytest ended (exit 4) after its session ended with status 0 while its records say"));
    CHECK_THAT(*exit_status_problem(process({"t::a"}, {{"t::a", "failed"}}, {1}), exited(0)),
               Catch::StartsWith("pytest ended (exit 0) after its session ended with status 1 while its records say t::a failed"));
    LaunchResult hung;
    hung.process.timed_out = true;
    hung.process.signal = 9;
    hung.process.elapsed = std::chrono::seconds(6);
    CHECK_THAT(*exit_status_problem(passed, hung), Catch::StartsWith("pytest ended (timed out after 6 s) after its session"));
    CHECK_THAT(*exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {}), exited(0)),
               Catch::Contains("without finishing its session (no 'end' record)"));

    // Not judged: nothing ran, a test has no result (interrupted: that blocks), evgate was stopped.
    CHECK_FALSE(exit_status_problem(process({}, {}, {5}), exited(5)));
    CHECK_FALSE(exit_status_problem(process({"t::a", "t::b"}, {{"t::a", "passed"}}, {}), exited(3)));
    LaunchResult stopped = exited(0);
    stopped.process.stopped = 2;
    CHECK_FALSE(exit_status_problem(process({"t::a"}, {{"t::a", "passed"}}, {}), stopped));
}

TEST_CASE("a foreign record names the process, the test it forked in, its events and tests", "[process_checks]") {
    ForeignSender sender;
    sender.pid = 77;
    sender.lines = R"({"event":"result","test":"t::fork","outcome":"passed"})"
                   "\n"
                   R"({"event":"end","exitstatus":0})"
                   "\n";
    sender.count = 2;
    const std::string pytest = R"({"event":"session"})"
                               "\n"
                               R"({"event":"start","test":"t::a"})"
                               "\n"
                               R"({"event":"result","test":"t::a","outcome":"passed"})"
                               "\n"
                               R"({"event":"start","test":"t::fork"})"
                               "\n";
    sender.after = pytest.size();
    auto doc = parse_json(foreign_record(sender, pytest + R"({"event":"start","test":"t::later"})"
                                                          "\n"),
                          "foreign");
    CHECK(std::string(doc["reason"].GetString()) ==
          "a process forked during t::fork (pid 77) wrote a result record and an end record naming t::fork: not evidence of this run");
    CHECK(doc["pid"].GetInt() == 77);
    CHECK(doc["records"].GetInt() == 2);
    CHECK(doc["events"]["result"].GetInt() == 1);
    CHECK(std::string(doc["during"].GetString()) == "t::fork");

    sender.after = 0;  // before pytest handed on anything: forked at import or collection
    sender.lines +=
        "not json\n"
        R"({"event":"start","test":"t::b"})"
        "\n"
        R"({"event":"start","test":"t::c"})"
        "\n";
    sender.count = 5;
    sender.torn = 9;
    doc = parse_json(foreign_record(sender, pytest), "foreign");
    CHECK(std::string(doc["reason"].GetString()) ==
          "a process forked before any test started (pid 77) wrote a result record, an end record, an unreadable record "
          "and 2 start records and 9 bytes of a torn line naming t::fork and 2 more tests: not evidence of this run");
    CHECK(doc["during"].IsNull());
}

TEST_CASE("a run that changed the groups beside another run is done again; alone it is not", "[shared_tree]") {
    const std::vector<RunSpan> spans = {
        {"a", 10, 20, true},   // changed the groups, beside b
        {"b", 15, 30, false},  // only read, beside a
        {"c", 40, 50, true},   // changed them, alone
        {"d", 60, 70, false},
    };
    CHECK(changed_beside_another(spans, "a"));
    CHECK_FALSE(changed_beside_another(spans, "b"));  // overlapped_a_change covers b
    CHECK(overlapped_a_change(spans, "b"));
    CHECK_FALSE(changed_beside_another(spans, "c"));
    CHECK_FALSE(changed_beside_another(spans, "d"));
    CHECK_FALSE(changed_beside_another(spans, ""));
}
