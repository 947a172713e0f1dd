#include "runs/rerun_planner.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"

namespace evgate {
namespace {

struct Seen {
    std::map<OutcomeClass, std::vector<const LoadedRun*>> runs_by_class;
};

std::unordered_map<std::string, Seen> observe(const std::vector<LoadedRun>& runs) {
    std::unordered_map<std::string, Seen> seen;
    for (const auto& run : runs) {
        if (!run.problem.empty()) continue;
        for (const auto& [test, result] : run.records.results) {
            const auto cls = outcome_class(result.outcome);
            if (cls != OutcomeClass::none) seen[test].runs_by_class[cls].push_back(&run);
        }
    }
    return seen;
}

}  // namespace

std::vector<RunPlan> plan_reruns(const std::vector<LoadedRun>& seed_runs, const RerunLimits& limits) {
    const auto seen = observe(seed_runs);
    // For every order to rerun: how far into it the last suspicious test sits.
    std::map<const LoadedRun*, std::size_t> prefix;
    std::set<std::string> alone;
    for (const auto& [test, s] : seen) {
        if (limits.settled.count(test)) continue;
        if (s.runs_by_class.size() == 1 && s.runs_by_class.count(OutcomeClass::fail)) {
            alone.insert(test);
            continue;
        }
        if (s.runs_by_class.size() < 2 || !s.runs_by_class.count(OutcomeClass::fail)) continue;  // never failed: nothing to tell
        for (const auto& [cls, runs] : s.runs_by_class) {
            for (std::size_t i = 0; i < runs.size() && i < limits.orders_per_outcome; ++i) {
                const auto& tests = runs[i]->plan.tests;
                const auto at = static_cast<std::size_t>(std::find(tests.begin(), tests.end(), test) - tests.begin());
                auto& end = prefix[runs[i]];
                end = std::max(end, at + 1);
            }
        }
    }

    std::vector<RunPlan> plans;
    for (const auto& run : seed_runs) {  // in the seed runs' order, so plans are stable
        auto it = prefix.find(&run);
        if (it == prefix.end()) continue;
        for (int j = 1; j <= limits.reruns; ++j) {
            RunPlan plan;
            plan.id = run.plan.id.rerun(static_cast<std::uint64_t>(j));
            plan.order = run.plan.order;
            plan.seed = run.plan.seed;
            plan.tests.assign(run.plan.tests.begin(), run.plan.tests.begin() + static_cast<std::ptrdiff_t>(it->second));
            plans.push_back(std::move(plan));
        }
    }
    // Alone, in collection order (the first seed run's plan is seed.0's: collection order).
    std::size_t n = 0;
    if (!seed_runs.empty()) {
        for (const auto& test : seed_runs.front().plan.tests) {
            if (!alone.count(test) || n >= limits.alone) continue;
            RunPlan plan;
            plan.id = RunId::alone(++n);
            plan.order = std::string(kAloneOrder);
            plan.seed = 0;
            plan.tests = {test};
            plans.push_back(std::move(plan));
        }
    }
    return plans;
}

// Of the reruns planned, those no run already holds: a rerun of an order that a kept run reran
// as far is not run again, one that goes further is numbered after it; a test a kept run ran
// alone is not run alone again.
std::vector<RunPlan> not_run_yet(std::vector<RunPlan> plans, const std::vector<LoadedRun>& runs) {
    std::map<std::string, const RunPlan*> kept;
    std::set<std::vector<std::string>> alone;
    std::size_t alone_numbers = 0;
    for (const auto& run : runs) {
        kept[run.plan.id.str()] = &run.plan;
        if (const auto id = run.plan.id.local(); run.plan.order == kAloneOrder && id && id->is_alone()) {
            alone.insert(run.plan.tests);
            ++alone_numbers;
        }
    }
    std::set<std::string> taken;  // every id a kept run or a plan that stays as planned holds
    for (const auto& [id, plan] : kept) taken.insert(id);
    for (const auto& plan : plans)
        if (plan.order != kAloneOrder && !kept.count(plan.id.str())) taken.insert(plan.id.str());
    std::vector<RunPlan> left;
    for (auto& plan : plans) {
        if (plan.order == kAloneOrder) {
            if (alone.count(plan.tests)) continue;
            plan.id = RunId::alone(++alone_numbers);
        } else if (const auto was = kept.find(plan.id.str()); was != kept.end()) {
            if (was->second->tests.size() >= plan.tests.size()) continue;
            std::uint64_t j = 1;
            const auto order = RunId::of(plan.order);
            while (taken.count(order.rerun(j).str())) ++j;
            plan.id = order.rerun(j);
            taken.insert(plan.id.str());
        }
        left.push_back(std::move(plan));
    }
    return left;
}

}  // namespace evgate

namespace evgate {

std::set<std::string> settled_by_partners(const std::map<std::string, Localisation>& found, const std::vector<LoadedRun>& runs,
                                          const std::string& receipt_id) {
    std::set<std::string> settled;
    for (const auto& [test, f] : found) {
        if (f.partners.empty() || f.budget_exhausted || f.role == Role::unknown) continue;
        const auto explained = [&, &test = test, &f = f](const LoadedRun& run) {
            const auto result = run.records.results.find(test);
            if (run.records.receipt != receipt_id || result == run.records.results.end() ||
                outcome_class(result->second.outcome) != OutcomeClass::fail)
                return true;
            const auto& order = run.plan.tests;
            const auto at = std::find(order.begin(), order.end(), test);
            const bool all_before = std::all_of(f.partners.begin(), f.partners.end(),
                                                [&](const std::string& p) { return std::find(order.begin(), at, p) != at; });
            return f.role == Role::victim ? all_before : !all_before;
        };
        if (std::all_of(runs.begin(), runs.end(), explained)) settled.insert(test);
    }
    return settled;
}

}  // namespace evgate
