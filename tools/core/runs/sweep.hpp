// Sweeps: a polluter found pollutes more than the victim it was found with. A module reload
// that leaves the clock frozen, a cache left full, an environment variable left set: every
// later test that reads that state may fail, and the seeds showed only the ones their orders
// put after it without a cleaner between. A sweep is one run that puts a verified partner set
// first and every other test after it, in collection order; what fails there and passed
// elsewhere is order-dependent too, and is localised like any other, that set tried first.
// Pure: the plans only; the localise step runs them.
#pragma once

#include <string>
#include <vector>

#include "runs/run_plan.hpp"

namespace evgate {

// The `number`th sweep (1, 2, ...): `partners` in their order, then every test of `collection`
// that is not one of them. Its id and order are "sweep.<number>".
RunPlan sweep_plan(int number, const std::vector<std::string>& partners, const std::vector<std::string>& collection);

// `reruns` runs of the sweep's order through the last of `tests` (the tests it showed to
// depend on the order), ids "sweep.<n>.rerun.<j>": the same order again tells an order
// dependence from a test that fails now and then, as the rerun step does for the seeds.
std::vector<RunPlan> sweep_reruns(const RunPlan& sweep, const std::vector<std::string>& tests, int reruns);

}  // namespace evgate
