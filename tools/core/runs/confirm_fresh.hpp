// Disagreements confirmed in fresh processes. A fork of the collected session is a fresh pytest in
// everything a test is meant to observe, but not in what state its modules took at import: that
// ages with the session (a token stamped at import expires, a timestamp falls behind) and is shared
// by every fork. So before a verdict that blocks rests on forks, it is checked in fresh processes:
//
// - a test that would be flaky, order-dependent or failing, and failed in forks: the order in
//   which forks failed it most often is run again in fresh processes, through that test, as
//   `<run>.fresh.<j>` (the run whose order it replays), as many times as fresh_runs_needed()
//   says; if every one passes, triage sets the forks aside (the WARN row `fork-sensitive`);
// - a test that changed a fixture group or the source tree: it runs alone in a fresh process
//   (`first.<n>.fresh.1`, n its place in the collection); if it changes nothing there, the
//   change is not blamed on it (a process it did not start made it).
//
// Each plan replays a prefix of one run, so one fresh process confirms every test of that run it
// reaches. Plans never fork (RunPlan::fresh).
#pragma once

#include <cstddef>
#include <vector>

#include "runs/attempt.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

struct FreshLimits {
    std::size_t polluters = 20;  // tests replayed alone at most, in collection order
    std::size_t orders = 20;     // runs replayed at most
};

// The fresh runs still to do, given every run so far (fresh ones among them: what they showed
// counts) and what the verdicts doubt of each test's attempts (`triage`, verdicts/triage.hpp).
// In a stable order: the replays of runs in the order of `runs`, then the alone ones.
std::vector<RunPlan> plan_fresh(const std::vector<LoadedRun>& runs, const Receipt& receipt, const FreshLimits& limits,
                                const TriageAnswers& triage);

}  // namespace evgate
