// What the gate knows of all runs at once, compactly: each run's plan and what its records say
// about the run as a whole, and per test and run one small cell (how often the run planned the
// test, its outcome, whether the interpreter died in it), with dirty groups and messages kept
// only where a test has them. A run's records are streamed into it and never held whole, so
// memory grows with tests and hardly with runs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runs/attempt.hpp"
#include "runs/run_plan.hpp"

namespace evgate {

// Strings numbered in the order first seen, each stored once: the texts back to back in large
// blocks, found through one flat open-addressing table of (hash, text, number) slots, so a
// lookup touches a slot and the text it compares with, nothing more.
class Interner {
public:
    std::uint32_t intern(std::string_view text) { return intern(text, hash_of(text)); }
    // The numbers of `texts`, as intern() gives them one by one. A long list's lookups wait on
    // memory, not on work, so the slots (and the texts they hold) are fetched ahead.
    std::vector<std::uint32_t> intern_all(const std::vector<std::string_view>& texts);
    std::optional<std::uint32_t> find(std::string_view text) const;
    std::string_view name(std::uint32_t id) const { return names_[id]; }
    std::size_t size() const { return names_.size(); }

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::string_view text;
        std::uint32_t id = kEmpty;
    };
    static constexpr std::uint32_t kEmpty = UINT32_MAX;

    static std::uint64_t hash_of(std::string_view text);
    std::uint32_t intern(std::string_view text, std::uint64_t hash);
    std::size_t slot_of(std::string_view text, std::uint64_t hash) const;  // where it is, or the empty slot it goes to
    std::string_view store(std::string_view text);
    void grow();

    std::vector<std::unique_ptr<char[]>> blocks_;  // never moved: the views stay valid
    std::size_t block_used_ = 0, block_size_ = 0;  // of the last block
    std::vector<std::string_view> names_;
    std::vector<Slot> slots_;  // a power of two, at most half full
};

class RunMatrix {
public:
    RunMatrix() = default;
    RunMatrix(std::initializer_list<LoadedRun> runs);  // runs held in memory, in this order

    // A run held in memory: a runner bundle's, a JUnit file's.
    void add(LoadedRun run);
    // Every run in `runs_dir`, in load_runs' order. Runs are parsed side by side (one thread
    // a core, a few at most) and numbered in order; only the few in flight are held whole.
    // `receipts` (Receipt::run_receipts) is asked for once the first run is parsed: the receipt
    // can be read meanwhile.
    void add_runs(const std::filesystem::path& runs_dir, const std::function<std::vector<std::string>()>& receipts);

    // Each run in the order added: its plan without the tests (but for a listed order's: a
    // sweep's, which no seed makes again), its records without the results.
    const std::vector<LoadedRun>& runs() const { return runs_; }
    std::size_t size() const { return runs_.size(); }
    // Tests with a result in run `run` (counted once each, planned or not).
    std::size_t results(std::size_t run) const { return cells_[run].results; }

    // A test's number, when any run planned it or has a result for it.
    std::optional<std::uint32_t> find(std::string_view test) const { return ids_.find(test); }

    // The test's attempts in run order, one each time a run planned it, as the gate judges
    // them; a runner without a result for it says nothing about it.
    std::vector<Attempt> attempts(std::optional<std::uint32_t> test) const;
    std::vector<Attempt> attempts(std::string_view test) const { return attempts(find(test)); }
    // Run id -> outcome of each of those attempts, without building them.
    std::vector<std::pair<std::string, Outcome>> outcomes(std::optional<std::uint32_t> test) const;
    // Run (its place in runs()) -> seconds the test took in each attempt with a result that says
    // (setup, call and teardown), in run order: what junit.xml reports.
    std::vector<std::pair<std::size_t, double>> durations(std::string_view test) const;
    // The bytes that tell the test's attempts apart from another test's: tests with equal keys
    // have equal attempts. False (and no key) when a dirty group or message makes it unique.
    bool attempt_key(std::optional<std::uint32_t> test, std::string& key) const;

private:
    struct Cell {
        std::uint32_t planned = 0;  // times the run's order lists the test
        std::uint32_t outcome = 0;  // 0: no result, else 1 + the Outcome's value
        bool interrupted = false;
        bool extra = false;  // has an entry in RunCells::extras
        float seconds = -1;  // the result's duration; -1: none said
    };
    struct Extra {
        std::vector<std::string> dirty;
        std::string message;  // only that of a failure, a skip or a call that never ran: what a reason quotes
    };
    struct RunCells {
        std::vector<Cell> cells;  // by test number; tests numbered later have none here
        std::unordered_map<std::uint32_t, Extra> extras;
        std::size_t results = 0;
    };

    struct Parsed;     // one run's files, parsed but not numbered
    class ParseAhead;  // runs parsed side by side, a few ahead of the one being numbered

    std::uint32_t number(RunCells& run, std::string_view test);  // the test's number, with a cell in `run`
    void planned(RunCells& run, std::string_view test);
    void interrupted(RunCells& run, std::string_view test);
    void result(RunCells& run, std::uint32_t id, Outcome outcome, std::vector<std::string> dirty, std::string_view message,
                double seconds);
    void push(LoadedRun run, RunCells cells);
    void add(Parsed& parsed);

    const Cell* cell(std::size_t run, std::optional<std::uint32_t> test) const;
    // Calls `each(run, cell, outcome)` for every attempt of `test`, in run order.
    template <typename Each>
    void visit(std::optional<std::uint32_t> test, Each each) const;

    Interner ids_;
    std::vector<LoadedRun> runs_;
    std::vector<RunCells> cells_;
    std::set<std::string> redone_;  // runs another run did again alone (they went beside others)
};

}  // namespace evgate
