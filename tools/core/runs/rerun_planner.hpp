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

}  // namespace evgate
