#include "verdicts/summary.hpp"

#include <ostream>
#include <string_view>
#include <unordered_set>

#include "verdicts/counts.hpp"

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
    // The runs the rows' outcomes name, as read_gate_summary counts them from the file. Rows with
    // the same attempts share one list: each list is read once.
    std::unordered_set<const void*> lists;
    std::unordered_set<std::string_view> runs;
    for (const auto& row : rows) {
        summary.add(row);
        if (row.outcomes.empty() || !lists.insert(&*row.outcomes.begin()).second) continue;
        for (const auto& attempt : row.outcomes) runs.insert(attempt.first);
    }
    summary.runs = runs.size();
    return summary;
}

std::string summary_line(const GateSummary& s) {
    std::string line = counted(static_cast<std::size_t>(s.tests), "test") + " over " + counted(s.runs, "run") + ": " +
                       std::to_string(s.blocked) + " block, " + std::to_string(s.deferred) + " defer, " +
                       std::to_string(s.passed()) + " pass";
    if (s.suite_blocks) line += "; " + counted(static_cast<std::size_t>(s.suite_blocks), "suite check") + (s.suite_blocks == 1 ? " blocks" : " block");
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

int print_summary(std::ostream& out, const std::string& suite, const GateSummary& s) {
    out << "evidence-gate " << suite << ": " << summary_line(s) << " -> " << s.decision() << '\n';
    return s.blocking();
}

int print_gate(std::ostream& out, const std::string& suite, const GateSummary& summary) {
    print_rows(out, summary);
    return print_summary(out, suite, summary);
}

int print_gate(std::ostream& out, const std::string& suite, const std::vector<LedgerRow>& rows) {
    return print_gate(out, suite, summarize(rows));
}

}  // namespace evgate
