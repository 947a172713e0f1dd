// What history_json.cpp, history_markdown.cpp and history_html.cpp share (history_pages.cpp):
// which tests, runs and hosts the pages list, and how they name a run. Internal to reports/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/history_pages.hpp"

namespace evgate {

constexpr std::size_t kMarkdownTests = 50, kMarkdownRuns = 100, kHtmlTests = 500, kStripRuns = 200, kSequence = 12;

constexpr std::string_view kRunnerPrefix = "runner:";
bool is_runner(std::string_view check);

// The newest run of the track's suite has it: it was not removed or renamed since.
bool in_last_run(const SuiteHistory& suite, const Track& track);
std::size_t tests_in_last_run(const SuiteHistory& suite);

struct HostSummary {
    std::size_t runs = 0, blocked = 0;
    std::uint32_t first = 0, last = 0;
};
std::map<std::string, HostSummary> host_summaries(const History& history);

// "#3 2026-12-01 14:25 UTC 1a2b3c4d5e6f", or "" for none.
std::string bad_run_text(const History& history, const std::optional<std::uint32_t>& run);
// "12 run(s) of 2 suite(s), <first> to <last>".
std::string span_text(const History& history);
// Tests worth a look: they changed verdict or were bad at least once, ranked.
std::vector<RankedTrack> notable_tests(const History& history);
// Runs placed in time by a file's modification time, not junit.xml's timestamp.
std::size_t placed_by_mtime(const History& history);

}  // namespace evgate
