// The launchers of a run's pytest processes (runs/launcher.hpp) held to one contract: the fake
// (fake_launcher.hpp), a fresh process and a fork of a fork server (a socket-level fake of the
// collected session's, fake_fork_server.hpp) run the same cases: a child that passes, one that
// exits non-zero, TIMEOUT killing its group, TEST_TIMEOUT, a stop mid-run, the record channel
// read whole; and the choice between them (ForkSession) with fakes for both. Each case takes
// milliseconds (300 ms at most).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include <unistd.h>

#include "fake_fork_server.hpp"
#include "fake_launcher.hpp"
#include "inputs/evidence_layout.hpp"
#include "io/stop.hpp"
#include "runs/fork_launcher.hpp"
#include "runs/fork_session.hpp"
#include "runs/launcher.hpp"
#include "runs/pytest_command.hpp"
#include "runs/record_channel.hpp"
#include "support.hpp"

using namespace evgate;
using namespace std::chrono_literals;
using evgate::test::FakeChild;
using evgate::test::FakeForkServer;
using evgate::test::FakeLauncher;
using evgate::test::TempDir;

namespace {

// What the child of a case does, in terms every launcher can run.
struct Behaviour {
    std::string writes;  // on its record channel, at once
    std::chrono::milliseconds runs_for{0};
    int exit_code = 0;
    // Starts `sleep 30` in its group, and says its pid on the channel ("grandchild <pid>\n").
    bool leaves_grandchild = false;
};

// What every rig holds: a scratch directory, the case's own stop request (never evgate's), the
// record channel and what came through it, and the launch.
struct Rig {
    TempDir dir;
    StopPipe stop;
    std::string lines;
    RecordChannel channel{[this](std::string_view whole) { lines.append(whole); }};
    LaunchSpec launch;

    Rig() {
        stop.open();
        auto& spec = launch.process;
        spec.cwd = dir.path;
        spec.output = dir.path / "out.log";
        spec.environment = environment_with({"CHANNEL_FD=" + std::to_string(channel.child_end())});
        spec.channel = &channel;
        spec.stop = &stop;
    }
};

// The behaviour as a bash script (bash: dash's redirections stop at descriptor 9, and the
// channel is at RecordChannel::kChannelFloor or above).
std::vector<std::string> script(const Behaviour& b, int channel) {
    const auto to_channel = " >&" + std::to_string(channel);
    std::string text;
    if (!b.writes.empty()) text += "printf '%s' " + shell_quote(b.writes) + to_channel + "; ";
    if (b.leaves_grandchild) text += "sleep 30 & printf 'grandchild %d\\n' $!" + to_channel + "; ";
    if (b.runs_for.count() > 0) text += "sleep " + std::to_string(static_cast<double>(b.runs_for.count()) / 1000) + "; ";
    text += "exit " + std::to_string(b.exit_code);
    return {"/bin/bash", "-c", text};
}

// Whether the grandchild a real child said it left is gone (killed with its group, and reaped).
bool grandchild_gone(const std::string& lines) {
    const auto at = lines.find("grandchild ");
    if (at == std::string::npos) return false;
    pid_t pid = 0;
    std::istringstream(lines.substr(at + 11)) >> pid;
    return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
}

struct FakeRig : Rig {
    Behaviour behaviour;
    FakeLauncher launcher{[this](const LaunchSpec&) {
        FakeChild child;
        child.writes = {{0ms, behaviour.writes}};
        child.runs_for = behaviour.runs_for;
        child.exit_code = behaviour.exit_code;
        return child;
    }};
    void child(const Behaviour& b) {
        behaviour = b;
        launch.process.argv = {"fake"};
    }
    bool group_ended() const {
        const auto& sent = launcher.signals();
        return std::find(sent.begin(), sent.end(), SIGTERM) != sent.end() || std::find(sent.begin(), sent.end(), SIGKILL) != sent.end();
    }
};

struct ProcessRig : Rig {
    ProcessLauncher launcher;
    void child(const Behaviour& b) { launch.process.argv = script(b, channel.child_end()); }
    bool group_ended() const { return grandchild_gone(lines); }
};

struct ForkRig : Rig {
    FakeForkServer server{dir.path / "fork.sock"};
    ForkLauncher launcher{dir.path / "fork.sock", std::nullopt, "receipt-1"};
    void child(const Behaviour& b) { launch.process.argv = script(b, channel.child_end()); }
    bool group_ended() const { return grandchild_gone(lines); }
};

LaunchResult launched(Launcher& launcher, const LaunchSpec& spec) {
    auto result = launcher.run(spec);
    REQUIRE(result);
    return *result;
}

}  // namespace

TEMPLATE_TEST_CASE("a launched child that passes: exit 0, its records read to the channel's end", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"{\"event\":\"start\"}\n", 0ms, 0});
    const auto result = launched(rig.launcher, rig.launch);
    CHECK(result.exited_with(0));
    CHECK(result.describe() == "exit 0");
    CHECK_FALSE(result.server_lost);
    CHECK(rig.lines == "{\"event\":\"start\"}\n");
    CHECK(rig.channel.our_end() == -1);  // every writer is gone, and it was read to the end
    CHECK(rig.channel.foreign().empty());
}

TEMPLATE_TEST_CASE("a launched child that exits non-zero says its status", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"", 0ms, 3});
    const auto result = launched(rig.launcher, rig.launch);
    CHECK(result.process.exit_code == 3);
    CHECK_FALSE(result.exited_with(0));
    CHECK(result.describe() == "exit 3");
}

TEMPLATE_TEST_CASE("TIMEOUT ends a launched child's group", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"", 30s, 0, true});
    rig.launch.process.timeout = 200ms;
    const auto result = launched(rig.launcher, rig.launch);
    CHECK(result.process.timed_out);
    CHECK(result.process.signal == SIGTERM);
    CHECK_FALSE(result.exited_with(0));
    CHECK(result.process.elapsed < 5s);
    CHECK_THAT(result.describe(), Catch::StartsWith("timed out after "));
    CHECK(rig.group_ended());
}

TEMPLATE_TEST_CASE("TEST_TIMEOUT ends a launched child past the running test's bound, and only then", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.launch.test_timeout = 200ms;
    SECTION("a test runs past it") {
        rig.child({"", 30s, 0});
        const auto start = std::chrono::steady_clock::now();
        rig.launch.process.deadline = [start]() -> std::optional<std::chrono::steady_clock::time_point> { return start + 200ms; };
        const auto result = launched(rig.launcher, rig.launch);
        CHECK(result.test_timed_out == 200ms);
        CHECK_FALSE(result.process.timed_out);
        CHECK_FALSE(result.exited_with(0));
        CHECK(result.process.elapsed < 5s);
        CHECK(result.describe() == "exceeded TEST_TIMEOUT (200 ms)");
    }
    SECTION("no test runs: no bound") {
        rig.child({"", 300ms, 0});
        rig.launch.process.deadline = []() -> std::optional<std::chrono::steady_clock::time_point> { return std::nullopt; };
        const auto result = launched(rig.launcher, rig.launch);
        CHECK(result.exited_with(0));
        CHECK(result.test_timed_out == 0ms);
    }
}

TEMPLATE_TEST_CASE("a stop asked while a launched child runs kills it at once", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"one\n", 30s, 0});
    rig.launch.process.progress_every = 100ms;
    rig.launch.process.progress = [&rig](std::chrono::milliseconds) { rig.stop.ask(SIGINT); };
    SECTION("the caller has a restore to do first: the result says so") {
        rig.launch.process.return_when_stopped = true;
        const auto result = launched(rig.launcher, rig.launch);
        CHECK(result.process.stopped == SIGINT);
        CHECK(result.process.signal == SIGKILL);
        CHECK(result.process.elapsed < 5s);
        CHECK(result.describe() == "stopped by SIGINT");
        CHECK(rig.lines == "one\n");
    }
    SECTION("else Stopped is thrown") {
        CHECK_THROWS_AS(rig.launcher.run(rig.launch), Stopped);
    }
}

TEMPLATE_TEST_CASE("a stop asked before the launch starts nothing", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"one\n", 0ms, 0});
    rig.stop.ask(SIGTERM);
    CHECK_THROWS_AS(rig.launcher.run(rig.launch), Stopped);
    CHECK(rig.lines.empty());
}

TEMPLATE_TEST_CASE("a launched child's channel: whole lines handed on, a torn last line kept apart", "[launcher]", FakeRig, ProcessRig, ForkRig) {
    TestType rig;
    rig.child({"one\ntwo\ntorn", 50ms, 0});
    const auto result = launched(rig.launcher, rig.launch);
    CHECK(result.exited_with(0));
    CHECK(rig.lines == "one\ntwo\n");
    CHECK(rig.channel.pytest_tail() == "torn");
    CHECK(rig.channel.foreign().empty());
}

TEST_CASE("a fork server that refuses starts nothing, and is asked no more", "[launcher]") {
    Rig rig;
    FakeForkServer server(rig.dir.path / "fork.sock", FakeForkServer::Mode::refuse);
    ForkLauncher launcher(rig.dir.path / "fork.sock", std::nullopt, "receipt-1");
    rig.launch.process.argv = script({}, rig.channel.child_end());
    CHECK_FALSE(launcher.run(rig.launch));
    CHECK_FALSE(launcher.serving());
    CHECK(launcher.why_not() == "refused: told to");
    CHECK(rig.channel.child_end() >= 0);  // untouched: a process gets it
    CHECK_FALSE(launcher.run(rig.launch));
}

TEST_CASE("a fork server gone while its worker runs: the run says so, and it is asked no more", "[launcher]") {
    Rig rig;
    FakeForkServer server(rig.dir.path / "fork.sock", FakeForkServer::Mode::vanish);
    ForkLauncher launcher(rig.dir.path / "fork.sock", std::nullopt, "receipt-1");
    rig.launch.process.argv = script({"one\n", 30s, 0}, rig.channel.child_end());
    const auto result = launched(launcher, rig.launch);
    CHECK(result.server_lost);
    CHECK(result.process.signal == SIGKILL);
    CHECK(result.process.elapsed < 5s);
    CHECK(result.describe() == "killed by signal 9 (SIGKILL); the fork server was gone");
    CHECK(rig.lines == "one\n");
    CHECK_FALSE(launcher.serving());
    CHECK(launcher.why_not() == "it ended while a run ran");
}

// The choice between them (runs/fork_session.hpp), with fakes for both.
TEST_CASE("a run forks while its fork launcher serves, then starts processes, and says which and why", "[launcher]") {
    Rig rig;
    const evgate::test::Env sandboxes("EVIDENCE_GATE_SANDBOX_DIR", (rig.dir.path / "sandboxes").string());
    SuiteConfig suite;
    suite.name = "s";
    suite.evidence_dir = rig.dir.path / "evidence";
    std::filesystem::create_directories(suite.evidence_dir);
    Isolation isolation;
    isolation.forks = true;
    isolation.hash_seed = "7";
    const auto script = [](const LaunchSpec&) { return FakeChild{}; };
    auto fork_owned = std::make_unique<FakeLauncher>(script);
    auto process_owned = std::make_unique<FakeLauncher>(script);
    auto& fork = *fork_owned;
    auto& process = *process_owned;
    ForkSession session(suite, isolation, std::move(fork_owned), std::move(process_owned));
    CHECK(session.hash_seed() == "7");
    rig.launch.process.argv = {"fake"};

    SECTION("the server refuses: the run goes on in processes, and never asks it again") {
        CHECK(session.run(rig.launch).exited_with(0));
        CHECK(session.forked());
        fork.refuse("refused: told to");
        CHECK(session.run(rig.launch).exited_with(0));
        CHECK_FALSE(session.forked());
        CHECK(session.run(rig.launch).exited_with(0));
        CHECK(fork.launched() == 1);
        CHECK(process.launched() == 2);
        CHECK(session.isolation(3) == "fork, then process");
        CHECK(session.why() == "the fork server: refused: told to");
    }
    SECTION("a run that declines forks starts processes only") {
        session.decline("its environment is not the collection's");
        CHECK(session.run(rig.launch).exited_with(0));
        CHECK(fork.launched() == 0);
        CHECK(session.isolation(1) == "process");
        CHECK(session.why() == "its environment is not the collection's");
    }
    SECTION("another run of the invocation stopped forking: so does this one") {
        evgate::test::write_text(suite.evidence_dir / evidence::kForksDeclined, "a test wrote in the collection's HOME");
        CHECK(session.run(rig.launch).exited_with(0));
        CHECK(fork.launched() == 0);
        CHECK(session.why() == "a test wrote in the collection's HOME");
    }
}
