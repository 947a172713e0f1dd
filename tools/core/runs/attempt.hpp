// One test's attempt in one run, as the run matrix gives it (run_matrix.hpp) and the verdicts'
// triage judges it, and what the runs that weigh attempts (confirm_fresh, culprit_runs) ask the
// verdicts about them. runs/ never decides a verdict: verdicts/triage.hpp answers
// (triage_answers()), and cli/ hands the answers in.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "inputs/outcome.hpp"
#include "runs/column.hpp"

namespace evgate {

struct Attempt {
    std::string run;    // "seed.3", "seed.3.rerun.1", "alone.2", a runner's name
    std::string order;  // which order it ran in: reruns share their seed's; "alone" runs are their own
    Outcome outcome = Outcome::missing;
    std::vector<std::string> dirty;
    std::string message;
    Column column = Column::local;
    bool beside = false;  // the run went beside other runs and was done again alone
    bool fork = false;    // it ran in a fork of the collected session (a run of forks and then processes counts)
    bool fresh = false;   // a fresh process that confirms what forks showed (never a fork)
};

// Where forks' failures of a test could be set aside by fresh processes: in which order they must
// run ("" for any: forks failed it in every run, so its order has nothing to do with it), how many
// must all pass, and those that did (verdicts/triage.hpp: fork_doubt()).
struct ForkDoubt {
    std::string order;
    std::size_t needed = 0;
    std::vector<std::string> passed;
};

// What fresh processes could settle of one test's verdict.
struct FreshDoubts {
    bool changed = false;            // it is blamed for a change to a fixture group or the source tree
    std::optional<ForkDoubt> forks;  // its verdict blocks on failures forks showed, which fresh processes could set aside
};

// The verdicts' answers about one test's attempts.
struct TriageAnswers {
    std::function<bool(const std::vector<Attempt>&)> order_dependent;  // whom the partner search localises
    std::function<FreshDoubts(const std::vector<Attempt>&)> fresh_doubts;
};

}  // namespace evgate
