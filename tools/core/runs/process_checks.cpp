#include "runs/process_checks.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <rapidjson/document.h>

#include "inputs/outcome.hpp"
#include "io/json_io.hpp"
#include "runs/protocol.hpp"

namespace evgate {
namespace {

std::size_t position_of(const std::vector<std::string>& tests, const std::string& test, std::size_t end) {
    return static_cast<std::size_t>(std::find(tests.begin(), tests.begin() + static_cast<std::ptrdiff_t>(end), test) -
                                    tests.begin());
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (std::size_t i = 0; i < items.size(); ++i) out += (i == 0 ? "" : i + 1 == items.size() ? " and "
                                                                                               : ", ") +
                                                          items[i];
    return out;
}

std::string with_article(const std::string& word) {
    return (word.find_first_of("aeiou") == 0 ? "an " : "a ") + word;
}

// What the results of the tests a process ran call for, in words, and the status that goes with it.
std::pair<int, std::string> called_for(const RunRecords& records) {
    std::vector<std::string> failed;
    for (const auto& test : records.started) {
        const auto& result = records.results.at(test);
        if (outcome_class(result.outcome) == OutcomeClass::fail &&
            std::find(failed.begin(), failed.end(), test) == failed.end())
            failed.push_back(test + " " + std::string(to_string(result.outcome)));
    }
    if (failed.empty()) return {0, "every test it ran passed, skipped or xfailed"};
    return {1, failed.front() + (failed.size() > 1 ? " (and " + std::to_string(failed.size() - 1) + " more)" : "")};
}

// The test a `start` record names; nullopt for any other line.
std::optional<std::string> started_test(std::string_view line) {
    static const std::string start_word = std::string("\"") + protocol::event::start + "\"";
    if (line.find(start_word) == std::string_view::npos) return std::nullopt;  // most lines: no parse
    rapidjson::Document doc;
    doc.Parse(line.data(), line.size());
    if (doc.HasParseError() || !doc.IsObject()) return std::nullopt;
    const auto* event = member(doc, protocol::field::event);
    const auto* test = member(doc, protocol::field::test);
    if (!event || !event->IsString() || std::string_view(event->GetString()) != protocol::event::start || !test || !test->IsString())
        return std::nullopt;
    return std::string(test->GetString(), test->GetStringLength());
}

}  // namespace

std::string ordinal(std::size_t n) {
    const auto tens = n % 100, units = n % 10;
    const char* suffix = tens >= 11 && tens <= 13 ? "th" : units == 1 ? "st"
                                                       : units == 2   ? "nd"
                                                       : units == 3   ? "rd"
                                                                      : "th";
    return std::to_string(n) + suffix;
}

std::optional<std::string> order_divergence(const std::vector<std::string>& planned, const std::vector<std::string>& started) {
    for (std::size_t i = 0; i < started.size(); ++i) {
        if (i < planned.size() && started[i] == planned[i]) continue;
        const auto& test = started[i];
        const auto ran = test + " ran " + ordinal(i + 1);
        if (const auto earlier = position_of(started, test, i); earlier < i)
            return test + " ran twice (" + ordinal(earlier + 1) + " and " + ordinal(i + 1) +
                   "): a plugin or conftest ran it again after evidence-gate ordered the tests";
        const auto at = position_of(planned, test, planned.size());
        if (at == planned.size())
            return ran + ", but evidence-gate did not plan it in this process: a plugin or conftest added it";
        if (i < planned.size() && std::find(started.begin(), started.end(), planned[i]) == started.end())
            return planned[i] + " was planned " + ordinal(i + 1) + " and never ran, " + test + " ran in its place (planned " +
                   ordinal(at + 1) + "): a plugin or conftest dropped it after evidence-gate ordered the tests";
        return ran + ", planned " + ordinal(at + 1) + ": a plugin or conftest re-ordered the tests after evidence-gate";
    }
    return std::nullopt;
}

std::optional<std::string> exit_status_problem(const RunRecords& records, const LaunchResult& ended) {
    if (records.started.empty() || ended.process.stopped != 0) return std::nullopt;
    for (const auto& test : records.started)
        if (records.results.count(test) == 0) return std::nullopt;  // that test is interrupted
    const auto [expected, says] = called_for(records);
    const std::string against = " while its records say " + says + " (status " + std::to_string(expected) + ")";
    if (records.exit_statuses.empty())
        return "pytest ended (" + ended.describe() + ") after its last test without finishing its session (no 'end' record)" +
               against + ": something stopped it after the tests";
    const int counted = records.exit_statuses.front();
    if (counted != expected)
        return "pytest ended its session with exit status " + std::to_string(counted) + against +
               ": a plugin or conftest stopped the session or changed a test's report";
    // The status after every pytest_sessionfinish hook, then after the pytest_unconfigure hooks
    // before the plugin's: the first that differs names the phase that changed it (records
    // without the first say the second only).
    const int final = records.final_statuses.empty() ? counted : records.final_statuses.front();
    const int finish = records.finish_statuses.empty() ? final : records.finish_statuses.front();
    const auto changed = [&](const char* hook, int from, int to) {
        return std::string("a ") + hook + " hook changed pytest's exit status from " + std::to_string(from) + " to " +
               std::to_string(to) + against;
    };
    if (finish != counted) return changed("pytest_sessionfinish", counted, finish);
    if (final != finish) return changed("pytest_unconfigure", finish, final);
    if (!ended.exited_with(final))
        return "pytest ended (" + ended.describe() + ") after its session ended with status " + std::to_string(final) +
               against + ": something after the session (pytest_unconfigure, an atexit handler, os._exit, a thread that kept it alive) changed it";
    return std::nullopt;
}

namespace {

// What a foreign sender's whole lines were: each event with its count, in the order first seen,
// and the tests they named.
struct ForeignLines {
    std::vector<std::pair<std::string, int>> events;
    std::vector<std::string> tests;
    std::size_t total() const {
        std::size_t n = 0;
        for (const auto& [event, count] : events) n += static_cast<std::size_t>(count);
        return n;
    }
};

ForeignLines read_foreign_lines(const std::string& lines) {
    ForeignLines read;
    std::size_t from = 0;
    while (from < lines.size()) {
        const auto end = lines.find('\n', from);
        rapidjson::Document doc;
        doc.Parse(lines.data() + from, end - from);
        from = end + 1;
        std::string event = "unreadable";
        if (!doc.HasParseError() && doc.IsObject()) {
            const auto* e = member(doc, protocol::field::event);
            event = e && e->IsString() ? e->GetString() : "unnamed";
            const auto* t = member(doc, protocol::field::test);
            if (t && t->IsString() && std::find(read.tests.begin(), read.tests.end(), t->GetString()) == read.tests.end())
                read.tests.emplace_back(t->GetString());
        }
        auto it = std::find_if(read.events.begin(), read.events.end(), [&](const auto& e) { return e.first == event; });
        if (it == read.events.end()) read.events.emplace_back(event, 1);
        else ++it->second;
    }
    return read;
}

// The test pytest had started when the sender's first bytes came: a fork of pytest runs it.
std::string test_during(const ForeignSender& sender, std::string_view pytest_lines) {
    std::string during;
    const auto before = pytest_lines.substr(0, std::min(sender.after, pytest_lines.size()));
    for (std::size_t at = 0; at < before.size();) {
        const auto end = std::min(before.find('\n', at), before.size());
        if (const auto test = started_test(before.substr(at, end - at))) during = *test;
        at = end + 1;
    }
    return during;
}

std::string foreign_reason(const ForeignSender& sender, const ForeignLines& read, const std::string& during, bool pytest_silent) {
    const auto pid = std::to_string(sender.pid);
    std::string who = sender.pid == 0     ? "a process the kernel did not name"
                      : sender.reused_pid ? "a process that took pytest's pid " + pid + " after pytest ended"
                      : !during.empty()   ? "a process forked during " + during + " (pid " + pid + ")"
                                          : "a process forked before any test started (pid " + pid + ")";
    std::vector<std::string> kinds;  // "a start record", "2 result records"
    for (const auto& [event, count] : read.events)
        kinds.push_back(count == 1 ? with_article(event) + " record" : std::to_string(count) + " " + event + " records");
    const auto total = read.total();
    std::string what = total == 0 ? "wrote part of a record" : "wrote " + joined(kinds);
    if (sender.count > total) what += " and " + std::to_string(sender.count - total) + " more lines";
    if (total > 0 && sender.torn > 0) what += " and " + std::to_string(sender.torn) + " bytes of a torn line";
    const auto& tests = read.tests;
    if (!tests.empty()) what += " naming " + tests.front() + (tests.size() > 1 ? " and " + std::to_string(tests.size() - 1) + " more tests" : "");
    std::string reason = who + " " + what + ": not evidence of this run";
    if (pytest_silent)  // the process evgate started sent nothing at all
        reason += " (the process evgate started sent no record: a PYTHON wrapper must exec the interpreter, not start it as a child)";
    return reason;
}

}  // namespace

std::string foreign_record(const ForeignSender& sender, std::string_view pytest_lines) {
    const auto read = read_foreign_lines(sender.lines);
    const auto during = test_during(sender, pytest_lines);
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::event), w.String(protocol::event::foreign);
    w.Key(protocol::field::pid), w.Int(sender.pid);
    w.Key(protocol::field::records), w.Uint64(sender.count);
    w.Key(protocol::field::events), w.StartObject();
    for (const auto& [event, count] : read.events) w.Key(event.c_str()), w.Int(count);
    w.EndObject();
    w.Key(protocol::field::tests), w.StartArray();
    for (const auto& t : read.tests) w.String(t);
    w.EndArray();
    w.Key(protocol::field::torn), w.Uint64(sender.torn);
    w.Key(protocol::field::during);
    if (during.empty()) w.Null();
    else w.String(during);
    w.Key(protocol::field::reason), w.String(foreign_reason(sender, read, during, pytest_lines.empty()));
    w.EndObject();
    return std::string(json.text());
}

std::string reason_record(std::string_view event, const std::string& reason) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::event), w.String(event.data(), static_cast<rapidjson::SizeType>(event.size()));
    w.Key(protocol::field::reason), w.String(reason);
    w.EndObject();
    return std::string(json.text());
}

std::string outside_record(std::string_view phase, const std::vector<std::string>& groups) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    w.Key(protocol::field::event), w.String(protocol::event::outside);
    w.Key(protocol::field::phase), w.String(phase.data(), static_cast<rapidjson::SizeType>(phase.size()));
    w.Key(protocol::field::changed), w.StartArray();
    for (const auto& g : groups) w.String(g);
    w.EndArray();
    w.EndObject();
    return std::string(json.text());
}

}  // namespace evgate
