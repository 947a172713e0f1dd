// Evidence over time: the ledgers of many runs (downloaded CI artifacts, an EVIDENCE_GATE_HISTORY
// archive), each placed in time by its receipt, and per test the verdict it had run after run.
// Ledgers are streamed, a few read ahead side by side and added one at a time in time order;
// what is kept grows with the distinct tests and their verdict changes, not with runs x tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/timestamp.hpp"
#include "runs/run_matrix.hpp"

namespace evgate {

// Where a run belongs in time, and what it ran on: from its receipt, else from its files.
struct RunPlace {
    std::string source;  // the evidence directory or ledger as given
    std::filesystem::path ledger;
    std::string suite;                          // "" when nothing names it
    std::string commit, branch, host, receipt;  // "" when unknown
    TimePoint time;
    std::string time_from;  // "junit.xml", "receipt.json mtime" or "ledger.jsonl mtime"
    bool bare = false;      // a ledger without a receipt beside it
};

// The suite, receipt id, hostname and git head and branch of the receipt `file`, into `place`; it
// is read as a stream (it lists every collected test, none of which is needed). Throws Error.
void read_receipt_place(const std::filesystem::path& file, RunPlace& place);

// An evidence directory (or an archive entry) by its ledger.jsonl, receipt.json and junit.xml,
// or a bare ledger file by its modification time. Throws Error when it cannot be placed.
RunPlace place_run(const std::filesystem::path& input);

struct HistoryInputs {
    std::vector<std::filesystem::path> runs;                    // evidence directories and ledgers
    std::vector<std::pair<std::string, std::string>> left_out;  // argument -> why no run was found
};

// What the arguments name: an evidence directory or a ledger file as itself; a directory of
// them (build/evidence/, an EVIDENCE_GATE_HISTORY archive) as every one within two levels below.
HistoryInputs expand_inputs(const std::vector<std::string>& arguments);

// One ledger row as the history reads it: views into the ledger's bytes.
struct HistoryRow {
    std::string_view test, verdict, gate;
    bool suite_scope = false;
    std::uint32_t orders = 0;  // the distinct orders its verdict stood on (0: not said, as in older ledgers)
};

// Every row of a ledger into `rows` (cleared first), its test, verdict and gate checked as the
// ledger promises them (strings); throws InputError naming file and line, also for a torn last
// line. The rows point into `text`; both keep their memory from one ledger to the next.
void read_history_rows(const std::filesystem::path& ledger, std::string& text, std::vector<HistoryRow>& rows);

// Consecutive runs of one suite, each of which had the test with the same verdict: the runs
// of its suite from `from` to `to` in the timeline, `runs` of them (other suites' runs may lie
// between). A run of the suite without the test ends a stretch.
struct Stretch {
    std::uint32_t verdict = 0;  // History::verdict_name
    std::uint32_t from = 0;     // timeline index of its first run
    std::uint32_t to = 0;       // and of its last
    std::uint32_t runs = 0;
    bool after_gap = false;  // the suite ran without the test just before it (renamed, removed, not collected)
};

// One test's (or one suite check's) verdicts over time.
struct Track {
    std::vector<Stretch> stretches;
    std::uint32_t bad = 0;                             // runs in which its gate was not pass
    std::optional<std::uint32_t> first_bad, last_bad;  // timeline indices
    std::uint32_t changes = 0;                         // flips: verdict changes between consecutive runs of the test
    std::uint32_t orders = 0;                          // the distinct orders behind its verdict in its latest run

    std::uint32_t runs() const;
    std::uint32_t flips() const { return changes; }
};

struct HistoryRun {
    RunPlace place;
    std::uint32_t suite = 0;  // History::suites() index
    std::size_t tests = 0, blocking = 0, deferred = 0, checks_blocking = 0;

    bool blocked() const { return blocking + checks_blocking > 0; }
};

struct SuiteHistory {
    std::string name;
    Interner tests, checks;  // ids in first-seen order: the index of each one's track
    std::vector<Track> test_tracks, check_tracks;
    std::vector<std::uint32_t> runs;  // timeline indices, in time order
    // The track of each row of the suite's last ledger, in its order: a ledger lists its rows in
    // collection order, mostly the last one's, so a row is first compared with the one at its place.
    std::vector<std::pair<bool, std::uint32_t>> last_rows;  // (suite scope, index)
};

class History {
public:
    // Adds a run after every run added so far: runs must come in time order. A test listed
    // twice in one ledger counts once (the first row).
    void add(RunPlace place, const std::vector<HistoryRow>& rows);
    void leave_out(std::string source, std::string why);
    void note(std::string text) { notes_.push_back(std::move(text)); }

    const std::vector<HistoryRun>& runs() const { return runs_; }
    const std::vector<SuiteHistory>& suites() const { return suites_; }
    const std::vector<std::pair<std::string, std::string>>& left_out() const { return left_out_; }
    const std::vector<std::string>& notes() const { return notes_; }  // how inputs were taken, e.g. duplicates
    std::string_view verdict_name(std::uint32_t verdict) const { return verdicts_.name(verdict); }
    std::optional<std::uint32_t> suite_index(std::string_view name) const;

private:
    std::uint32_t suite_of(const std::string& name);
    void advance(Track& track, std::uint32_t verdict, bool bad, std::uint32_t run, std::optional<std::uint32_t> before);

    std::vector<HistoryRun> runs_;
    std::vector<SuiteHistory> suites_;
    Interner verdicts_;
    std::vector<std::pair<std::string, std::string>> left_out_;
    std::vector<std::string> notes_;
};

struct HistoryOptions {
    std::string suite;        // the suite of bare ledgers ("" : the one suite the receipts name, if one)
    std::size_t threads = 0;  // ledgers read side by side; 0: one per core, at most 4
};

// Expands, places and sorts the inputs, then adds their ledgers in time order (ties by suite,
// then source). Whatever cannot be read is left out, with its reason; the same run given twice
// (its suite and receipt id) is taken once, its newest copy, and a note says so.
History read_history(const std::vector<std::string>& arguments, const HistoryOptions& options = {});

// How many of a track's runs had each verdict, in the order the verdicts first appear.
std::vector<std::pair<std::string_view, std::uint32_t>> verdict_counts(const History& history, const Track& track);
// The verdicts in order, runs of one merged: "stable ×3 → flaky → stable ×2", "(absent)" where
// the suite ran without the test; past `limit` stretches, only the newest `limit` (after "… →").
std::string verdict_sequence(const History& history, const Track& track, std::size_t limit);

// A test's place among all: by flips, most first, then by bad runs, suite and id.
struct RankedTrack {
    std::uint32_t suite = 0, test = 0;
};
std::vector<RankedTrack> ranked_tests(const History& history);
// Suite checks the same way, within one suite.
std::vector<std::uint32_t> ranked_checks(const SuiteHistory& suite);

}  // namespace evgate
