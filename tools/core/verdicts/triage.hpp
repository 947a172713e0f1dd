// Triage: from every attempt of one test to one verdict. Pure functions, no I/O. What the
// attempts show is gathered once (Observations); each verdict's rule (verdict_table.cpp) reads
// it, and of the verdicts that apply the one first in precedence wins.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "verdicts/verdict_table.hpp"

namespace evgate {

enum class Column { local, runner, perturbed };
std::string_view to_string(Column column);
bool parse_column(std::string_view text, Column& column);

struct Attempt {
    std::string run;      // "seed.3", "seed.3.rerun.1", "alone.2", a runner's name
    std::string order;    // which order it ran in: reruns share their seed's; "alone" runs are their own
    std::string outcome;  // passed failed error skipped xfailed xpassed uncalled interrupted missing
    std::vector<std::string> dirty;
    std::string message;
    Column column = Column::local;
    bool beside = false;  // the run went beside other runs and was done again alone
    bool fork = false;    // it ran in a fork of the collected session (a run of forks and then processes counts)
    bool fresh = false;   // a fresh process that confirms what forks showed (never a fork)
};

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
// times, before the forks' failures are set aside: enough that a test failing as often in a fresh
// process would have failed at least once, 19 times in 20 (and two at least: fresh processes must
// agree with each other). 0 when there is nothing to confirm; more than kMostFreshRuns means
// fresh processes cannot tell them apart at a cost worth paying, and none are run.
std::size_t fresh_runs_needed(std::size_t failed, std::size_t runs);
constexpr std::size_t kMostFreshRuns = 6;

// The order of the alone pass and of the runs that replay one test by itself.
constexpr std::string_view kAloneOrder = "alone";

// pass / fail / skip: what an outcome says about the test, or "" for no result.
std::string_view outcome_class(std::string_view outcome);

// The outcome of a test whose call phase never ran though it was neither skipped nor failed in
// setup (a plugin's or conftest's pytest_runtest_protocol left it out): no result, never a pass.
constexpr std::string_view kUncalled = "uncalled";

// How the plugin names a file it saw a test change in the source tree, outside the groups.
constexpr std::string_view kSourceTreePrefix = "(source tree):";

// What one test's attempts show, as the verdicts' rules read it. Outcome classes as
// outcome_class() gives them.
struct Observations {
    using Runs = std::vector<std::string>;

    std::map<std::string, std::set<std::string>> classes_by_order;  // local attempts with a result
    std::map<std::string, Runs> runs_by_class;                       // local
    std::map<std::string, Runs> remote_runs_by_class;                // runners and perturbed
    std::map<std::string, Runs> runner_runs_by_class;                // runners only
    Runs interrupted, missing;
    Runs uncalled;                 // runs whose records say its call phase never ran
    std::set<std::string> dirty;  // groups, and kSourceTreePrefix + file
    Runs dirtied_in;
    bool alone_tried = false;
    std::map<std::string, Runs> beside_by_class;  // runs that went beside others and were done again alone
    std::set<std::string> seen_not_beside;        // classes seen in a run that was not
    std::string fail_message, skip_message, uncalled_message;  // ": <message>" of the first such attempt with one, else ""

    std::size_t count(const std::string& cls) const;  // local runs with a result of this class
    std::string runs(const std::string& cls) const;   // some of them, for a reason
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
