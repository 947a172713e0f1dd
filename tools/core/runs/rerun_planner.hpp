// Which runs tell order dependence from nondeterminism (as iDFlakies does): a test whose
// outcome differs between orders is rerun in the same orders; a test that fails in every
// order is run alone before it may be called failing.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runs/culprit_search.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

struct RerunLimits {
    int reruns = 2;                      // repeats of each order a suspicious test is rerun in
    std::size_t orders_per_outcome = 2;  // orders rerun for each outcome a suspicious test had
    std::size_t alone = 20;              // tests checked alone at most
    std::set<std::string> settled;       // tests kept evidence already explains (rerun and localised): not rerun for
};

// Reruns replay a prefix of their seed's order, up to the last suspicious test in it, so the
// tests before it run exactly as before. Plans are in a stable order.
std::vector<RunPlan> plan_reruns(const std::vector<LoadedRun>& seed_runs, const RerunLimits& limits);

// Of the reruns planned, those no run in `runs` already holds (runs an earlier ctest left on the
// same key: runs/evidence_reuse.hpp): a rerun of an order a kept rerun took as far is dropped,
// one that goes further is numbered after the kept ones; a test a kept run ran alone is not run
// alone again, and a new one is numbered after them.
std::vector<RunPlan> not_run_yet(std::vector<RunPlan> plans, const std::vector<LoadedRun>& runs);

// Tests a kept localisation (`found`, by test) named the partners of, whose every failure in the
// runs of receipt `receipt_id` those partners explain: a victim's polluters all ran before it, a
// brittle test's state-setters did not. The kept reruns told their order dependence from
// nondeterminism already, and a new order that agrees calls for no rerun (RerunLimits::settled);
// a failure the partners do not explain is rerun as any other. A search its budget stopped, or
// one that named no partner or no role, settles nothing.
std::set<std::string> settled_by_partners(const std::map<std::string, Localisation>& found, const std::vector<LoadedRun>& runs,
                                          const std::string& receipt_id);

}  // namespace evgate
