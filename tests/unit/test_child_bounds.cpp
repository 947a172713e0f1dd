// The stop/timeout state machine of the one wait loop (io/child_wait: a process, a fork), on a made-up
// clock: what a child's group is sent, when, and what the result says.
#include <catch2/catch.hpp>

#include <csignal>

#include "io/child_bounds.hpp"

using namespace evgate;
using namespace std::chrono_literals;
using Send = ChildBounds::Send;
using Clock = ChildBounds::Clock;

namespace {

const Clock::time_point t0{};  // the child's start
constexpr auto kGrace = 2000ms;
const std::optional<Clock::time_point> no_test;

}  // namespace

TEST_CASE("an unbounded child is sent nothing and woken for nothing", "[child_bounds]") {
    ChildBounds bounds(t0, 0ms, kGrace);
    CHECK(bounds.step(t0 + 24h, no_test, 0) == Send::nothing);
    CHECK(bounds.wake(no_test) == Clock::time_point::max());
    CHECK(bounds.stoppable());
    CHECK_FALSE(bounds.timed_out());
}

TEST_CASE("TIMEOUT: SIGTERM at the deadline, SIGKILL after the grace period, once each", "[child_bounds]") {
    ChildBounds bounds(t0, 600ms, kGrace);
    CHECK(bounds.wake(no_test) == t0 + 600ms);
    CHECK(bounds.step(t0 + 599ms, no_test, 0) == Send::nothing);
    CHECK(bounds.step(t0 + 600ms, no_test, 0) == Send::terminate);
    CHECK(bounds.timed_out());
    CHECK_FALSE(bounds.deadline_passed());
    CHECK(bounds.wake(no_test) == t0 + 600ms + kGrace);
    CHECK(bounds.step(t0 + 601ms, no_test, 0) == Send::nothing);
    CHECK(bounds.step(t0 + 600ms + kGrace, no_test, 0) == Send::kill);
    CHECK(bounds.killed());
    CHECK(bounds.step(t0 + 10s, no_test, 0) == Send::nothing);
    CHECK(bounds.wake(no_test) == Clock::time_point::max());
    CHECK_FALSE(bounds.stoppable());  // killed: a stop changes nothing, and its descriptor stays readable
}

TEST_CASE("TEST_TIMEOUT: the running test's bound ends the child, not the run's", "[child_bounds]") {
    ChildBounds bounds(t0, 600s, kGrace);
    const std::optional<Clock::time_point> test = t0 + 60s;
    CHECK(bounds.wake(test) == t0 + 60s);
    CHECK(bounds.step(t0 + 59s, test, 0) == Send::nothing);
    CHECK(bounds.step(t0 + 60s, test, 0) == Send::terminate);
    CHECK(bounds.deadline_passed());
    CHECK_FALSE(bounds.timed_out());
    // The next test's bound (or none, between tests) changes nothing once it is ending.
    CHECK(bounds.step(t0 + 61s, no_test, 0) == Send::nothing);
    CHECK(bounds.step(t0 + 60s + kGrace, no_test, 0) == Send::kill);
}

TEST_CASE("a test bound that moves on with the next test never fires", "[child_bounds]") {
    ChildBounds bounds(t0, 0ms, kGrace);
    CHECK(bounds.step(t0 + 50s, std::optional<Clock::time_point>(t0 + 60s), 0) == Send::nothing);
    CHECK(bounds.step(t0 + 70s, std::optional<Clock::time_point>(t0 + 110s), 0) == Send::nothing);
    CHECK(bounds.wake(std::optional<Clock::time_point>(t0 + 110s)) == t0 + 110s);
}

TEST_CASE("when the run's and the test's bounds have both passed, the run timed out", "[child_bounds]") {
    ChildBounds bounds(t0, 10s, kGrace);
    CHECK(bounds.wake(std::optional<Clock::time_point>(t0 + 20s)) == t0 + 10s);
    CHECK(bounds.step(t0 + 30s, std::optional<Clock::time_point>(t0 + 20s), 0) == Send::terminate);
    CHECK(bounds.timed_out());
    CHECK_FALSE(bounds.deadline_passed());
}

TEST_CASE("a stop asked before the child's first look kills it at once", "[child_bounds]") {
    ChildBounds bounds(t0, 600s, kGrace);
    CHECK(bounds.step(t0, no_test, SIGINT) == Send::kill);
    CHECK(bounds.stopped() == SIGINT);
    CHECK_FALSE(bounds.timed_out());
    CHECK(bounds.step(t0 + 1ms, no_test, SIGINT) == Send::nothing);
    CHECK_FALSE(bounds.stoppable());
}

TEST_CASE("a stop while it runs kills it at once, without a grace period", "[child_bounds]") {
    ChildBounds bounds(t0, 600s, kGrace);
    CHECK(bounds.step(t0 + 5s, no_test, 0) == Send::nothing);
    CHECK(bounds.step(t0 + 6s, no_test, SIGTERM) == Send::kill);
    CHECK(bounds.stopped() == SIGTERM);
}

TEST_CASE("a stop within the grace period after a timeout kills it at once, and says so", "[child_bounds]") {
    ChildBounds bounds(t0, 1s, kGrace);
    CHECK(bounds.step(t0 + 1s, no_test, 0) == Send::terminate);
    CHECK(bounds.stoppable());
    CHECK(bounds.step(t0 + 1500ms, no_test, SIGHUP) == Send::kill);
    CHECK(bounds.stopped() == SIGHUP);
    CHECK(bounds.timed_out());
}

TEST_CASE("a stop after the kill is not the child's end", "[child_bounds]") {
    ChildBounds bounds(t0, 1s, kGrace);
    CHECK(bounds.step(t0 + 1s, no_test, 0) == Send::terminate);
    CHECK(bounds.step(t0 + 1s + kGrace, no_test, 0) == Send::kill);
    CHECK(bounds.step(t0 + 4s, no_test, SIGINT) == Send::nothing);
    CHECK(bounds.stopped() == 0);
}

TEST_CASE("a child that ended is sent nothing more: no bound, no stop", "[child_bounds]") {
    ChildBounds bounds(t0, 1s, kGrace);
    bounds.child_gone();
    CHECK(bounds.step(t0 + 2s, std::optional<Clock::time_point>(t0), SIGINT) == Send::nothing);
    CHECK(bounds.stopped() == 0);
    CHECK_FALSE(bounds.timed_out());
    CHECK(bounds.wake(no_test) == Clock::time_point::max());
    CHECK_FALSE(bounds.stoppable());
}

TEST_CASE("a child that ends within the grace period is not killed", "[child_bounds]") {
    ChildBounds bounds(t0, 1s, kGrace);
    CHECK(bounds.step(t0 + 1s, no_test, 0) == Send::terminate);
    bounds.child_gone();
    CHECK(bounds.step(t0 + 1s + kGrace, no_test, 0) == Send::nothing);
    CHECK_FALSE(bounds.killed());
    CHECK(bounds.timed_out());
}
