#include "runs/perturbation.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include <sched.h>

namespace evgate {
namespace {

std::string env_or(const char* name, const std::string& fallback) {
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

long local_offset_minutes() {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    return local.tm_gmtoff / 60;
}

// POSIX TZ strings need no tzdata. West of UTC (-03:30) from UTC or anywhere east of it, where
// "yesterday" and negative offsets catch the most; +05:30 from the west.
std::string far_timezone() { return local_offset_minutes() >= 0 ? "EGT3:30" : "EGT-5:30"; }

std::string other_locale() {
    const std::string current = env_or("LC_ALL", env_or("LC_CTYPE", env_or("LANG", "C")));
    return current == "C" || current == "POSIX" ? "C.UTF-8" : "C";
}

bool pinned(const SuiteConfig& suite, const std::string& name) {
    return std::any_of(suite.environment.begin(), suite.environment.end(),
                       [&](const std::string& e) { return e.rfind(name + "=", 0) == 0; });
}

}  // namespace

Perturbation choose_perturbation(const SuiteConfig& suite) {
    const std::string hash_seed = env_or("PYTHONHASHSEED", "") == "4242" ? "1" : "4242";
    const std::pair<std::string, std::string> candidates[] = {
        {"TZ", far_timezone()},
        {"LC_ALL", other_locale()},
        {"PYTHONHASHSEED", hash_seed},
    };
    Perturbation p;
    for (const auto& [name, value] : candidates) {
        if (pinned(suite, name)) continue;
        p.environment.push_back(name + "=" + value);
        p.changes.push_back(name + "=" + value);
    }
    cpu_set_t mine;
    if (::sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) > 1) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (CPU_ISSET(static_cast<std::size_t>(cpu), &mine)) {
                p.cpus = {cpu};
                p.changes.push_back("one CPU (" + std::to_string(cpu) + ")");
                break;
            }
        }
    }
    return p;
}

}  // namespace evgate
