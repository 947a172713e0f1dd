#include "io/child_bounds.hpp"

#include <algorithm>

namespace evgate {

ChildBounds::ChildBounds(Clock::time_point start, std::chrono::milliseconds timeout, std::chrono::milliseconds grace)
    : deadline_(timeout.count() > 0 ? start + timeout : Clock::time_point::max()), grace_(grace) {}

ChildBounds::Send ChildBounds::step(Clock::time_point now, std::optional<Clock::time_point> test_deadline, int stop_signal) {
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
    if (now >= deadline_) timed_out_ = true;
    else if (test_deadline && now >= *test_deadline) test_timed_out_ = true;
    else return Send::nothing;
    kill_at_ = now + grace_;
    return Send::terminate;
}

ChildBounds::Clock::time_point ChildBounds::wake(std::optional<Clock::time_point> test_deadline) const {
    if (gone_ || killed_) return Clock::time_point::max();
    if (kill_at_) return *kill_at_;
    return test_deadline ? std::min(deadline_, *test_deadline) : deadline_;
}

}  // namespace evgate
