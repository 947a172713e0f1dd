#include "runs/confirm_alone.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"

namespace evgate {
namespace {

// One outcome of one test, in one run.
struct Seen {
    const LoadedRun* run;
    OutcomeClass cls;  // never none
    bool alone;        // the run overlapped no other run
    bool redone;       // it was done again alone already: never chosen again
};

using Sightings = std::vector<Seen>;

bool differ(const std::set<OutcomeClass>& classes) { return classes.size() > 1 && classes.count(OutcomeClass::fail) != 0; }

std::set<OutcomeClass> classes_of(const Sightings& seen) {
    std::set<OutcomeClass> classes;
    for (const auto& s : seen) classes.insert(s.cls);
    return classes;
}

// The runs that could witness an outcome alone: one of them must be done again.
using Requirement = std::vector<const LoadedRun*>;

// For every outcome in `seen` that no run alone witnessed, the runs that hold it and were not done
// again alone yet (none: nothing more can be asked).
void require_each(const Sightings& seen, std::vector<Requirement>& required) {
    for (const auto& cls : classes_of(seen)) {
        Requirement candidates;
        bool witnessed = false;
        for (const auto& s : seen) {
            if (s.cls != cls) continue;
            witnessed = witnessed || s.alone;
            if (!s.alone && !s.redone) candidates.push_back(s.run);
        }
        if (!witnessed && !candidates.empty()) required.push_back(std::move(candidates));
    }
}

// What doing `run` again alone costs, in seconds: a run's own price (its process or fork, the
// lease, its records read back) and the time its tests took.
double redo_cost(const LoadedRun& run) {
    constexpr double kPerRun = 0.05;  // a fork's start and end and evgate's side of it (docs/cost.md)
    double seconds = kPerRun;
    for (const auto& [test, result] : run.records.results) seconds += std::max(0.0, result.seconds);
    return seconds;
}

// The redos that meet every requirement, chosen greedily by requirements met per second of cost
// (a weighted set cover): one seed run that holds the failures of many tests goes again rather
// than each test's own cheapest run. Ties go to the run with fewer tests, then to the earlier.
std::set<const LoadedRun*> cover(std::vector<Requirement> required, const std::vector<LoadedRun>& runs) {
    std::set<const LoadedRun*> chosen;
    while (!required.empty()) {
        std::map<const LoadedRun*, std::size_t> meets;
        for (const auto& candidates : required)
            for (const auto* run : std::set<const LoadedRun*>(candidates.begin(), candidates.end())) ++meets[run];
        const LoadedRun* best = nullptr;
        double best_rate = 0;
        for (const auto& run : runs) {  // in run order, so that ties go to the earlier
            const auto it = meets.find(&run);
            if (it == meets.end()) continue;
            const double rate = static_cast<double>(it->second) / redo_cost(run);
            if (best == nullptr || rate > best_rate * (1 + 1e-9) ||
                (rate >= best_rate * (1 - 1e-9) && run.plan.tests.size() < best->plan.tests.size())) {
                best = &run;
                best_rate = rate;
            }
        }
        chosen.insert(best);
        required.erase(std::remove_if(required.begin(), required.end(),
                                      [&](const Requirement& r) { return std::find(r.begin(), r.end(), best) != r.end(); }),
                       required.end());
    }
    return chosen;
}

}  // namespace

std::vector<RunId> runs_to_confirm(const std::vector<LoadedRun>& runs, const Overlapped& overlapped, bool failures) {
    // test -> its local outcomes by order, and its perturbed ones.
    std::map<std::string, std::map<std::string, Sightings>> local;
    std::map<std::string, Sightings> perturbed;
    std::set<std::string> confirmed;  // runs already done again alone
    for (const auto& run : runs)
        if (!run.plan.confirms.empty()) confirmed.insert(run.plan.confirms);
    for (const auto& run : runs) {
        if (!run.problem.empty() || run.plan.column == Column::runner) continue;
        const bool alone = !overlapped(run.plan.lease);
        const bool redone = confirmed.count(run.plan.id.str()) != 0;
        for (const auto& [test, result] : run.records.results) {
            const auto cls = outcome_class(result.outcome);
            if (cls == OutcomeClass::none) continue;
            if (run.plan.column == Column::perturbed) perturbed[test].push_back({&run, cls, alone, redone});
            else local[test][run.plan.order].push_back({&run, cls, alone, redone});
        }
    }
    std::vector<Requirement> required;
    for (const auto& [test, by_order] : local) {
        Sightings all;
        for (const auto& [order, seen] : by_order) {
            if (differ(classes_of(seen))) require_each(seen, required);  // flaky, if it holds
            all.insert(all.end(), seen.begin(), seen.end());
        }
        const auto classes = classes_of(all);
        const auto remote = perturbed.find(test);
        auto either = classes;
        if (remote != perturbed.end())
            for (const auto& cls : classes_of(remote->second)) either.insert(cls);
        const bool gap = remote != perturbed.end() && classes_of(remote->second) != classes && differ(either);
        if (differ(classes)) require_each(all, required);                                                    // order-dependent, if it holds
        if (gap) require_each(remote->second, required);                                                     // a gap, if it holds
        if (failures && classes == std::set<OutcomeClass>{OutcomeClass::fail}) require_each(all, required);  // failing, if it holds
    }
    const auto redo = cover(std::move(required), runs);
    std::vector<RunId> ids;
    for (const auto& run : runs)
        if (redo.count(&run)) ids.push_back(run.plan.id);
    return ids;
}

RunPlan apart_plan(const RunPlan& plan) {
    RunPlan apart = plan;
    apart.id = plan.id.apart();
    apart.confirms = plan.id.str();
    apart.lease.clear();
    apart.access = TreeAccess::exclusive;
    return apart;
}

}  // namespace evgate
