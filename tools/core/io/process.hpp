// Child processes in their own process group, bounded in time, never outliving us. How evgate
// stops is stop.hpp; the loop that waits for a child, child_wait.hpp.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "io/error.hpp"
#include "io/stop.hpp"

namespace evgate {

// A stream the child writes on a descriptor it inherits, read while it runs (record_channel.hpp).
class ChildChannel {
public:
    virtual ~ChildChannel() = default;
    virtual int child_end() const = 0;   // kept open across exec in the child alone, at this number
    virtual void close_child_end() = 0;  // in evgate, once the child has it
    virtual int our_end() const = 0;     // polled while the child runs; -1 once nothing more can come
    virtual void started(pid_t child) = 0;
    virtual void drain() = 0;  // reads what is there, without waiting
    // The child was reaped: its pid may be reused from now on, so nothing sent under it after
    // this is the child's.
    virtual void child_reaped() = 0;
};

struct ProcessSpec {
    std::vector<std::string> argv;  // argv[0] is a path or a name on PATH
    std::filesystem::path cwd;
    std::vector<std::string> environment;                             // the complete environment, VAR=value
    std::filesystem::path output;                                     // stdout and stderr are appended here
    std::chrono::milliseconds timeout{0};                             // 0: no bound
    std::vector<int> cpus;                                            // the CPUs it may run on; empty: all
    std::function<void(std::chrono::milliseconds elapsed)> progress;  // called every progress_every while it runs
    std::chrono::milliseconds progress_every{10000};
    ChildChannel* channel = nullptr;  // read while it runs, and to the end after it
    // On a stop request the child's group is killed; then run_process throws Stopped, unless the
    // caller has something to finish first (a restore): then the result says `stopped`.
    bool return_when_stopped = false;
    const StopSource* stop = nullptr;  // what asks it to stop; nullptr: evgate's own requests (stop.hpp)
    // A deadline the caller moves while the child runs (the bound on what it does now), asked at
    // every wake: when it returns a time that has passed, the child is ended as on `timeout` and
    // the result says `deadline_passed`. Empty, or nullopt: no bound now.
    std::function<std::optional<std::chrono::steady_clock::time_point>()> deadline;
    // Called once the child ended, before what it left running is killed: a process the child
    // leaves running on purpose (a server it started for later use), spared by
    // that kill now and by every later one in this evgate. 0: none.
    std::function<pid_t()> survivor;
};

struct ProcessResult {
    int exit_code = -1;  // when it exited
    int signal = 0;      // when a signal ended it
    bool timed_out = false;
    bool deadline_passed = false;  // the spec's moving deadline passed (the child was ended)
    int stopped = 0;               // the signal that asked evgate to stop while it ran (the child was killed)
    std::chrono::milliseconds elapsed{0};

    bool exited_with(int code) const { return signal == 0 && !timed_out && !deadline_passed && exit_code == code; }
    // "exit 1", "killed by signal 9 (SIGKILL)", "timed out after 600 s", "ended at its deadline after 3 s"
    std::string describe() const;
};

// Runs to completion or timeout. On timeout the whole group gets SIGTERM, then SIGKILL after a
// grace period; after any end the group gets SIGKILL, so grandchildren left behind die too.
ProcessResult run_process(const ProcessSpec& spec);

// `env` (default: the current environment), VAR=value, with `overrides` replacing or adding entries.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);
std::vector<std::string> environment_with(std::vector<std::string> env, const std::vector<std::string>& overrides);

}  // namespace evgate
