// The one loop that waits for a child evgate started, however it was started (a process of its
// own: run_process; a process another one started for it, whose end that one tells, as a fork
// server does its workers'): it sleeps in poll(2) on what tells the child's end, on the child's
// channel and on the stop descriptor; sends the child's group what ChildBounds says (the
// timeout, the spec's moving deadline, a stop); reads the channel as it fills; reports progress.
// How the child's end is seen is the child's own (WaitedChild): a pidfd and waitid(2), an answer.
#pragma once

#include <chrono>
#include <cstddef>

#include <poll.h>

#include "io/child_bounds.hpp"
#include "io/process.hpp"

namespace evgate {

class WaitedChild {
public:
    using Clock = std::chrono::steady_clock;
    // Descriptors of its own a child may have the loop sleep on.
    static constexpr std::size_t kMaxFds = 2;

    virtual ~WaitedChild() = default;
    // Whether the wait is over (the child's end is known, or will never be): asked before each look.
    virtual bool over(Clock::time_point now) = 0;
    // SIGTERM or SIGKILL, to its process group.
    virtual void signal_group(int signal) = 0;
    // Its descriptors to sleep on, into `fds` (at most kMaxFds; returns how many), and, lowered
    // where it must look sooner, `wake`.
    virtual std::size_t watch(pollfd* fds, Clock::time_point now, Clock::time_point& wake) = 0;
    // What poll(2) found on those descriptors; `bounds.child_gone()` once the child is seen ended.
    virtual void woke(const pollfd* fds, ChildBounds& bounds) = 0;
};

// Waits from `start` until child.over(), bounded as `spec` says (timeout, deadline, stop,
// channel, progress); what the bounds did is in `result` (timed_out, deadline_passed, stopped).
void wait_for_child(WaitedChild& child, const ProcessSpec& spec, WaitedChild::Clock::time_point start, ProcessResult& result);

// The stop source `spec` names, or evgate's own.
const StopSource& stop_source(const ProcessSpec& spec);

}  // namespace evgate
