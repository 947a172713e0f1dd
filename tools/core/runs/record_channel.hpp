// The channel pytest's records come through: a Unix stream socket pytest inherits, read by
// evgate while pytest runs. The kernel stamps every write with its sender's pid (SCM_CREDENTIALS,
// SO_PASSCRED) and never glues two senders' bytes into one read, so the bytes are sorted by
// sender: pytest's own are the run's records, anyone else's (a process a test forked that went
// on running pytest's code, a grandchild) are not, and are kept apart to be reported.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/process.hpp"

namespace evgate {

// What one process other than pytest wrote on the channel.
struct ForeignSender {
    pid_t pid = 0;            // 0: the kernel named no sender
    std::string lines;        // its whole lines, the first kKeptBytes of them
    std::size_t count = 0;    // all its whole lines, kept or not
    std::size_t torn = 0;     // bytes of an unterminated last line
    std::string tail;         // that line, while it fits in kKeptBytes
    std::size_t after = 0;    // bytes of pytest's whole lines that had come when its first bytes did
    bool reused_pid = false;  // it wrote under pytest's pid after pytest was reaped
};

class RecordChannel final : public ChildChannel {
public:
    static constexpr std::size_t kKeptBytes = std::size_t{64} * 1024;
    // The lowest descriptor pytest's end is given (the plugin keeps it there in a fork too).
    static constexpr int kChannelFloor = 100;

    // `lines` receives pytest's whole lines as they come (one or more, each ending in '\n').
    explicit RecordChannel(std::function<void(std::string_view lines)> lines);
    ~RecordChannel() override;
    RecordChannel(const RecordChannel&) = delete;
    RecordChannel& operator=(const RecordChannel&) = delete;

    int child_end() const override { return child_; }
    void close_child_end() override;
    int our_end() const override { return open_ ? ours_ : -1; }
    void started(pid_t child) override { child_pid_ = child; }
    void drain() override;
    void child_reaped() override { reaped_ = true; }

    // The process whose lines are the records; 0 before started().
    pid_t pytest_pid() const { return child_pid_; }
    // Bytes of pytest's whole lines so far, and its unterminated last line.
    std::size_t pytest_bytes() const { return delivered_; }
    const std::string& pytest_tail() const { return tail_; }
    const std::vector<ForeignSender>& foreign() const { return foreign_; }

    // Bytes as if `sender` had sent them (what drain() does with each read).
    void receive(pid_t sender, std::string_view bytes);

private:
    ForeignSender& foreign_sender(pid_t pid, bool reused);
    void receive_foreign(ForeignSender& from, std::string_view bytes);

    std::function<void(std::string_view)> lines_;
    std::unique_ptr<char[]> buffer_;  // one read's worth, reused (never cleared: recvmsg fills it)
    int ours_ = -1, child_ = -1;
    bool open_ = true;
    pid_t child_pid_ = 0;
    bool reaped_ = false;
    std::size_t delivered_ = 0;
    std::string tail_;
    std::vector<ForeignSender> foreign_;
};

}  // namespace evgate
