#include "reports/run_history.hpp"

#include <cstdlib>
#include <memory>
#include <ostream>
#include <unordered_map>
#include <unordered_set>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "reports/history.hpp"
#include "reports/history_archive.hpp"
#include "reports/history_pages.hpp"
#include "reports/junit_writer.hpp"
#include "reports/markup.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

std::optional<std::string> environment(const char* name) {
    const char* value = std::getenv(name);
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
}

// What the run is, from its receipt, when the receipt can be read.
RunPlace this_run(const SuiteConfig& suite) {
    RunPlace place;
    place.source = suite.evidence_dir.string();
    place.suite = suite.name;
    place.time = std::chrono::system_clock::now();
    place.time_from = "this run";
    try {
        read_receipt_place(suite.receipt_file(), place);
    } catch (const Error&) {  // the ledger has a row for an unreadable receipt: nothing to add here
    }
    place.suite = suite.name;
    return place;
}

// A row's key: a suite check and a test may share a name.
std::string key_of(bool suite_scope, std::string_view test) { return (suite_scope ? "S" : "T") + std::string(test); }

std::vector<HistoryRow> history_rows(const std::vector<LedgerRow>& rows) {
    std::vector<HistoryRow> out;
    out.reserve(rows.size());
    for (const auto& row : rows) out.push_back({row.test, to_string(row.verdict), to_string(row.gate), row.suite_scope});
    return out;
}

constexpr std::size_t kFlipsShown = 10;

// ------------------------------------------------------------------ EVIDENCE_GATE_HISTORY

// "on main" when every earlier run of the suite was on one branch.
std::string on_branch(const History& history, const SuiteHistory& suite) {
    std::string branch;
    for (const auto run : suite.runs) {
        const auto& b = history.runs()[run].place.branch;
        if (b.empty() || (!branch.empty() && b != branch)) return "";
        branch = b;
    }
    return branch.empty() ? "" : " on " + branch;
}

// "flaky in 7 of the last 40 runs on main, first on 1a2b3c4d5e6f".
std::string past_of(const History& history, const SuiteHistory& suite, const Track* track) {
    const auto window = std::to_string(suite.runs.size()) + " run" + (suite.runs.size() == 1 ? "" : "s");
    const auto branch = on_branch(history, suite);
    if (track == nullptr) return "new: in none of the last " + window + branch;
    const auto runs = std::to_string(track->runs());
    if (track->bad == 0) return "new: passed in all of the last " + runs + " runs" + branch + " that had it";
    std::vector<std::pair<std::string_view, std::uint32_t>> bad;
    for (const auto& c : verdict_counts(history, *track))
        if (const auto v = verdict_named(c.first); !v || info(*v).gate != Gate::pass) bad.push_back(c);
    std::string text;
    if (bad.size() == 1) {
        text = std::string(bad.front().first) + " in " + std::to_string(track->bad) + " of the last " + runs + " runs" + branch;
    } else {
        text = "bad in " + std::to_string(track->bad) + " of the last " + runs + " runs" + branch + " (";
        for (std::size_t i = 0; i < bad.size(); ++i)
            text += (i ? ", " : "") + std::string(bad[i].first) + " " + std::to_string(bad[i].second);
        text += ")";
    }
    const auto& first = history.runs()[*track->first_bad].place;
    return text + ", first on " + (first.commit.empty() ? short_time(first.time) : short_commit(first.commit));
}

// The tests of the suite that changed verdict, most often first.
std::vector<std::uint32_t> flipping(const History& history, std::uint32_t suite) {
    std::vector<std::uint32_t> out;
    for (const auto& r : ranked_tests(history)) {
        if (r.suite != suite) continue;
        if (history.suites()[suite].test_tracks[r.test].flips() == 0 || out.size() == kFlipsShown) break;
        out.push_back(r.test);
    }
    return out;
}

void flips_sections(ReportExtras& extras, const History& history, std::uint32_t s, const std::string& dir) {
    const auto& suite = history.suites()[s];
    const auto tests = flipping(history, s);
    const auto span = "over the last " + std::to_string(suite.runs.size()) + " runs of the suite, this one included (" +
                      "EVIDENCE_GATE_HISTORY=" + dir + ")";
    auto& md = extras.markdown;
    md += "\n### Flips most often\n\n" + md_text(span) + "\n\n";
    auto& html = extras.html;
    html += "<section id=history><h2>Flips most often</h2>";
    html_element(html, "p", span, "lede");
    if (tests.empty()) {
        md += "No test changed its verdict between these runs.\n";
        html_element(html, "p", "No test changed its verdict between these runs.", "empty");
    } else {
        md += "| test | flips | bad / runs | verdicts, oldest first |\n| --- | ---: | ---: | --- |\n";
        html += "<table class=rows><thead><tr><th>test</th><th>flips</th><th>bad / runs</th><th>verdicts, oldest first</th></tr></thead><tbody>";
        for (const auto t : tests) {
            const auto& track = suite.test_tracks[t];
            const auto counts = std::to_string(track.bad) + " / " + std::to_string(track.runs());
            const auto sequence = verdict_sequence(history, track, 8);
            md += "| " + md_code(clip(suite.tests.name(t), kMarkdownCell)) + " | " + std::to_string(track.flips()) + " | " +
                  counts + " | " + md_text(sequence) + " |\n";
            html += "<tr>";
            html_element(html, "td", suite.tests.name(t), "id");
            html_element(html, "td", std::to_string(track.flips()));
            html_element(html, "td", counts);
            html_element(html, "td", sequence);
            html += "</tr>";
        }
        html += "</tbody></table>";
    }
    for (const auto& [source, why] : history.left_out()) {
        md += "- left out of the history: " + md_code(source) + ": " + md_text(why) + "\n";
        html_element(html, "p", "left out of the history: " + source + ": " + why, "note");
    }
    html += "</section>";
}

void history_problem(ReportExtras& extras, const std::string& what) {
    extras.markdown += "\n### Flips most often\n\n" + md_text(what) + "\n";
    extras.html += "<section id=history><h2>Flips most often</h2>";
    html_element(extras.html, "p", what, "note");
    extras.html += "</section>";
}

void add_history(ReportExtras& extras, const SuiteConfig& suite, const std::vector<LedgerRow>& rows,
                 const std::string& receipt_id, const std::string& dir) {
    fs::path archive;
    try {
        archive = suite_archive(dir, suite.name);
        fs::create_directories(archive);
    } catch (const std::exception& e) {
        history_problem(extras, "EVIDENCE_GATE_HISTORY=" + dir + " cannot be used, and this run is not archived: " + e.what());
        return;
    }
    std::vector<std::string> earlier;
    for (const auto& entry : archived_runs(archive, receipt_id)) earlier.push_back(entry.string());
    HistoryOptions options;
    options.suite = suite.name;
    auto history = read_history(earlier, options);
    auto past = std::make_shared<std::unordered_map<std::string, std::string>>();
    const auto s = history.suite_index(suite.name);
    for (const auto& row : rows) {
        if (row.gate == Gate::pass) continue;
        auto& note = (*past)[key_of(row.suite_scope, row.test)];
        if (!s) {
            note = "no earlier run of the suite in the history";
            continue;
        }
        const auto& known = history.suites()[*s];
        const auto& names = row.suite_scope ? known.checks : known.tests;
        const auto& tracks = row.suite_scope ? known.check_tracks : known.test_tracks;
        const auto index = names.find(row.test);
        note = past_of(history, known, index ? &tracks[*index] : nullptr);
    }
    extras.note = [past](const LedgerRow& row) {
        const auto it = past->find(key_of(row.suite_scope, row.test));
        return it == past->end() ? std::string() : it->second;
    };
    history.add(this_run(suite), history_rows(rows));
    flips_sections(extras, history, *history.suite_index(suite.name), dir);
}

// ------------------------------------------------------------------ EVIDENCE_GATE_COMPARE

void add_comparison(ReportExtras& extras, const SuiteConfig& suite, const std::string& value) {
    auto bad = std::make_shared<std::unordered_set<std::string>>();
    try {
        std::string text;
        std::vector<HistoryRow> rows;
        read_history_rows(compared_ledger(value, suite.name), text, rows);
        for (const auto& row : rows)
            if (gate_named(row.gate) != Gate::pass) bad->insert(key_of(row.suite_scope, row.test));
    } catch (const std::exception& e) {
        const auto what = "EVIDENCE_GATE_COMPARE=" + value + " cannot be read (" + e.what() +
                          "): the blocking rows are not told apart by it";
        extras.markdown += "\n### Compared\n\n" + md_text(what) + "\n";
        html_element(extras.html, "p", what, "note");
        return;
    }
    extras.compared = value;
    extras.already_bad = [bad](const LedgerRow& row) { return bad->count(key_of(row.suite_scope, row.test)) > 0; };
}

}  // namespace

fs::path compared_ledger(const std::string& value, const std::string& suite) {
    fs::path path = value;
    std::error_code ec;
    if (fs::is_regular_file(path / suite / evidence::kLedger, ec)) return path / suite / evidence::kLedger;
    if (fs::is_directory(path / suite, ec))  // an EVIDENCE_GATE_HISTORY archive: its newest run of the suite
        if (const auto runs = archived_runs(path / suite); !runs.empty()) return runs.back() / evidence::kLedger;
    if (fs::is_regular_file(path / evidence::kLedger, ec)) {
        if (fs::exists(path / evidence::kReceipt, ec)) {
            RunPlace place;
            read_receipt_place(path / evidence::kReceipt, place);
            if (!place.suite.empty() && place.suite != suite)
                throw Error("it holds suite " + quote(place.suite) + "'s ledger, not " + quote(suite) + "'s");
        }
        return path / evidence::kLedger;
    }
    if (fs::is_regular_file(path, ec)) return path;
    throw Error(fs::is_directory(path, ec) ? "no ledger.jsonl in it, nor in " + suite + "/ below it" : "it does not exist");
}

void write_run_junit(const SuiteConfig& suite, const std::vector<LedgerRow>& rows, const RunMatrix& runs) {
    const auto place = this_run(suite);
    const JUnitContext context{suite.name, place.host, place.commit, place.branch, place.receipt, place.time};
    write_junit(suite.evidence_dir / evidence::kJunit, rows, runs, context);
}

std::optional<ReportExtras> run_report_extras(const SuiteConfig& suite, const std::vector<LedgerRow>& rows,
                                              const std::string& receipt_id) {
    const auto history = environment("EVIDENCE_GATE_HISTORY");
    const auto compare = environment("EVIDENCE_GATE_COMPARE");
    if (!history && !compare) return std::nullopt;
    ReportExtras extras;
    if (history) add_history(extras, suite, rows, receipt_id, *history);
    if (compare) add_comparison(extras, suite, *compare);
    return extras;
}

void archive_if_asked(const SuiteConfig& suite, std::ostream& out) {
    const auto dir = environment("EVIDENCE_GATE_HISTORY");
    if (!dir) return;
    try {
        const auto keep = history_keep();
        const auto archived = archive_run(suite.evidence_dir, *dir, keep);
        out << "history: this run is archived in " << archived.entry.string() << " (the newest " << keep
            << " runs of each suite are kept";
        if (!archived.removed.empty()) out << "; " << archived.removed.size() << " older removed";
        out << ")\n";
    } catch (const std::exception& e) {  // the ledger is built: the history's trouble is said, never a failed step
        out << "evgate: warning: history: this run is not archived in " << *dir << ": " << e.what() << '\n';
    }
}

}  // namespace evgate
