// Child processes in their own process group, bounded in time, never outliving us.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace evgate {

struct ProcessSpec {
    std::vector<std::string> argv;         // argv[0] is a path or a name on PATH
    std::filesystem::path cwd;
    std::vector<std::string> environment;  // the complete environment, VAR=value
    std::filesystem::path output;          // stdout and stderr are appended here
    std::chrono::milliseconds timeout{0};  // 0: no bound
    std::vector<int> cpus;                 // the CPUs it may run on; empty: all
    std::function<void(std::chrono::milliseconds elapsed)> progress;  // called every progress_every while it runs
    std::chrono::milliseconds progress_every{10000};
};

struct ProcessResult {
    int exit_code = -1;  // when it exited
    int signal = 0;      // when a signal ended it
    bool timed_out = false;
    std::chrono::milliseconds elapsed{0};

    bool exited_with(int code) const { return signal == 0 && !timed_out && exit_code == code; }
    std::string describe() const;  // "exit 1", "killed by signal 9 (SIGKILL)", "timed out after 600 s"
};

// Runs to completion or timeout. On timeout the whole group gets SIGTERM, then SIGKILL after a
// grace period; after any end the group gets SIGKILL, so grandchildren left behind die too.
ProcessResult run_process(const ProcessSpec& spec);

// `base` (default: the current environment), VAR=value, with `overrides` replacing or adding entries.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);
std::vector<std::string> environment_with(std::vector<std::string> base, const std::vector<std::string>& overrides);

}  // namespace evgate
