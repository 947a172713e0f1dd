#include "runs/record_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/error.hpp"

namespace evgate {
namespace {

// Above stdin, stdout and stderr even when evgate was started without them: the child's
// dup2 onto 0, 1 and 2 must not land on the channel. Pytest's end goes higher still, at
// kChannelFloor or above: a test that writes to descriptor 3 (a habit from TAP and bats) or to
// one a shell allocates (from 10 up) must not stumble on it.
int moved_up(int fd, int floor) {
    if (fd >= floor) return fd;
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, floor);
    if (moved < 0 && floor > 3) moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);  // a descriptor limit below the floor
    ::close(fd);
    if (moved < 0) throw Error(std::string("cannot move the record channel: ") + std::strerror(errno));
    return moved;
}

// One read's worth per call: a sender that never stops writing must not keep the wait loop
// from seeing the child end or the deadline pass.
constexpr std::size_t kReadsPerDrain = 64;
constexpr std::size_t kReadSize = std::size_t{64} * 1024;

}  // namespace

RecordChannel::RecordChannel(std::function<void(std::string_view)> lines)
    : lines_(std::move(lines)), buffer_(new char[kReadSize]) {
    int ends[2];
    // Close-on-exec in evgate: a child another thread starts must not inherit this run's
    // channel; run_process clears the flag in this run's child alone.
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0)
        throw Error(std::string("cannot create the record channel: ") + std::strerror(errno));
    ours_ = moved_up(ends[0], 3);
    child_ = moved_up(ends[1], kChannelFloor);
    const int on = 1;
    // Before anyone writes: every write is then stamped with its sender, and no read joins two.
    if (::setsockopt(ours_, SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0 ||
        ::fcntl(ours_, F_SETFL, O_NONBLOCK) != 0) {
        const int saved = errno;
        ::close(ours_);
        ::close(child_);
        throw Error(std::string("cannot set up the record channel: ") + std::strerror(saved));
    }
}

RecordChannel::~RecordChannel() {
    if (ours_ >= 0) ::close(ours_);
    if (child_ >= 0) ::close(child_);
}

void RecordChannel::close_child_end() {
    if (child_ >= 0) ::close(child_);
    child_ = -1;
}

void RecordChannel::drain() {
    if (!open_) return;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(ucred))];
    for (std::size_t reads = 0; reads < kReadsPerDrain; ++reads) {
        iovec io{buffer_.get(), kReadSize};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        const auto n = ::recvmsg(ours_, &message, MSG_CMSG_CLOEXEC);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            throw Error(std::string("cannot read the record channel: ") + std::strerror(errno));
        }
        if (n == 0) {  // every writer closed it: nothing more can come
            open_ = false;
            return;
        }
        pid_t sender = 0;
        for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_CREDENTIALS) continue;
            ucred credentials{};
            std::memcpy(&credentials, CMSG_DATA(c), sizeof credentials);
            sender = credentials.pid;
        }
        receive(sender, std::string_view(buffer_.get(), static_cast<std::size_t>(n)));
    }
}

void RecordChannel::receive(pid_t sender, std::string_view bytes) {
    if (sender != 0 && sender == child_pid_ && !reaped_) {
        const auto end = bytes.rfind('\n');
        if (end == std::string_view::npos) {
            tail_.append(bytes);
            return;
        }
        // Whole lines go on at once, the tail waits for the rest of its line.
        std::string whole = std::move(tail_);
        whole.append(bytes.substr(0, end + 1));
        tail_.assign(bytes.substr(end + 1));
        delivered_ += whole.size();
        lines_(whole);
        return;
    }
    receive_foreign(foreign_sender(sender, sender != 0 && sender == child_pid_), bytes);
}

void RecordChannel::receive_foreign(ForeignSender& from, std::string_view bytes) {
    while (!bytes.empty()) {
        const auto end = bytes.find('\n');
        const auto piece = bytes.substr(0, end == std::string_view::npos ? bytes.size() : end + 1);
        bytes.remove_prefix(piece.size());
        const bool fits = from.tail.size() == from.torn && from.tail.size() + piece.size() <= kKeptBytes;
        from.torn += piece.size();
        if (fits) from.tail.append(piece);
        if (piece.back() != '\n') continue;
        ++from.count;
        // Kept whole or not at all: a reader never sees a line cut in two.
        if (from.tail.size() == from.torn && from.lines.size() + from.tail.size() <= kKeptBytes) from.lines += from.tail;
        from.tail.clear();
        from.torn = 0;
    }
}

ForeignSender& RecordChannel::foreign_sender(pid_t pid, bool reused) {
    for (auto& f : foreign_)
        if (f.pid == pid && f.reused_pid == reused) return f;
    ForeignSender sender;
    sender.pid = pid;
    sender.after = delivered_;
    sender.reused_pid = reused;
    foreign_.push_back(std::move(sender));
    return foreign_.back();
}

}  // namespace evgate
