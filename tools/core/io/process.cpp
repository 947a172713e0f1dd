#include "io/process.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl>

#include "io/child_wait.hpp"

extern char** environ;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const ProcessSpec& spec, char** argv, char** envp, pid_t parent, const cpu_set_t* cpus) {
    // Its own group, always: a test's os.killpg(0, ...) reaches pytest and what it started,
    // never evgate or ctest.
    ::setpgid(0, 0);
    if (cpus != nullptr) ::sched_setaffinity(0, sizeof(cpu_set_t), cpus);  // best effort: the OS may refuse
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);                                    // a kill -9 of evgate takes pytest down with it
    if (::getppid() != parent) ::_exit(127);
    int out = ::open(spec.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) ::_exit(127);
    // The channel is close-on-exec in evgate (a child of another thread must not inherit it);
    // this child keeps it.
    if (spec.channel != nullptr && ::fcntl(spec.channel->child_end(), F_SETFD, 0) != 0) ::_exit(127);
    if (::chdir(spec.cwd.c_str()) != 0) ::_exit(127);
    environ = envp;
    ::execvp(argv[0], argv);
    ::_exit(127);
}

// A child of ours as the wait loop sees it: its end seen at once on a pidfd (before Linux 5.3,
// in short naps), and by waitid(2) without reaping it.
class ProcessChild final : public WaitedChild {
public:
    explicit ProcessChild(pid_t pid)
        // The raw call: glibc 2.36's <sys/pidfd.h> lacks extern "C".
        : pid_(pid), pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))) {}
    ~ProcessChild() override {
        if (pidfd_ >= 0) ::close(pidfd_);
    }
    ProcessChild(const ProcessChild&) = delete;
    ProcessChild& operator=(const ProcessChild&) = delete;

    bool over(Clock::time_point) override {
        siginfo_t info{};
        for (;;) {
            // WNOWAIT: the child stays a zombie, its pid its own, until the channel is read.
            if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid_;
            if (errno != EINTR) throw Error(std::string("waitid failed: ") + std::strerror(errno));
        }
    }
    void signal_group(int signal) override { ::kill(-pid_, signal); }
    std::size_t watch(pollfd* fds, Clock::time_point now, Clock::time_point& wake) override {
        if (pidfd_ >= 0) {
            fds[0] = {pidfd_, POLLIN, 0};
            return 1;
        }
        wake = std::min(wake, now + nap_);
        nap_ = std::min(nap_ * 2, std::chrono::milliseconds(25));
        return 0;
    }
    void woke(const pollfd*, ChildBounds&) override {}  // over() looks next

    // Once over(): everything the child wrote is in the channel now, and its pid is still its
    // own (a zombie's): read it all before the reap frees the pid.
    int reap(ChildChannel* channel) {
        if (channel) channel->drain();
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0)
            if (errno != EINTR) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
        if (channel) channel->child_reaped();
        return status;
    }

private:
    pid_t pid_;
    int pidfd_;
    std::chrono::milliseconds nap_{1};
};

// Descendants that left our process group (setsid) are reparented to us, a subreaper, when
// their parent dies; after each run the ones no running process of ours owns are killed.
std::mutex live_mutex;
std::set<pid_t> live;    // children whose runs are under way (reruns run side by side)
std::set<pid_t> spared;  // processes left running on purpose (ProcessSpec::survivor)

std::vector<pid_t> my_children() {
    std::vector<pid_t> children;
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::ifstream in(task.path() / "children");
        for (pid_t pid; in >> pid;) children.push_back(pid);
    }
    return children;
}

void kill_orphans() {
    for (int round = 0; round < 64; ++round) {  // each kill may orphan the victim's own children
        std::vector<pid_t> orphans;
        {
            const std::lock_guard<std::mutex> lock(live_mutex);
            for (pid_t pid : my_children())
                if (!live.count(pid) && !spared.count(pid)) orphans.push_back(pid);
        }
        if (orphans.empty()) return;
        for (pid_t pid : orphans) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
}

}  // namespace

std::string ProcessResult::describe() const {
    if (stopped != 0) {
        const char* name = ::sigabbrev_np(stopped);
        return std::string("stopped by SIG") + (name ? name : std::to_string(stopped).c_str());
    }
    const auto seconds = std::to_string(elapsed.count() / 1000) + " s";
    if (deadline_passed) return "ended at its deadline after " + seconds;
    if (timed_out) return "timed out after " + seconds;
    if (signal != 0) {
        const char* name = ::sigabbrev_np(signal);
        return "killed by signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
    }
    return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const ProcessSpec& spec) {
    if (spec.argv.empty()) throw Error("run_process: no command");
    stop_source(spec).throw_if_asked();
    auto argv = c_strings(spec.argv);
    auto envp = c_strings(spec.environment);
    const auto start = Clock::now();
    static const bool subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
    (void)subreaper;
    const pid_t parent = ::getpid();
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    for (int cpu : spec.cpus) CPU_SET(static_cast<std::size_t>(cpu), &cpus);
    pid_t pid = 0;
    {
        const std::lock_guard<std::mutex> lock(live_mutex);  // registered before another run looks for orphans
        pid = ::fork();
        if (pid < 0) throw Error(std::string("cannot start ") + spec.argv[0] + ": " + std::strerror(errno));
        if (pid == 0) exec_child(spec, argv.data(), envp.data(), parent, spec.cpus.empty() ? nullptr : &cpus);
        live.insert(pid);
    }
    ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
    if (spec.channel) {
        spec.channel->close_child_end();
        spec.channel->started(pid);
    }

    ProcessResult result;
    ProcessChild child(pid);
    wait_for_child(child, spec, start, result);
    const int status = child.reap(spec.channel);
    ::kill(-pid, SIGKILL);  // whatever the test suite left running in its group
    {
        const std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(pid);
        if (spec.survivor)
            if (const pid_t kept = spec.survivor(); kept > 0) spared.insert(kept);
    }
    kill_orphans();                           // and whatever left the group
    if (spec.channel) spec.channel->drain();  // what they wrote before they died
    result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
    if (result.stopped != 0 && !spec.return_when_stopped) throw Stopped(result.stopped);
    return result;
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    return environment_with(std::move(env), overrides);
}

std::vector<std::string> environment_with(std::vector<std::string> env, const std::vector<std::string>& overrides) {
    auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
    for (const auto& entry : overrides) {
        auto name = name_of(entry);
        env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return name_of(e) == name; }),
                  env.end());
        env.push_back(entry);
    }
    return env;
}

}  // namespace evgate
