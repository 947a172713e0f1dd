// history.json: every test's verdicts over time, for tools.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "reports/history_page_parts.hpp"

namespace evgate {
namespace {

using JsonOut = rapidjson::Writer<rapidjson::StringBuffer>;

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
    if (track.orders > 0) w.Key("orders"), w.Uint(track.orders);  // behind its latest verdict
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
}  // namespace

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

}  // namespace evgate
