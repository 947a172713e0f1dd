#include "runs/fork_session.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/child_bounds.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/fork_server.hpp"
#include "runs/protocol.hpp"
#include "runs/sandbox.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;

// How long the server may take to answer a request, and to say how a worker ended once it has.
constexpr std::chrono::seconds kAnswerTimeout{30};
constexpr std::chrono::seconds kEndAnswerTimeout{10};
// As run_process: records come a few per test, and waking for each would cost a switch apiece.
constexpr std::chrono::milliseconds kChannelQuiet{5};

std::string errno_text() { return std::strerror(errno); }

class Descriptor {
public:
    explicit Descriptor(int fd) : fd_(fd) {}
    ~Descriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

std::string request(const std::string& receipt_id, const ProcessSpec& spec) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    namespace field = protocol::field;
    w.Key(field::op), w.String(protocol::op::run);
    w.Key(field::receipt), w.String(receipt_id);
    w.Key(field::argv), w.StartArray();
    for (const auto& arg : spec.argv) w.String(arg);
    w.EndArray();
    w.Key(field::env), w.StartArray();
    for (const auto& entry : spec.environment) w.String(entry);
    w.EndArray();
    w.Key(field::cwd), w.String(spec.cwd.string());
    w.EndObject();
    return std::string(json.text());
}

std::optional<int> int_member(const rapidjson::Value& doc, const char* key) {
    const auto* value = member(doc, key);
    if (value == nullptr || !value->IsInt()) return std::nullopt;
    return value->GetInt();
}

void kill_group(pid_t group, int signal) {
    if (group > 0) ::kill(-group, signal);
}

}  // namespace

// ------------------------------------------------------------------ the connection

ServerConnection::ServerConnection(const fs::path& socket, const std::optional<ProcessIdentity>& expected) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const auto path = socket.string();
    if (path.size() >= sizeof address.sun_path) throw Error("the socket path is too long: " + path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw Error("cannot create a socket: " + errno_text());
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
        const auto why = errno_text();
        ::close(fd_);
        throw Error("no fork server answers at " + path + " (" + why + ")");
    }
    ucred peer{};
    socklen_t size = sizeof peer;
    if (::getsockopt(fd_, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::getuid()) {
        ::close(fd_);
        throw Error("the process at " + path + " does not run as this user");
    }
    peer_ = peer.pid;
    if (expected && !(process_identity(peer.pid) == expected)) {
        ::close(fd_);
        throw Error("the process at " + path + " (pid " + std::to_string(peer.pid) + ") is not the server the receipt recorded (pid " +
                    std::to_string(expected->pid) + ")");
    }
}

ServerConnection::~ServerConnection() {
    if (fd_ >= 0) ::close(fd_);
}

void ServerConnection::send(std::string_view json, const std::vector<int>& fds) {
    std::string line(json);
    line += '\n';
    std::size_t sent = 0;
    while (sent < line.size()) {
        iovec io{line.data() + sent, line.size() - sent};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        std::vector<char> control;
        if (sent == 0 && !fds.empty()) {  // the descriptors travel with the first byte
            control.resize(CMSG_SPACE(sizeof(int) * fds.size()));
            message.msg_control = control.data();
            message.msg_controllen = control.size();
            cmsghdr* c = CMSG_FIRSTHDR(&message);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
            std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
        }
        const auto n = ::sendmsg(fd_, &message, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error("cannot write to the fork server: " + errno_text());
        }
        sent += static_cast<std::size_t>(n);
    }
}

bool ServerConnection::read_available() {
    char chunk[4096];
    for (;;) {
        const auto n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n > 0) {
            buffer_.append(chunk, static_cast<std::size_t>(n));
            continue;
        }
        if (n == 0) return false;
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
        return false;  // reset: as closed
    }
}

std::optional<rapidjson::Document> ServerConnection::next_line() {
    const auto end = buffer_.find('\n');
    if (end == std::string::npos) return std::nullopt;
    const auto line = buffer_.substr(0, end);
    buffer_.erase(0, end + 1);
    auto doc = parse_json(line, "the fork server's answer");
    if (!doc.IsObject()) throw Error("the fork server's answer is not a JSON object: " + line);
    return doc;
}

std::optional<rapidjson::Document> ServerConnection::receive(Clock::time_point deadline, OnStop on_stop) {
    bool stop_seen = false;  // the stop pipe stays readable once written: watched until then only
    for (;;) {
        if (auto line = next_line()) return line;
        if (!read_available()) {
            if (auto line = next_line()) return line;
            return std::nullopt;
        }
        if (auto line = next_line()) return line;
        const auto now = Clock::now();
        if (stop_signal() != 0 && !stop_seen) {
            if (on_stop == OnStop::stop) throw Stopped(stop_signal());
            stop_seen = true;
            deadline = std::min(deadline, now + kStopGracePeriod);
        }
        if (now >= deadline) throw Error("the fork server did not answer in time");
        pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_fd(), POLLIN, 0}};
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
        ::poll(fds, !stop_seen && stop_fd() >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(wait, 60'000)));
    }
}

std::string op_request(std::string_view op) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::op), w.String(op.data(), static_cast<rapidjson::SizeType>(op.size()));
    w.EndObject();
    return std::string(json.text());
}

pid_t parent_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::stringstream text;
    text << in.rdbuf();
    const auto stat = text.str();
    const auto close = stat.rfind(')');  // the name before it may hold spaces and parentheses
    if (close == std::string::npos) return 0;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    pid_t parent = 0;
    fields >> state >> parent;
    return parent;
}

// ------------------------------------------------------------------ the session

ForkSession::ForkSession(const SuiteConfig& suite, const Receipt& receipt) {
    const auto isolation = receipt_isolation(suite, receipt);
    forking_ = isolation.forks;
    why_ = isolation.why;
    socket_ = isolation.socket;
    server_ = isolation.server;
    receipt_id_ = receipt.id;
    hash_seed_ = isolation.hash_seed;
    declined_file_ = suite.evidence_dir / evidence::kForksDeclined;
    if (forking_) {
        collection_sandbox_ = collection_sandbox(suite);
        sandbox_fingerprint_ = isolation.collection_sandbox;
        declined_elsewhere();
    }
}

bool ForkSession::declined_elsewhere() {
    std::error_code ec;
    if (!fs::exists(declined_file_, ec)) return false;
    std::string why;
    try {
        why = read_file(declined_file_);
    } catch (const Error&) {
        why = "another run of this invocation stopped forking";
    }
    decline(why);
    return true;
}

void ForkSession::decline_for_all(const std::string& why) {
    decline(why);
    write_file_atomic(declined_file_, why);
}

void ForkSession::decline(std::string why) {
    if (!forking_) return;
    forking_ = false;
    why_ = std::move(why);
}

std::string ForkSession::isolation(int processes) const {
    if (forks_ == 0) return "process";
    return forks_ == processes ? "fork" : "fork, then process";
}

std::optional<ProcessResult> ForkSession::refused(const std::string& why) {
    lost(why);
    return std::nullopt;
}

void ForkSession::end_server() {
    if (server_ && process_identity(server_->pid) == server_) ::kill(server_->pid, SIGKILL);
}

void ForkSession::lost(const std::string& why) {
    forking_ = false;
    why_ = "the fork server: " + why;
}

std::optional<ProcessResult> ForkSession::run(const ProcessSpec& spec) {
    shared_ = false;
    if (!forking_ || declined_elsewhere()) return std::nullopt;
    if (spec.channel == nullptr) throw Error("a fork is asked for without its record channel");
    throw_if_stopped();
    const auto start = Clock::now();
    const auto before = sandbox_fingerprint(collection_sandbox_);
    std::optional<ServerConnection> server;
    try {
        server.emplace(socket_, server_);
    } catch (const Error& e) {
        return refused(e.what());
    }
    pid_t worker = 0;
    {
        const Descriptor log(::open(spec.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
        if (log.get() < 0) throw Error("cannot open " + spec.output.string() + ": " + errno_text());
        try {
            server->send(request(receipt_id_, spec), {log.get(), spec.channel->child_end()});
            // Asked to stop meanwhile, the worker may be running already: its pid first, then
            // wait() ends it as any stop, and the run restores what it wrote.
            const auto answer = server->receive(Clock::now() + kAnswerTimeout, ServerConnection::OnStop::wait);
            if (!answer) return refused("it ended before it answered");  // (a worker of a dropped client dies with it)
            if (const auto* why = member(*answer, protocol::field::refused); why && why->IsString()) return refused(std::string("refused: ") + why->GetString());
            worker = int_member(*answer, protocol::field::pid).value_or(0);
        } catch (const Error& e) {
            end_server();  // asked, and silent: it may start the worker yet
            return refused(e.what());
        }
    }
    // The worker is the server's own child: only then is it the process the records are from,
    // and its group ours to kill.
    if (worker <= 0 || parent_of(worker) != server->peer())
        return refused("it answered with a process that is not its own (pid " + std::to_string(worker) + ")");
    ++forks_;
    spec.channel->close_child_end();
    spec.channel->started(worker);
    auto result = wait(spec, *server, worker, start);
    if (!sandbox_fingerprint_.empty() && (before != sandbox_fingerprint_ || sandbox_fingerprint(collection_sandbox_) != before)) {
        shared_ = true;
        decline_for_all("a test wrote in the collection's HOME or TMPDIR (" + collection_sandbox_.string() +
                        "), through a path its module took at import (tempfile.gettempdir(), Path.home()): every fork "
                        "shares it, where each run must start with its own, empty; from then on every run starts processes");
    }
    return result;
}

// Until the worker ended and the server said how: the same ends as run_process's (TIMEOUT,
// TEST_TIMEOUT, a stop), then the worker's group killed, the worker reaped by the server with
// what it left, and the channel read to its end.
ProcessResult ForkSession::wait(const ProcessSpec& spec, ServerConnection& server, pid_t worker, Clock::time_point start) {
    ProcessResult result;
    Descriptor pidfd(static_cast<int>(::syscall(SYS_pidfd_open, worker, 0)));
    ChildBounds bounds(start, spec.timeout, kStopGracePeriod);
    std::optional<Clock::time_point> gone_at;  // when the worker was seen gone
    bool server_gone = false, answered = false;
    auto next_progress = start + spec.progress_every;
    Clock::time_point channel_quiet_until{};
    while (!answered && !server_gone) {
        const auto now = Clock::now();
        const auto test_deadline = spec.test_deadline ? spec.test_deadline() : std::nullopt;
        switch (bounds.step(now, test_deadline, stop_signal())) {
            case ChildBounds::Send::terminate: kill_group(worker, SIGTERM); break;
            case ChildBounds::Send::kill: kill_group(worker, SIGKILL); break;
            case ChildBounds::Send::nothing: break;
        }
        if (gone_at && now >= *gone_at + kEndAnswerTimeout) break;  // the server does not say how it ended
        if (spec.progress && now >= next_progress) {
            spec.progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start));
            next_progress = now + spec.progress_every;
        }
        auto wake = std::min(bounds.wake(test_deadline), now + std::chrono::hours(1));
        if (gone_at) wake = std::min(wake, *gone_at + kEndAnswerTimeout);
        if (spec.progress) wake = std::min(wake, next_progress);
        const bool quiet = now < channel_quiet_until;
        if (quiet) wake = std::min(wake, channel_quiet_until);
        pollfd fds[4];
        nfds_t n = 0;
        fds[n++] = {server.fd(), POLLIN, 0};
        const nfds_t pid_at = n;
        if (pidfd.get() >= 0 && !gone_at) fds[n++] = {pidfd.get(), POLLIN, 0};
        const nfds_t channel_at = n;
        const int channel = quiet ? -1 : spec.channel->our_end();
        if (channel >= 0) fds[n++] = {channel, POLLIN, 0};
        if (stop_fd() >= 0 && bounds.stoppable()) fds[n++] = {stop_fd(), POLLIN, 0};
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
        if (::poll(fds, n, static_cast<int>(std::clamp<long long>(ms, 0, 60'000))) <= 0) continue;
        if (channel >= 0 && fds[channel_at].revents != 0) {
            spec.channel->drain();
            channel_quiet_until = Clock::now() + kChannelQuiet;
        }
        if (pid_at < channel_at && fds[pid_at].revents != 0) {
            gone_at = Clock::now();
            bounds.child_gone();  // only the server's answer is awaited from now on
        }
        if (fds[0].revents != 0) {
            server_gone = !server.read_available();
            while (auto line = server.next_line()) {
                if (const auto code = int_member(*line, protocol::field::exit)) result.exit_code = *code, answered = true;
                if (const auto signal = int_member(*line, protocol::field::signal)) result.signal = *signal, answered = true;
            }
        }
    }
    result.stopped = bounds.stopped();
    result.timed_out = bounds.timed_out();
    if (bounds.test_timed_out()) result.test_timed_out = spec.test_timeout;
    // Everything the worker wrote is in the channel now, and its pid is still its own (the server
    // reaps it only when told): read it all, then kill what it left in its group.
    spec.channel->drain();
    kill_group(worker, SIGKILL);
    if (answered) {
        try {
            server.send(op_request(protocol::op::reap));
            // Even when stopped: the run's restore comes after this, and must (the caller's).
            const auto reaped = server.receive(Clock::now() + kEndAnswerTimeout, ServerConnection::OnStop::wait);
            if (!reaped || member(*reaped, protocol::field::reaped) == nullptr) lost("it did not reap its worker");
        } catch (const Error& e) {
            lost(e.what());
        }
    } else {
        // The server died (its worker with it: the parent-death signal) or says nothing of how
        // its worker ended: no later run asks it.
        if (server_gone) result.signal = SIGKILL;
        result.server_lost = true;
        result.note = server_gone ? "the fork server was gone" : "the fork server did not say how its worker ended";
        lost(server_gone ? "it ended while a run ran" : "it did not say how a worker ended");
        if (!server_gone) end_server();
    }
    spec.channel->child_reaped();
    spec.channel->drain();  // what the group wrote before it died
    result.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (result.stopped != 0 && !spec.return_when_stopped) throw Stopped(result.stopped);
    return result;
}

}  // namespace evgate
