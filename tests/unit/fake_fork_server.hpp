// A fork server at the socket level, for unit tests of ForkLauncher (runs/fork_launcher.hpp): a
// process forked from the test that listens on a Unix socket and answers a run as the collected
// session does (templates/pytest/evidence_gate_fork.py: the worker's pid, then how it ended,
// then the reap), its worker a process of its own group that execs the request's command line
// with the log on stdout and stderr and the record channel at the descriptor the request's
// CHANNEL_FD names. Not a pytest session: starting one (a collection, a bound receipt) costs
// a second or more a case; the real server is held to the protocol by tests/python and by the
// fault scenarios (faults.forks).
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/json_io.hpp"
#include "runs/protocol.hpp"

namespace evgate::test {

class FakeForkServer {
public:
    // serve: as the real one; refuse: every run; vanish: ends (saying nothing) once its worker has
    // run for a moment, the worker with it (its parent-death signal).
    enum class Mode { serve,
                      refuse,
                      vanish };

    explicit FakeForkServer(const std::filesystem::path& socket, Mode mode = Mode::serve) {
        int ready[2];
        REQUIRE(::pipe2(ready, O_CLOEXEC) == 0);
        pid_ = ::fork();
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            try {
                const int listener = listen_at(socket);
                close_all_but({listener, ready[1]});  // as a server evgate did not start: none of the test's own (its channel)
                serve(listener, ready[1], mode);
            } catch (...) {
            }
            ::_exit(1);
        }
        ::close(ready[1]);
        char byte = 0;
        const bool listening = ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        REQUIRE(listening);
    }
    ~FakeForkServer() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    FakeForkServer(const FakeForkServer&) = delete;
    FakeForkServer& operator=(const FakeForkServer&) = delete;

    pid_t pid() const { return pid_; }

private:
    static void close_all_but(const std::vector<int>& kept) {
        std::vector<int> open;
        for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) open.push_back(std::stoi(entry.path().filename().string()));
        for (int fd : open)
            if (fd > 2 && std::find(kept.begin(), kept.end(), fd) == kept.end()) ::close(fd);
    }

    // In the server: listen() here, so a client's SO_PEERCRED names this process.
    static int listen_at(const std::filesystem::path& socket) {
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        const auto path = socket.string();
        if (path.size() >= sizeof address.sun_path) ::_exit(1);
        std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 || ::listen(fd, 8) != 0) ::_exit(1);
        return fd;
    }

    [[noreturn]] static void serve(int listener, int ready, Mode mode) {
        ::prctl(PR_SET_CHILD_SUBREAPER, 1);  // what a worker leaves is reparented here, and reaped
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        (void)!::write(ready, "+", 1);
        ::close(ready);
        for (;;) {
            const int client = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
            if (client < 0) {
                if (errno == EINTR) continue;
                ::_exit(1);
            }
            serve_one(client, mode);
            ::close(client);
        }
    }

    // One line from the client (without its '\n'), and the descriptors that came with it.
    static bool read_line(int fd, std::string& line, std::vector<int>& fds) {
        line.clear();
        for (;;) {
            char c = 0;
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
            iovec io{&c, 1};
            msghdr message{};
            message.msg_iov = &io;
            message.msg_iovlen = 1;
            message.msg_control = control;
            message.msg_controllen = sizeof control;
            const auto n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            for (cmsghdr* h = CMSG_FIRSTHDR(&message); h != nullptr; h = CMSG_NXTHDR(&message, h)) {
                if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
                for (std::size_t i = 0; i < (h->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
                    int received = -1;
                    std::memcpy(&received, CMSG_DATA(h) + i * sizeof(int), sizeof received);
                    fds.push_back(received);
                }
            }
            if (c == '\n') return true;
            line += c;
        }
    }

    static void answer(int client, const char* field, const std::string& json_value) {
        const auto line = "{\"" + std::string(field) + "\":" + json_value + "}\n";
        (void)!::send(client, line.data(), line.size(), MSG_NOSIGNAL);
    }

    static std::vector<std::string> strings(const rapidjson::Value& request, const char* field) {
        std::vector<std::string> out;
        for (const auto& s : request[field].GetArray()) out.emplace_back(s.GetString());
        return out;
    }

    static void serve_one(int client, Mode mode) {
        std::string line;
        std::vector<int> fds;
        if (!read_line(client, line, fds)) return;
        const auto request = parse_json(line, "the run request");
        if (mode == Mode::refuse || fds.size() != 2) {
            for (int fd : fds) ::close(fd);
            answer(client, protocol::field::refused, "\"told to\"");
            return;
        }
        const auto argv = strings(request, protocol::field::argv);
        const auto env = strings(request, protocol::field::env);
        const std::string cwd = request[protocol::field::cwd].GetString();
        int channel_at = -1;
        for (const auto& entry : env)
            if (entry.rfind("CHANNEL_FD=", 0) == 0) channel_at = std::stoi(entry.substr(11));
        const pid_t worker = ::fork();
        if (worker == 0) exec_worker(argv, env, cwd, fds[0], fds[1], channel_at);
        for (int fd : fds) ::close(fd);
        answer(client, protocol::field::pid, std::to_string(worker));
        if (mode == Mode::vanish) {
            ::usleep(100'000);
            ::_exit(0);
        }
        siginfo_t info{};
        while (::waitid(P_PID, static_cast<id_t>(worker), &info, WEXITED | WNOWAIT) != 0)
            if (errno != EINTR) ::_exit(1);
        if (info.si_code == CLD_EXITED) answer(client, protocol::field::exit, std::to_string(info.si_status));
        else answer(client, protocol::field::signal, std::to_string(info.si_status));
        const bool asked = read_line(client, line, fds);  // the reap; without it, the client is gone
        ::kill(-worker, SIGKILL);
        while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
        }
        if (asked) answer(client, protocol::field::reaped, "true");
    }

    [[noreturn]] static void exec_worker(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& cwd,
                                         int log, int channel, int channel_at) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        const int in = ::open("/dev/null", O_RDONLY);
        if (in < 0 || ::dup2(in, 0) < 0 || ::dup2(log, 1) < 0 || ::dup2(log, 2) < 0) ::_exit(127);
        // Kept across exec at that number (dup2 clears close-on-exec; at the same number, it does not).
        if (channel_at >= 0 && (channel == channel_at ? ::fcntl(channel, F_SETFD, 0) : ::dup2(channel, channel_at)) < 0) ::_exit(127);
        if (::chdir(cwd.c_str()) != 0) ::_exit(127);
        std::vector<char*> args, vars;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        for (const auto& e : env) vars.push_back(const_cast<char*>(e.c_str()));
        args.push_back(nullptr);
        vars.push_back(nullptr);
        ::execve(args[0], args.data(), vars.data());
        ::_exit(127);
    }

    pid_t pid_ = -1;
};

}  // namespace evgate::test
