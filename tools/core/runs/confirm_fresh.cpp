#include "runs/confirm_fresh.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "verdicts/run_matrix.hpp"

namespace evgate {
namespace {

constexpr char kFresh[] = ".fresh.";

// A run's forks of one order, as they bear on one test.
struct ForkFailures {
    std::size_t failed = 0, runs = 0, fresh_passed = 0;
    bool fresh_failed = false;
    std::string failing_run;  // the cheapest fork run of the order that failed it (fewest tests)
};

bool blocks_on_outcomes(Verdict v) { return v == Verdict::flaky || v == Verdict::order_dependent || v == Verdict::failing; }

// The orders whose forks failed the test, each with the cheapest fork run that failed it (fewest
// tests) and how many more fresh passes of it would set those failures aside, worst order first
// (where forks failed it most often); empty when fresh processes cannot or need not tell. Only one
// more is asked for where none ran yet: a first fresh process that fails confirms the forks, and
// the rest are planned once it passed.
struct Need {
    std::string order, source;
    std::size_t more = 0;
};
std::vector<Need> fresh_needs(const std::vector<Attempt>& attempts, const std::map<std::string, std::size_t>& sizes) {
    std::map<std::string, ForkFailures> by_order;
    for (const auto& a : attempts) {
        const auto cls = outcome_class(a.outcome);
        if (a.column != Column::local || cls.empty()) continue;
        auto& f = by_order[a.order];
        if (a.fresh) {
            f.fresh_failed = f.fresh_failed || cls == "fail";
            f.fresh_passed += cls != "fail";
        } else if (a.fork) {
            ++f.runs;
            if (cls != "fail") continue;
            ++f.failed;
            if (f.failing_run.empty() || sizes.at(a.run) < sizes.at(f.failing_run)) f.failing_run = a.run;
        } else if (cls == "fail") {
            return {};  // a process failed it too: nothing for fresh processes to show
        }
    }
    std::vector<std::pair<double, Need>> needs;
    for (const auto& [order, f] : by_order) {
        if (f.fresh_failed) return {};  // a fresh process failed it: the failure is its own
        if (f.failed == 0) continue;
        const auto needed = fresh_runs_needed(f.failed, f.runs);
        if (needed > kMostFreshRuns || f.fresh_passed >= needed) continue;
        const auto more = f.fresh_passed == 0 ? std::size_t{1} : needed - f.fresh_passed;
        needs.emplace_back(static_cast<double>(f.failed) / static_cast<double>(f.runs), Need{order, f.failing_run, more});
    }
    std::stable_sort(needs.begin(), needs.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<Need> out;
    for (auto& [rate, need] : needs) out.push_back(std::move(need));
    return out;
}

bool has_fresh_alone(const std::vector<Attempt>& attempts) {
    return std::any_of(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.fresh && a.order == kAloneOrder; });
}

// The fresh replays of each run done so far: run id -> how many.
std::map<std::string, std::size_t> done_so_far(const std::vector<LoadedRun>& runs) {
    std::map<std::string, std::size_t> done;
    for (const auto& run : runs) {
        const auto at = run.plan.id.rfind(kFresh);
        if (run.plan.fresh && at != std::string::npos) ++done[run.plan.id.substr(0, at)];
    }
    return done;
}

RunPlan fresh_plan(const RunPlan& source, std::size_t through, std::size_t j) {
    RunPlan plan;
    plan.id = source.id + kFresh + std::to_string(j);
    plan.order = source.order;
    plan.seed = source.seed;
    plan.listed = source.listed;
    plan.fresh = true;
    plan.tests.assign(source.tests.begin(), source.tests.begin() + static_cast<std::ptrdiff_t>(through));
    return plan;
}

}  // namespace

std::vector<RunPlan> plan_fresh(const std::vector<LoadedRun>& runs, const Receipt& receipt, const FreshLimits& limits) {
    RunMatrix matrix;
    std::map<std::string, std::size_t> sizes;  // run id -> tests planned
    std::map<std::string, const LoadedRun*> by_id;
    for (const auto& run : runs) {
        matrix.add(run);
        sizes[run.plan.id] = run.plan.tests.size();
        by_id[run.plan.id] = &run;
    }
    struct Replay {
        std::size_t through = 0, more = 0;
    };
    std::map<std::string, Replay> replays;
    std::map<std::string, std::string> chosen_for_order;  // order -> the run its replays take
    std::vector<std::pair<std::size_t, std::string>> alone;  // (place in the collection, test)
    for (std::size_t n = 0; n < receipt.tests.size(); ++n) {
        const auto& test = receipt.tests[n].id;
        const auto attempts = matrix.attempts(test);
        if (attempts.empty()) continue;
        const auto c = classify(attempts);
        if (!c.dirty.empty() && !has_fresh_alone(attempts) && alone.size() < limits.polluters) alone.emplace_back(n + 1, test);
        if (!blocks_on_outcomes(c.verdict)) continue;
        const auto needs = fresh_needs(attempts, sizes);
        if (needs.empty()) continue;
        // A run another test's replay takes already, where it holds this test too: one fresh
        // process confirms both. Else the worst order's.
        const auto place = [&](const std::string& source) {
            const auto& tests = by_id.at(source)->plan.tests;
            return static_cast<std::size_t>(std::find(tests.begin(), tests.end(), test) - tests.begin());
        };
        const Need* chosen = &needs.front();
        std::string source = chosen->source;
        for (const auto& need : needs) {
            const auto taken = chosen_for_order.find(need.order);
            if (taken == chosen_for_order.end() || place(taken->second) == by_id.at(taken->second)->plan.tests.size()) continue;
            chosen = &need;
            source = taken->second;
            break;
        }
        const auto at = place(source);
        if (replays.size() >= limits.orders && !replays.count(source)) continue;
        chosen_for_order.emplace(chosen->order, source);
        auto& replay = replays[source];
        replay.through = std::max(replay.through, at + 1);
        replay.more = std::max(replay.more, chosen->more);
    }
    const auto done = done_so_far(runs);
    std::vector<RunPlan> plans;
    for (const auto& run : runs) {  // in the runs' order: plans are stable
        const auto replay = replays.find(run.plan.id);
        if (replay == replays.end()) continue;
        const auto first = done.count(run.plan.id) ? done.at(run.plan.id) + 1 : 1;
        for (auto j = first; j < first + replay->second.more; ++j) plans.push_back(fresh_plan(run.plan, replay->second.through, j));
    }
    for (const auto& [n, test] : alone) {
        RunPlan source;
        source.id = "first." + std::to_string(n);
        source.order = std::string(kAloneOrder);
        source.tests = {test};
        plans.push_back(fresh_plan(source, 1, 1));
    }
    return plans;
}

}  // namespace evgate
