// A pytest process as a fork of the suite's collected session (fork_server.hpp), a Launcher
// (launcher.hpp): asked for on the server's socket with the run's command line, environment, log
// and record channel, and to the run no different from what ProcessLauncher starts: a process
// group of its own, bounded by TIMEOUT and TEST_TIMEOUT, killed on a stop, what it leaves in its
// group killed after it (what it leaves outside, the server kills). A server that refuses, is
// gone or misbehaves is asked no more (serving() says so, and why_not() why). Which runs fork is
// fork_session.hpp's choice.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <rapidjson/document.h>

#include "io/stop.hpp"
#include "runs/ctest_claim.hpp"
#include "runs/launcher.hpp"

namespace evgate {

// One connection to a fork server: a Unix stream socket whose peer must run as this user (and
// be `expected`, pid and start time, when given); one JSON object a line each way.
class ServerConnection {
public:
    // Throws Error saying why it could not connect, or whom it found instead.
    ServerConnection(const std::filesystem::path& socket, const std::optional<ProcessIdentity>& expected);
    ~ServerConnection();
    ServerConnection(const ServerConnection&) = delete;
    ServerConnection& operator=(const ServerConnection&) = delete;

    pid_t peer() const { return peer_; }
    int fd() const { return fd_; }
    // One line (`json` and '\n'), with `fds` as SCM_RIGHTS on its first byte.
    void send(std::string_view json, const std::vector<int>& fds = {});
    // What a stop request does to a wait for the server: ends it (Stopped), or not, where a run
    // under way needs the answer to end (the worker it started, its reap); then the wait goes
    // on for kStopGracePeriod after the stop at most.
    enum class OnStop { stop,
                        wait };
    // The next line the server sent, parsed; nullopt once it closed the connection. Waits until
    // `deadline` (then throws Error); a stop request (of `stop`) throws Stopped, unless `on_stop` is wait.
    std::optional<rapidjson::Document> receive(std::chrono::steady_clock::time_point deadline, OnStop on_stop = OnStop::stop,
                                               const StopSource& stop = stop_requests());
    // Reads what has come, without waiting; false once the server closed the connection.
    bool read_available();
    // A whole line read so far, parsed; nullopt when none.
    std::optional<rapidjson::Document> next_line();

private:
    int fd_ = -1;
    pid_t peer_ = 0;
    std::string buffer_;
};

class ForkLauncher final : public Launcher {
public:
    // Forks of the server at `socket` (which must be `server`, when given) for runs of `receipt_id`.
    ForkLauncher(std::filesystem::path socket, std::optional<ProcessIdentity> server, std::string receipt_id);

    // launch.process as a fork; nullopt when none was started (the server refused, or is gone, or
    // answered with a process not its own). Throws Stopped as run_process does.
    std::optional<LaunchResult> run(const LaunchSpec& launch) override;

    bool serving() const override { return lost_.empty(); }
    std::string why_not() const override { return lost_; }  // "refused: ...", "it ended while a run ran"

private:
    std::optional<LaunchResult> refused(const std::string& why);
    LaunchResult wait(const LaunchSpec& launch, ServerConnection& server, pid_t worker, std::chrono::steady_clock::time_point start);
    // Kills the server, still the one the receipt bound, that this run gave up on: a worker it
    // might start later would run with nobody waiting for it (it dies with the server).
    void end_server();

    std::filesystem::path socket_;
    std::optional<ProcessIdentity> server_;
    std::string receipt_id_;
    std::string lost_;
};

// A request that is its operation alone: {"op":"reap"}, {"op":"stop"}.
std::string op_request(std::string_view op);

// The parent of `pid` (field 4 of /proc/<pid>/stat); 0 when it is gone.
pid_t parent_of(pid_t pid);

}  // namespace evgate
