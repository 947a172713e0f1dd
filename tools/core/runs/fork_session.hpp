// A run's pytest processes as forks of the suite's collected session (fork_server.hpp): each
// asked for on the server's socket with the run's command line, environment, log and record
// channel, and to the run no different from what run_process starts: a process group of its own,
// bounded by TIMEOUT and TEST_TIMEOUT, killed on a stop, what it leaves in its group killed
// after it (what it leaves outside, the server kills). When the server refuses a run, or is
// gone, or misbehaves, the run goes on in processes, and says so.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include <rapidjson/document.h>

#include "inputs/suite_config.hpp"
#include "io/process.hpp"
#include "runs/ctest_claim.hpp"
#include "runs/receipt.hpp"

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
    // `deadline` (then throws Error); a stop request throws Stopped, unless `on_stop` is wait.
    std::optional<rapidjson::Document> receive(std::chrono::steady_clock::time_point deadline, OnStop on_stop = OnStop::stop);
    // Reads what has come, without waiting; false once the server closed the connection.
    bool read_available();
    // A whole line read so far, parsed; nullopt when none.
    std::optional<rapidjson::Document> next_line();

private:
    int fd_ = -1;
    pid_t peer_ = 0;
    std::string buffer_;
};

class ForkSession {
public:
    // For a run of `receipt`: forks when the receipt says a server serves its runs.
    ForkSession(const SuiteConfig& suite, const Receipt& receipt);

    // No forks for this run (a perturbed run: a fresh interpreter), saying why.
    void decline(std::string why);
    // `spec` (a pytest process as pytest_command.hpp makes it, with its record channel) as a
    // fork. nullopt when no fork was started: the server refused, or is gone (why() says so, and
    // no later process of this run is asked for): the caller starts a process, with the channel
    // untouched. Throws Stopped as run_process does.
    std::optional<ProcessResult> run(const ProcessSpec& spec);

    bool forking() const { return forking_; }
    // The collection's PYTHONHASHSEED, which every process of the run gets ("" when the receipt
    // fixed none).
    const std::string& hash_seed() const { return hash_seed_; }
    int forks() const { return forks_; }
    // The run starts over: the forks so far are no evidence of it.
    void start_over() { forks_ = 0; }
    // "fork", "process" or "fork, then process": how the run's processes were started.
    std::string isolation(int processes) const;
    // Why processes were started ("" when every one was a fork).
    const std::string& why() const { return why_; }
    // Whether the last fork wrote in, or ran while another fork had written in, the collection's
    // HOME or TMPDIR: a path a module took at import points there in every fork, so forks share
    // what each run should have fresh. The fork's records are no evidence then: the run starts
    // over in a process, and no run of the invocation forks from then on (evidence/forks.declined).
    bool shared_the_collection_sandbox() const { return shared_; }

private:
    std::optional<ProcessResult> refused(const std::string& why);
    ProcessResult wait(const ProcessSpec& spec, ServerConnection& server, pid_t worker,
                       std::chrono::steady_clock::time_point start);
    void lost(const std::string& why);
    // Kills the server, still the one the receipt bound, that this run gave up on: a worker it
    // might start later would run with nobody waiting for it (it dies with the server).
    void end_server();

    // Forks declined from now on, and why, for every run of the invocation.
    void decline_for_all(const std::string& why);
    bool declined_elsewhere();

    std::filesystem::path socket_;
    std::filesystem::path collection_sandbox_, declined_file_;
    std::string sandbox_fingerprint_;  // the collection's sandbox as the collection left it
    bool shared_ = false;
    std::optional<ProcessIdentity> server_;
    std::string receipt_id_;
    std::string hash_seed_;
    bool forking_ = false;
    int forks_ = 0;
    std::string why_;
};

// A request that is its operation alone: {"op":"reap"}, {"op":"stop"}.
std::string op_request(std::string_view op);

// The parent of `pid` (field 4 of /proc/<pid>/stat); 0 when it is gone.
pid_t parent_of(pid_t pid);

}  // namespace evgate
