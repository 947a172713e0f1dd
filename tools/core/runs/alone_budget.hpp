// How much of a ctest the alone pass may spend (ALONE AUTO): a quarter of what the seed runs of
// one ctest cost, and never less than a floor while few tests are left (a small suite's whole
// pass); the tests it does not reach run alone in the next ctest on the same tree
// (runs/evidence_reuse.hpp keeps the ones it did).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace evgate {

struct SuiteConfig;

// A small suite's whole pass costs a few seconds, and a brittle test that passes in every seed
// is found only there: while at most kAloneAutoLimit tests are left to run alone, the budget is
// never below this. A larger rest would not finish in it anyway, and a floor would be a fixed
// price on every ctest of a suite of quick tests (docs/cost.md).
inline constexpr double kAloneFloorSeconds = 5.0;
// Of the seed runs' time (SEEDS + 1 runs of the longest seed run), the share the pass may take.
inline constexpr double kAloneShare = 0.25;
// Without a seed run to measure, ALONE AUTO runs the pass for up to this many tests, and the floor
// holds up to this many left: at 20 to 150 ms a fork, more would cost more than the seeds of a
// suite of quick tests (docs/cost.md).
inline constexpr std::size_t kAloneAutoLimit = 200;

// The pass's budget in seconds for `alone` ("auto", "on", "off"), `seeds` seed steps, the longest
// seed run so far and the tests left to run alone; nullopt for no bound (ALONE ON, or no seed run
// to measure).
std::optional<double> alone_budget(std::string_view alone, std::uint64_t seeds, std::optional<double> seed_run_seconds,
                                   std::size_t tests_left);

// Whether the pass starts another chunk of runs: always without a budget and for its first
// chunk (`last_chunk` 0: every ctest moves the pass on, whatever the clock read by then), else
// only when `spent` seconds and one more chunk as long as the last (`last_chunk`) stay within
// `budget`: the pass ends inside its budget, not a chunk past it.
bool next_chunk_fits(std::optional<double> budget, double spent, double last_chunk);

// The rule in words, for the lines and ledger rows that say a pass stopped at its budget.
std::string alone_budget_rule();

// Whether the pass runs at all: not under ALONE OFF, nor under ALONE AUTO for more than
// kAloneAutoLimit tests with no seed run to budget it by.
bool alone_pass_runs(std::string_view alone, bool budgeted, std::size_t tests);

// The longest of the seed runs seed.0 .. seed.<seeds-1> finished so far (this invocation's and the
// kept ones), from its plan (written as it starts) to its records' last write; nullopt before any.
std::optional<double> seed_run_seconds(const SuiteConfig& suite, std::uint64_t seeds);

}  // namespace evgate
