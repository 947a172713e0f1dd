// report.md: the summary short enough for a pull-request comment.
#include <algorithm>

#include <gsl/gsl>

#include "reports/markup.hpp"
#include "reports/report_extras.hpp"
#include "reports/report_parts.hpp"

namespace evgate {
namespace {

constexpr std::size_t kMarkdownRows = 50;       // per section: a PR comment, not the whole ledger
constexpr std::size_t kMarkdownCommand = 1000;  // a longer command is pointed to, never cut

std::string md_command(const std::optional<std::string>& command) {
    if (!command) return {};
    return command->size() > kMarkdownCommand ? "(too long: see report.html)" : md_code(*command);
}

std::string md_partner(const LedgerRow& row) {
    if (!row.partner) return {};
    return md_code(clip(*row.partner, kMarkdownCell)) + (row.partner_role ? " (" + md_text(*row.partner_role) + ")" : "");
}

// The optional columns a section has: only those some shown row fills.
struct Columns {
    bool dated, partners, commands, history;
};

std::string md_head(const Columns& c) {
    std::string head = "| test | verdict | orders | reason |", rule = "| --- | --- | --- | --- |";
    if (c.dated) head += " until | owner |", rule += " --- | --- |";
    if (c.partners) head += " partner |", rule += " --- |";
    if (c.commands) head += " reproduce |", rule += " --- |";
    if (c.history) head += " before |", rule += " --- |";
    return head + "\n" + rule + "\n";
}

std::string md_row(const LedgerRow& row, const Columns& c, const std::string& past) {
    // orders: the distinct seed orders the verdict stands on (a suite check has none)
    std::string out = "| " + md_code(clip(row.test, kMarkdownCell)) + " | " + md_text(to_string(row.verdict)) + " | " +
                      (row.suite_scope ? std::string() : std::to_string(row.orders)) + " | " + md_text(row.reason) + " |";
    if (c.dated) out += " " + md_text(row.until.value_or("")) + " | " + md_text(row.owner.value_or("")) + " |";
    if (c.partners) out += " " + md_partner(row) + " |";
    if (c.commands) out += " " + md_command(row.reproduce) + " |";
    if (c.history) out += " " + md_text(past) + " |";
    return out + '\n';
}

void md_rows(std::string& out, std::string_view title, const RowRefs& rows, bool dated, const ReportExtras* extras) {
    if (rows.empty()) return;
    out.append("\n### ").append(title).append(": ").append(std::to_string(rows.size())).append("\n\n");
    const RowRefs shown(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), kMarkdownRows)));
    std::vector<std::string> past(shown.size());  // the history note of each shown row
    if (extras != nullptr && extras->note)
        for (std::size_t i = 0; i < shown.size(); ++i) past[i] = extras->note(*shown[i]);
    const Columns c{dated, any_has(shown, &LedgerRow::partner), any_has(shown, &LedgerRow::reproduce),
                    std::any_of(past.begin(), past.end(), [](const std::string& p) { return !p.empty(); })};
    out += md_head(c);
    for (std::size_t i = 0; i < shown.size(); ++i) out += md_row(*shown[i], c, past[i]);
    if (rows.size() > shown.size()) out += "\n…and " + std::to_string(rows.size() - shown.size()) + " more in report.html\n";
}

// Blocking rows; with a compared ledger (EVIDENCE_GATE_COMPARE), those this change brought
// apart from those already bad there. Only the reading changes: a block is a block.
void md_blocking(std::string& out, const RowRefs& rows, const ReportExtras* extras) {
    if (extras == nullptr || !extras->already_bad) {
        md_rows(out, "Blocking", rows, false, extras);
        return;
    }
    RowRefs fresh, old;
    for (const auto* row : rows) (extras->already_bad(*row) ? old : fresh).push_back(row);
    const auto compared = md_code(extras->compared);
    if (fresh.empty() && !old.empty())
        out += "\n### Blocking because of this change: 0\n\nEvery blocking row was already bad in " + compared + ".\n";
    md_rows(out, "Blocking because of this change (not bad in " + compared + ")", fresh, false, extras);
    md_rows(out, "Blocking, already bad in " + compared, old, false, extras);
}

void md_counts(std::string& out, const GateSummary& s) {
    out += "\n### Counts\n\n| verdict | tests |\n| --- | ---: |\n";
    for (const auto& [verdict, count] : s.verdict_counts())
        out += "| " + md_text(to_string(verdict)) + " | " + std::to_string(count) + " |\n";
    out += "| **all** | **" + std::to_string(s.tests) + "** |\n";
}

// One line per compared column: the most suspicious keys, by name.
void md_drift(std::string& out, const std::vector<ColumnDrift>& drift) {
    if (drift.empty()) return;
    out += "\n### Manifest drift\n\n";
    for (const auto& column : drift) {
        std::string keys;
        std::size_t named = 0;
        for (const auto& e : column.entries) {
            if (e.rank >= drift_rank::env_names || named == 5) continue;
            keys += (named++ ? ", " : "") + md_code(clip(e.key, kMarkdownCell));
        }
        out += "- local vs " + md_code(column.column) + ": " + std::to_string(column.entries.size()) + " keys differ" +
               (keys.empty() ? "" : "; most suspicious: " + keys) + "\n";
    }
}

}  // namespace

std::string report_markdown(const ReportInput& input) {
    Expects(input.rows != nullptr && input.receipt != nullptr && input.summary != nullptr);
    const auto& s = *input.summary;
    std::string out = "## Evidence Gate: " + md_text(input.suite) + " **" + std::string(s.decision()) + "**\n\n" +
                      summary_line(s) + "\n";
    md_blocking(out, rows_with(s, Gate::block), input.extras);
    md_rows(out, "Deferred", rows_with(s, Gate::defer), true, input.extras);
    md_counts(out, s);
    if (input.extras != nullptr) out += input.extras->markdown;
    md_drift(out, input.drift);
    out += "\nEvery run of every test: `report.html` beside the ledger.\n";
    return out;
}

}  // namespace evgate
