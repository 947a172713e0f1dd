// A Launcher (runs/launcher.hpp) that starts nothing, for unit tests: its child is a script of
// what a pytest process does (bytes on its record channel at given times, how long it runs, its
// exit status, whether SIGTERM ends it), waited on in the loop real children are
// (io/child_wait.hpp), so bounds, stops, progress and the channel behave as a process's or a
// fork's do, in milliseconds. test_launchers.cpp holds it to the real launchers' cases.
#pragma once

#include <algorithm>
#include <chrono>
#include <csignal>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include "io/child_wait.hpp"
#include "runs/launcher.hpp"

namespace evgate::test {

struct FakeChild {
    struct Write {
        std::chrono::milliseconds at;  // after its start
        std::string bytes;             // on its record channel
    };
    std::vector<Write> writes;
    std::chrono::milliseconds runs_for{0};  // then it exits
    int exit_code = 0;
    bool heeds_term = true;  // SIGTERM ends it; else only SIGKILL does
};

class FakeLauncher final : public Launcher {
public:
    // `script`: what the child of a launch does.
    explicit FakeLauncher(std::function<FakeChild(const LaunchSpec&)> script) : script_(std::move(script)) {}

    std::optional<LaunchResult> run(const LaunchSpec& launch) override {
        const auto& spec = launch.process;
        if (!serving()) return std::nullopt;
        stop_source(spec).throw_if_asked();
        const auto start = WaitedChild::Clock::now();
        signals_.clear();
        ++launched_;
        if (spec.channel) spec.channel->started(::getpid());  // its bytes come from this process
        Scripted child(script_(launch), spec.channel, start, signals_);
        ProcessResult ended;
        wait_for_child(child, spec, start, ended);
        ended.exit_code = child.exit_code();
        ended.signal = child.signal();
        if (spec.channel) {
            spec.channel->close_child_end();  // the child's end closes with it
            spec.channel->drain();
            spec.channel->child_reaped();
        }
        ended.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(WaitedChild::Clock::now() - start);
        if (ended.stopped != 0 && !spec.return_when_stopped) throw Stopped(ended.stopped);
        return launch_result(ended, launch);
    }

    // Starts nothing from now on (as a fork server that refused), saying `why`.
    void refuse(std::string why) { refused_ = std::move(why); }
    bool serving() const override { return refused_.empty(); }
    std::string why_not() const override { return refused_; }

    // What the last child's group was sent, in order.
    const std::vector<int>& signals() const { return signals_; }
    int launched() const { return launched_; }

private:
    class Scripted final : public WaitedChild {
    public:
        Scripted(FakeChild script, ChildChannel* channel, Clock::time_point start, std::vector<int>& signals)
            : script_(std::move(script)), channel_(channel), start_(start), signals_(signals) {}

        bool over(Clock::time_point now) override {
            for (; next_ < script_.writes.size() && now >= start_ + script_.writes[next_].at; ++next_) write(script_.writes[next_].bytes);
            if (!ended_ && now >= start_ + script_.runs_for) {
                ended_ = true;
                exit_code_ = script_.exit_code;
            }
            return ended_;
        }
        void signal_group(int signal) override {
            signals_.push_back(signal);
            if (ended_ || (signal != SIGKILL && !script_.heeds_term)) return;
            ended_ = true;
            signal_ = signal;
        }
        std::size_t watch(pollfd*, Clock::time_point now, Clock::time_point& wake) override {
            auto next = ended_ ? now : start_ + script_.runs_for;
            if (next_ < script_.writes.size()) next = std::min(next, start_ + script_.writes[next_].at);
            wake = std::min(wake, next);
            return 0;
        }
        void woke(const pollfd*, ChildBounds&) override {}

        int exit_code() const { return exit_code_; }
        int signal() const { return signal_; }

    private:
        void write(const std::string& bytes) {
            if (bytes.empty() || channel_ == nullptr || channel_->child_end() < 0) return;
            (void)!::write(channel_->child_end(), bytes.data(), bytes.size());
        }

        FakeChild script_;
        ChildChannel* channel_;
        Clock::time_point start_;
        std::vector<int>& signals_;
        std::size_t next_ = 0;  // the next write
        bool ended_ = false;
        int exit_code_ = -1, signal_ = 0;
    };

    std::function<FakeChild(const LaunchSpec&)> script_;
    std::vector<int> signals_;
    int launched_ = 0;
    std::string refused_;
};

}  // namespace evgate::test
