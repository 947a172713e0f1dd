// Disagreements confirmed alone. Runs that go side by side (seed steps under ctest -j N, reruns
// in the rerun step) can collide where evgate sees nothing: a hard-coded /tmp path, a port, a
// database server. A test whose outcomes differ is flaky, order-dependent or a portability gap
// only if every outcome it rests on was seen at least once in a run that overlapped no other
// run; a run that overlapped others and holds an outcome nobody saw alone is done again with
// nothing else running, once, as a run of its own (`<id>.apart`). Both stay evidence: a redo
// never takes back what the first run showed. A failure seen only beside other runs, which the
// redo does not show again, makes the test flaky, and its row says where it was seen (a test
// that collides with a copy of itself, or nondeterminism: nothing here can tell them apart,
// and neither is a pass).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "runs/run_plan.hpp"

namespace evgate {

// Whether the run that held this lease token went side by side with another run.
using Overlapped = std::function<bool(const std::string& lease)>;

// The runs (ids, in the order of `runs`) to do again alone, for the local and perturbed runs in
// `runs`. For each test: in each order whose outcomes differ (one of them a failure), every
// outcome needs a witness among that order's runs that overlapped nothing; across the local runs
// likewise; a perturbed outcome that differs from the local ones needs the perturbed run alone.
// With `failures`, a test that fails in every local run needs
// one failure seen alone too. Where outcomes have no witness, the runs done again are chosen to
// witness them all at the least cost (greedily: most outcomes witnessed per second, a run's
// price plus its tests' time), so one seed run holding many tests' failures goes again rather
// than a run of its own for each.
std::vector<RunId> runs_to_confirm(const std::vector<LoadedRun>& runs, const Overlapped& overlapped, bool failures);

// The plan that does `plan` again alone: the same tests in the same order and column, as its own run.
RunPlan apart_plan(const RunPlan& plan);

}  // namespace evgate
