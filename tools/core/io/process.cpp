#include "io/process.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl>

#include "io/child_bounds.hpp"

extern char** environ;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;
// After reading the channel, the next look waits this long: records come a few per test, and
// waking for each would cost a context switch apiece. The child's end is seen at once meanwhile.
constexpr std::chrono::milliseconds kChannelQuiet{5};

// ------------------------------------------------------------------ stopping

volatile std::sig_atomic_t stop_requested = 0;
int stop_pipe[2] = {-1, -1};  // written once by the handler, never read: readable from then on

extern "C" void on_stop_signal(int signal) {
    if (stop_requested == 0) stop_requested = signal;
    const int saved = errno;
    if (stop_pipe[1] >= 0) (void)!::write(stop_pipe[1], "x", 1);
    errno = saved;
}

// ------------------------------------------------------------------ running

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

// Waits for one child: sleeps in poll(2) on a pidfd (its end is seen at once; before Linux
// 5.3, in short naps), on the child's channel and on the stop pipe; what ends it early is
// ChildBounds' to say.
class Waiter {
public:
    Waiter(pid_t pid, const ProcessSpec& spec, Clock::time_point start)
        : pid_(pid), spec_(spec), start_(start), next_progress_(start + spec.progress_every),
          // The raw call: glibc 2.36's <sys/pidfd.h> lacks extern "C".
          pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0))) {}
    ~Waiter() {
        if (pidfd_ >= 0) ::close(pidfd_);
    }
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    // Until the child ended (status filled in), sending its group what `bounds` says on the way.
    void until_exit(ChildBounds& bounds, int& status) {
        auto nap = std::chrono::milliseconds(1);
        for (;;) {
            if (exited()) {
                // Everything the child wrote is in the channel now, and its pid is still its own
                // (a zombie's): read it all before the reap frees the pid.
                if (spec_.channel) spec_.channel->drain();
                while (::waitpid(pid_, &status, 0) < 0)
                    if (errno != EINTR) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
                if (spec_.channel) spec_.channel->child_reaped();
                bounds.child_gone();
                return;
            }
            const auto now = Clock::now();
            const auto test_deadline = spec_.test_deadline ? spec_.test_deadline() : std::nullopt;
            switch (bounds.step(now, test_deadline, stop_requested)) {
                case ChildBounds::Send::terminate: ::kill(-pid_, SIGTERM); break;
                case ChildBounds::Send::kill: ::kill(-pid_, SIGKILL); break;
                case ChildBounds::Send::nothing: break;
            }
            if (spec_.progress && now >= next_progress_) {
                spec_.progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start_));
                next_progress_ = now + spec_.progress_every;
            }
            auto wake = std::min(bounds.wake(test_deadline), now + std::chrono::hours(1));
            if (spec_.progress) wake = std::min(wake, next_progress_);
            auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now) + std::chrono::milliseconds(1);
            if (pidfd_ < 0) {
                wait = std::min(wait, nap);
                nap = std::min(nap * 2, std::chrono::milliseconds(25));
            }
            sleep(std::clamp<long long>(wait.count(), 0, 60'000), bounds.stoppable(), now);
        }
    }

private:
    bool exited() const {
        siginfo_t info{};
        for (;;) {
            // WNOWAIT: the child stays a zombie, its pid its own, until the channel is read.
            if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid_;
            if (errno != EINTR) throw Error(std::string("waitid failed: ") + std::strerror(errno));
        }
    }

    void sleep(long long ms, bool stoppable, Clock::time_point now) {
        pollfd fds[3];
        nfds_t n = 0;
        if (pidfd_ >= 0) fds[n++] = {pidfd_, POLLIN, 0};
        const bool quiet = now < channel_quiet_until_;
        const int channel = spec_.channel && !quiet ? spec_.channel->our_end() : -1;
        const nfds_t channel_at = n;
        if (channel >= 0) fds[n++] = {channel, POLLIN, 0};
        if (stoppable && stop_pipe[0] >= 0) fds[n++] = {stop_pipe[0], POLLIN, 0};
        if (quiet)
            ms = std::min<long long>(ms, std::chrono::duration_cast<std::chrono::milliseconds>(channel_quiet_until_ - now).count() + 1);
        if (::poll(fds, n, static_cast<int>(ms)) > 0 && channel >= 0 && fds[channel_at].revents != 0) {
            spec_.channel->drain();
            channel_quiet_until_ = Clock::now() + kChannelQuiet;
        }
    }

    pid_t pid_;
    const ProcessSpec& spec_;
    Clock::time_point start_, next_progress_;
    Clock::time_point channel_quiet_until_{};
    int pidfd_;
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
    const std::string also = note.empty() ? "" : "; " + note;
    if (stopped != 0) {
        const char* name = ::sigabbrev_np(stopped);
        return std::string("stopped by SIG") + (name ? name : std::to_string(stopped).c_str()) + also;
    }
    if (test_timed_out.count() > 0) {
        const auto ms = test_timed_out.count();
        return "exceeded TEST_TIMEOUT (" + (ms % 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s") + ")" + also;
    }
    if (timed_out) return "timed out after " + std::to_string(elapsed.count() / 1000) + " s" + also;
    if (exit_code < 0 && signal == 0 && !note.empty()) return "ended, how is not known: " + note;
    if (signal != 0) {
        const char* name = ::sigabbrev_np(signal);
        return "killed by signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "") + also;
    }
    return "exit " + std::to_string(exit_code) + also;
}

ProcessResult run_process(const ProcessSpec& spec) {
    if (spec.argv.empty()) throw Error("run_process: no command");
    throw_if_stopped();
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
    int status = 0;
    Waiter waiter(pid, spec, start);
    ChildBounds bounds(start, spec.timeout, kStopGracePeriod);
    waiter.until_exit(bounds, status);
    result.timed_out = bounds.timed_out();
    if (bounds.test_timed_out()) result.test_timed_out = spec.test_timeout;
    result.stopped = bounds.stopped();
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

namespace {

std::string signal_name(int signal) {
    const char* name = ::sigabbrev_np(signal);
    return name ? std::string("SIG") + name : "signal " + std::to_string(signal);
}

}  // namespace

Stopped::Stopped(int signal)
    : Error("stopped by " + signal_name(signal) + ": no pytest process is left running, and the fixture groups are restored"),
      signal_(signal) {}

void install_stop_handlers() {
    if (stop_pipe[0] >= 0) return;
    if (::pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) throw Error(std::string("pipe2 failed: ") + std::strerror(errno));
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // calls under way finish; the loops that start work look at the flag
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction before {};
        // Ignored when evgate started (nohup, a background job): the caller meant it so.
        if (::sigaction(s, nullptr, &before) == 0 && before.sa_handler == SIG_IGN) continue;
        ::sigaction(s, &action, nullptr);
    }
    // ctest killed alone (SIGKILL) leaves us running with nobody to wait for us: stop as on
    // SIGTERM. If it died before the call, getppid() already names someone else.
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) on_stop_signal(SIGTERM);
}

int stop_signal() { return stop_requested; }

int stop_fd() { return stop_pipe[0]; }

void throw_if_stopped() {
    if (stop_requested != 0) throw Stopped(stop_requested);
}

}  // namespace evgate
