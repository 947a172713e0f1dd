#include "io/child_wait.hpp"

#include <algorithm>
#include <csignal>
#include <optional>

namespace evgate {
namespace {

using Clock = WaitedChild::Clock;

// After reading the channel, the next look waits this long: records come a few per test, and
// waking for each would cost a context switch apiece. The child's end is seen at once meanwhile.
constexpr std::chrono::milliseconds kChannelQuiet{5};

}  // namespace

const StopSource& stop_source(const ProcessSpec& spec) { return spec.stop != nullptr ? *spec.stop : stop_requests(); }

void wait_for_child(WaitedChild& child, const ProcessSpec& spec, Clock::time_point start, ProcessResult& result) {
    const StopSource& stop = stop_source(spec);
    ChildBounds bounds(start, spec.timeout, kStopGracePeriod);
    auto next_progress = start + spec.progress_every;
    Clock::time_point channel_quiet_until{};
    for (;;) {
        const auto now = Clock::now();
        if (child.over(now)) break;
        const auto deadline = spec.deadline ? spec.deadline() : std::nullopt;
        switch (bounds.step(now, deadline, stop.signal())) {
            case ChildBounds::Send::terminate: child.signal_group(SIGTERM); break;
            case ChildBounds::Send::kill: child.signal_group(SIGKILL); break;
            case ChildBounds::Send::nothing: break;
        }
        if (spec.progress && now >= next_progress) {
            spec.progress(std::chrono::duration_cast<std::chrono::milliseconds>(now - start));
            next_progress = now + spec.progress_every;
        }
        auto wake = std::min(bounds.wake(deadline), now + std::chrono::hours(1));
        if (spec.progress) wake = std::min(wake, next_progress);
        pollfd fds[WaitedChild::kMaxFds + 2];
        auto n = static_cast<nfds_t>(std::min(child.watch(fds, now, wake), WaitedChild::kMaxFds));
        const bool quiet = now < channel_quiet_until;
        if (quiet) wake = std::min(wake, channel_quiet_until);
        const int channel = spec.channel != nullptr && !quiet ? spec.channel->our_end() : -1;
        const nfds_t channel_at = n;
        if (channel >= 0) fds[n++] = {channel, POLLIN, 0};
        if (bounds.stoppable() && stop.fd() >= 0) fds[n++] = {stop.fd(), POLLIN, 0};
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
        if (::poll(fds, n, static_cast<int>(std::clamp<long long>(ms, 0, 60'000))) <= 0) continue;
        if (channel >= 0 && fds[channel_at].revents != 0) {
            spec.channel->drain();
            channel_quiet_until = Clock::now() + kChannelQuiet;
        }
        child.woke(fds, bounds);
    }
    result.timed_out = bounds.timed_out();
    result.deadline_passed = bounds.deadline_passed();
    result.stopped = bounds.stopped();
}

}  // namespace evgate
