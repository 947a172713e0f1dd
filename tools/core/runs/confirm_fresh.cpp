#include "runs/confirm_fresh.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "runs/run_matrix.hpp"

namespace evgate {
namespace {

// The fork runs that failed the test, in `order` ("" for any), cheapest first (fewest tests).
std::vector<std::string> failing_forks(const std::vector<Attempt>& attempts, const std::string& order,
                                       const std::map<std::string, std::size_t>& sizes) {
    std::vector<std::string> runs;
    for (const auto& a : attempts)
        if (a.fork && a.column == Column::local && outcome_class(a.outcome) == OutcomeClass::fail && (order.empty() || a.order == order))
            runs.push_back(a.run);
    std::stable_sort(runs.begin(), runs.end(), [&](const auto& x, const auto& y) { return sizes.at(x) < sizes.at(y); });
    return runs;
}

bool has_fresh_alone(const std::vector<Attempt>& attempts) {
    return std::any_of(attempts.begin(), attempts.end(), [](const Attempt& a) { return a.fresh && a.order == kAloneOrder; });
}

// The fresh replays of each run done so far: run id -> how many.
std::map<std::string, std::size_t> done_so_far(const std::vector<LoadedRun>& runs) {
    std::map<std::string, std::size_t> done;
    for (const auto& run : runs) {
        if (!run.plan.fresh) continue;
        const auto id = run.plan.id.local();
        if (const auto source = id ? id->before_last(RunId::Step::fresh) : std::nullopt) ++done[source->str()];
    }
    return done;
}

RunPlan fresh_plan(const RunPlan& source, std::size_t through, std::size_t j) {
    RunPlan plan;
    plan.id = source.id.fresh(j);
    plan.order = source.order;
    plan.seed = source.seed;
    plan.listed = source.listed;
    plan.fresh = true;
    plan.tests.assign(source.tests.begin(), source.tests.begin() + static_cast<std::ptrdiff_t>(through));
    return plan;
}

}  // namespace

std::vector<RunPlan> plan_fresh(const std::vector<LoadedRun>& runs, const Receipt& receipt, const FreshLimits& limits,
                                const TriageAnswers& triage) {
    RunMatrix matrix;
    std::map<std::string, std::size_t> sizes;  // run id -> tests planned
    std::map<std::string, const LoadedRun*> by_id;
    for (const auto& run : runs) {
        matrix.add(run);
        sizes[run.plan.id.str()] = run.plan.tests.size();
        by_id[run.plan.id.str()] = &run;
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
        const auto doubts = triage.fresh_doubts(attempts);
        if (doubts.changed && !has_fresh_alone(attempts) && alone.size() < limits.polluters) alone.emplace_back(n + 1, test);
        const auto& doubt = doubts.forks;
        if (!doubt || doubt->passed.size() >= doubt->needed) continue;
        // One first: a fresh process that fails confirms the forks. The rest once it passed.
        const auto more = doubt->passed.empty() ? std::size_t{1} : doubt->needed - doubt->passed.size();
        const auto candidates = failing_forks(attempts, doubt->order, sizes);
        // A run another test's replay takes already, where it holds this test too: one fresh
        // process confirms both. Else the cheapest.
        const auto holds = [&](const std::string& run) {
            const auto& tests = by_id.at(run)->plan.tests;
            return static_cast<std::size_t>(std::find(tests.begin(), tests.end(), test) - tests.begin());
        };
        auto source = candidates.front();
        for (const auto& run : candidates)
            if (replays.count(run)) {
                source = run;
                break;
            }
        if (replays.size() >= limits.orders && !replays.count(source)) continue;
        auto& replay = replays[source];
        replay.through = std::max(replay.through, holds(source) + 1);
        replay.more = std::max(replay.more, more);
    }
    const auto done = done_so_far(runs);
    std::vector<RunPlan> plans;
    for (const auto& run : runs) {  // in the runs' order: plans are stable
        const auto replay = replays.find(run.plan.id.str());
        if (replay == replays.end()) continue;
        const auto first = done.count(run.plan.id.str()) ? done.at(run.plan.id.str()) + 1 : 1;
        for (auto j = first; j < first + replay->second.more; ++j) plans.push_back(fresh_plan(run.plan, replay->second.through, j));
    }
    for (const auto& [n, test] : alone) {
        RunPlan source;
        source.id = RunId::first(n);
        source.order = std::string(kAloneOrder);
        source.tests = {test};
        plans.push_back(fresh_plan(source, 1, 1));
    }
    return plans;
}

}  // namespace evgate
