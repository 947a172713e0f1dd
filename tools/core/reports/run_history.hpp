// What the ledger step adds to a run beyond the ledger: junit.xml, and what ctest's environment
// asks for. EVIDENCE_GATE_HISTORY=<dir>: the reports say how each test that does not pass fared
// in the archived runs before, and which tests flip most often, and the run is archived there.
// EVIDENCE_GATE_COMPARE=<evidence dir | ledger.jsonl>: report.md tells the rows that block
// because of this change from those already bad there. Neither changes the gate's decision.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "inputs/suite_config.hpp"
#include "reports/report_extras.hpp"
#include "runs/run_matrix.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

// junit.xml of the run into the evidence directory (the time: now).
void write_run_junit(const SuiteConfig& suite, const std::vector<LedgerRow>& rows, const RunMatrix& runs);

// The reports' history and comparison sections; nullopt when the environment asks for neither.
// Whatever cannot be read is said in the sections, never an error: the reports are written.
std::optional<ReportExtras> run_report_extras(const SuiteConfig& suite, const std::vector<LedgerRow>& rows,
                                              const std::string& receipt_id);

// Archives the run when EVIDENCE_GATE_HISTORY is set, and says where (or why not) on `out`.
void archive_if_asked(const SuiteConfig& suite, std::ostream& out);

// Where EVIDENCE_GATE_COMPARE's value finds the suite's ledger: <dir>/<suite>/ledger.jsonl (an
// evidence tree), the newest run in <dir>/<suite>/ (an EVIDENCE_GATE_HISTORY archive),
// <dir>/ledger.jsonl (when its receipt names this suite or none), or the file itself.
std::filesystem::path compared_ledger(const std::string& value, const std::string& suite);

}  // namespace evgate
