// How evgate stops when it is asked to (SIGINT, SIGTERM, SIGHUP, or its parent's death), and what
// a wait for a child asks whether to stop (StopSource): evgate's own requests, or a unit test's.
#pragma once

#include <chrono>
#include <csignal>

#include "io/error.hpp"

namespace evgate {

// evgate was asked to stop: its children are gone and what it owed the source tree is done.
class Stopped : public Error {
public:
    explicit Stopped(int signal);
    int signal() const { return signal_; }

private:
    int signal_;
};

// What asks a wait for a child to stop: a signal number once one did, and a descriptor that is
// readable from then on (a wait sleeps on it).
class StopSource {
public:
    virtual ~StopSource() = default;
    virtual int signal() const = 0;  // 0 while none asked
    virtual int fd() const = 0;      // -1: nothing to watch
    // Throws Stopped when a stop was asked: a loop that starts work checks before each piece.
    void throw_if_asked() const;
};

// A stop request that one call asks, once: a flag and a pipe written once, never read.
class StopPipe final : public StopSource {
public:
    StopPipe() = default;
    ~StopPipe() override;
    StopPipe(const StopPipe&) = delete;
    StopPipe& operator=(const StopPipe&) = delete;

    void open();  // the pipe; before it, fd() is -1 (a stop is still seen at the next look)
    // Async-signal-safe: what a signal handler calls. The first signal stands.
    void ask(int signal) noexcept;
    int signal() const override { return signal_; }
    int fd() const override { return fds_[0]; }

private:
    volatile std::sig_atomic_t signal_ = 0;
    int fds_[2] = {-1, -1};
};

// evgate's own stop requests: SIGINT, SIGTERM and SIGHUP, and its parent's death (ctest killed
// alone: PR_SET_PDEATHSIG sends SIGTERM). A running child's group is killed at once; new
// children are refused (Stopped). Call install_stop_handlers once, before any thread starts.
const StopSource& stop_requests();
void install_stop_handlers();
// Throws Stopped when evgate was asked to stop.
void throw_if_stopped();
// How long a child whose time is up has between SIGTERM and SIGKILL.
constexpr std::chrono::milliseconds kStopGracePeriod{2000};

}  // namespace evgate
