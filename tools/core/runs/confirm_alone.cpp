#include "runs/confirm_alone.hpp"

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

// Every outcome in `seen` witnessed alone, or the cheapest run that would witness it and was not
// done again alone yet added to `redo`.
void witness_each(const Sightings& seen, std::set<const LoadedRun*>& redo) {
    for (const auto& cls : classes_of(seen)) {
        const LoadedRun* cheapest = nullptr;
        bool witnessed = false;
        for (const auto& s : seen) {
            if (s.cls != cls) continue;
            witnessed = witnessed || s.alone;
            if (!s.alone && !s.redone && (cheapest == nullptr || s.run->plan.tests.size() < cheapest->plan.tests.size())) cheapest = s.run;
        }
        if (!witnessed && cheapest != nullptr) redo.insert(cheapest);
    }
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
    std::set<const LoadedRun*> redo;
    for (const auto& [test, by_order] : local) {
        Sightings all;
        for (const auto& [order, seen] : by_order) {
            if (differ(classes_of(seen))) witness_each(seen, redo);  // flaky, if it holds
            all.insert(all.end(), seen.begin(), seen.end());
        }
        const auto classes = classes_of(all);
        const auto remote = perturbed.find(test);
        auto either = classes;
        if (remote != perturbed.end())
            for (const auto& cls : classes_of(remote->second)) either.insert(cls);
        const bool gap = remote != perturbed.end() && classes_of(remote->second) != classes && differ(either);
        if (differ(classes)) witness_each(all, redo);                                                    // order-dependent, if it holds
        if (gap) witness_each(remote->second, redo);                                                     // a gap, if it holds
        if (failures && classes == std::set<OutcomeClass>{OutcomeClass::fail}) witness_each(all, redo);  // failing, if it holds
    }
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
