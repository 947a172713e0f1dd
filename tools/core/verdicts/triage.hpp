// Triage: from every attempt of one test to one verdict. Pure functions, no I/O. What the
// attempts show is gathered once (Observations); each verdict's rule (verdict_table.cpp) reads
// it, and of the verdicts that apply the one first in precedence wins.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "runs/attempt.hpp"
#include "runs/column.hpp"
#include "verdicts/verdict_table.hpp"

namespace evgate {

struct Classification {
    Verdict verdict = Verdict::stable;
    std::vector<Verdict> also;  // the other verdicts that applied, in precedence order
    std::string reason;
    std::vector<std::string> dirty;  // groups changed outside the lease, over all attempts
    // Forks of the collected session showed failures that fresh processes of the same order did
    // not: the verdict rests on the attempts that were not forks.
    bool fork_sensitive = false;
    // It failed only in runs that went beside other runs, and passed when they were done again
    // alone, often enough to rule out chance: it collides with another copy of itself; the
    // verdict rests on the runs alone.
    bool collides = false;
    // Groups (and source-tree files) that changed while the test ran but not when it ran alone in
    // a fresh process: not its doing, and not blamed on it; the runs they changed in.
    std::vector<std::string> unattributed, unattributed_in;
};

// Of every attempt of one test, its verdict. Two kinds of attempt are weighed first:
// - where forks failed and fresh processes of the same order (Attempt::fresh) passed often
//   enough (fresh_runs_needed), and no other process failed, the forks are set aside;
// - where it failed only in runs beside others and their redos alone (`.apart`) passed as often
//   (fresh_runs_needed again), the runs beside are set aside;
// - where the test changed a group in some run but not when replayed alone in a fresh process,
//   the change is not its own (a process another test left running made it).
Classification classify(const std::vector<Attempt>& attempts);

// How many fresh processes of an order must all pass, where forks of it failed `failed` of `runs`
// times, before the forks' failures are set aside: enough that, were the test failing at one rate
// whatever runs it (flaky, not fork-sensitive), all its failures would have fallen among the forks
// less than once in 100 (Fisher's exact test, one-sided: C(runs, failed) / C(runs + m, failed) <=
// 0.01), and two at least. 0 when there is nothing to confirm; more than kMostFreshRuns means fresh
// processes cannot tell them apart at a cost worth paying (too few forks failed), and none are run.
// The same rule sets aside the runs beside others against their redos alone.
std::size_t fresh_runs_needed(std::size_t failed, std::size_t runs);
constexpr std::size_t kMostFreshRuns = 8;

// What could set aside forks' failures of the test (ForkDoubt, runs/attempt.hpp), `needed` being
// fresh_runs_needed of the forks of that order (or of all of them). nullopt where nothing can: no
// fork failed it, a process (a fresh one among them) failed it too, or too few forks failed it for
// fresh processes to tell.
std::optional<ForkDoubt> fork_doubt(const std::vector<Attempt>& attempts);

// What the runs that weigh attempts ask (runs/attempt.hpp), answered by classify(): whether the
// test is order-dependent; whether a change is blamed on it, and, where its verdict blocks on
// outcomes (flaky, order-dependent, failing), its fork_doubt().
TriageAnswers triage_answers();

// How the plugin names a file it saw a test change in the source tree, outside the groups.
constexpr std::string_view kSourceTreePrefix = "(source tree):";

// What one test's attempts show, as the verdicts' rules read it: outcome classes as
// outcome_class() gives them, never none.
struct Observations {
    using Runs = std::vector<std::string>;

    std::map<std::string, std::set<OutcomeClass>> classes_by_order;  // local attempts with a result
    std::map<OutcomeClass, Runs> runs_by_class;                      // local
    std::map<OutcomeClass, Runs> remote_runs_by_class;               // runners and perturbed
    std::map<OutcomeClass, Runs> runner_runs_by_class;               // runners only
    Runs interrupted, missing;
    Runs uncalled;                // runs whose records say its call phase never ran
    std::set<std::string> dirty;  // groups, and kSourceTreePrefix + file
    Runs dirtied_in;
    bool alone_tried = false;
    std::map<OutcomeClass, Runs> beside_by_class;              // runs that went beside others and were done again alone
    std::set<OutcomeClass> seen_not_beside;                    // classes seen in a run that was not
    std::string fail_message, skip_message, uncalled_message;  // ": <message>" of the first such attempt with one, else ""

    std::size_t count(OutcomeClass cls) const;  // local runs with a result of this class
    std::string runs(OutcomeClass cls) const;   // some of them, for a reason
    // An order whose local runs differ (one of them failed), if any: flaky.
    const std::string* flaky_order() const;
    // Local runs differ, one of them failed: a skip in some orders is the test's own business.
    bool outcomes_differ() const;
    bool passes_locally() const;  // passes, never fails (skips in some orders do not count against it)
    bool fails_locally() const;   // fails in every local run that has a result
    // "; it failed only in runs that went beside others ..." when every failure was seen only in
    // runs done again alone since (which did not fail again), else "".
    std::string failed_only_beside() const;
};

// "a, b, c" and "seed.1, seed.4, seed.5 and 3 more" (short enough for one line of a reason).
std::string listed(const std::vector<std::string>& items);
std::string some_of(const std::vector<std::string>& items);

}  // namespace evgate
