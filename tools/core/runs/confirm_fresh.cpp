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

// Where forks failed the test most often (the worst order), and how many more fresh passes of it
// would set those failures aside; nullopt when fresh processes cannot or need not tell.
struct Need {
    std::string source;  // the run to replay
    std::size_t more = 0;
};
std::optional<Need> fresh_need(const std::vector<Attempt>& attempts, const std::map<std::string, std::size_t>& sizes) {
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
            return std::nullopt;  // a process failed it too: nothing for fresh processes to show
        }
    }
    const ForkFailures* worst = nullptr;
    for (const auto& [order, f] : by_order) {
        if (f.fresh_failed) return std::nullopt;  // a fresh process failed it: the failure is its own
        if (f.failed == 0) continue;
        if (worst == nullptr || f.failed * worst->runs > worst->failed * f.runs) worst = &f;
    }
    if (worst == nullptr) return std::nullopt;
    const auto needed = fresh_runs_needed(worst->failed, worst->runs);
    if (needed > kMostFreshRuns || worst->fresh_passed >= needed) return std::nullopt;
    return Need{worst->failing_run, needed - worst->fresh_passed};
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
    std::vector<std::pair<std::size_t, std::string>> alone;  // (place in the collection, test)
    for (std::size_t n = 0; n < receipt.tests.size(); ++n) {
        const auto& test = receipt.tests[n].id;
        const auto attempts = matrix.attempts(test);
        if (attempts.empty()) continue;
        const auto c = classify(attempts);
        if (!c.dirty.empty() && !has_fresh_alone(attempts) && alone.size() < limits.polluters) alone.emplace_back(n + 1, test);
        if (!blocks_on_outcomes(c.verdict)) continue;
        const auto need = fresh_need(attempts, sizes);
        if (!need) continue;
        const auto& tests = by_id.at(need->source)->plan.tests;
        const auto at = static_cast<std::size_t>(std::find(tests.begin(), tests.end(), test) - tests.begin());
        if (at == tests.size() || (replays.size() >= limits.orders && !replays.count(need->source))) continue;
        auto& replay = replays[need->source];
        replay.through = std::max(replay.through, at + 1);
        replay.more = std::max(replay.more, need->more);
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
