#include "runs/run_matrix.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <xxhash.h>
#include <gsl/gsl>

#include "inputs/outcome.hpp"
#include "io/json_io.hpp"
#include "runs/run_records.hpp"

namespace fs = std::filesystem;

namespace evgate {

namespace {

constexpr std::size_t kBlock = std::size_t{1} << 20;

}  // namespace

std::uint64_t Interner::hash_of(std::string_view text) { return XXH3_64bits(text.data(), text.size()); }

std::size_t Interner::slot_of(std::string_view text, std::uint64_t hash) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = hash & mask;; i = (i + 1) & mask) {
        const auto& slot = slots_[i];
        if (slot.id == kEmpty || (slot.hash == hash && slot.text == text)) return i;
    }
}

std::string_view Interner::store(std::string_view text) {
    if (blocks_.empty() || block_size_ - block_used_ < text.size()) {
        block_size_ = std::max(kBlock, text.size());
        blocks_.push_back(std::make_unique<char[]>(block_size_));
        block_used_ = 0;
    }
    char* start = blocks_.back().get() + block_used_;
    std::copy(text.begin(), text.end(), start);
    block_used_ += text.size();
    return {start, text.size()};
}

void Interner::grow() {
    std::vector<Slot> old(std::max<std::size_t>(64, 2 * slots_.size()));
    old.swap(slots_);
    for (const auto& slot : old)
        if (slot.id != kEmpty) slots_[slot_of(slot.text, slot.hash)] = slot;
}

std::uint32_t Interner::intern(std::string_view text, std::uint64_t hash) {
    if (2 * (names_.size() + 1) > slots_.size()) grow();
    auto& slot = slots_[slot_of(text, hash)];
    if (slot.id != kEmpty) return slot.id;
    slot = {hash, store(text), gsl::narrow<std::uint32_t>(names_.size())};
    names_.push_back(slot.text);
    return slot.id;
}

std::vector<std::uint32_t> Interner::intern_all(const std::vector<std::string_view>& texts) {
    constexpr std::size_t kAhead = 16;  // lookups in flight: enough to hide a trip to memory
    std::vector<std::uint64_t> hashes(texts.size());
    std::transform(texts.begin(), texts.end(), hashes.begin(), hash_of);
    std::vector<std::uint32_t> ids(texts.size());
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::size_t mask = slots_.empty() ? 0 : slots_.size() - 1;
        if (i + kAhead < texts.size() && !slots_.empty()) __builtin_prefetch(&slots_[hashes[i + kAhead] & mask]);
        if (i + kAhead / 2 < texts.size() && !slots_.empty()) {
            const auto& slot = slots_[hashes[i + kAhead / 2] & mask];  // fetched by now
            if (slot.id != kEmpty) __builtin_prefetch(slot.text.data());
        }
        ids[i] = intern(texts[i], hashes[i]);
    }
    return ids;
}

std::optional<std::uint32_t> Interner::find(std::string_view text) const {
    if (slots_.empty()) return std::nullopt;
    const auto& slot = slots_[slot_of(text, hash_of(text))];
    return slot.id == kEmpty ? std::nullopt : std::optional(slot.id);
}

RunMatrix::RunMatrix(std::initializer_list<LoadedRun> runs) {
    for (const auto& run : runs) add(run);
}

std::uint32_t RunMatrix::number(RunCells& run, std::string_view test) {
    const auto id = ids_.intern(test);
    if (run.cells.size() <= id) run.cells.resize(ids_.size());
    return id;
}

void RunMatrix::planned(RunCells& run, std::string_view test) {
    const auto id = number(run, test);
    ++run.cells[id].planned;
}

void RunMatrix::interrupted(RunCells& run, std::string_view test) {
    const auto id = number(run, test);
    run.cells[id].interrupted = true;
}

void RunMatrix::result(RunCells& run, std::uint32_t id, Outcome outcome, std::vector<std::string> dirty, std::string_view message,
                       double seconds) {
    auto& cell = run.cells[id];
    cell.seconds = static_cast<float>(seconds);
    cell.outcome = 1 + static_cast<std::uint32_t>(outcome);
    // A reason quotes the message of a failure, a skip or a call that never ran; nothing reads any other.
    const bool quoted = !message.empty() && (outcome_class(outcome) == OutcomeClass::fail ||
                                             outcome_class(outcome) == OutcomeClass::skip || outcome == Outcome::uncalled);
    if (!dirty.empty() || quoted) {
        run.extras[id] = Extra{std::move(dirty), quoted ? std::string(message) : std::string()};
        cell.extra = true;
    } else if (cell.extra) {  // a later result of the same test replaces the earlier (as a map would)
        run.extras.erase(id);
        cell.extra = false;
    }
}

void RunMatrix::add(LoadedRun run) {
    RunCells cells;
    for (const auto& test : run.plan.tests) planned(cells, test);
    for (const auto& [test, r] : run.records.results)
        result(cells, number(cells, test), r.outcome, r.dirty, r.message, r.seconds);
    for (const auto& [test, why] : run.records.interrupted) interrupted(cells, test);
    push(std::move(run), std::move(cells));
}

void RunMatrix::push(LoadedRun run, RunCells cells) {
    if (!run.plan.listed) run.plan.tests = {};  // a listed order is kept: no seed makes it again
    run.records.started = {};
    run.records.results = {};
    run.records.interrupted = {};
    if (!run.problem.empty()) cells = RunCells{};  // a run that cannot be read has no attempts
    for (const auto& cell : cells.cells) cells.results += cell.outcome != 0;
    if (!run.plan.confirms.empty()) redone_.insert(run.plan.confirms);
    runs_.push_back(std::move(run));
    cells_.push_back(std::move(cells));
}

// What a thread can do for a run without the matrix: read and parse its files. Its strings point
// into the bytes it holds.
struct RunMatrix::Parsed {
    struct Result {
        std::size_t position;  // in the plan, or npos
        std::string_view test;
        Outcome outcome;
        std::string_view message;
        std::vector<std::string_view> dirty;
        double seconds;
    };
    LoadedRun run;  // the plan without its tests, and what the records say about the run as a whole
    std::string plan_bytes, record_bytes;
    std::vector<std::string_view> tests;  // the plan's, in its order
    std::vector<Result> results;          // in the records' order: a later one of a test replaces an earlier
    std::vector<std::string_view> interrupted;
    std::exception_ptr failure;  // what went wrong that is not the run's problem

    void read(const fs::path& plan_file);
};

void RunMatrix::Parsed::read(const fs::path& plan_file) {
    tests.clear();  // a run parsed before leaves its memory, not its content
    results.clear();
    interrupted.clear();
    failure = nullptr;
    run = load_run(plan_file, [this](const fs::path& file, LoadedRun& r) {
        const auto doc = read_json_file_in_place(file, plan_bytes);
        const auto source = file.string();
        auto plan = plan_header(doc, source);
        for_each_string(doc, "tests", source, [this](std::string_view test) { tests.push_back(test); });
        if (plan.listed) plan.tests.assign(tests.begin(), tests.end());
        r.plan = std::move(plan);
        // Results come in the plan's order: each is compared with the next planned test (or the
        // one after, past a test the interpreter died in) rather than looked up.
        std::size_t next = 0;
        const auto position_of = [&](std::string_view test) {
            for (auto k = next; k < tests.size() && k < next + 2; ++k) {
                if (tests[k] != test) continue;
                next = k + 1;
                return k;
            }
            return std::string_view::npos;
        };
        read_records(records_beside(file), record_bytes, [&](const RunRecord& record) {
            if (record.event == RunRecord::Event::result) {
                results.push_back({position_of(record.test), record.test, record.outcome, record.message,
                                   record.dirty ? *record.dirty : std::vector<std::string_view>{}, record.seconds});
                if (record.unblamed && !record.unblamed->empty()) add_record(r.records, record);  // the doubt it raises
            } else if (record.event == RunRecord::Event::interrupted) {
                interrupted.push_back(record.test);
            } else if (record.event != RunRecord::Event::start) {
                add_record(r.records, record);
            }
        });
    });
}

void RunMatrix::add(Parsed& parsed) {
    RunCells cells;
    if (parsed.run.problem.empty()) {
        const auto numbers = ids_.intern_all(parsed.tests);
        cells.cells.resize(ids_.size());
        for (auto id : numbers) ++cells.cells[id].planned;
        for (auto& r : parsed.results) {
            const auto id = r.position != std::string_view::npos ? numbers[r.position] : number(cells, r.test);
            result(cells, id, r.outcome, std::vector<std::string>(r.dirty.begin(), r.dirty.end()), r.message, r.seconds);
        }
        for (const auto& test : parsed.interrupted) interrupted(cells, test);
    }
    push(std::move(parsed.run), std::move(cells));
}

// No more runs parsed, or being parsed, and not yet numbered than there are threads: memory
// stays flat however many runs there are. A numbered run's buffers go to the next one parsed.
class RunMatrix::ParseAhead {
public:
    ParseAhead(const std::vector<fs::path>& plans, std::size_t threads)
        : plans_(plans), threads_(threads), parsed_(plans.size()) {
        for (std::size_t t = 0; t < threads; ++t) workers_.emplace_back([this] { work(); });
    }
    ~ParseAhead() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        changed_.notify_all();
        for (auto& w : workers_) w.join();
    }
    ParseAhead(const ParseAhead&) = delete;
    ParseAhead& operator=(const ParseAhead&) = delete;

    // Run i, once parsed (its failure, if any, is in it).
    std::unique_ptr<Parsed> take(std::size_t i) {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return parsed_[i] != nullptr; });
        return std::move(parsed_[i]);
    }
    // A run numbered: one more may be parsed, in its buffers.
    void done(std::unique_ptr<Parsed> run) {
        std::lock_guard<std::mutex> lock(mutex_);
        spare_.push_back(std::move(run));
        ++added_;
        changed_.notify_all();
    }

private:
    void work() {
        for (;;) {
            std::unique_lock<std::mutex> lock(mutex_);
            changed_.wait(lock, [&] { return stop_ || next_ == plans_.size() || next_ < added_ + threads_; });
            if (stop_ || next_ == plans_.size()) return;
            const auto i = next_++;
            std::unique_ptr<Parsed> run;
            if (spare_.empty()) {
                run = std::make_unique<Parsed>();
            } else {
                run = std::move(spare_.back());
                spare_.pop_back();
            }
            lock.unlock();
            try {
                run->read(plans_[i]);
            } catch (...) {
                run->failure = std::current_exception();
            }
            lock.lock();
            parsed_[i] = std::move(run);
            changed_.notify_all();
        }
    }

    const std::vector<fs::path>& plans_;
    const std::size_t threads_;
    std::vector<std::unique_ptr<Parsed>> parsed_;
    std::vector<std::unique_ptr<Parsed>> spare_;  // numbered runs, their memory ready for the next
    std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t next_ = 0, added_ = 0;
    bool stop_ = false;
    std::vector<std::thread> workers_;  // started once the rest is there, joined before it goes
};

void RunMatrix::add_runs(const fs::path& runs_dir, const std::function<std::vector<std::string>()>& receipts) {
    const auto plans = run_plan_files(runs_dir);
    const std::size_t threads = std::min<std::size_t>({std::max(1u, std::thread::hardware_concurrency()), 4, plans.size()});
    ParseAhead ahead(plans, threads);
    std::optional<std::vector<std::string>> receipt;
    for (std::size_t i = 0; i < plans.size(); ++i) {
        auto run = ahead.take(i);
        if (run->failure) std::rethrow_exception(run->failure);
        if (!receipt) receipt = receipts();
        check_receipt(run->run, *receipt);
        add(*run);
        ahead.done(std::move(run));
    }
}

const RunMatrix::Cell* RunMatrix::cell(std::size_t run, std::optional<std::uint32_t> test) const {
    const auto& cells = cells_[run].cells;
    return test && *test < cells.size() ? &cells[*test] : nullptr;
}

template <typename Each>
void RunMatrix::visit(std::optional<std::uint32_t> test, Each each) const {
    for (std::size_t r = 0; r < runs_.size(); ++r) {
        const auto* c = cell(r, test);
        if (c == nullptr || c->planned == 0 || !runs_[r].problem.empty()) continue;
        if (runs_[r].plan.column == Column::runner && c->outcome == 0) continue;  // a runner without a result says nothing
        const auto outcome = c->outcome != 0  ? static_cast<Outcome>(c->outcome - 1)
                             : c->interrupted ? Outcome::interrupted
                                              : Outcome::missing;
        for (std::uint32_t k = 0; k < c->planned; ++k) each(r, *c, outcome);
    }
}

std::vector<Attempt> RunMatrix::attempts(std::optional<std::uint32_t> test) const {
    std::vector<Attempt> out;
    out.reserve(runs_.size());
    visit(test, [&](std::size_t r, const Cell& c, Outcome outcome) {
        const auto& plan = runs_[r].plan;
        Attempt a;
        a.run = plan.id.str();
        a.order = plan.order;
        a.column = plan.column;
        a.outcome = outcome;
        a.beside = redone_.count(a.run) != 0;
        a.fresh = plan.fresh;
        a.fork = !plan.fresh && runs_[r].records.isolation.rfind("fork", 0) == 0;
        if (c.extra) {
            const auto& extra = cells_[r].extras.at(*test);
            a.dirty = extra.dirty;
            a.message = extra.message;
        }
        out.push_back(std::move(a));
    });
    return out;
}

std::vector<std::pair<std::string, Outcome>> RunMatrix::outcomes(std::optional<std::uint32_t> test) const {
    std::vector<std::pair<std::string, Outcome>> out;
    out.reserve(runs_.size());
    visit(test, [&](std::size_t r, const Cell&, Outcome outcome) { out.emplace_back(runs_[r].plan.id.str(), outcome); });
    return out;
}

std::vector<std::pair<std::size_t, double>> RunMatrix::durations(std::string_view test) const {
    std::vector<std::pair<std::size_t, double>> out;
    visit(find(test), [&](std::size_t r, const Cell& c, Outcome) {
        if (c.outcome != 0 && c.seconds >= 0) out.emplace_back(r, static_cast<double>(c.seconds));
    });
    return out;
}

bool RunMatrix::attempt_key(std::optional<std::uint32_t> test, std::string& key) const {
    constexpr std::size_t kBytes = 2 * sizeof(std::uint32_t) + 1;  // planned, outcome, interrupted
    key.resize(runs_.size() * kBytes);
    char* out = &key[0];
    for (std::size_t r = 0; r < runs_.size(); ++r, out += kBytes) {
        const Cell none;
        const auto* c = cell(r, test);
        if (c == nullptr) c = &none;
        if (c->extra) return false;
        std::memcpy(out, &c->planned, sizeof c->planned);
        std::memcpy(out + sizeof c->planned, &c->outcome, sizeof c->outcome);
        out[kBytes - 1] = c->interrupted ? 1 : 0;
    }
    return true;
}

}  // namespace evgate
