// Where a pytest process of a run is started and waited on (the model: ninja's CommandRunner):
// one interface, Launcher, with two real implementations, a fresh process (ProcessLauncher,
// here) and a fork of the collected session (ForkLauncher, fork_launcher.hpp), and a fake for
// unit tests (tests/unit/fake_launcher.hpp); tests/unit/test_launchers.cpp holds all three to the
// same cases. Which one a run's process gets is ForkSession's choice (fork_session.hpp). Each
// waits in the one loop of io/child_wait.hpp and ends a process alike (TIMEOUT, TEST_TIMEOUT, a
// stop), saying so in the same words (LaunchResult).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "io/process.hpp"

namespace evgate {

struct LaunchSpec {
    // Its command line, environment, log, record channel, TIMEOUT, progress and stop; its
    // `deadline`: when the test running now passes TEST_TIMEOUT (nullopt between tests).
    ProcessSpec process;
    std::chrono::milliseconds test_timeout{0};  // that bound, for the words of the result
};

struct LaunchResult {
    ProcessResult process;
    std::chrono::milliseconds test_timed_out{0};  // the TEST_TIMEOUT a test exceeded (the child was killed)
    std::string note;                             // what else is known of its end ("the fork server was gone")
    bool server_lost = false;                     // a fork whose server ended (or fell silent) while it ran

    bool exited_with(int code) const { return process.exited_with(code); }
    // As ProcessResult's, and "exceeded TEST_TIMEOUT (60 s)", "ended, how is not known: <note>",
    // "killed by signal 9 (SIGKILL); <note>".
    std::string describe() const;
};

// How `process`, launched as `spec`, ended, in a launcher's words.
LaunchResult launch_result(const ProcessResult& process, const LaunchSpec& spec);

class Launcher {
public:
    virtual ~Launcher() = default;
    // Runs `spec` to its end: a process group of its own, bounded by TIMEOUT and TEST_TIMEOUT,
    // killed on a stop (then Stopped is thrown, unless spec.process.return_when_stopped), its
    // record channel read while it runs and to its end. nullopt when nothing was started (a
    // fork server that refused or is gone): the caller starts it otherwise, with the channel
    // untouched.
    virtual std::optional<LaunchResult> run(const LaunchSpec& spec) = 0;
    // Whether it starts anything more (a fork server that refused, is gone or misbehaved does
    // not: no later run asks it), and why not.
    virtual bool serving() const { return true; }
    virtual std::string why_not() const { return {}; }
};

// A fresh process (run_process), every time.
class ProcessLauncher final : public Launcher {
public:
    std::optional<LaunchResult> run(const LaunchSpec& spec) override;
};

}  // namespace evgate
