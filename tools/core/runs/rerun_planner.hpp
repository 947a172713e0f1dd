// Which runs tell order dependence from nondeterminism (as iDFlakies does): a test whose
// outcome differs between orders is rerun in the same orders; a test that fails in every
// order is run alone before it may be called failing.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "runs/run_plan.hpp"

namespace evgate {

struct RerunLimits {
    int reruns = 2;                 // repeats of each order a suspicious test is rerun in
    std::size_t orders_per_outcome = 2;  // orders rerun for each outcome a suspicious test had
    std::size_t alone = 20;         // tests checked alone at most
    std::set<std::string> settled;  // tests kept evidence already explains (rerun and localised): not rerun for
};

// Reruns replay a prefix of their seed's order, up to the last suspicious test in it, so the
// tests before it run exactly as before. Plans are in a stable order.
std::vector<RunPlan> plan_reruns(const std::vector<LoadedRun>& seed_runs, const RerunLimits& limits);

}  // namespace evgate
