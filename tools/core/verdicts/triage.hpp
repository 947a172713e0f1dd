// Triage: from every attempt of one test to one verdict. Pure functions, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace evgate {

// In priority order: when several apply, the first wins (design.md).
enum class Verdict {
    polluter,
    interrupted,
    missing,
    order_dependent,
    flaky,
    runner_only_pass,
    failing,
    portability_gap,
    skipped,
    stable,
};

std::string_view to_string(Verdict verdict);

enum class Column { local, runner, perturbed };
std::string_view to_string(Column column);
bool parse_column(std::string_view text, Column& column);

struct Attempt {
    std::string run;      // "seed.3", "seed.3.rerun.1", "alone.2", a runner's name
    std::string order;    // which order it ran in: reruns share their seed's; "alone" runs are their own
    std::string outcome;  // passed failed error skipped xfailed xpassed interrupted missing
    std::vector<std::string> dirty;
    std::string message;
    Column column = Column::local;
};

struct Classification {
    Verdict verdict = Verdict::stable;
    std::vector<Verdict> also;  // the other verdicts that applied, in priority order
    std::string reason;
    std::vector<std::string> dirty;  // groups changed outside the lease, over all attempts
};

Classification classify(const std::vector<Attempt>& attempts);

// pass / fail / skip: what an outcome says about the test, or "" for no result.
std::string_view outcome_class(std::string_view outcome);

}  // namespace evgate
