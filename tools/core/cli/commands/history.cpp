// Commands over many runs' evidence: history.
#include "cli/commands/commands.hpp"

#include <iostream>

#include "inputs/evidence_layout.hpp"
#include "reports/history.hpp"
#include "reports/history_pages.hpp"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace evgate {
namespace {

constexpr std::size_t kListed = 10;  // lines of one kind on the terminal; the pages have the rest

void print_history(std::ostream& out, const History& history, const fs::path& dir) {
    const auto& runs = history.runs();
    out << "history: " << runs.size() << " run(s) of " << history.suites().size() << " suite(s)";
    if (!runs.empty()) out << ", " << short_time(runs.front().place.time) << " to " << short_time(runs.back().place.time);
    out << "; " << history.left_out().size() << " input(s) left out\n";
    for (const auto& [source, why] : history.left_out()) out << "left out: " << source << ": " << why << '\n';
    for (const auto& note : history.notes()) out << "note: " << note << '\n';
    std::size_t by_mtime = 0;
    for (const auto& run : runs) {
        if (run.place.time_from == evidence::kJunit) continue;
        if (by_mtime++ < kListed) out << "placed by " << run.place.time_from << ": " << run.place.source << '\n';
    }
    if (by_mtime > kListed) out << "placed by a modification time: " << by_mtime - kListed << " more\n";
    std::size_t shown = 0;
    for (const auto& r : ranked_tests(history)) {
        const auto& suite = history.suites()[r.suite];
        const auto& track = suite.test_tracks[r.test];
        if (track.flips() == 0 || shown++ == kListed) break;
        if (shown == 1) out << "flips most often:\n";
        out << "  " << track.flips() << " flip(s), bad in " << track.bad << " of " << track.runs() << ": " << suite.name
            << " " << suite.tests.name(r.test) << " (" << verdict_sequence(history, track, 6) << ")\n";
    }
    if (shown == 0) out << "no test changed its verdict between runs\n";
    out << "history: " << (dir / "history.json").string() << ", " << (dir / "history.md").string() << ", "
        << (dir / "history.html").string() << '\n';
}

}  // namespace

void history_options(Options& accepted) {
    accepted.named.add_options()("out", po::value<std::string>()->default_value("."), "where history.json, .md and .html go")(
        "suite", po::value<std::string>()->default_value(""),
        "the suite of ledgers without a receipt beside them (default: the one suite the receipts name)")(
        "threads", po::value<std::size_t>()->default_value(0), "ledgers read side by side (default: one per core, at most 4)")(
        "input", po::value<std::vector<std::string>>()->required(), "evidence directories, ledgers, directories of them");
    accepted.operands.add("input", -1);
    accepted.synopsis = "<evidence dir | ledger.jsonl | directory of them>...";
}

// Exit 1 when no run could be read.
int cmd_history(Invocation& in) {
    HistoryOptions options;
    options.suite = in.get<std::string>("suite");
    options.threads = in.get<std::size_t>("threads");
    const auto history = read_history(in.get<std::vector<std::string>>("input"), options);
    const fs::path dir = in.get<std::string>("out");
    write_history_pages(dir, history);
    print_history(std::cout, history, dir);
    return history.runs().empty() ? 1 : 0;
}

}  // namespace evgate
