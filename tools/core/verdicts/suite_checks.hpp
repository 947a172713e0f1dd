// The suite's own rows (scope "suite"), one per check: did pytest run the suite the project
// means (receipt, options, collection, baseline), did the source tree stay as it was outside
// every lease, did every run finish and see what the receipt saw (run, doubts), is every runner
// bundle and shard a column, are the quarantine's entries and env_sensitive markers dated
// promises about collected tests, and is any test skipped in every run (the sandbox may be why).
// A check passes, warns (passes, `warning`), or blocks with the table's verdict: missing
// evidence, an interrupted run, a polluter without a test.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "verdicts/gate.hpp"

namespace evgate {

// receipt, stray-config:<file>, thinning, set-aside, options, collection, baseline, tree:<phase>.
std::vector<LedgerRow> collection_rows(const GateInput& input);
// quarantine:<file>:<line>: entries that defer nothing collected, or are dated over a year ahead.
std::vector<LedgerRow> quarantine_rows(const GateInput& input);
// env_sensitive:<test>: env_sensitive markers dated more than a year ahead, as quarantine entries.
std::vector<LedgerRow> env_sensitive_rows(const GateInput& input);
// orders: how many distinct orders the seeds ran, and which seeds repeated one (not run); run:<id>:
// every expected run is there, finished, and saw what the receipt saw.
std::vector<LedgerRow> run_rows(const GateInput& input);
// <check>:<run>: what a run's records doubt it by (run_records.hpp, RunDoubt).
std::vector<LedgerRow> doubt_rows(const GateInput& input);
// runner:<name>, shard:<dir>: every runner bundle is a column or a blocking row.
std::vector<LedgerRow> runner_rows(const GateInput& input);
// sandbox: every test skipped in every run of this machine (every seed and the perturbed run)
// among the test rows rows[first...], all of them in the row's `tests`, with the sandbox each run
// had and which of them skip for a reason that points at it; nullopt when none is. Under plain
// pytest, with the user's HOME, such a test may run (and fail).
std::optional<LedgerRow> sandbox_row(const GateInput& input, const std::vector<LedgerRow>& rows, std::size_t first);
// fork-sensitive: every test among rows[first...] whose forks failed where fresh processes of the
// same order passed (a WARN row: their verdicts rest on the processes); nullopt when none did.
std::optional<LedgerRow> fork_sensitive_row(const std::vector<LedgerRow>& rows, std::size_t first);
// collides: every test among rows[first...] that failed only beside other runs and passed when
// they were done again alone (a WARN row: their verdicts rest on the runs alone).
std::optional<LedgerRow> colliding_row(const std::vector<LedgerRow>& rows, std::size_t first);
// unattributed:<test>: a group changed while the test ran that it does not change alone in a
// fresh process (a process it did not start made the change): blocks, without blaming the test.
std::vector<LedgerRow> unattributed_rows(const std::vector<LedgerRow>& rows, std::size_t first);

}  // namespace evgate
