#include "reports/report.hpp"

#include <algorithm>
#include <unordered_set>

#include <gsl/gsl>

#include "inputs/evidence_layout.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "reports/report_parts.hpp"

namespace evgate {
namespace {

bool same_runs(const Outcomes& a, const Outcomes& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.first == y.first; });
}

}  // namespace

std::string_view gate_class(Gate gate) {
    switch (gate) {
        case Gate::block: return "gb";
        case Gate::defer: return "gd";
        case Gate::pass: return "gp";
    }
    return "gp";
}

RowRefs rows_with(const GateSummary& summary, Gate gate) {
    RowRefs out;
    for (const auto& row : summary.shown)
        if (row.gate == gate) out.push_back(&row);
    return out;
}

bool any_has(const RowRefs& rows, std::optional<std::string> LedgerRow::*field) {
    return std::any_of(rows.begin(), rows.end(), [field](const LedgerRow* row) { return (row->*field).has_value(); });
}

// Rows mostly name the runs the row before named: those are skipped.
std::vector<std::string> heat_columns(const ReportInput& input) {
    auto columns = input.columns;
    std::unordered_set<std::string> known(columns.begin(), columns.end());
    const Outcomes* last = nullptr;
    for (const auto& row : *input.rows) {
        if (last != nullptr && same_runs(*last, row.outcomes)) continue;
        for (const auto& attempt : row.outcomes)
            if (known.insert(attempt.first).second) columns.push_back(attempt.first);
        last = &row.outcomes;
    }
    return columns;
}

std::vector<std::string> report_columns(const std::vector<LoadedRun>& runs) {
    const auto group = [](const LoadedRun& run) {
        if (run.plan.column == Column::runner) return 4;
        if (run.plan.column == Column::perturbed) return 3;
        if (run.plan.order == kAloneOrder) return 2;
        return run.plan.id.str() == run.plan.order ? 0 : 1;  // a rerun replays its seed's order under its own id
    };
    std::vector<const LoadedRun*> sorted;
    for (const auto& run : runs) sorted.push_back(&run);
    std::stable_sort(sorted.begin(), sorted.end(), [&](const LoadedRun* a, const LoadedRun* b) { return group(*a) < group(*b); });
    std::vector<std::string> ids;
    for (const auto* run : sorted) ids.push_back(run->plan.id.str());
    return ids;
}

std::filesystem::path write_reports(const std::filesystem::path& dir, const ReportInput& input) {
    auto html = dir / evidence::kReportHtml;
    write_file_atomic(html, report_html(input));
    write_file_atomic(dir / evidence::kReportMarkdown, report_markdown(input));
    return html;
}

}  // namespace evgate
