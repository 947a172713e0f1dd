// What report.html and report.md say beyond this run's ledger: the run's history
// (EVIDENCE_GATE_HISTORY) and the comparison with another ledger, e.g. the target branch's
// (EVIDENCE_GATE_COMPARE). run_history.cpp builds it; report.cpp places it.
#pragma once

#include <functional>
#include <string>

#include "verdicts/gate.hpp"

namespace evgate {

struct ReportExtras {
    std::string html;      // whole <section>s, placed after the deferred rows
    std::string markdown;  // whole ### sections, placed after the counts
    // A row's past ("flaky in 7 of the last 40 runs on main, first on 1a2b3c4d5e6f"), or "".
    std::function<std::string(const LedgerRow&)> note;
    // With a compared ledger: its name, and whether a row was already bad there (report.md
    // splits the blocking rows by it). Unset when nothing is compared.
    std::string compared;
    std::function<bool(const LedgerRow&)> already_bad;
};

}  // namespace evgate
