// ledger.jsonl: one JSON object a line, a row each (ledger_row.hpp), written by the ledger and
// receipt steps and read back by the gate step. Given the same rows the text is byte-identical.
// The only place that spells a row's verdict and gate as text, both ways.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "verdicts/ledger_row.hpp"
#include "verdicts/summary.hpp"

namespace evgate {

std::string ledger_jsonl(const std::vector<LedgerRow>& rows);
// The same into `file`, atomically, a piece at a time.
void write_ledger(const std::filesystem::path& file, const std::vector<LedgerRow>& rows);

// The summary of ledger.jsonl in one pass that keeps nothing else; the rows are checked as
// the ledger promises them (test, verdict, gate and reason strings, the verdict and the gate
// among the table's; until and owner strings). Throws InputError naming file and line.
GateSummary read_gate_summary(const std::filesystem::path& file);

}  // namespace evgate
