#include "runs/launcher.hpp"

namespace evgate {

std::string LaunchResult::describe() const {
    const std::string also = note.empty() ? "" : "; " + note;
    if (process.stopped == 0 && test_timed_out.count() > 0) {
        const auto ms = test_timed_out.count();
        return "exceeded TEST_TIMEOUT (" + (ms % 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s") + ")" + also;
    }
    if (process.stopped == 0 && !process.timed_out && process.exit_code < 0 && process.signal == 0 && !note.empty())
        return "ended, how is not known: " + note;
    return process.describe() + also;
}

LaunchResult launch_result(const ProcessResult& process, const LaunchSpec& spec) {
    LaunchResult result;
    result.process = process;
    if (process.deadline_passed) result.test_timed_out = spec.test_timeout;
    return result;
}

std::optional<LaunchResult> ProcessLauncher::run(const LaunchSpec& spec) { return launch_result(run_process(spec.process), spec); }

}  // namespace evgate
