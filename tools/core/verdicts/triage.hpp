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
};

struct Classification {
    Verdict verdict = Verdict::stable;
    std::vector<Verdict> also;  // the other verdicts that applied, in precedence order
    std::string reason;
    std::vector<std::string> dirty;  // groups changed outside the lease, over all attempts
};

Classification classify(const std::vector<Attempt>& attempts);

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
