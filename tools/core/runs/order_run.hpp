// Running one order of the suite: pytest under the plugin, leases checked per test, groups
// restored after every process, and a fresh process for the rest of the order when the
// interpreter dies, so one crash does not blind the rest.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "fixtures/fixture_store.hpp"
#include "inputs/suite_config.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

struct RunSummary {
    bool complete = false;   // every planned test has a result or was interrupted
    bool harness_ok = true;  // false: pytest never ran the tests (usage or collection failure)
    int processes = 0;
    std::size_t results = 0, failed = 0;  // tests with a result, and those failed or in error
    std::vector<std::string> interrupted;
    std::string note;
    std::string isolation;       // how its processes were started: "fork", "process", "fork, then process"
    std::string isolation_note;  // why processes, where they were
};

// Runs `plan`'s order under a lease on the fixture groups: its plan file and records in its runs
// folder, pytest's output in logs/<id>.log. Throws Stopped when evgate was told to stop (the
// groups restored first).
RunSummary run_order(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, const RunPlan& plan);

}  // namespace evgate
