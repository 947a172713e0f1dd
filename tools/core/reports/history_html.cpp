// history.html: history.md as one self-contained page, each test's verdicts as a strip of cells.
#include <algorithm>
#include <optional>

#include "reports/assets.hpp"
#include "reports/history_page_parts.hpp"
#include "reports/markup.hpp"
#include "verdicts/verdict_table.hpp"

namespace evgate {
namespace {

// How a verdict is drawn: the table's colour and symbol.
struct VerdictStyle {
    std::string_view name;  // "" for a verdict the table does not know (a ledger of another version)
    char css, symbol;
};

VerdictStyle style_of(const VerdictInfo& v) { return {v.name, static_cast<char>(v.colour), v.symbol}; }

constexpr VerdictStyle kOtherVerdict{"", static_cast<char>(Swatch::blue), '*'};

VerdictStyle style_of(std::string_view verdict) {
    const auto known = verdict_named(verdict);
    return known ? style_of(info(*known)) : kOtherVerdict;
}

// One letter per run of the test, the newest kStripRuns; equal neighbours share one element; a
// '-' where the suite ran without it.
void strip(std::string& out, const History& history, const Track& track) {
    std::vector<std::pair<std::optional<VerdictStyle>, std::uint32_t>> cells;  // style (none: absent), runs
    std::uint32_t skip = track.runs() > kStripRuns ? track.runs() - static_cast<std::uint32_t>(kStripRuns) : 0;
    for (const auto& s : track.stretches) {
        const auto shown = s.runs > skip ? s.runs - skip : 0;
        skip -= s.runs - shown;
        if (shown == 0) continue;
        if (s.after_gap && !cells.empty()) cells.emplace_back(std::nullopt, 1);
        cells.emplace_back(style_of(history.verdict_name(s.verdict)), shown);
    }
    out += "<td class=k>";
    if (track.runs() > kStripRuns) out += "\xE2\x80\xA6";
    for (const auto& [style, runs] : cells) {
        if (!style)
            out += "<i class=n>-</i>";
        else
            out.append("<i class=").append(1, style->css).append(">").append(runs, style->symbol).append("</i>");
    }
    out += "</td>";
}

void cell(std::string& out, std::string_view text, std::string_view css = {}) { html_element(out, "td", text, css); }

void legend_entry(std::string& out, const VerdictStyle& s) {
    out.append("<span><span class=k><i class=").append(1, s.css).append(">").append(1, s.symbol).append("</i></span> ");
    escape_html(out, s.name.empty() ? "another verdict" : s.name);
    out += "</span>";
}

void html_legend(std::string& out) {
    out += "<div class=legend>";
    for (const auto& v : verdict_table()) legend_entry(out, style_of(v));
    legend_entry(out, kOtherVerdict);
    out += "<span><span class=k><i class=n>-</i></span> runs of the suite without the test</span></div>";
}

void html_tests(std::string& out, const History& history) {
    const auto notable = notable_tests(history);
    out += "<section id=flips><h2>Tests that flip most often</h2>";
    if (notable.empty()) {
        out += "<p class=note>Every test passed (or was skipped) in every run it was in.</p></section>";
        return;
    }
    html_legend(out);
    out +=
        "<table><thead><tr><th>#</th><th>test</th><th>suite</th><th>flips</th><th>bad / runs</th>"
        "<th>verdict per run, oldest first</th><th>first bad</th><th>last bad</th></tr></thead><tbody>";
    for (std::size_t i = 0; i < notable.size() && i < kHtmlTests; ++i) {
        const auto& suite = history.suites()[notable[i].suite];
        const auto& t = suite.test_tracks[notable[i].test];
        out += "<tr>";
        cell(out, std::to_string(i + 1), "n");
        out += "<td class=id>";
        escape_html(out, suite.tests.name(notable[i].test));
        if (!in_last_run(suite, t)) out += "<span class=gone>not in its suite's last run</span>";
        out += "</td>";
        cell(out, suite.name);
        cell(out, std::to_string(t.flips()), "n");
        cell(out, std::to_string(t.bad) + " / " + std::to_string(t.runs()), "n");
        strip(out, history, t);
        cell(out, bad_run_text(history, t.first_bad));
        cell(out, bad_run_text(history, t.last_bad));
        out += "</tr>";
    }
    out += "</tbody></table>";
    if (notable.size() > kHtmlTests)
        html_element(out, "p", "…and " + std::to_string(notable.size() - kHtmlTests) + " more in history.json", "note");
    out += "</section>";
}

void html_suites(std::string& out, const History& history) {
    out +=
        "<section id=suites><h2>Suites, suite checks and runners</h2><table><thead><tr><th>suite</th><th>runs</th>"
        "<th>blocked</th><th>tests in its last run</th><th>tests gone since seen</th></tr></thead><tbody>";
    for (const auto& suite : history.suites()) {
        const auto blocked = std::count_if(suite.runs.begin(), suite.runs.end(), [&](std::uint32_t r) { return history.runs()[r].blocked(); });
        const auto now = tests_in_last_run(suite);
        out += "<tr>";
        cell(out, suite.name.empty() ? "(no name)" : suite.name);
        cell(out, std::to_string(suite.runs.size()), "n");
        cell(out, std::to_string(blocked), "n");
        cell(out, std::to_string(now), "n");
        cell(out, std::to_string(suite.test_tracks.size() - now), "n");
        out += "</tr>";
    }
    out +=
        "</tbody></table><table><thead><tr><th>suite</th><th>check</th><th>flips</th><th>bad / runs</th>"
        "<th>verdict per run, oldest first</th></tr></thead><tbody>";
    for (const auto& suite : history.suites())
        for (const auto c : ranked_checks(suite)) {
            const auto& t = suite.check_tracks[c];
            out += "<tr>";
            cell(out, suite.name);
            cell(out, suite.checks.name(c), "id");
            cell(out, std::to_string(t.flips()), "n");
            cell(out, std::to_string(t.bad) + " / " + std::to_string(t.runs()), "n");
            strip(out, history, t);
            out += "</tr>";
        }
    out += "</tbody></table></section>";
}

void html_runs(std::string& out, const History& history) {
    out += "<section id=runs><h2>Hosts and runs</h2><table><thead><tr><th>host</th><th>runs</th><th>blocked</th></tr></thead><tbody>";
    for (const auto& [host, s] : host_summaries(history)) {
        out += "<tr>";
        cell(out, host.empty() ? "(unknown)" : host);
        cell(out, std::to_string(s.runs), "n");
        cell(out, std::to_string(s.blocked), "n");
        out += "</tr>";
    }
    out +=
        "</tbody></table><table><thead><tr><th>#</th><th>time</th><th>suite</th><th>commit</th><th>branch</th><th>host</th>"
        "<th>decision</th><th>placed by</th><th>source</th></tr></thead><tbody>";
    const auto& runs = history.runs();
    for (std::size_t k = 0; k < runs.size() && k < kHtmlTests; ++k) {
        const auto i = runs.size() - 1 - k;
        const auto& p = runs[i].place;
        out += "<tr>";
        cell(out, std::to_string(i), "n");
        cell(out, short_time(p.time));
        cell(out, p.suite);
        cell(out, short_commit(p.commit), "id");
        cell(out, p.branch);
        cell(out, p.host);
        cell(out, runs[i].blocked() ? "BLOCKED" : "PASSED", runs[i].blocked() ? "BLOCKED" : "");
        cell(out, p.time_from);
        cell(out, p.source, "id");
        out += "</tr>";
    }
    out += "</tbody></table></section>";
}

void html_left_out(std::string& out, const History& history) {
    out += "<section id=left-out><h2>Inputs left out</h2>";
    if (history.left_out().empty()) out += "<p class=note>None.</p>";
    out += "<ul>";
    for (const auto& [source, why] : history.left_out()) {
        out += "<li>";
        html_element(out, "code", source);
        out += ": ";
        escape_html(out, why);
        out += "</li>";
    }
    for (const auto& note : history.notes()) html_element(out, "li", "note: " + note);
    out += "</ul></section>";
}

}  // namespace

std::string history_html(const History& history) {
    std::string out;
    out +=
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
        // Offline by construction: no script at all, and nothing may load from anywhere.
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        "<title>Evidence history</title><style>\n";
    out.append(assets::history_css).append("</style></head>\n<body><main><header><h1>Evidence history</h1>");
    html_element(out, "p", span_text(history) + "; " + std::to_string(history.left_out().size()) + " input(s) left out", "lede");
    if (const auto by_mtime = placed_by_mtime(history))
        html_element(out, "p", std::to_string(by_mtime) + " run(s) were placed in time by a file's modification time", "note");
    out += "</header>";
    html_tests(out, history);
    html_suites(out, history);
    html_left_out(out, history);
    html_runs(out, history);
    out += "</main></body></html>\n";
    return out;
}

}  // namespace evgate
