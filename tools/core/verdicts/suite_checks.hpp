// The suite's own rows (scope "suite"), one per check: did pytest run the suite the project
// means (receipt, options, collection, baseline), did the source tree stay as it was outside
// every lease, did every run finish and see what the receipt saw (run, doubts), is every runner
// bundle and shard a column, are the quarantine's entries dated promises about collected tests,
// and do skips point at the sandbox. A check passes, warns (passes, `warning`), or blocks with
// the table's verdict: missing evidence, an interrupted run, a polluter without a test.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "verdicts/gate.hpp"

namespace evgate {

// receipt, stray-config:<file>, thinning, options, collection, baseline, tree:<phase>.
std::vector<LedgerRow> collection_rows(const GateInput& input);
// quarantine:<file>:<line>: entries that defer nothing collected, or are dated over a year ahead.
std::vector<LedgerRow> quarantine_rows(const GateInput& input);
// run:<id>: every expected run is there, finished, and saw what the receipt saw.
std::vector<LedgerRow> run_rows(const GateInput& input);
// <check>:<run>: what a run's records doubt it by (run_records.hpp, RunDoubt).
std::vector<LedgerRow> doubt_rows(const GateInput& input);
// runner:<name>, shard:<dir>: every runner bundle is a column or a blocking row.
std::vector<LedgerRow> runner_rows(const GateInput& input);
// sandbox: tests skipped in every run for a reason that points at the fresh HOME or TMPDIR each
// run gets, among the test rows rows[first...]; nullopt when none is.
std::optional<LedgerRow> sandbox_row(const GateInput& input, const std::vector<LedgerRow>& rows, std::size_t first);

}  // namespace evgate
