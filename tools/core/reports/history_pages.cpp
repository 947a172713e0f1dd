#include "reports/history_pages.hpp"

#include <algorithm>

#include "inputs/evidence_layout.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "reports/history_page_parts.hpp"

namespace evgate {

bool is_runner(std::string_view check) { return check.rfind(kRunnerPrefix, 0) == 0; }

// The newest run of the track's suite has it: it was not removed or renamed since.
bool in_last_run(const SuiteHistory& suite, const Track& track) {
    return !track.stretches.empty() && !suite.runs.empty() && track.stretches.back().to == suite.runs.back();
}

std::size_t tests_in_last_run(const SuiteHistory& suite) {
    return static_cast<std::size_t>(
        std::count_if(suite.test_tracks.begin(), suite.test_tracks.end(), [&](const Track& t) { return in_last_run(suite, t); }));
}

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

std::string short_time(TimePoint time) {
    const auto iso = iso_time(time);  // 2026-12-01T14:25:12.123456Z
    return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}

std::string short_commit(const std::string& commit) { return commit.substr(0, 12); }

void write_history_pages(const std::filesystem::path& dir, const History& history) {
    std::filesystem::create_directories(dir);
    AtomicFile json(dir / "history.json");
    history_json(history, [&json](std::string_view part) { json.write(part); });
    json.commit();
    write_file_atomic(dir / "history.md", history_markdown(history));
    write_file_atomic(dir / "history.html", history_html(history));
}

}  // namespace evgate
