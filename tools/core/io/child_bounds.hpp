// When a child's run must end, and how: a timeout over the whole run, a deadline the caller may
// move while it runs (the bound on what the child is doing now), a stop request; SIGTERM to its
// group, then SIGKILL after a grace period (at once on a stop). Pure: the wait loop
// (child_wait.hpp) gives it the time and what it saw, sends what it says, and sleeps until
// wake(). Unit-tested with a made-up clock.
#pragma once

#include <chrono>
#include <optional>

namespace evgate {

class ChildBounds {
public:
    using Clock = std::chrono::steady_clock;
    enum class Send { nothing,
                      terminate,
                      kill };  // to the child's group: SIGTERM, SIGKILL

    // `timeout` 0: no bound on the whole run.
    ChildBounds(Clock::time_point start, std::chrono::milliseconds timeout, std::chrono::milliseconds grace);

    // At `now`, with the moving deadline as it is now (nullopt: none) and the signal that asked
    // evgate to stop (0: none): what the child's group gets now. Once the child is gone, nothing.
    Send step(Clock::time_point now, std::optional<Clock::time_point> deadline, int stop_signal);
    // The child ended (seen exited, or its end told): no bound applies from now on.
    void child_gone() { gone_ = true; }
    // When step() must be asked again at the latest (a bound, the end of the grace period);
    // Clock::time_point::max() when nothing but the child's end or a stop can change anything.
    Clock::time_point wake(std::optional<Clock::time_point> deadline) const;
    // Whether a stop request still matters: the caller watches the stop descriptor while it does
    // (once killed, nothing is left to do on one; the descriptor stays readable).
    bool stoppable() const { return !gone_ && !killed_; }

    bool timed_out() const { return timed_out_; }
    bool deadline_passed() const { return deadline_passed_; }
    int stopped() const { return stopped_; }  // the stop signal that ended it, 0 when none did
    bool killed() const { return killed_; }

private:
    Clock::time_point timeout_at_;  // max() when unbounded
    std::chrono::milliseconds grace_;
    std::optional<Clock::time_point> kill_at_;  // SIGTERM sent: SIGKILL then
    bool killed_ = false, gone_ = false, timed_out_ = false, deadline_passed_ = false;
    int stopped_ = 0;
};

}  // namespace evgate
