#include "reports/history.hpp"

#include <algorithm>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include <sys/stat.h>

#include "inputs/evidence_layout.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "reports/junit_writer.hpp"
#include "verdicts/verdict_table.hpp"

namespace fs = std::filesystem;

namespace evgate {
namespace {

TimePoint modified(const fs::path& file) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) throw Error("cannot stat " + file.string());
    const auto since = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
    return TimePoint(std::chrono::duration_cast<TimePoint::duration>(since));
}

namespace receipt_key {  // the receipt members a run's place needs, in read_receipt_place() order
enum : std::size_t { suite,
                     receipt_id,
                     hostname,
                     git };
}

// A run's place as the ledger step copied it from the receipt into junit.xml, with its clock:
// read from the file's first bytes, where the receipt lists every collected test.
bool place_by_junit(const fs::path& dir, RunPlace& place) {
    const auto head = read_junit_head(dir / evidence::kJunit);
    if (!head || !head->timestamp) return false;
    const auto property = [&](const char* name) {
        const auto it = head->properties.find(name);
        return it == head->properties.end() ? std::string() : it->second;
    };
    place.time = *head->timestamp;
    place.time_from = evidence::kJunit;
    if (property("receipt").empty()) return false;  // an older head: the receipt says the rest
    place.suite = property("suite");
    place.receipt = property("receipt");
    place.commit = property("commit");
    place.branch = property("branch");
    place.host = head->hostname;
    return true;
}

bool has_ledger(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / evidence::kLedger, ec);
}

// Directories below `dir`, by name, without the archive's own temporary and discarded ones.
std::vector<fs::path> subdirectories(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        std::error_code ec;
        if (entry.is_directory(ec) && entry.path().filename().string().rfind('.', 0) != 0) out.push_back(entry.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// A ledger row's test, scope, verdict and gate. Unless the row is to be read whole, the parse
// stops at the first member after test, verdict and gate: its reason and every attempt, most of
// its bytes, are not needed (and not checked).
class RowFields : public FieldCapture {
public:
    RowFields() : FieldCapture{"test", "scope", "verdict", "gate", "orders"} {}

    bool whole = true;

    bool Key(const char* text, rapidjson::SizeType length, bool copy) {
        const auto& self = *this;
        if (!whole && self[0].kind != JsonField::Kind::absent && self[2].kind != JsonField::Kind::absent &&
            self[3].kind != JsonField::Kind::absent && std::string_view(text, length) != "orders")
            return false;
        return FieldCapture::Key(text, length, copy);
    }
};

// One ledger's bytes and rows; its memory goes from ledger to ledger.
struct ParsedLedger {
    std::unique_ptr<std::string> text = std::make_unique<std::string>();  // the rows point into it: never moved
    std::vector<HistoryRow> rows;
    std::string error;
};

ParsedLedger parse_ledger(const fs::path& ledger, ParsedLedger parsed) {
    parsed.error.clear();
    try {
        read_history_rows(ledger, *parsed.text, parsed.rows);
    } catch (const std::exception& e) {  // whatever it is, this input is left out and the others go on
        parsed.error = e.what();
    }
    return parsed;
}

std::size_t thread_count(const HistoryOptions& options) {
    if (options.threads > 0) return options.threads;
    return std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
}

struct Placed {
    std::optional<RunPlace> place;
    std::string error;
};

// Every input placed, a slice per thread: placing reads a receipt, which lists every test.
std::vector<Placed> place_all(const std::vector<fs::path>& inputs, std::size_t threads) {
    std::vector<Placed> placed(inputs.size());
    const auto slice = [&](std::size_t first) {
        for (auto i = first; i < inputs.size(); i += threads) {
            try {
                placed[i].place = place_run(inputs[i]);
            } catch (const std::exception& e) {
                placed[i].error = e.what();
            }
        }
    };
    std::vector<std::future<void>> others;
    for (std::size_t t = 1; t < threads; ++t) others.push_back(std::async(std::launch::async, slice, t));
    slice(0);
    for (auto& other : others) other.get();
    return placed;
}

// Ledgers without a receipt belong to the suite the options name, else to the one suite the
// receipts name, if there is exactly one.
void assign_bare_suites(std::vector<RunPlace>& places, const HistoryOptions& options, History& history) {
    std::set<std::string> named;
    std::size_t bare = 0;
    for (const auto& p : places) {
        if (!p.suite.empty()) named.insert(p.suite);
        bare += p.suite.empty();
    }
    if (bare == 0) return;
    std::string suite = options.suite;
    if (suite.empty() && named.size() == 1) suite = *named.begin();
    for (auto& p : places)
        if (p.suite.empty()) p.suite = suite;
    history.note(std::to_string(bare) + " run(s) without a suite in a receipt are taken as " +
                 (suite.empty() ? "one suite without a name" : "suite " + quote(suite)) +
                 (options.suite.empty() ? "" : " (--suite)"));
}

// The same run given twice (an evidence directory and its archived copy): its newest copy counts.
void drop_duplicates(std::vector<RunPlace>& places, History& history) {
    std::map<std::pair<std::string, std::string>, std::size_t> newest;  // (suite, receipt) -> index
    for (std::size_t i = 0; i < places.size(); ++i) {
        if (places[i].receipt.empty()) continue;
        auto [it, fresh] = newest.try_emplace({places[i].suite, places[i].receipt}, i);
        if (!fresh && places[it->second].time < places[i].time) it->second = i;
    }
    std::vector<RunPlace> kept;
    for (std::size_t i = 0; i < places.size(); ++i) {
        const auto& p = places[i];
        const auto it = p.receipt.empty() ? newest.end() : newest.find({p.suite, p.receipt});
        if (it == newest.end() || it->second == i) {
            kept.push_back(p);
            continue;
        }
        history.note(p.source + " is the same run as " + places[it->second].source + " (receipt " + p.receipt +
                     "): the newer copy is taken");
    }
    places = std::move(kept);
}

}  // namespace

void read_receipt_place(const fs::path& file, RunPlace& place) {
    std::string text;
    read_file(file, text);
    FieldCapture f{"suite", "receipt_id", "hostname", "git"};
    rapidjson::Reader reader;
    rapidjson::InsituStringStream in(text.data());
    reader.Parse<rapidjson::kParseInsituFlag>(in, f);
    if (reader.HasParseError()) parse_json(read_file(file), file.string());  // parsing in place moved the bytes the error counts in
    if (!f.is_object()) throw InputError(file.string(), 0, "not a JSON object");
    const std::string source = file.string();
    const Where where{source, 1};
    place.suite = std::string(optional_text(f[receipt_key::suite], "suite", where).value_or(""));
    place.receipt = std::string(optional_text(f[receipt_key::receipt_id], "receipt_id", where).value_or(""));
    place.host = std::string(optional_text(f[receipt_key::hostname], "hostname", where).value_or(""));
    const auto& git = f[receipt_key::git];
    if (git.kind == JsonField::Kind::object) {
        for (std::size_t i = 0; i + 1 < git.items.size(); i += 2) {  // key, value, key, value...
            if (git.items[i] == "head") place.commit = std::string(git.items[i + 1]);
            if (git.items[i] == "branch") place.branch = std::string(git.items[i + 1]);
        }
    }
}

RunPlace place_run(const fs::path& input) {
    RunPlace place;
    place.source = input.string();
    std::error_code ec;
    if (!fs::exists(input, ec)) throw Error("it does not exist");
    // A ledger.jsonl with its receipt beside it is its evidence directory.
    const bool file = !fs::is_directory(input, ec);
    const auto dir = file ? input.parent_path() : input;
    const bool receipt = (!file || input.filename() == evidence::kLedger) && fs::exists(dir / evidence::kReceipt, ec);
    place.ledger = file ? input : dir / evidence::kLedger;
    if (!fs::is_regular_file(place.ledger, ec)) throw Error("no ledger.jsonl in it");
    place.bare = !receipt;
    if (!receipt) {
        place.time = modified(place.ledger);
        place.time_from = std::string(evidence::kLedger) + " mtime";
    } else if (!place_by_junit(dir, place)) {
        read_receipt_place(dir / evidence::kReceipt, place);
        if (place.time_from.empty()) {  // no junit.xml with a time: the receipt's own, what a download may have reset
            place.time = modified(dir / evidence::kReceipt);
            place.time_from = std::string(evidence::kReceipt) + " mtime";
        }
    }
    return place;
}

HistoryInputs expand_inputs(const std::vector<std::string>& arguments) {
    HistoryInputs inputs;
    for (const auto& argument : arguments) {
        const fs::path path = argument;
        std::error_code ec;
        try {
            if (!fs::exists(path, ec)) {
                inputs.left_out.emplace_back(argument, "it does not exist");
            } else if (!fs::is_directory(path, ec) || has_ledger(path)) {
                inputs.runs.push_back(path);
            } else {
                const auto before = inputs.runs.size();
                for (const auto& child : subdirectories(path)) {
                    if (has_ledger(child)) {
                        inputs.runs.push_back(child);
                        continue;
                    }
                    for (const auto& grandchild : subdirectories(child))
                        if (has_ledger(grandchild)) inputs.runs.push_back(grandchild);
                }
                if (inputs.runs.size() == before)
                    inputs.left_out.emplace_back(argument, "no ledger.jsonl in it, nor in the directories up to two levels below");
            }
        } catch (const fs::filesystem_error& e) {
            inputs.left_out.emplace_back(argument, e.what());
        }
    }
    return inputs;
}

namespace {

// Where a row may have a scope: the token "scope" (in a JSON string it would read \"scope\"),
// found in one pass before the lines are parsed in place.
std::vector<std::size_t> scope_tokens(const std::string& text) {
    std::vector<std::size_t> scopes;
    constexpr std::string_view token = "\"scope\"";
    for (std::size_t from = 0;;) {
        const auto* at = static_cast<const char*>(::memmem(text.data() + from, text.size() - from, token.data(), token.size()));
        if (at == nullptr) break;
        scopes.push_back(static_cast<std::size_t>(at - text.data()));
        from = scopes.back() + token.size();
    }
    return scopes;
}

}  // namespace

void read_history_rows(const fs::path& ledger, std::string& text, std::vector<HistoryRow>& rows) {
    const std::string source = ledger.string();
    rows.clear();
    read_file(ledger, text);
    const auto scopes = scope_tokens(text);
    auto scope = scopes.begin();
    JsonlSaxReader reader(text, source);
    RowFields f;
    for (char* line = reader.next_text(); line != nullptr; line = reader.next_text()) {
        const auto start = static_cast<std::size_t>(line - text.data());
        while (scope != scopes.end() && *scope < start) ++scope;
        f.whole = scope != scopes.end() && *scope < reader.position();
        f.restart();  // the row before may have been stopped early
        reader.parse_line(line, f);
        const Where where{source, reader.line()};
        if (!f.is_object()) throw InputError(source, reader.line(), "not a JSON object");
        HistoryRow row;
        row.test = required_text(f[0], "test", where);
        row.suite_scope = optional_text(f[1], "scope", where) == std::optional<std::string_view>("suite");
        row.verdict = required_text(f[2], "verdict", where);
        row.gate = required_text(f[3], "gate", where);
        if (f[4].kind == JsonField::Kind::integer && f[4].integer >= 0) row.orders = static_cast<std::uint32_t>(f[4].integer);
        rows.push_back(row);
    }
    if (reader.torn()) throw InputError(source, reader.line(), "torn last line (the file is cut short)");
    if (rows.empty()) throw InputError(source, 0, "holds no rows");
}

std::uint32_t Track::runs() const {
    std::uint32_t n = 0;
    for (const auto& s : stretches) n += s.runs;
    return n;
}

std::optional<std::uint32_t> History::suite_index(std::string_view name) const {
    for (std::size_t i = 0; i < suites_.size(); ++i)
        if (suites_[i].name == name) return static_cast<std::uint32_t>(i);
    return std::nullopt;
}

std::uint32_t History::suite_of(const std::string& name) {
    if (auto known = suite_index(name)) return *known;
    suites_.emplace_back();
    suites_.back().name = name;
    return static_cast<std::uint32_t>(suites_.size() - 1);
}

// `before`: the suite's run before this one; a stretch goes on only from that run.
void History::advance(Track& track, std::uint32_t verdict, bool bad, std::uint32_t run, std::optional<std::uint32_t> before) {
    const bool gap = !track.stretches.empty() && track.stretches.back().to != before;
    if (!track.stretches.empty() && track.stretches.back().verdict != verdict) ++track.changes;
    if (track.stretches.empty() || track.stretches.back().verdict != verdict || gap) {
        track.stretches.push_back({verdict, run, run, 1, gap});
    } else {
        track.stretches.back().to = run;
        ++track.stretches.back().runs;
    }
    if (!bad) return;
    ++track.bad;
    if (!track.first_bad) track.first_bad = run;
    track.last_bad = run;
}

void History::add(RunPlace place, const std::vector<HistoryRow>& rows) {
    const auto run = static_cast<std::uint32_t>(runs_.size());
    HistoryRun entry;
    entry.suite = suite_of(place.suite);
    entry.place = std::move(place);
    auto& suite = suites_[entry.suite];
    const auto before = suite.runs.empty() ? std::nullopt : std::optional<std::uint32_t>(suite.runs.back());
    suite.runs.push_back(run);
    std::vector<std::pair<bool, std::uint32_t>> order;
    order.reserve(rows.size());
    for (const auto& row : rows) {
        auto& names = row.suite_scope ? suite.checks : suite.tests;
        auto& tracks = row.suite_scope ? suite.check_tracks : suite.test_tracks;
        const auto at = order.size();
        const bool same = at < suite.last_rows.size() && suite.last_rows[at].first == row.suite_scope &&
                          names.name(suite.last_rows[at].second) == row.test;
        const auto index = same ? suite.last_rows[at].second : names.intern(row.test);
        order.emplace_back(row.suite_scope, index);
        if (index == tracks.size()) tracks.emplace_back();
        auto& track = tracks[index];
        if (!track.stretches.empty() && track.stretches.back().to == run) continue;  // listed twice: the first row counts
        const auto gate = gate_named(row.gate);                                      // another word counts as bad, and neither blocks nor defers
        advance(track, verdicts_.intern(row.verdict), gate != Gate::pass, run, before);
        if (track.stretches.back().to == run) track.orders = row.orders;  // its latest run's
        const bool block = gate == Gate::block;
        if (row.suite_scope) {
            entry.checks_blocking += block;
        } else {
            ++entry.tests;
            entry.blocking += block;
            entry.deferred += gate == Gate::defer;
        }
    }
    suite.last_rows = std::move(order);
    runs_.push_back(std::move(entry));
}

void History::leave_out(std::string source, std::string why) { left_out_.emplace_back(std::move(source), std::move(why)); }

namespace {

// The runs the inputs name, placed in time, in time order (ties by suite, then source); the
// duplicates and what cannot be placed are left out of `history`, with their reasons.
std::vector<RunPlace> placed_in_time(const HistoryInputs& inputs, const HistoryOptions& options, std::size_t threads,
                                     History& history) {
    std::vector<RunPlace> places;
    auto placed = place_all(inputs.runs, threads);
    for (std::size_t i = 0; i < placed.size(); ++i) {
        if (placed[i].place)
            places.push_back(std::move(*placed[i].place));
        else
            history.leave_out(inputs.runs[i].string(), placed[i].error);
    }
    assign_bare_suites(places, options, history);
    drop_duplicates(places, history);
    std::sort(places.begin(), places.end(), [](const RunPlace& a, const RunPlace& b) {
        return std::tie(a.time, a.suite, a.source) < std::tie(b.time, b.suite, b.source);
    });
    return places;
}

// Ledgers are parsed a few ahead, side by side, and added in time order as they come.
void add_ledgers(std::vector<RunPlace>& places, std::size_t threads, History& history) {
    std::deque<std::future<ParsedLedger>> ahead;
    std::vector<ParsedLedger> spare;  // buffers of ledgers already added
    std::size_t launched = 0;
    for (std::size_t i = 0; i < places.size(); ++i) {
        for (; launched < places.size() && launched < i + 2 * threads; ++launched) {
            ParsedLedger buffers;
            if (!spare.empty()) buffers = std::move(spare.back()), spare.pop_back();
            ahead.push_back(std::async(std::launch::async, parse_ledger, places[launched].ledger, std::move(buffers)));
        }
        auto parsed = ahead.front().get();
        ahead.pop_front();
        if (parsed.error.empty())
            history.add(std::move(places[i]), parsed.rows);
        else
            history.leave_out(places[i].source, parsed.error);
        spare.push_back(std::move(parsed));
    }
}

}  // namespace

History read_history(const std::vector<std::string>& arguments, const HistoryOptions& options) {
    History history;
    const auto inputs = expand_inputs(arguments);
    for (const auto& [argument, why] : inputs.left_out) history.leave_out(argument, why);
    const auto threads = thread_count(options);
    auto places = placed_in_time(inputs, options, threads, history);
    add_ledgers(places, threads, history);
    return history;
}

std::vector<std::pair<std::string_view, std::uint32_t>> verdict_counts(const History& history, const Track& track) {
    std::vector<std::pair<std::string_view, std::uint32_t>> counts;
    for (const auto& s : track.stretches) {
        const auto name = history.verdict_name(s.verdict);
        auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
        if (it == counts.end()) it = counts.insert(counts.end(), {name, 0});
        it->second += s.runs;
    }
    return counts;
}

std::string verdict_sequence(const History& history, const Track& track, std::size_t limit) {
    const auto& stretches = track.stretches;
    const auto first = stretches.size() > limit ? stretches.size() - limit : 0;
    std::string text = first > 0 ? "\xE2\x80\xA6 \xE2\x86\x92 " : "";
    for (auto i = first; i < stretches.size(); ++i) {
        if (i > first) text += stretches[i].after_gap ? " \xE2\x86\x92 (absent) \xE2\x86\x92 " : " \xE2\x86\x92 ";
        text += history.verdict_name(stretches[i].verdict);
        if (stretches[i].runs > 1) text += " \xC3\x97" + std::to_string(stretches[i].runs);
    }
    return text;
}

std::vector<RankedTrack> ranked_tests(const History& history) {
    std::vector<RankedTrack> out;
    const auto& suites = history.suites();
    for (std::uint32_t s = 0; s < suites.size(); ++s)
        for (std::uint32_t t = 0; t < suites[s].test_tracks.size(); ++t) out.push_back({s, t});
    std::sort(out.begin(), out.end(), [&](const RankedTrack& a, const RankedTrack& b) {
        const auto& ta = suites[a.suite].test_tracks[a.test];
        const auto& tb = suites[b.suite].test_tracks[b.test];
        if (ta.flips() != tb.flips()) return ta.flips() > tb.flips();
        if (ta.bad != tb.bad) return ta.bad > tb.bad;
        if (a.suite != b.suite) return suites[a.suite].name < suites[b.suite].name;
        return suites[a.suite].tests.name(a.test) < suites[b.suite].tests.name(b.test);
    });
    return out;
}

std::vector<std::uint32_t> ranked_checks(const SuiteHistory& suite) {
    std::vector<std::uint32_t> out(suite.check_tracks.size());
    for (std::uint32_t i = 0; i < out.size(); ++i) out[i] = i;
    std::sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
        const auto& ta = suite.check_tracks[a];
        const auto& tb = suite.check_tracks[b];
        if (ta.flips() != tb.flips()) return ta.flips() > tb.flips();
        if (ta.bad != tb.bad) return ta.bad > tb.bad;
        return suite.checks.name(a) < suite.checks.name(b);
    });
    return out;
}

}  // namespace evgate
