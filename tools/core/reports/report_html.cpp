// report.html: the page around the heat map (report_heat_map.cpp): the rows that block or defer
// first, then the summary and the suite checks, manifest drift, the receipt.
#include <algorithm>

#include <gsl/gsl>

#include "reports/assets.hpp"
#include "reports/markup.hpp"
#include "reports/report_extras.hpp"
#include "reports/report_parts.hpp"
#include "verdicts/counts.hpp"

namespace evgate {
namespace {

// ------------------------------------------------------------------ the summary

void tile(std::string& out, const std::string& count, std::string_view label, std::string_view css = {}) {
    out.append("<div class=\"tile ").append(css).append("\"><b>").append(count).append("</b>");
    html_element(out, "span", label);
    out += "</div>";
}

void html_header(std::string& out, const ReportInput& input) {
    const auto& s = *input.summary;
    out += "<header><h1>Evidence Gate: ";
    escape_html(out, input.suite);
    out.append("<span class=\"status ").append(s.decision()).append("\">").append(s.decision()).append("</span></h1>");
    html_element(out, "p", summary_line(s), "lede");
    out +=
        "<nav><a href=\"#blocking\">Blocking</a><a href=\"#deferred\">Deferred</a><a href=\"#summary\">Summary</a>"
        "<a href=\"#heatmap\">Heat map</a><a href=\"#drift\">Manifest drift</a><a href=\"#receipt\">Receipt</a></nav>"
        "</header>";
}

void check_rows(std::string& out, const std::vector<const LedgerRow*>& rows) {
    out += "<table class=rows><thead><tr><th>check</th><th>verdict</th><th>gate</th><th>reason</th></tr></thead><tbody>";
    for (const auto* row : rows) {
        out.append("<tr class=\"").append(gate_class(row->gate)).append("\">");
        html_element(out, "td", row->test, "id");
        html_element(out, "td", to_string(row->verdict), "verdict");
        html_element(out, "td", row->warning ? "warning" : to_string(row->gate));
        html_element(out, "td", row->reason);
        out += "</tr>";
    }
    out += "</tbody></table>";
}

// The suite checks after the rows that need a look: those that warn in the open, those that
// pass folded away (a dozen run rows would push everything else off the screen); those that
// block are among the blocking rows above.
void suite_checks(std::string& out, const std::vector<LedgerRow>& rows, const GateSummary& s) {
    std::vector<const LedgerRow*> warnings, passing;
    for (const auto& row : rows) {
        if (!row.suite_scope || row.gate == Gate::block) continue;
        (row.warning ? warnings : passing).push_back(&row);
    }
    if (!warnings.empty()) {
        out += "<h3>" + counted(warnings.size(), "suite check") + (warnings.size() == 1 ? " warns" : " warn") + "</h3>";
        check_rows(out, warnings);
    }
    out += "<details class=passing-checks><summary>" + counted(passing.size(), "suite check") + " " +
           (passing.size() == 1 ? "passes" : "pass") +
           (s.suite_blocks ? " (" + std::to_string(s.suite_blocks) + " blocking: above)" : std::string()) + "</summary>";
    check_rows(out, passing);
    out += "</details>";
}

void html_summary(std::string& out, const ReportInput& input) {
    const auto& s = *input.summary;
    out += "<section id=summary><h2>Summary</h2><div class=tiles>";
    tile(out, std::to_string(s.blocked), "tests block", s.blocked ? "gb" : "");
    tile(out, std::to_string(s.deferred), "tests defer", s.deferred ? "gd" : "");
    tile(out, std::to_string(s.passed()), "tests pass");
    tile(out, std::to_string(s.suite_blocks), "suite checks block", s.suite_blocks ? "gb" : "");
    tile(out, std::to_string(s.runs), s.runs == 1 ? "run" : "runs");
    out += "</div><div class=tiles>";
    for (const auto& [verdict, count] : s.verdict_counts()) tile(out, std::to_string(count), to_string(verdict));
    out += "</div>";
    suite_checks(out, *input.rows, s);
    out += "</section>";
}

// ------------------------------------------------------------------ the rows that block or defer

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// Reason, then what else the ledger (and the run's history) knows about the row, in a quieter voice.
void reason_cell(std::string& out, const LedgerRow& row, const ReportExtras* extras) {
    out += "<td class=why>";
    escape_html(out, row.reason);
    std::string notes;
    if (!row.also.empty()) notes += "also: " + to_string(row.also);
    if (!row.dirty.empty()) notes += (notes.empty() ? "dirty: " : "; dirty: ") + joined(row.dirty);
    if (!notes.empty()) html_element(out, "div", notes, "note");
    if (extras != nullptr && extras->note)
        if (const auto past = extras->note(row); !past.empty()) html_element(out, "div", past, "note");
    out += "</td>";
}

void optional_cell(std::string& out, const std::optional<std::string>& value, std::string_view tag, std::string_view css) {
    out += "<td>";
    if (value) html_element(out, tag, *value, css);
    out += "</td>";
}

struct Columns {
    bool dated, partners;
};

// The reproduce command on a line of its own below its row, as wide as the table: one line
// that scrolls sideways (a shell command wrapped into ten narrow lines is hard to copy), with a
// button that copies it.
void command_line(std::string& out, const LedgerRow& row, int width) {
    out.append("<tr class=\"cmdrow ").append(gate_class(row.gate)).append("\"><td colspan=").append(std::to_string(width));
    out += "><div class=repro><span class=tag>reproduce</span>";
    html_element(out, "code", *row.reproduce, "cmd");
    out += "<button type=button class=copy>copy</button></div></td></tr>";
}

void row_line(std::string& out, const LedgerRow& row, const Columns& c, const ReportExtras* extras) {
    out.append("<tr class=\"").append(gate_class(row.gate)).append(row.reproduce ? " has-cmd" : "").append("\"><td class=id>");
    escape_html(out, row.test);
    if (row.suite_scope) out += "<span class=tag>suite check</span>";
    out += "</td>";
    html_element(out, "td", to_string(row.verdict), "verdict");
    reason_cell(out, row, extras);
    if (c.dated) {
        optional_cell(out, row.until, "span", {});
        optional_cell(out, row.owner, "span", {});
    }
    if (c.partners) {
        out += "<td>";
        if (row.partner) html_element(out, "span", *row.partner, "id");
        if (row.partner_role) html_element(out, "span", *row.partner_role, "tag");
        out += "</td>";
    }
    out += "</tr>";
    if (row.reproduce) command_line(out, row, 3 + (c.dated ? 2 : 0) + (c.partners ? 1 : 0));
}

void rows_section(std::string& out, std::string_view id, std::string_view title, const RowRefs& rows, bool dated,
                  const ReportExtras* extras) {
    out.append("<section id=").append(id).append("><h2>").append(title).append(": ").append(std::to_string(rows.size())).append("</h2>");
    if (rows.empty()) {
        out += "<p class=empty>None.</p></section>";
        return;
    }
    const Columns c{dated, any_has(rows, &LedgerRow::partner)};
    out += "<table class=rows><thead><tr><th>test</th><th>verdict</th><th>reason</th>";
    if (c.dated) out += "<th>until</th><th>owner</th>";
    if (c.partners) out += "<th>partner</th>";
    out += "</tr></thead><tbody>";
    for (const auto* row : rows) row_line(out, *row, c, extras);
    out += "</tbody></table></section>";
}

// ------------------------------------------------------------------ manifest drift

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
    html_element(out, "th", column);
    out += "<th>suspected as</th></tr></thead><tbody>";
    for (const auto* e : entries) {
        out += "<tr>";
        html_element(out, "td", e->key, "id");
        html_element(out, "td", e->local.value_or("(absent)"), "id");
        html_element(out, "td", e->other.value_or("(absent)"), "id");
        html_element(out, "td", rank_name(e->rank));
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

// ------------------------------------------------------------------ the receipt

void fact(std::string& out, std::string_view label, std::string_view value) {
    out.append("<tr><th>").append(label).append("</th>");
    html_element(out, "td", value, "id");
    out += "</tr>";
}

void fact_list(std::string& out, std::string_view label, const std::vector<std::string>& items) {
    out.append("<tr><th>").append(label).append("</th><td>");
    if (items.empty()) out += "<span class=empty>none</span>";
    for (const auto& item : items) html_element(out, "pre", item);
    out += "</td></tr>";
}

std::string collected_text(const Receipt& receipt) {
    int serial = 0, writes = 0, sensitive = 0;
    for (const auto& t : receipt.tests) {
        serial += t.serial;
        writes += !t.writes.empty();
        sensitive += t.env_sensitive.has_value();
    }
    return std::to_string(receipt.tests.size()) + " (" + std::to_string(serial) + " serial, " + std::to_string(writes) +
           " declare writes, " + std::to_string(sensitive) + " env_sensitive)";
}

void html_receipt(std::string& out, const Receipt& receipt) {
    out += "<section id=receipt><h2>Receipt</h2><table class=facts><tbody>";
    fact(out, "rootdir", receipt.rootdir);
    fact(out, "configfile", receipt.configfile.value_or("(none)"));
    fact_list(out, "conftest files", receipt.conftests);
    fact(out, "tests collected", collected_text(receipt));
    fact_list(out, "collection errors", receipt.errors);
    fact_list(out, "stray config files (could re-root the collection)", receipt.stray_configs);
    fact_list(out, "stray config files ignored (no collected test below them)", receipt.stray_configs_ignored);
    std::vector<std::string> built;
    for (const auto& file : receipt.built)
        built.push_back(file.path + (file.target.empty() ? "" : " (" + file.target + ")") + ", " + std::to_string(file.size) +
                        " bytes, " + file.digest);
    fact_list(out, "built files under test", built);
    fact(out, "sources digest", receipt.sources_digest);
    fact(out, "pytest exit status", std::to_string(receipt.exitstatus));
    fact(out, "receipt id", receipt.id);
    out += "</tbody></table></section>";
}

void html_head(std::string& out, const ReportInput& input) {
    out +=
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
        // Offline by construction: the page may load nothing at all from anywhere.
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\"><title>";
    escape_html(out, input.suite);
    out.append(": ").append(input.summary->decision()).append(" - Evidence Gate</title><style>\n");
    out.append(assets::report_css).append("</style></head>\n<body><main>");
}

}  // namespace

std::string report_html(const ReportInput& input) {
    Expects(input.rows != nullptr && input.receipt != nullptr && input.summary != nullptr);
    const auto columns = heat_columns(input);
    std::string out;
    out.reserve(256 + input.rows->size() * (columns.size() + 160));
    html_head(out, input);
    html_header(out, input);
    // What blocks first: the page answers "why is this red?" on its first screen.
    rows_section(out, "blocking", "Blocking", rows_with(*input.summary, Gate::block), false, input.extras);
    rows_section(out, "deferred", "Deferred", rows_with(*input.summary, Gate::defer), true, input.extras);
    html_summary(out, input);
    if (input.extras != nullptr) out += input.extras->html;
    html_heat_map(out, input, columns);
    html_drift(out, input.drift);
    html_receipt(out, *input.receipt);
    out.append("</main><div id=readout hidden></div><script>\n").append(heat_map_script()).append("</script></body></html>\n");
    return out;
}

}  // namespace evgate
