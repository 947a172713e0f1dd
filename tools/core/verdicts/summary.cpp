#include "verdicts/summary.hpp"

#include <ostream>

namespace evgate {

bool printed(const LedgerRow& row) { return row.gate != Gate::pass || row.warning; }

void GateSummary::add(const LedgerRow& row) {
    if (printed(row)) shown.push_back(row);
    if (row.suite_scope) {
        ++checks;
        suite_blocks += row.gate == Gate::block;
        runners += row.test.rfind("runner:", 0) == 0 && row.gate == Gate::pass;
        return;
    }
    ++tests;
    ++verdicts[static_cast<std::size_t>(row.verdict)];
    blocked += row.gate == Gate::block;
    deferred += row.gate == Gate::defer;
}

std::vector<std::pair<Verdict, int>> GateSummary::verdict_counts() const {
    std::vector<std::pair<Verdict, int>> counts;
    for (const auto v : by_precedence())
        if (const int n = verdicts[static_cast<std::size_t>(v)]) counts.emplace_back(v, n);
    return counts;
}

GateSummary summarize(const std::vector<LedgerRow>& rows) {
    GateSummary summary;
    for (const auto& row : rows) summary.add(row);
    return summary;
}

std::string summary_line(const GateSummary& s, std::size_t runs) {
    std::string line = std::to_string(s.tests) + " tests over " + std::to_string(runs) + " runs: " +
                       std::to_string(s.blocked) + " block, " + std::to_string(s.deferred) + " defer, " +
                       std::to_string(s.passed()) + " pass";
    if (s.suite_blocks) line += "; " + std::to_string(s.suite_blocks) + " suite check(s) block";
    return line;
}

void print_rows(std::ostream& out, const GateSummary& summary) {
    for (const auto gate : {Gate::block, Gate::defer}) {
        for (const auto& row : summary.shown) {
            if (row.gate != gate) continue;
            out << (gate == Gate::block ? "BLOCK " : "DEFER ") << row.test << ": " << row.verdict << ", " << row.reason << '\n';
        }
    }
    for (const auto& row : summary.shown)
        if (row.warning) out << "WARN " << row.test << ": " << row.reason << '\n';
}

int print_summary(std::ostream& out, const std::string& suite, const GateSummary& s, std::size_t runs) {
    out << "evidence-gate " << suite << ": " << summary_line(s, runs) << " -> " << s.decision() << '\n';
    return s.blocking();
}

int print_gate(std::ostream& out, const std::string& suite, const GateSummary& summary, std::size_t runs) {
    print_rows(out, summary);
    return print_summary(out, suite, summary, runs);
}

int print_gate(std::ostream& out, const std::string& suite, const std::vector<LedgerRow>& rows, std::size_t runs) {
    return print_gate(out, suite, summarize(rows), runs);
}

}  // namespace evgate
