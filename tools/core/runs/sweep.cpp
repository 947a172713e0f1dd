#include "runs/sweep.hpp"

#include <algorithm>
#include <unordered_set>

#include "inputs/run_id.hpp"

namespace evgate {

RunPlan sweep_plan(int number, const std::vector<std::string>& partners, const std::vector<std::string>& collection) {
    RunPlan plan;
    plan.id = RunId::sweep(static_cast<std::uint64_t>(number));
    plan.order = plan.id.str();
    plan.listed = true;
    plan.tests = partners;
    const std::unordered_set<std::string> first(partners.begin(), partners.end());
    for (const auto& test : collection)
        if (first.count(test) == 0) plan.tests.push_back(test);
    return plan;
}

std::vector<RunPlan> sweep_reruns(const RunPlan& sweep, const std::vector<std::string>& tests, int reruns) {
    std::size_t through = 0;
    for (const auto& test : tests) {
        const auto at = std::find(sweep.tests.begin(), sweep.tests.end(), test);
        if (at != sweep.tests.end()) through = std::max(through, static_cast<std::size_t>(at - sweep.tests.begin()) + 1);
    }
    std::vector<RunPlan> plans;
    if (through == 0) return plans;
    for (int j = 1; j <= reruns; ++j) {
        RunPlan plan = sweep;
        plan.id = sweep.id.rerun(static_cast<std::uint64_t>(j));
        plan.tests.resize(through);
        plans.push_back(std::move(plan));
    }
    return plans;
}

}  // namespace evgate
