// report.html's heat map: one row per test, one cell per run, the outcome as a colour and a symbol.
#include <algorithm>
#include <array>
#include <unordered_map>
#include <unordered_set>

#include "inputs/outcome.hpp"
#include "reports/assets.hpp"
#include "reports/markup.hpp"
#include "reports/report_parts.hpp"
#include "verdicts/counts.hpp"

namespace evgate {
namespace {

struct OutcomeStyle {
    std::string_view outcome;
    Swatch colour;  // the cell's class: one letter keeps 200,000 cells small
    char symbol;    // shown in the cell so the map reads without colour; pytest's letters where it has one
    std::string_view meaning;

    char css() const { return static_cast<char>(colour); }
};

constexpr std::array<OutcomeStyle, 11> kStyles{{
    {to_string(Outcome::passed), Swatch::green, '.', to_string(Outcome::passed)},
    {to_string(Outcome::failed), Swatch::vermillion, 'F', to_string(Outcome::failed)},
    {to_string(Outcome::error), Swatch::purple, 'E', "error (setup or teardown)"},
    {to_string(Outcome::skipped), Swatch::grey, 's', to_string(Outcome::skipped)},
    {to_string(Outcome::xfailed), Swatch::sky, 'x', "xfailed (failed as expected)"},
    {to_string(Outcome::xpassed), Swatch::orange, 'X', "xpassed (passed unexpectedly)"},
    {to_string(Outcome::interrupted), Swatch::black, '!', "interrupted (the interpreter died)"},
    {to_string(Outcome::missing), Swatch::yellow, '?', "missing (planned, no result)"},
    {to_string(Outcome::uncalled), Swatch::yellow, 'u', "uncalled (a hook ran it without its call phase)"},
    {"not run", Swatch::pale, '-', "not run (not in this run's plan)"},
    {"other", Swatch::blue, '*', "an outcome this report does not know"},
}};
constexpr std::size_t kNotRun = 9;
constexpr std::size_t kOther = 10;

const OutcomeStyle& style_of(std::string_view outcome) {
    for (std::size_t i = 0; i < kNotRun; ++i)
        if (kStyles[i].outcome == outcome) return kStyles[i];
    return kStyles[kOther];
}

// The column of each run a row names. Rows mostly name the runs in the same order, so the
// column the same place had in the row before is tried first.
class ColumnFinder {
public:
    explicit ColumnFinder(const std::vector<std::string>& columns) : columns_(columns) {
        for (std::size_t i = 0; i < columns.size(); ++i) index_.emplace(columns[i], i);
    }
    std::size_t operator()(std::size_t place, const std::string& run) {
        if (place < last_.size() && columns_[last_[place]] == run) return last_[place];
        if (place >= last_.size()) last_.resize(place + 1);
        return last_[place] = index_.at(run);
    }

private:
    const std::vector<std::string>& columns_;
    std::unordered_map<std::string, std::size_t> index_;
    std::vector<std::size_t> last_;
};

void heat_head(std::string& out, const std::vector<std::string>& columns) {
    out += "<table class=heat><thead><tr><th class=k><span class=cols>";
    for (const auto& c : columns) html_element(out, "i", c);
    out += "</span></th><th>verdict</th><th>test</th></tr></thead><tbody>";
}

// One row per test: equal neighbouring cells share one element, so a stable row is one or two.
void heat_row(std::string& out, const LedgerRow& row, ColumnFinder& column_of, std::vector<const OutcomeStyle*>& cells,
              bool& other_seen, std::string_view partner_tag = {}) {
    const auto width = cells.size();
    std::fill(cells.begin(), cells.end(), &kStyles[kNotRun]);
    for (std::size_t i = 0; i < row.outcomes.size(); ++i)
        cells[column_of(i, row.outcomes[i].first)] = &style_of(to_string(row.outcomes[i].second));
    out += partner_tag.empty() ? "<tr><td class=k>" : "<tr class=partner><td class=k>";
    for (std::size_t i = 0; i < width;) {
        std::size_t end = i;
        while (end < width && cells[end] == cells[i]) ++end;
        out.append("<i class=").append(1, cells[i]->css()).append(">").append(end - i, cells[i]->symbol).append("</i>");
        other_seen = other_seen || cells[i] == &kStyles[kOther];
        i = end;
    }
    out.append("</td><td class=\"verdict ").append(gate_class(row.gate)).append("\">");
    escape_html(out, to_string(row.verdict));
    if (!partner_tag.empty()) html_element(out, "span", partner_tag, "tag");
    out += "</td>";
    html_element(out, "td", row.test, "id");
    out += "</tr>";
}

void legend(std::string& out, bool other_seen) {
    out += "<div class=legend>";
    for (std::size_t i = 0; i < kStyles.size(); ++i) {
        if (i == kOther && !other_seen) continue;
        out.append("<span><span class=k><i class=").append(1, kStyles[i].css()).append(">").append(1, kStyles[i].symbol);
        out.append("</i></span> ").append(kStyles[i].meaning).append("</span>");
    }
    out += "</div>";
}

// A row of the map, and the text of its tag when it is there as the partner of the row above.
struct HeatLine {
    const LedgerRow* row;
    std::string partner_tag;
};

// The tests that need a look (blocking, then deferred), each followed by the partners it hangs
// on that are not shown yet (a passing polluter is not left folded away with the passing
// tests), and the others.
std::pair<std::vector<HeatLine>, RowRefs> heat_rows(const ReportInput& input) {
    RowRefs attention = rows_with(*input.summary, Gate::block);
    const auto deferred = rows_with(*input.summary, Gate::defer);
    attention.insert(attention.end(), deferred.begin(), deferred.end());
    attention.erase(std::remove_if(attention.begin(), attention.end(), [](const LedgerRow* r) { return r->suite_scope; }),
                    attention.end());
    std::unordered_map<std::string_view, const LedgerRow*> by_test;
    for (const auto& row : *input.rows)
        if (!row.suite_scope) by_test.emplace(row.test, &row);
    std::unordered_set<std::string_view> shown;  // by id: the summary's rows may be copies of the ledger's
    std::vector<HeatLine> lines;
    for (const auto* row : attention) {
        if (!shown.insert(row->test).second) continue;  // shown already, as a partner
        lines.push_back({row, {}});
        for (const auto& partner : row->partners) {
            const auto it = by_test.find(partner);
            if (it == by_test.end() || !shown.insert(it->second->test).second) continue;
            lines.push_back({it->second, "partner: " + row->partner_role.value_or("partner") + " of the row above"});
        }
    }
    RowRefs passing;
    for (const auto& row : *input.rows)
        if (!row.suite_scope && row.gate == Gate::pass && !shown.count(row.test)) passing.push_back(&row);
    return {std::move(lines), std::move(passing)};
}

}  // namespace

// Tests that need a look in the open; passing ones folded away, so 10,000 tests stay a page
// the browser lays out quickly.
void html_heat_map(std::string& out, const ReportInput& input, const std::vector<std::string>& columns) {
    ColumnFinder index(columns);
    const auto [attention, passing] = heat_rows(input);
    out += "<section id=heatmap><h2>Heat map: " + counted(attention.size() + passing.size(), "test") + " &times; " +
           counted(columns.size(), "run") + "</h2>";
    const auto legend_at = out.size();  // the legend names only the outcomes the map shows: written after it
    bool other_seen = false;
    std::vector<const OutcomeStyle*> cells(columns.size());  // one row's, reused
    if (attention.empty()) {
        out += "<p class=empty>No test blocks or defers.</p>";
    } else {
        heat_head(out, columns);
        for (const auto& line : attention) heat_row(out, *line.row, index, cells, other_seen, line.partner_tag);
        out += "</tbody></table>";
    }
    if (!passing.empty()) {
        out += "<details><summary>" + counted(passing.size(), "passing test") + " (stable or skipped)</summary>";
        heat_head(out, columns);
        for (const auto* row : passing) heat_row(out, *row, index, cells, other_seen);
        out += "</tbody></table></details>";
    }
    out += "</section>";
    std::string key;
    legend(key, other_seen);
    out.insert(legend_at, key);
}

std::string heat_map_script() {
    std::string names = "{";
    for (const auto& s : kStyles)
        names.append(names.size() > 1 ? ",'" : "'").append(1, s.symbol).append("':'").append(s.outcome).append("'");
    names += "}";
    std::string text(assets::report_js);
    const std::string_view slot = "OUTCOMES";
    text.replace(text.find(slot), slot.size(), names);
    return text;
}

}  // namespace evgate
