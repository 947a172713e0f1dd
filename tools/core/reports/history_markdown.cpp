// history.md: the tests that flip most often, suites, runners, hosts, inputs left out, runs.
#include <algorithm>

#include "reports/history_page_parts.hpp"
#include "reports/markup.hpp"

namespace evgate {
namespace {

void md_tests(std::string& out, const History& history) {
    const auto notable = notable_tests(history);
    out += "\n## Tests that flip most often\n\n";
    if (notable.empty()) {
        out += "Every test passed (or was skipped) in every run it was in.\n";
        return;
    }
    out +=
        "| # | test | suite | flips | bad / runs | verdicts, oldest first | first bad | last bad |\n"
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
    out +=
        "\n## Suites\n\n| suite | runs | blocked | tests in its last run | tests gone since seen | first run | last run |\n"
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
        out +=
            "\n### Suite checks and runners that were not always fine\n\n| suite | check | flips | bad / runs | verdicts, oldest first |\n"
            "| --- | --- | ---: | ---: | --- |\n" +
            checks;
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
    out +=
        "\n## Runs, newest first\n\n| # | time | suite | commit | branch | host | decision | placed by |\n"
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

}  // namespace

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

}  // namespace evgate
