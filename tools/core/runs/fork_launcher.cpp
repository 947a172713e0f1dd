#include "runs/fork_launcher.hpp"

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

#include "io/child_wait.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/protocol.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

using Clock = std::chrono::steady_clock;

// How long the server may take to answer a request, and to say how a worker ended once it has.
constexpr std::chrono::seconds kAnswerTimeout{30};
constexpr std::chrono::seconds kEndAnswerTimeout{10};

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

std::optional<rapidjson::Document> ServerConnection::receive(Clock::time_point deadline, OnStop on_stop, const StopSource& stop) {
    bool stop_seen = false;  // the stop pipe stays readable once written: watched until then only
    for (;;) {
        if (auto line = next_line()) return line;
        if (!read_available()) {
            if (auto line = next_line()) return line;
            return std::nullopt;
        }
        if (auto line = next_line()) return line;
        const auto now = Clock::now();
        if (stop.signal() != 0 && !stop_seen) {
            if (on_stop == OnStop::stop) throw Stopped(stop.signal());
            stop_seen = true;
            deadline = std::min(deadline, now + kStopGracePeriod);
        }
        if (now >= deadline) throw Error("the fork server did not answer in time");
        pollfd fds[2] = {{fd_, POLLIN, 0}, {stop.fd(), POLLIN, 0}};
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
        ::poll(fds, !stop_seen && stop.fd() >= 0 ? 2 : 1, static_cast<int>(std::min<long long>(wait, 60'000)));
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

// ------------------------------------------------------------------ a fork

namespace {

// The worker as the wait loop sees it: gone when its pidfd says so (no bound applies from then
// on), and over once the server said how it ended, or closed the connection, or said nothing
// for kEndAnswerTimeout after it ended.
class WorkerChild final : public WaitedChild {
public:
    WorkerChild(ServerConnection& server, pid_t worker)
        : server_(server), worker_(worker), pidfd_(static_cast<int>(::syscall(SYS_pidfd_open, worker, 0))) {
        take_answers();  // a worker that ended at once: its end may have come in one read with its pid
    }

    bool over(Clock::time_point now) override { return answered_ || server_gone_ || (gone_at_ && now >= *gone_at_ + kEndAnswerTimeout); }
    void signal_group(int signal) override { kill_group(worker_, signal); }
    std::size_t watch(pollfd* fds, Clock::time_point, Clock::time_point& wake) override {
        std::size_t n = 0;
        fds[n++] = {server_.fd(), POLLIN, 0};
        pid_at_ = pidfd_.get() >= 0 && !gone_at_ ? n : 0;
        if (pid_at_ != 0) fds[n++] = {pidfd_.get(), POLLIN, 0};
        if (gone_at_) wake = std::min(wake, *gone_at_ + kEndAnswerTimeout);
        return n;
    }
    void woke(const pollfd* fds, ChildBounds& bounds) override {
        if (pid_at_ != 0 && fds[pid_at_].revents != 0) {
            gone_at_ = Clock::now();
            bounds.child_gone();  // only the server's answer is awaited from now on
        }
        if (fds[0].revents == 0) return;
        server_gone_ = !server_.read_available();
        take_answers();
    }

    bool answered() const { return answered_; }
    bool server_gone() const { return server_gone_; }
    int exit_code() const { return exit_code_; }
    int signal() const { return signal_; }

private:
    // How the worker ended, from the server's whole lines read so far.
    void take_answers() {
        while (auto line = server_.next_line()) {
            if (const auto code = int_member(*line, protocol::field::exit)) exit_code_ = *code, answered_ = true;
            if (const auto signal = int_member(*line, protocol::field::signal)) signal_ = *signal, answered_ = true;
        }
    }

    ServerConnection& server_;
    pid_t worker_;
    Descriptor pidfd_;
    std::size_t pid_at_ = 0;                    // where its pidfd is in the descriptors watched; 0: not watched
    std::optional<Clock::time_point> gone_at_;  // when the worker was seen gone
    bool answered_ = false, server_gone_ = false;
    int exit_code_ = -1, signal_ = 0;
};

}  // namespace

ForkLauncher::ForkLauncher(fs::path socket, std::optional<ProcessIdentity> server, std::string receipt_id)
    : socket_(std::move(socket)), server_(server), receipt_id_(std::move(receipt_id)) {}

std::optional<LaunchResult> ForkLauncher::refused(const std::string& why) {
    lost_ = why;
    return std::nullopt;
}

void ForkLauncher::end_server() {
    if (server_ && process_identity(server_->pid) == server_) ::kill(server_->pid, SIGKILL);
}

std::optional<LaunchResult> ForkLauncher::run(const LaunchSpec& launch) {
    const auto& spec = launch.process;
    if (!serving()) return std::nullopt;
    if (spec.channel == nullptr) throw Error("a fork is asked for without its record channel");
    const StopSource& stop = stop_source(spec);
    stop.throw_if_asked();
    const auto start = Clock::now();
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
            const auto answer = server->receive(Clock::now() + kAnswerTimeout, ServerConnection::OnStop::wait, stop);
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
    spec.channel->close_child_end();
    spec.channel->started(worker);
    return wait(launch, *server, worker, start);
}

// Until the worker ended and the server said how: the same ends as run_process's (TIMEOUT,
// TEST_TIMEOUT, a stop), then the worker's group killed, the worker reaped by the server with
// what it left, and the channel read to its end.
LaunchResult ForkLauncher::wait(const LaunchSpec& launch, ServerConnection& server, pid_t worker, Clock::time_point start) {
    const auto& spec = launch.process;
    const StopSource& stop = stop_source(spec);
    ProcessResult ended;
    WorkerChild child(server, worker);
    wait_for_child(child, spec, start, ended);
    ended.exit_code = child.exit_code();
    ended.signal = child.signal();
    // Everything the worker wrote is in the channel now, and its pid is still its own (the server
    // reaps it only when told): read it all, then kill what it left in its group.
    spec.channel->drain();
    kill_group(worker, SIGKILL);
    if (child.answered()) {
        try {
            server.send(op_request(protocol::op::reap));
            // Even when stopped: the run's restore comes after this, and must (the caller's).
            const auto reaped = server.receive(Clock::now() + kEndAnswerTimeout, ServerConnection::OnStop::wait, stop);
            if (!reaped || member(*reaped, protocol::field::reaped) == nullptr) lost_ = "it did not reap its worker";
        } catch (const Error& e) {
            lost_ = e.what();
        }
    } else {
        // The server died (its worker with it: the parent-death signal) or says nothing of how
        // its worker ended: no later run asks it.
        if (child.server_gone()) ended.signal = SIGKILL;
        lost_ = child.server_gone() ? "it ended while a run ran" : "it did not say how a worker ended";
        if (!child.server_gone()) end_server();
    }
    spec.channel->child_reaped();
    spec.channel->drain();  // what the group wrote before it died
    ended.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    auto result = launch_result(ended, launch);
    if (!child.answered()) {
        result.server_lost = true;
        result.note = child.server_gone() ? "the fork server was gone" : "the fork server did not say how its worker ended";
    }
    if (ended.stopped != 0 && !spec.return_when_stopped) throw Stopped(ended.stopped);
    return result;
}

}  // namespace evgate
