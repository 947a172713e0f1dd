// The summary of a ledger: the counts and the rows that block, defer or warn. Computed once
// from the rows (or read from ledger.jsonl by the gate step, ledger.hpp) and printed by the
// gate on the terminal and by report.html and report.md, so that all three say the same.
#pragma once

#include <array>
#include <cstddef>
#include <iosfwd>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "verdicts/ledger_row.hpp"

namespace evgate {

struct GateSummary {
    std::vector<LedgerRow> shown;               // the rows that block, defer or warn, in ledger order
    std::array<int, kVerdictCount> verdicts{};  // test rows per verdict
    int tests = 0, blocked = 0, deferred = 0;   // of the test rows
    int checks = 0, suite_blocks = 0;           // suite rows, and those that block
    std::size_t runners = 0;                    // runner columns that made it into the ledger (passing runner: rows)
    std::size_t runs = 0;                       // run ids the rows' outcomes name: the runs the summary line counts

    void add(const LedgerRow& row);
    int passed() const { return tests - blocked - deferred; }
    int blocking() const { return blocked + suite_blocks; }
    std::string_view decision() const { return blocking() > 0 ? "BLOCKED" : "PASSED"; }
    // The verdicts the test rows have, in precedence order, with how many have each.
    std::vector<std::pair<Verdict, int>> verdict_counts() const;
};

// Whether the gate prints the row: it blocks, defers or warns.
bool printed(const LedgerRow& row);

GateSummary summarize(const std::vector<LedgerRow>& rows);

// "12 tests over 9 runs: 1 block, 0 defer, 11 pass; 1 suite check blocks".
std::string summary_line(const GateSummary& summary);

// BLOCK/DEFER/WARN lines, then a one-line summary; the print functions return the number
// of blocking rows.
void print_rows(std::ostream& out, const GateSummary& summary);
int print_summary(std::ostream& out, const std::string& suite, const GateSummary& summary);
int print_gate(std::ostream& out, const std::string& suite, const GateSummary& summary);
int print_gate(std::ostream& out, const std::string& suite, const std::vector<LedgerRow>& rows);

}  // namespace evgate
