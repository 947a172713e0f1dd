// The culprit search of an order dependence (as iDFlakies and iFixFlakies do): run the test
// alone to tell a victim from a brittle test, delta-debug the tests before it (by bisecting
// prefixes) for the minimal set that flips it, verify that set, and look for cleaners. Pure:
// every run goes through an injected oracle, so the search is unit-tested with fakes and the
// CTest step (culprit_runs.hpp) is an adapter.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/outcome.hpp"

namespace evgate {

// Runs `tests` in this exact order in a fresh interpreter (fixtures restored) and returns the
// outcome class of the LAST test (to_string(OutcomeClass): "" when it produced no result).
// Exceptions it throws propagate.
using Oracle = std::function<std::string(const std::vector<std::string>& tests)>;

// Checked before every run: a run in progress is never interrupted, so the oracle must bound
// each run itself (the suite's TIMEOUT). Every oracle call counts, retries included.
struct Budget {
    int max_runs = 50;
    std::chrono::seconds max_time{300};
    int confirmations = 3;  // runs alone, and rounds of verification of the final set
};

enum class Role { victim,
                  brittle,
                  unknown };  // passes alone -> victim; fails alone -> brittle

std::string_view to_string(Role role);

struct Localisation {
    std::string test;
    Role role = Role::unknown;
    std::vector<std::string> partners;         // minimal set of earlier tests that flips it, in run order (a best candidate when `note` says so)
    std::string partner_role;                  // "polluter" (victim) or "state-setter" (brittle); "" without partners
    std::vector<std::string> cleaners;         // each, run between the one polluter and the victim, makes it pass; sought
                                               // between the two in a passing order that ran the polluter first
    std::vector<std::string> reproduce_order;  // partners then the test (victim), the test alone (brittle); empty when nothing reproduces
    bool budget_exhausted = false;             // the budget stopped the partner search: `partners` is the best candidate so far
    int runs_used = 0;
    std::string note;  // why no partner was named, or why `partners` is only a best candidate; "" when all went well
};

// `failing_prefix`: an order ending with `test` in which it FAILED (searched for a victim);
// `passing_prefix`: an order ending with `test` in which it PASSED (searched for a brittle test).
// Either may be empty when no such order is known. `known`: partner sets already found for
// other tests (one polluter often has many victims): each whose tests all ran before `test` in
// the prefix is tried first, and verified like a set the search found, before any search.
// `alone_before`: outcome classes of runs of `test` alone already made (the alone pass and its
// reruns), counted toward the runs alone that tell a victim from a brittle test.
Localisation localise(const std::string& test,
                      const std::vector<std::string>& failing_prefix,
                      const std::vector<std::string>& passing_prefix,
                      const Oracle& run, const Budget& budget,
                      const std::vector<std::vector<std::string>>& known = {},
                      const std::vector<std::string>& alone_before = {});

}  // namespace evgate
