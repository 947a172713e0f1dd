#include "process.hpp"

#include <algorithm>
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
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gsl/gsl>

#include "error.hpp"

extern char** environ;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::chrono::milliseconds kGracePeriod{2000};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
    out.push_back(nullptr);
    return out;
}

// In the child between fork and exec: only async-signal-safe calls.
[[noreturn]] void exec_child(const ProcessSpec& spec, char** argv, char** envp, pid_t parent, const cpu_set_t* cpus) {
    ::setpgid(0, 0);
    if (cpus != nullptr) ::sched_setaffinity(0, sizeof(cpu_set_t), cpus);  // best effort: the OS may refuse
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // a kill -9 of evgate takes pytest down with it
    if (::getppid() != parent) ::_exit(127);
    int out = ::open(spec.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || in < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) ::_exit(127);
    if (::chdir(spec.cwd.c_str()) != 0) ::_exit(127);
    environ = envp;
    ::execvp(argv[0], argv);
    ::_exit(127);
}

// Waits for `pid` until `deadline`; true when it ended (status filled in). Calls `progress`
// every `every` on the way. Sleeps in poll(2) on a pidfd, so the end is seen at once; where
// the kernel has no pidfd (before Linux 5.3), in short naps.
bool wait_until(pid_t pid, Clock::time_point deadline, bool bounded, int& status,
                const ProcessSpec* spec = nullptr, Clock::time_point start = Clock::now()) {
    // The raw call: glibc 2.36's <sys/pidfd.h> lacks extern "C".
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    const auto close_pidfd = gsl::finally([pidfd] {
        if (pidfd >= 0) ::close(pidfd);
    });
    auto nap = std::chrono::milliseconds(1);
    auto next_progress = start + (spec ? spec->progress_every : std::chrono::milliseconds(0));
    for (;;) {
        pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) return true;
        if (done < 0 && errno != EINTR) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
        const auto now = Clock::now();
        if (bounded && now >= deadline) return false;
        if (spec && spec->progress && now >= next_progress) {
            spec->progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start));
            next_progress = now + spec->progress_every;
        }
        auto wake = bounded ? deadline : now + std::chrono::hours(1);
        if (spec && spec->progress) wake = std::min(wake, next_progress);
        if (pidfd >= 0) {
            pollfd ended{pidfd, POLLIN, 0};
            const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
            ::poll(&ended, 1, static_cast<int>(std::min<long long>(wait, 60'000)));
        } else {
            std::this_thread::sleep_for(std::min(nap, std::chrono::duration_cast<std::chrono::milliseconds>(wake - now)));
            nap = std::min(nap * 2, std::chrono::milliseconds(25));
        }
    }
}

// Descendants that left our process group (setsid) are reparented to us, a subreaper, when
// their parent dies; after each run the ones no running process of ours owns are killed.
std::mutex live_mutex;
std::set<pid_t> live;  // children whose runs are under way (reruns run side by side)

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
                if (!live.count(pid)) orphans.push_back(pid);
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
    if (timed_out) return "timed out after " + std::to_string(elapsed.count() / 1000) + " s";
    if (signal != 0) {
        const char* name = ::sigabbrev_np(signal);
        return "killed by signal " + std::to_string(signal) + (name ? std::string(" (SIG") + name + ")" : "");
    }
    return "exit " + std::to_string(exit_code);
}

ProcessResult run_process(const ProcessSpec& spec) {
    if (spec.argv.empty()) throw Error("run_process: no command");
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

    ProcessResult result;
    int status = 0;
    const bool bounded = spec.timeout.count() > 0;
    if (!wait_until(pid, start + spec.timeout, bounded, status, &spec, start)) {
        result.timed_out = true;
        ::kill(-pid, SIGTERM);
        if (!wait_until(pid, Clock::now() + kGracePeriod, true, status)) {
            ::kill(-pid, SIGKILL);
            wait_until(pid, Clock::now(), false, status);
        }
    }
    ::kill(-pid, SIGKILL);  // whatever the test suite left running in its group
    {
        const std::lock_guard<std::mutex> lock(live_mutex);
        live.erase(pid);
    }
    kill_orphans();  // and whatever left the group
    result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
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
