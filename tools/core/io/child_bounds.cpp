#include "io/child_bounds.hpp"

#include <algorithm>

namespace evgate {

ChildBounds::ChildBounds(Clock::time_point start, std::chrono::milliseconds timeout, std::chrono::milliseconds grace)
    : timeout_at_(timeout.count() > 0 ? start + timeout : Clock::time_point::max()), grace_(grace) {}

ChildBounds::Send ChildBounds::step(Clock::time_point now, std::optional<Clock::time_point> deadline, int stop_signal) {
    if (gone_ || killed_) return Send::nothing;
    if (stop_signal != 0) {  // at once, also within a grace period
        stopped_ = stop_signal;
        killed_ = true;
        return Send::kill;
    }
    if (kill_at_) {
        if (now < *kill_at_) return Send::nothing;
        killed_ = true;
        return Send::kill;
    }
    if (now >= timeout_at_) timed_out_ = true;
    else if (deadline && now >= *deadline) deadline_passed_ = true;
    else return Send::nothing;
    kill_at_ = now + grace_;
    return Send::terminate;
}

ChildBounds::Clock::time_point ChildBounds::wake(std::optional<Clock::time_point> deadline) const {
    if (gone_ || killed_) return Clock::time_point::max();
    if (kill_at_) return *kill_at_;
    return deadline ? std::min(timeout_at_, *deadline) : timeout_at_;
}

}  // namespace evgate
