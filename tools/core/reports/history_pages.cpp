#include "reports/history_pages.hpp"

#include <algorithm>
#include <array>
#include <map>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "reports/markup.hpp"

namespace evgate {
namespace {

using JsonOut = rapidjson::Writer<rapidjson::StringBuffer>;

constexpr std::string_view kRunnerPrefix = "runner:";

bool is_runner(std::string_view check) { return check.rfind(kRunnerPrefix, 0) == 0; }

// The newest run of the track's suite has it: it was not removed or renamed since.
bool in_last_run(const SuiteHistory& suite, const Track& track) {
    return !track.stretches.empty() && !suite.runs.empty() && track.stretches.back().to == suite.runs.back();
}

std::size_t tests_in_last_run(const SuiteHistory& suite) {
    return static_cast<std::size_t>(
        std::count_if(suite.test_tracks.begin(), suite.test_tracks.end(), [&](const Track& t) { return in_last_run(suite, t); }));
}

// ------------------------------------------------------------------ history.json

void string_or_null(JsonOut& w, const char* key, const std::string& value) {
    w.Key(key);
    if (value.empty())
        w.Null();
    else
        w.String(value.c_str(), static_cast<rapidjson::SizeType>(value.size()));
}

void text(JsonOut& w, const char* key, std::string_view value) {
    w.Key(key);
    w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}

void bad_run(JsonOut& w, const History& history, const char* key, const std::optional<std::uint32_t>& run) {
    w.Key(key);
    if (!run) {
        w.Null();
        return;
    }
    const auto& place = history.runs()[*run].place;
    w.StartObject();
    w.Key("run"), w.Uint(*run);
    text(w, "time", iso_time(place.time));
    string_or_null(w, "commit", place.commit);
    w.EndObject();
}

// One test's, suite check's or runner's entry: `key` names what it is.
void entry(JsonOut& w, const History& history, const SuiteHistory& suite, const char* key, std::string_view name,
           const Track& track) {
    w.StartObject();
    text(w, key, name);
    text(w, "suite", suite.name);
    w.Key("runs"), w.Uint(track.runs());
    w.Key("flips"), w.Uint64(track.flips());
    w.Key("bad"), w.Uint(track.bad);
    w.Key("verdicts");
    w.StartArray();
    for (const auto& s : track.stretches) {
        w.StartObject();
        text(w, "verdict", history.verdict_name(s.verdict));
        w.Key("runs"), w.Uint(s.runs);
        w.Key("from"), w.Uint(s.from);
        w.Key("to"), w.Uint(s.to);
        w.Key("after_gap"), w.Bool(s.after_gap);
        w.EndObject();
    }
    w.EndArray();
    w.Key("counts");
    w.StartObject();
    for (const auto& [verdict, count] : verdict_counts(history, track)) {
        w.Key(verdict.data(), static_cast<rapidjson::SizeType>(verdict.size()));
        w.Uint(count);
    }
    w.EndObject();
    w.Key("first_run"), w.Uint(track.stretches.front().from);
    w.Key("last_run"), w.Uint(track.stretches.back().to);
    w.Key("in_last_run"), w.Bool(in_last_run(suite, track));
    bad_run(w, history, "first_bad", track.first_bad);
    bad_run(w, history, "last_bad", track.last_bad);
    w.EndObject();
}

void timeline(JsonOut& w, const History& history) {
    w.Key("timeline");
    w.StartArray();
    for (std::size_t i = 0; i < history.runs().size(); ++i) {
        const auto& run = history.runs()[i];
        const auto& p = run.place;
        w.StartObject();
        w.Key("run"), w.Uint64(i);
        text(w, "suite", p.suite);
        text(w, "time", iso_time(p.time));
        text(w, "time_from", p.time_from);
        string_or_null(w, "commit", p.commit);
        string_or_null(w, "branch", p.branch);
        string_or_null(w, "host", p.host);
        string_or_null(w, "receipt", p.receipt);
        text(w, "source", p.source);
        w.Key("tests"), w.Uint64(run.tests);
        w.Key("blocking"), w.Uint64(run.blocking);
        w.Key("deferred"), w.Uint64(run.deferred);
        w.Key("checks_blocking"), w.Uint64(run.checks_blocking);
        text(w, "decision", run.blocked() ? "BLOCKED" : "PASSED");
        w.EndObject();
    }
    w.EndArray();
}

void suites(JsonOut& w, const History& history) {
    w.Key("suites");
    w.StartArray();
    for (const auto& suite : history.suites()) {
        w.StartObject();
        text(w, "suite", suite.name);
        w.Key("runs"), w.Uint64(suite.runs.size());
        w.Key("first_run"), w.Uint(suite.runs.front());
        w.Key("last_run"), w.Uint(suite.runs.back());
        w.Key("blocked_runs"), w.Uint64(static_cast<std::size_t>(std::count_if(
                                   suite.runs.begin(), suite.runs.end(), [&](std::uint32_t r) { return history.runs()[r].blocked(); })));
        w.Key("tests_seen"), w.Uint64(suite.test_tracks.size());
        const auto now = tests_in_last_run(suite);
        w.Key("tests_in_last_run"), w.Uint64(now);
        w.Key("tests_gone"), w.Uint64(suite.test_tracks.size() - now);
        w.Key("checks");
        w.StartArray();
        for (const auto c : ranked_checks(suite)) entry(w, history, suite, "check", suite.checks.name(c), suite.check_tracks[c]);
        w.EndArray();
        w.EndObject();
    }
    w.EndArray();
}

void runners(JsonOut& w, const History& history) {
    w.Key("runners");
    w.StartArray();
    for (const auto& suite : history.suites())
        for (const auto c : ranked_checks(suite))
            if (is_runner(suite.checks.name(c)))
                entry(w, history, suite, "runner", suite.checks.name(c).substr(kRunnerPrefix.size()), suite.check_tracks[c]);
    w.EndArray();
}

struct HostSummary {
    std::size_t runs = 0, blocked = 0;
    std::uint32_t first = 0, last = 0;
};

std::map<std::string, HostSummary> host_summaries(const History& history) {
    std::map<std::string, HostSummary> hosts;
    for (std::uint32_t i = 0; i < history.runs().size(); ++i) {
        const auto& run = history.runs()[i];
        auto [it, fresh] = hosts.try_emplace(run.place.host);
        if (fresh) it->second.first = i;
        ++it->second.runs;
        it->second.blocked += run.blocked();
        it->second.last = i;
    }
    return hosts;
}

void hosts(JsonOut& w, const History& history) {
    w.Key("hosts");
    w.StartArray();
    for (const auto& [host, s] : host_summaries(history)) {
        w.StartObject();
        string_or_null(w, "host", host);
        w.Key("runs"), w.Uint64(s.runs);
        w.Key("blocked_runs"), w.Uint64(s.blocked);
        w.Key("first_run"), w.Uint(s.first);
        w.Key("last_run"), w.Uint(s.last);
        w.EndObject();
    }
    w.EndArray();
}

void left_out(JsonOut& w, const History& history) {
    w.Key("left_out");
    w.StartArray();
    for (const auto& [source, why] : history.left_out()) {
        w.StartObject();
        text(w, "source", source);
        text(w, "reason", why);
        w.EndObject();
    }
    w.EndArray();
    w.Key("notes");
    w.StartArray();
    for (const auto& note : history.notes()) w.String(note.c_str(), static_cast<rapidjson::SizeType>(note.size()));
    w.EndArray();
}

// ------------------------------------------------------------------ shared by the pages

std::string bad_run_text(const History& history, const std::optional<std::uint32_t>& run) {
    if (!run) return "";
    const auto& p = history.runs()[*run].place;
    return "#" + std::to_string(*run) + " " + short_time(p.time) + (p.commit.empty() ? "" : " " + short_commit(p.commit));
}

std::string span_text(const History& history) {
    const auto& runs = history.runs();
    if (runs.empty()) return "no runs";
    std::size_t suites = history.suites().size();
    return std::to_string(runs.size()) + " run(s) of " + std::to_string(suites) + " suite(s), " +
           short_time(runs.front().place.time) + " to " + short_time(runs.back().place.time);
}

// Tests worth a look: they changed verdict or were bad at least once, ranked.
std::vector<RankedTrack> notable_tests(const History& history) {
    auto ranked = ranked_tests(history);
    ranked.erase(std::remove_if(ranked.begin(), ranked.end(),
                                [&](const RankedTrack& r) {
                                    const auto& t = history.suites()[r.suite].test_tracks[r.test];
                                    return t.flips() == 0 && t.bad == 0;
                                }),
                 ranked.end());
    return ranked;
}

std::size_t placed_by_mtime(const History& history) {
    return static_cast<std::size_t>(std::count_if(history.runs().begin(), history.runs().end(),
                                                  [](const HistoryRun& r) { return r.place.time_from != evidence::kJunit; }));
}

constexpr std::size_t kMarkdownTests = 50, kMarkdownRuns = 100, kHtmlTests = 500, kStripRuns = 200, kSequence = 12;

// ------------------------------------------------------------------ history.md

void md_tests(std::string& out, const History& history) {
    const auto notable = notable_tests(history);
    out += "\n## Tests that flip most often\n\n";
    if (notable.empty()) {
        out += "Every test passed (or was skipped) in every run it was in.\n";
        return;
    }
    out += "| # | test | suite | flips | bad / runs | verdicts, oldest first | first bad | last bad |\n"
           "| ---: | --- | --- | ---: | ---: | --- | --- | --- |\n";
    for (std::size_t i = 0; i < notable.size() && i < kMarkdownTests; ++i) {
        const auto& suite = history.suites()[notable[i].suite];
        const auto& t = suite.test_tracks[notable[i].test];
        out += "| " + std::to_string(i + 1) + " | " + md_code(clip(suite.tests.name(notable[i].test), kMarkdownCell)) + " | " +
               md_text(suite.name) + " | " + std::to_string(t.flips()) + " | " + std::to_string(t.bad) + " / " +
               std::to_string(t.runs()) + (in_last_run(suite, t) ? "" : " (gone)") + " | " +
               md_text(verdict_sequence(history, t, kSequence)) + " | " + md_text(bad_run_text(history, t.first_bad)) + " | " +
               md_text(bad_run_text(history, t.last_bad)) + " |\n";
    }
    if (notable.size() > kMarkdownTests)
        out += "\n…and " + std::to_string(notable.size() - kMarkdownTests) + " more in history.json\n";
}

void md_suites(std::string& out, const History& history) {
    out += "\n## Suites\n\n| suite | runs | blocked | tests in its last run | tests gone since seen | first run | last run |\n"
           "| --- | ---: | ---: | ---: | ---: | --- | --- |\n";
    for (const auto& suite : history.suites()) {
        const auto blocked = std::count_if(suite.runs.begin(), suite.runs.end(), [&](std::uint32_t r) { return history.runs()[r].blocked(); });
        const auto now = tests_in_last_run(suite);
        out += "| " + md_text(suite.name.empty() ? "(no name)" : suite.name) + " | " + std::to_string(suite.runs.size()) + " | " +
               std::to_string(blocked) + " | " + std::to_string(now) + " | " + std::to_string(suite.test_tracks.size() - now) +
               " | " + md_text(short_time(history.runs()[suite.runs.front()].place.time)) + " | " +
               md_text(short_time(history.runs()[suite.runs.back()].place.time)) + " |\n";
    }
    std::string checks;
    for (const auto& suite : history.suites())
        for (const auto c : ranked_checks(suite)) {
            const auto& t = suite.check_tracks[c];
            if (t.bad == 0 && t.flips() == 0) continue;
            checks += "| " + md_text(suite.name) + " | " + md_code(clip(suite.checks.name(c), kMarkdownCell)) + " | " +
                      std::to_string(t.flips()) + " | " + std::to_string(t.bad) + " / " + std::to_string(t.runs()) + " | " +
                      md_text(verdict_sequence(history, t, kSequence)) + " |\n";
        }
    if (!checks.empty())
        out += "\n### Suite checks and runners that were not always fine\n\n| suite | check | flips | bad / runs | verdicts, oldest first |\n"
               "| --- | --- | ---: | ---: | --- |\n" + checks;
}

void md_hosts(std::string& out, const History& history) {
    out += "\n## Hosts\n\n| host | runs | blocked |\n| --- | ---: | ---: |\n";
    for (const auto& [host, s] : host_summaries(history))
        out += "| " + md_text(host.empty() ? "(unknown)" : host) + " | " + std::to_string(s.runs) + " | " + std::to_string(s.blocked) + " |\n";
}

void md_left_out(std::string& out, const History& history) {
    if (history.left_out().empty() && history.notes().empty()) return;
    out += "\n## Inputs left out\n\n";
    if (history.left_out().empty()) out += "None.\n";
    for (const auto& [source, why] : history.left_out()) out += "- " + md_code(source) + ": " + md_text(why) + "\n";
    for (const auto& note : history.notes()) out += "- note: " + md_text(note) + "\n";
}

void md_runs(std::string& out, const History& history) {
    const auto& runs = history.runs();
    out += "\n## Runs, newest first\n\n| # | time | suite | commit | branch | host | decision | placed by |\n"
           "| ---: | --- | --- | --- | --- | --- | --- | --- |\n";
    for (std::size_t k = 0; k < runs.size() && k < kMarkdownRuns; ++k) {
        const auto i = runs.size() - 1 - k;
        const auto& p = runs[i].place;
        out += "| " + std::to_string(i) + " | " + md_text(short_time(p.time)) + " | " + md_text(p.suite) + " | " +
               md_code(short_commit(p.commit)) + " | " + md_text(p.branch) + " | " + md_text(p.host) + " | " +
               (runs[i].blocked() ? "BLOCKED" : "PASSED") + " | " + md_text(p.time_from) + " |\n";
    }
    if (runs.size() > kMarkdownRuns) out += "\n…and " + std::to_string(runs.size() - kMarkdownRuns) + " older in history.json\n";
}

// ------------------------------------------------------------------ history.html

struct VerdictStyle {
    std::string_view verdict;
    char css, symbol;
};

// Okabe-Ito colours as report.html uses them; the symbols carry the meaning without colour.
constexpr std::array<VerdictStyle, 11> kVerdicts{{
    {"stable", 'p', '.'},       {"skipped", 's', 's'},     {"flaky", 'y', '~'},
    {"order-dependent", 'f', 'o'}, {"polluter", 'i', 'P'}, {"failing", 'f', 'F'},
    {"portability-gap", 'x', 'g'}, {"runner-only-pass", 'e', 'r'}, {"missing", 'm', '?'},
    {"interrupted", 'i', '!'},  {"", 'o', '*'},  // any other verdict
}};

const VerdictStyle& style_of(std::string_view verdict) {
    for (const auto& s : kVerdicts)
        if (s.verdict == verdict) return s;
    return kVerdicts.back();
}

constexpr std::string_view kStyle = R"(
:root{--fg:#1f2430;--muted:#5d6676;--line:#e1e4ea;--soft:#f6f7f9;--block:#b3261e}
*{box-sizing:border-box}
body{margin:0;color:var(--fg);background:#fff;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
main{max-width:1280px;margin:0 auto;padding:20px 28px 64px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:34px 0 10px;padding-bottom:4px;border-bottom:1px solid var(--line)}
.lede,.note{color:var(--muted)}
.note{font-size:12px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:5px 8px;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-size:12px;font-weight:600}
td.n{text-align:right;white-space:nowrap}
.id,code{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:12.5px;overflow-wrap:anywhere;white-space:pre-wrap}
.gone{color:var(--muted);font-size:11px;margin-left:6px}
.BLOCKED{color:var(--block);font-weight:600}
.k{font:13px/1.35 "DejaVu Sans Mono",Menlo,Consolas,monospace;letter-spacing:.3em;white-space:pre}
.k i{font-style:normal}
.p{background:#009e73;color:#fff}.f{background:#d55e00;color:#fff}.e{background:#cc79a7;color:#000}
.s{background:#c4c4c4;color:#000}.x{background:#56b4e9;color:#000}.y{background:#e69f00;color:#000}
.i{background:#000;color:#fff}.m{background:#f0e442;color:#000}.o{background:#0072b2;color:#fff}
.n{background:#f1f1f1;color:#8a8a8a}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 12px;font-size:12px;color:var(--muted)}
)";

// One letter per run of the test, the newest kStripRuns; equal neighbours share one element; a
// '-' where the suite ran without it.
void strip(std::string& out, const History& history, const Track& track) {
    std::vector<std::pair<const VerdictStyle*, std::uint32_t>> cells;  // style (nullptr: absent), runs
    std::uint32_t skip = track.runs() > kStripRuns ? track.runs() - static_cast<std::uint32_t>(kStripRuns) : 0;
    for (const auto& s : track.stretches) {
        const auto shown = s.runs > skip ? s.runs - skip : 0;
        skip -= s.runs - shown;
        if (shown == 0) continue;
        if (s.after_gap && !cells.empty()) cells.emplace_back(nullptr, 1);
        cells.emplace_back(&style_of(history.verdict_name(s.verdict)), shown);
    }
    out += "<td class=k>";
    if (track.runs() > kStripRuns) out += "\xE2\x80\xA6";
    for (const auto& [style, runs] : cells) {
        if (style == nullptr)
            out += "<i class=n>-</i>";
        else
            out.append("<i class=").append(1, style->css).append(">").append(runs, style->symbol).append("</i>");
    }
    out += "</td>";
}

void cell(std::string& out, std::string_view text, std::string_view css = {}) { html_element(out, "td", text, css); }

void html_legend(std::string& out) {
    out += "<div class=legend>";
    for (const auto& s : kVerdicts) {
        out.append("<span><span class=k><i class=").append(1, s.css).append(">").append(1, s.symbol).append("</i></span> ");
        escape_html(out, s.verdict.empty() ? "another verdict" : s.verdict);
        out += "</span>";
    }
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
    out += "<table><thead><tr><th>#</th><th>test</th><th>suite</th><th>flips</th><th>bad / runs</th>"
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
    out += "<section id=suites><h2>Suites, suite checks and runners</h2><table><thead><tr><th>suite</th><th>runs</th>"
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
    out += "</tbody></table><table><thead><tr><th>suite</th><th>check</th><th>flips</th><th>bad / runs</th>"
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
    out += "</tbody></table><table><thead><tr><th>#</th><th>time</th><th>suite</th><th>commit</th><th>branch</th><th>host</th>"
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

std::string short_time(TimePoint time) {
    const auto iso = iso_time(time);  // 2026-12-01T14:25:12.123456Z
    return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}

std::string short_commit(const std::string& commit) { return commit.substr(0, 12); }

void history_json(const History& history, const std::function<void(std::string_view)>& flush) {
    constexpr std::size_t kChunk = std::size_t{1} << 20;
    rapidjson::StringBuffer out;
    JsonOut w(out);
    const auto pass = [&] {
        if (out.GetSize() < kChunk) return;
        flush({out.GetString(), out.GetSize()});
        out.Clear();
    };
    w.StartObject();
    w.Key("schema"), w.Int(1);
    w.Key("runs"), w.Uint64(history.runs().size());
    timeline(w, history);
    suites(w, history);
    runners(w, history);
    hosts(w, history);
    left_out(w, history);
    w.Key("tests");
    w.StartArray();
    for (const auto& r : ranked_tests(history)) {
        const auto& suite = history.suites()[r.suite];
        entry(w, history, suite, "test", suite.tests.name(r.test), suite.test_tracks[r.test]);
        pass();
    }
    w.EndArray();
    w.EndObject();
    out.Put('\n');
    flush({out.GetString(), out.GetSize()});
}

std::string history_json(const History& history) {
    std::string text;
    history_json(history, [&text](std::string_view part) { text += part; });
    return text;
}

std::string history_markdown(const History& history) {
    std::string out = "# Evidence history\n\n" + md_text(span_text(history)) + "; " + std::to_string(history.left_out().size()) +
                      " input(s) left out.\n";
    if (const auto by_mtime = placed_by_mtime(history))
        out += "\n" + std::to_string(by_mtime) +
               " run(s) were placed in time by a file's modification time (no junit.xml with a timestamp beside "
               "the ledger): see \"placed by\" below.\n";
    md_tests(out, history);
    md_suites(out, history);
    md_hosts(out, history);
    md_left_out(out, history);
    md_runs(out, history);
    out += "\nEvery test and run: `history.json`; the same as a page: `history.html`.\n";
    return out;
}

std::string history_html(const History& history) {
    std::string out;
    out += "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
           "<meta name=viewport content=\"width=device-width,initial-scale=1\">"
           // Offline by construction: no script at all, and nothing may load from anywhere.
           "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'\">"
           "<title>Evidence history</title><style>";
    out.append(kStyle).append("</style></head>\n<body><main><header><h1>Evidence history</h1>");
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

void write_history_pages(const std::filesystem::path& dir, const History& history) {
    std::filesystem::create_directories(dir);
    AtomicFile json(dir / "history.json");
    history_json(history, [&json](std::string_view part) { json.write(part); });
    json.commit();
    write_file_atomic(dir / "history.md", history_markdown(history));
    write_file_atomic(dir / "history.html", history_html(history));
}

}  // namespace evgate
