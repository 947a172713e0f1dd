#include "reports/report.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <gsl/gsl>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "reports/markup.hpp"
#include "reports/report_extras.hpp"
#include "verdicts/triage.hpp"

namespace evgate {
namespace {

using RowRefs = std::vector<const LedgerRow*>;

// ------------------------------------------------------------------ what both reports count

struct Tally {
    std::map<std::string, int> verdicts;  // of the per-test rows
    int tests = 0, block = 0, defer = 0, pass = 0;
    int checks = 0, checks_blocking = 0;  // suite-level rows

    bool blocked() const { return block + checks_blocking > 0; }
    const char* status() const { return blocked() ? "BLOCKED" : "PASSED"; }
};

Tally tally(const std::vector<LedgerRow>& rows) {
    Tally t;
    auto counted = t.verdicts.end();  // the row before's: most rows have its verdict
    for (const auto& row : rows) {
        if (row.suite_scope) {
            ++t.checks;
            t.checks_blocking += row.gate == "block";
            continue;
        }
        ++t.tests;
        if (counted == t.verdicts.end() || counted->first != row.verdict) counted = t.verdicts.try_emplace(row.verdict).first;
        ++counted->second;
        t.block += row.gate == "block";
        t.defer += row.gate == "defer";
        t.pass += row.gate == "pass";
    }
    return t;
}

// The contract's verdicts in its priority order, then any it does not name.
std::vector<std::pair<std::string, int>> verdict_counts(const Tally& t) {
    std::vector<std::pair<std::string, int>> out;
    auto rest = t.verdicts;
    for (int v = 0; v <= static_cast<int>(Verdict::stable); ++v) {
        const std::string name(to_string(static_cast<Verdict>(v)));
        if (const auto it = rest.find(name); it != rest.end()) {
            out.emplace_back(name, it->second);
            rest.erase(it);
        }
    }
    out.insert(out.end(), rest.begin(), rest.end());
    return out;
}

// The gate's own summary line, so that ctest's output and both reports say the same.
std::string summary_line(const Tally& t, std::size_t runs) {
    std::string line = std::to_string(t.tests) + " tests over " + std::to_string(runs) + " runs: " +
                       std::to_string(t.block) + " block, " + std::to_string(t.defer) + " defer, " +
                       std::to_string(t.pass) + " pass";
    if (t.checks_blocking) line += "; " + std::to_string(t.checks_blocking) + " suite check(s) block";
    return line;
}

RowRefs rows_with_gate(const std::vector<LedgerRow>& rows, std::string_view gate) {
    RowRefs out;
    for (const auto& row : rows)
        if (row.gate == gate) out.push_back(&row);
    return out;
}

bool any_has(const RowRefs& rows, std::optional<std::string> LedgerRow::*field) {
    return std::any_of(rows.begin(), rows.end(), [field](const LedgerRow* row) { return (row->*field).has_value(); });
}

bool same_runs(const Outcomes& a, const Outcomes& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.first == y.first; });
}

// Run ids in the order given, then any the rows name that the caller did not list, so no
// attempt is left off the map. Rows mostly name the runs the row before named: those are skipped.
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

// ------------------------------------------------------------------ HTML

// markup.hpp's, under the short name this file uses throughout.
void element(std::string& out, std::string_view tag, std::string_view text, std::string_view css = {}) {
    html_element(out, tag, text, css);
}

struct OutcomeStyle {
    std::string_view outcome;
    char css;     // the cell's class: one letter keeps 200,000 cells small
    char symbol;  // shown in the cell so the map reads without colour; pytest's letters where it has one
    std::string_view meaning;
};

constexpr std::array<OutcomeStyle, 10> kStyles{{
    {"passed", 'p', '.', "passed"},
    {"failed", 'f', 'F', "failed"},
    {"error", 'e', 'E', "error (setup or teardown)"},
    {"skipped", 's', 's', "skipped"},
    {"xfailed", 'x', 'x', "xfailed (failed as expected)"},
    {"xpassed", 'y', 'X', "xpassed (passed unexpectedly)"},
    {"interrupted", 'i', '!', "interrupted (the interpreter died)"},
    {"missing", 'm', '?', "missing (planned, no result)"},
    {"not run", 'n', '-', "not run (not in this run's plan)"},
    {"other", 'o', '*', "an outcome this report does not know"},
}};
constexpr std::size_t kNotRun = 8;
constexpr std::size_t kOther = 9;

const OutcomeStyle& style_of(std::string_view outcome) {
    for (std::size_t i = 0; i < kNotRun; ++i)
        if (kStyles[i].outcome == outcome) return kStyles[i];
    return kStyles[kOther];
}

// Okabe-Ito colours, told apart with the common colour-vision deficiencies; the symbols carry the rest.
// A heat-map row is one monospace run of letters: letter-spacing widens every letter into a
// cell, and padding with an equal negative margin centres the letter without moving the next.
constexpr std::string_view kStyle = R"(
:root{--fg:#1f2430;--muted:#5d6676;--line:#e1e4ea;--soft:#f6f7f9;--block:#b3261e;--defer:#8a5300;--pass:#1b7f3b}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:#fff;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1280px;margin:0 auto;padding:20px 28px 64px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}
nav{margin:6px 0 0;font-size:13px}
nav a{color:var(--muted);margin-right:16px;text-decoration:none}
nav a:hover{text-decoration:underline}
.lede{margin:2px 0;color:var(--muted)}
.status{display:inline-block;margin-left:8px;padding:2px 12px;border-radius:999px;color:#fff;font-size:14px;letter-spacing:.05em;vertical-align:3px}
.BLOCKED{background:var(--block)}.PASSED{background:var(--pass)}
.tiles{display:flex;flex-wrap:wrap;gap:8px;margin:10px 0}
.tile{min-width:96px;padding:6px 12px;border:1px solid var(--line);border-radius:6px;background:var(--soft)}
.tile b{display:block;font-size:20px;line-height:1.2}
.tile span{color:var(--muted);font-size:12px}
.tile.gb{border-color:var(--block)}.tile.gb b{color:var(--block)}
.tile.gd{border-color:var(--defer)}.tile.gd b{color:var(--defer)}
table{border-collapse:collapse}
.rows,.facts{width:100%}
.rows td.id{width:30%}
.rows td.why{min-width:16em}
.rows th,.rows td{text-align:left;vertical-align:top;padding:6px 8px;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-size:12px;font-weight:600}
.id,code,pre{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere;white-space:pre-wrap}
pre{margin:4px 0;padding:6px 8px;background:var(--soft);border-radius:4px}
code.cmd{display:block;padding:3px 6px;background:#eef0f3;border-radius:4px;user-select:all}
.verdict{font-weight:600;white-space:nowrap}
.gb .verdict,.verdict.gb{color:var(--block)}.gd .verdict,.verdict.gd{color:var(--defer)}
.tag{display:inline-block;margin-left:6px;padding:0 6px;border-radius:4px;background:var(--soft);border:1px solid var(--line);color:var(--muted);font:11px/1.5 system-ui,sans-serif}
.note{color:var(--muted);font-size:12px}
.empty{color:var(--muted);font-style:italic}
details{margin:10px 0}
summary{cursor:pointer;color:var(--muted);font-weight:600}
.facts th{width:190px;padding:4px 8px 4px 0;vertical-align:top;text-align:left}
.facts td{padding:4px 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 12px;font-size:12px;color:var(--muted)}
.legend .k{margin-right:3px}
.heat td,.heat th{padding:0 10px 0 0;border:0;text-align:left;vertical-align:top}
.heat th{vertical-align:bottom}
.heat tbody tr:nth-child(5n) td{border-bottom:1px solid var(--line)}
.heat tbody tr:hover{background:#eef3ff}
.heat .id{font-size:12px;white-space:pre-wrap}
.heat .verdict{padding-left:10px;font-size:12px;font-weight:500}
.k{padding:0!important;font:13px/1.35 "DejaVu Sans Mono",Menlo,Consolas,monospace;letter-spacing:.5em;white-space:pre}
.k i{font-style:normal;padding-left:.25em;margin-right:-.25em}
.cols i{display:inline-block;width:calc(1ch + .5em);margin:0;padding:0 0 4px;letter-spacing:0;line-height:calc(1ch + .5em);writing-mode:vertical-rl;transform:rotate(180deg);vertical-align:bottom;color:var(--muted);font-size:13px}
.p{background:#009e73;color:#fff}.f{background:#d55e00;color:#fff}.e{background:#cc79a7;color:#000}
.s{background:#c4c4c4;color:#000}.x{background:#56b4e9;color:#000}.y{background:#e69f00;color:#000}
.i{background:#000;color:#fff}.m{background:#f0e442;color:#000}.n{background:#f1f1f1;color:#8a8a8a}
.o{background:#0072b2;color:#fff}
#readout{position:fixed;left:0;right:0;bottom:0;padding:5px 16px;background:var(--fg);color:#fff;font:12px "DejaVu Sans Mono",monospace;white-space:pre;overflow:hidden;text-overflow:ellipsis}
)";

// One listener for the whole map (no handler per cell): which run and outcome the pointer is over.
constexpr std::string_view kScript = R"(
(function () {
  var cols = document.querySelector('.cols'), box = document.getElementById('readout');
  if (!cols) return;
  var runs = Array.prototype.map.call(cols.children, function (e) { return e.textContent; });
  document.addEventListener('mousemove', function (e) {
    var cell = e.target.closest ? e.target.closest('td.k') : null;
    if (!cell) { box.hidden = true; return; }
    var r = cell.getBoundingClientRect(), text = cell.textContent;
    var i = Math.floor((e.clientX - r.left) * text.length / r.width);
    if (i < 0 || i >= text.length) { box.hidden = true; return; }
    box.textContent = runs[i] + ': ' + OUTCOMES[text[i]] + '  \u00b7  ' + cell.parentNode.lastChild.textContent;
    box.hidden = false;
  });
})();
)";

std::string outcome_names_js() {
    std::string out = "{";
    for (const auto& s : kStyles) {
        out.append(out.size() > 1 ? ",'" : "'").append(1, s.symbol).append("':'").append(s.outcome).append("'");
    }
    return out + "}";
}

std::string script() {
    std::string text(kScript);
    const std::string_view slot = "OUTCOMES";
    text.replace(text.find(slot), slot.size(), outcome_names_js());
    return text;
}

// A fixed class per gate: no ledger text ever lands in an attribute.
std::string_view gate_class(std::string_view gate) {
    return gate == "block" ? "gb" : gate == "defer" ? "gd" : gate == "pass" ? "gp" : "g";
}

void tile(std::string& out, const std::string& count, std::string_view label, std::string_view css = {}) {
    out.append("<div class=\"tile ").append(css).append("\"><b>").append(count).append("</b>");
    element(out, "span", label);
    out += "</div>";
}

void html_header(std::string& out, const ReportInput& input, const Tally& t, std::size_t runs) {
    out += "<header><h1>Evidence Gate: ";
    escape_html(out, input.suite);
    out.append("<span class=\"status ").append(t.status()).append("\">").append(t.status()).append("</span></h1>");
    element(out, "p", summary_line(t, runs), "lede");
    out += "<nav><a href=\"#summary\">Summary</a><a href=\"#blocking\">Blocking</a><a href=\"#deferred\">Deferred</a>"
           "<a href=\"#heatmap\">Heat map</a><a href=\"#drift\">Manifest drift</a><a href=\"#receipt\">Receipt</a></nav>"
           "</header>";
}

void suite_checks(std::string& out, const std::vector<LedgerRow>& rows, const Tally& t) {
    const bool notable = std::any_of(rows.begin(), rows.end(),
                                     [](const LedgerRow& r) { return r.suite_scope && (r.gate != "pass" || r.warning); });
    out.append(notable ? "<details open>" : "<details>").append("<summary>");
    out.append(std::to_string(t.checks) + " suite checks, " + std::to_string(t.checks_blocking) + " blocking");
    out += "</summary><table class=rows><thead><tr><th>check</th><th>verdict</th><th>gate</th><th>reason</th></tr></thead><tbody>";
    for (const auto& row : rows) {
        if (!row.suite_scope) continue;
        out.append("<tr class=\"").append(gate_class(row.gate)).append("\">");
        element(out, "td", row.test, "id");
        element(out, "td", row.verdict, "verdict");
        element(out, "td", row.warning ? "warning" : row.gate);
        element(out, "td", row.reason);
        out += "</tr>";
    }
    out += "</tbody></table></details>";
}

void html_summary(std::string& out, const std::vector<LedgerRow>& rows, const Tally& t, std::size_t runs) {
    out += "<section id=summary><h2>Summary</h2><div class=tiles>";
    tile(out, std::to_string(t.block), "tests block", t.block ? "gb" : "");
    tile(out, std::to_string(t.defer), "tests defer", t.defer ? "gd" : "");
    tile(out, std::to_string(t.pass), "tests pass");
    tile(out, std::to_string(t.checks_blocking), "suite checks block", t.checks_blocking ? "gb" : "");
    tile(out, std::to_string(runs), "runs");
    out += "</div><div class=tiles>";
    for (const auto& [verdict, count] : verdict_counts(t)) tile(out, std::to_string(count), verdict);
    out += "</div>";
    suite_checks(out, rows, t);
    out += "</section>";
}

std::string join(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// Reason, then what else the ledger (and the run's history) knows about the row, in a quieter voice.
void reason_cell(std::string& out, const LedgerRow& row, const ReportExtras* extras) {
    out += "<td class=why>";
    escape_html(out, row.reason);
    std::string notes;
    if (!row.also.empty()) notes += "also: " + join(row.also);
    if (!row.dirty.empty()) notes += (notes.empty() ? "dirty: " : "; dirty: ") + join(row.dirty);
    if (!notes.empty()) element(out, "div", notes, "note");
    if (extras != nullptr && extras->note)
        if (const auto past = extras->note(row); !past.empty()) element(out, "div", past, "note");
    out += "</td>";
}

void optional_cell(std::string& out, const std::optional<std::string>& value, std::string_view tag, std::string_view css) {
    out += "<td>";
    if (value) element(out, tag, *value, css);
    out += "</td>";
}

void rows_section(std::string& out, std::string_view id, std::string_view title, const RowRefs& rows, bool dated,
                  const ReportExtras* extras) {
    out.append("<section id=").append(id).append("><h2>").append(title).append(": ").append(std::to_string(rows.size())).append("</h2>");
    if (rows.empty()) {
        out += "<p class=empty>None.</p></section>";
        return;
    }
    const bool partners = any_has(rows, &LedgerRow::partner), commands = any_has(rows, &LedgerRow::reproduce);
    out += "<table class=rows><thead><tr><th>test</th><th>verdict</th><th>reason</th>";
    if (dated) out += "<th>until</th><th>owner</th>";
    if (partners) out += "<th>partner</th>";
    if (commands) out += "<th>reproduce</th>";
    out += "</tr></thead><tbody>";
    for (const auto* row : rows) {
        out.append("<tr class=\"").append(gate_class(row->gate)).append("\"><td class=id>");
        escape_html(out, row->test);
        if (row->suite_scope) out += "<span class=tag>suite check</span>";
        out += "</td>";
        element(out, "td", row->verdict, "verdict");
        reason_cell(out, *row, extras);
        if (dated) {
            optional_cell(out, row->until, "span", {});
            optional_cell(out, row->owner, "span", {});
        }
        if (partners) {
            out += "<td>";
            if (row->partner) element(out, "span", *row->partner, "id");
            if (row->partner_role) element(out, "span", *row->partner_role, "tag");
            out += "</td>";
        }
        if (commands) optional_cell(out, row->reproduce, "code", "cmd");
        out += "</tr>";
    }
    out += "</tbody></table></section>";
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
    for (const auto& c : columns) element(out, "i", c);
    out += "</span></th><th>verdict</th><th>test</th></tr></thead><tbody>";
}

// One row per test: equal neighbouring cells share one element, so a stable row is one or two.
void heat_row(std::string& out, const LedgerRow& row, ColumnFinder& column_of, std::vector<const OutcomeStyle*>& cells,
              bool& other_seen) {
    const auto width = cells.size();
    std::fill(cells.begin(), cells.end(), &kStyles[kNotRun]);
    for (std::size_t i = 0; i < row.outcomes.size(); ++i)
        cells[column_of(i, row.outcomes[i].first)] = &style_of(row.outcomes[i].second);
    out += "<tr><td class=k>";
    for (std::size_t i = 0; i < width;) {
        std::size_t end = i;
        while (end < width && cells[end] == cells[i]) ++end;
        out.append("<i class=").append(1, cells[i]->css).append(">").append(end - i, cells[i]->symbol).append("</i>");
        other_seen = other_seen || cells[i] == &kStyles[kOther];
        i = end;
    }
    out.append("</td><td class=\"verdict ").append(gate_class(row.gate)).append("\">");
    escape_html(out, row.verdict);
    out += "</td>";
    element(out, "td", row.test, "id");
    out += "</tr>";
}

void legend(std::string& out, bool other_seen) {
    out += "<div class=legend>";
    for (std::size_t i = 0; i < kStyles.size(); ++i) {
        if (i == kOther && !other_seen) continue;
        out.append("<span><span class=k><i class=").append(1, kStyles[i].css).append(">").append(1, kStyles[i].symbol);
        out.append("</i></span> ").append(kStyles[i].meaning).append("</span>");
    }
    out += "</div>";
}

// Tests that need a look (blocking, then deferred) in the open; passing ones folded away, so
// 10,000 tests stay a page the browser lays out quickly.
void html_heat_map(std::string& out, const std::vector<LedgerRow>& rows, const std::vector<std::string>& columns) {
    ColumnFinder index(columns);
    RowRefs attention = rows_with_gate(rows, "block"), passing;
    const auto deferred = rows_with_gate(rows, "defer");
    attention.insert(attention.end(), deferred.begin(), deferred.end());
    attention.erase(std::remove_if(attention.begin(), attention.end(), [](const LedgerRow* r) { return r->suite_scope; }),
                    attention.end());
    for (const auto& row : rows)
        if (!row.suite_scope && row.gate != "block" && row.gate != "defer") passing.push_back(&row);

    out += "<section id=heatmap><h2>Heat map: " + std::to_string(attention.size() + passing.size()) + " tests &times; " +
           std::to_string(columns.size()) + " runs</h2>";
    const auto legend_at = out.size();  // the legend names only the outcomes the map shows: written after it
    bool other_seen = false;
    std::vector<const OutcomeStyle*> cells(columns.size());  // one row's, reused
    if (attention.empty()) {
        out += "<p class=empty>No test blocks or defers.</p>";
    } else {
        heat_head(out, columns);
        for (const auto* row : attention) heat_row(out, *row, index, cells, other_seen);
        out += "</tbody></table>";
    }
    if (!passing.empty()) {
        out += "<details><summary>" + std::to_string(passing.size()) + " passing tests (stable or skipped)</summary>";
        heat_head(out, columns);
        for (const auto* row : passing) heat_row(out, *row, index, cells, other_seen);
        out += "</tbody></table></details>";
    }
    out += "</section>";
    std::string key;
    legend(key, other_seen);
    out.insert(legend_at, key);
}

std::string_view rank_name(int rank) {
    switch (rank) {
        case drift_rank::packages: return "packages";
        case drift_rank::locale_timezone: return "locale or timezone";
        case drift_rank::filesystem_case: return "filesystem case";
        case drift_rank::cpu_count: return "CPU count";
        case drift_rank::python_minor: return "Python version";
        case drift_rank::env_names: return "variable names";
        case drift_rank::noise: return "noise";
        default: return "other";
    }
}

void drift_rows(std::string& out, const std::vector<const DriftEntry*>& entries, const std::string& column) {
    out += "<table class=rows><thead><tr><th>key</th><th>local</th>";
    element(out, "th", column);
    out += "<th>suspected as</th></tr></thead><tbody>";
    for (const auto* e : entries) {
        out += "<tr>";
        element(out, "td", e->key, "id");
        element(out, "td", e->local.value_or("(absent)"), "id");
        element(out, "td", e->other.value_or("(absent)"), "id");
        element(out, "td", rank_name(e->rank));
        out += "</tr>";
    }
    out += "</tbody></table>";
}

// Per column, the keys that could explain a gap first; variable names and noise folded away.
void html_drift(std::string& out, const std::vector<ColumnDrift>& drift) {
    out += "<section id=drift><h2>Manifest drift</h2>";
    if (drift.empty()) out += "<p class=empty>No perturbed run or runner to compare the local manifest with.</p>";
    for (const auto& column : drift) {
        out += "<h3>local vs ";
        escape_html(out, column.column);
        out += "</h3>";
        std::vector<const DriftEntry*> suspects, quiet;
        for (const auto& e : column.entries) (e.rank < drift_rank::env_names ? suspects : quiet).push_back(&e);
        if (column.entries.empty()) out += "<p class=empty>The manifests agree.</p>";
        if (!suspects.empty()) drift_rows(out, suspects, column.column);
        if (!quiet.empty()) {
            out += "<details><summary>" + std::to_string(quiet.size()) + " less telling keys</summary>";
            drift_rows(out, quiet, column.column);
            out += "</details>";
        }
    }
    out += "</section>";
}

void fact(std::string& out, std::string_view label, std::string_view value) {
    out.append("<tr><th>").append(label).append("</th>");
    element(out, "td", value, "id");
    out += "</tr>";
}

void fact_list(std::string& out, std::string_view label, const std::vector<std::string>& items) {
    out.append("<tr><th>").append(label).append("</th><td>");
    if (items.empty()) out += "<span class=empty>none</span>";
    for (const auto& item : items) element(out, "pre", item);
    out += "</td></tr>";
}

void html_receipt(std::string& out, const Receipt& receipt) {
    int serial = 0, writes = 0, sensitive = 0;
    for (const auto& t : receipt.tests) {
        serial += t.serial;
        writes += !t.writes.empty();
        sensitive += t.env_sensitive.has_value();
    }
    out += "<section id=receipt><h2>Receipt</h2><table class=facts><tbody>";
    fact(out, "rootdir", receipt.rootdir);
    fact(out, "configfile", receipt.configfile.value_or("(none)"));
    fact_list(out, "conftest files", receipt.conftests);
    fact(out, "tests collected", std::to_string(receipt.tests.size()) + " (" + std::to_string(serial) + " serial, " +
                                     std::to_string(writes) + " declare writes, " + std::to_string(sensitive) +
                                     " env_sensitive)");
    fact_list(out, "collection errors", receipt.errors);
    fact_list(out, "stray config files", receipt.stray_configs);
    fact(out, "pytest exit status", std::to_string(receipt.exitstatus));
    fact(out, "receipt id", receipt.id);
    out += "</tbody></table></section>";
}

// ------------------------------------------------------------------ Markdown

constexpr std::size_t kMarkdownRows = 50;      // per section: a PR comment, not the whole ledger
constexpr std::size_t kMarkdownCommand = 1000;  // a longer command is pointed to, never cut

std::string md_command(const std::optional<std::string>& command) {
    if (!command) return {};
    return command->size() > kMarkdownCommand ? "(too long: see report.html)" : md_code(*command);
}

std::string md_partner(const LedgerRow& row) {
    if (!row.partner) return {};
    return md_code(clip(*row.partner, kMarkdownCell)) + (row.partner_role ? " (" + md_text(*row.partner_role) + ")" : "");
}

void md_rows(std::string& out, std::string_view title, const RowRefs& rows, bool dated, const ReportExtras* extras) {
    if (rows.empty()) return;
    out.append("\n### ").append(title).append(": ").append(std::to_string(rows.size())).append("\n\n");
    const RowRefs shown(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), kMarkdownRows)));
    const bool partners = any_has(shown, &LedgerRow::partner), commands = any_has(shown, &LedgerRow::reproduce);
    std::vector<std::string> past;  // the history note of each shown row
    if (extras != nullptr && extras->note)
        for (const auto* row : shown) past.push_back(extras->note(*row));
    const bool history = std::any_of(past.begin(), past.end(), [](const std::string& p) { return !p.empty(); });
    std::string head = "| test | verdict | reason |", rule = "| --- | --- | --- |";
    if (dated) head += " until | owner |", rule += " --- | --- |";
    if (partners) head += " partner |", rule += " --- |";
    if (commands) head += " reproduce |", rule += " --- |";
    if (history) head += " before |", rule += " --- |";
    out += head + "\n" + rule + "\n";
    for (std::size_t i = 0; i < shown.size(); ++i) {
        const auto* row = shown[i];
        out += "| " + md_code(clip(row->test, kMarkdownCell)) + " | " + md_text(row->verdict) + " | " + md_text(row->reason) + " |";
        if (dated) out += " " + md_text(row->until.value_or("")) + " | " + md_text(row->owner.value_or("")) + " |";
        if (partners) out += " " + md_partner(*row) + " |";
        if (commands) out += " " + md_command(row->reproduce) + " |";
        if (history) out += " " + md_text(past[i]) + " |";
        out += '\n';
    }
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

void md_counts(std::string& out, const Tally& t) {
    out += "\n### Counts\n\n| verdict | tests |\n| --- | ---: |\n";
    for (const auto& [verdict, count] : verdict_counts(t)) out += "| " + md_text(verdict) + " | " + std::to_string(count) + " |\n";
    out += "| **all** | **" + std::to_string(t.tests) + "** |\n";
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

std::vector<std::string> report_columns(const std::vector<LoadedRun>& runs) {
    const auto group = [](const LoadedRun& run) {
        if (run.plan.column == Column::runner) return 4;
        if (run.plan.column == Column::perturbed) return 3;
        if (run.plan.order == "alone") return 2;
        return run.plan.id == run.plan.order ? 0 : 1;  // a rerun replays its seed's order under its own id
    };
    std::vector<const LoadedRun*> sorted;
    for (const auto& run : runs) sorted.push_back(&run);
    std::stable_sort(sorted.begin(), sorted.end(), [&](const LoadedRun* a, const LoadedRun* b) { return group(*a) < group(*b); });
    std::vector<std::string> ids;
    for (const auto* run : sorted) ids.push_back(run->plan.id);
    return ids;
}

std::string report_html(const ReportInput& input) {
    Expects(input.rows != nullptr && input.receipt != nullptr);
    const auto& rows = *input.rows;
    const auto t = tally(rows);
    const auto columns = heat_columns(input);
    std::string out;
    out.reserve(256 + rows.size() * (columns.size() + 160));
    out += "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
           "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
           // Offline by construction: the page may load nothing at all from anywhere.
           "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; "
           "script-src 'unsafe-inline'\"><title>";
    escape_html(out, input.suite);
    out.append(": ").append(t.status()).append(" - Evidence Gate</title><style>").append(kStyle).append("</style></head>\n<body><main>");
    html_header(out, input, t, columns.size());
    html_summary(out, rows, t, columns.size());
    rows_section(out, "blocking", "Blocking", rows_with_gate(rows, "block"), false, input.extras);
    rows_section(out, "deferred", "Deferred", rows_with_gate(rows, "defer"), true, input.extras);
    if (input.extras != nullptr) out += input.extras->html;
    html_heat_map(out, rows, columns);
    html_drift(out, input.drift);
    html_receipt(out, *input.receipt);
    out.append("</main><div id=readout hidden></div><script>").append(script()).append("</script></body></html>\n");
    return out;
}

std::string report_markdown(const ReportInput& input) {
    Expects(input.rows != nullptr && input.receipt != nullptr);
    const auto& rows = *input.rows;
    const auto t = tally(rows);
    std::string out = "## Evidence Gate: " + md_text(input.suite) + " **" + t.status() + "**\n\n" +
                      summary_line(t, heat_columns(input).size()) + "\n";
    md_blocking(out, rows_with_gate(rows, "block"), input.extras);
    md_rows(out, "Deferred", rows_with_gate(rows, "defer"), true, input.extras);
    md_counts(out, t);
    if (input.extras != nullptr) out += input.extras->markdown;
    md_drift(out, input.drift);
    out += "\nEvery run of every test: `report.html` beside the ledger.\n";
    return out;
}

std::filesystem::path write_reports(const std::filesystem::path& dir, const ReportInput& input) {
    const auto html = dir / evidence::kReportHtml;
    write_file_atomic(html, report_html(input));
    write_file_atomic(dir / evidence::kReportMarkdown, report_markdown(input));
    return html;
}

}  // namespace evgate
