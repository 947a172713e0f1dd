#include "runs/alone_budget.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

#include "inputs/run_id.hpp"
#include "inputs/suite_config.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

std::optional<double> alone_budget(std::string_view alone, std::uint64_t seeds, std::optional<double> seed_run_seconds,
                                   std::size_t tests_left) {
    if (alone != "auto" || !seed_run_seconds) return std::nullopt;
    const double share = kAloneShare * static_cast<double>(seeds + 1) * *seed_run_seconds;
    return tests_left <= kAloneAutoLimit ? std::max(kAloneFloorSeconds, share) : share;
}

bool next_chunk_fits(std::optional<double> budget, double spent, double last_chunk) {
    return !budget || last_chunk <= 0 || spent + last_chunk <= *budget;  // no chunk yet: the first
}

std::string alone_budget_rule() {
    return "ALONE AUTO spends at most a quarter of the seed runs' time per ctest, or " +
           std::to_string(static_cast<int>(kAloneFloorSeconds)) + " s while at most " + std::to_string(kAloneAutoLimit) +
           " tests are left";
}

bool alone_pass_runs(std::string_view alone, bool budgeted, std::size_t tests) {
    if (alone == "off") return false;
    return alone != "auto" || budgeted || tests <= kAloneAutoLimit;
}

std::optional<double> seed_run_seconds(const SuiteConfig& suite, std::uint64_t seeds) {
    namespace fs = std::filesystem;
    std::optional<double> longest;
    for (std::uint64_t k = 0; k < seeds; ++k) {
        const auto id = RunId::seed(k);
        std::error_code ec1, ec2;
        const auto started = fs::last_write_time(plan_file(suite, id), ec1);
        const auto ended = fs::last_write_time(records_file(suite, id), ec2);
        if (ec1 || ec2) continue;
        longest = std::max(longest.value_or(0.0), std::chrono::duration<double>(ended - started).count());
    }
    return longest;
}

}  // namespace evgate
