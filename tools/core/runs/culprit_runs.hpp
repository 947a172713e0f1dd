// The culprit search driven over real pytest runs (culprit_search.hpp is the search itself):
// for every order-dependent test, the partner it hangs on (a polluter that breaks a victim, or
// a state-setter a brittle test needs), found by delta debugging, and the order that reproduces it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fixtures/fixture_store.hpp"
#include "inputs/suite_config.hpp"
#include "runs/attempt.hpp"
#include "runs/culprit_search.hpp"
#include "runs/receipt.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

struct Culprit {
    Localisation found;
    std::uint64_t seed = 0;                                   // of the orders it was found in: replays reseed `random` alike
    std::map<std::string, std::vector<std::string>> dirtied;  // partner -> the groups its lease saw it change
};

// Told of each test as its search starts and when it is done, so that a step that may take
// minutes says what it is doing while it does it.
struct LocaliseProgress {
    std::function<void(const std::string& test)> starting;
    std::function<void(const Culprit&)> done;
    std::function<void(const RunPlan& sweep, const std::vector<std::string>& partners)> sweeping;
    std::function<void(const RunPlan& sweep, const std::vector<std::string>& found)> swept;  // its new order-dependent tests
    // Polluters found whose sweep did not run, and why (the step's time, or its most sweeps).
    std::function<void(const std::vector<std::string>& polluters, const std::string& why)> unswept;
};

// Localises every test the local runs make order-dependent (as `triage` says:
// verdicts/triage.hpp), within `per_test` pytest runs each (the step's budget scales with the
// number of such tests; its time stays within the step's CTest timeout), trying the partner sets
// found for earlier tests first. Every polluter set found is swept (runs/sweep.hpp): its other
// victims are localised too. Writes localise.json and returns what it found.
std::vector<Culprit> localise_suite(const SuiteConfig& suite, const Receipt& receipt, FixtureStore& store, int per_test,
                                    const TriageAnswers& triage, const LocaliseProgress& progress = {});

// localise.json of the current receipt or of one whose runs it keeps (Receipt::run_receipts),
// by test; empty when there is none.
std::map<std::string, Culprit> load_culprits(const SuiteConfig& suite, const std::vector<std::string>& receipts);

}  // namespace evgate
