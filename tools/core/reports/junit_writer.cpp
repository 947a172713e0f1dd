#include "reports/junit_writer.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <unordered_map>

#include <tinyxml2.h>

#include "inputs/junit.hpp"
#include "inputs/outcome.hpp"
#include "inputs/run_id.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "verdicts/triage.hpp"

namespace evgate {
namespace {

// What the attempts of a row need from their run.
struct RunFacts {
    std::string order;
    std::optional<std::uint64_t> seed;  // for a seed's order and its reruns
    Column column = Column::local;
};

std::unordered_map<std::string, RunFacts> run_facts(const RunMatrix& runs) {
    std::unordered_map<std::string, RunFacts> facts;
    for (const auto& run : runs.runs()) {
        RunFacts f{run.plan.order, std::nullopt, run.plan.column};
        if (const auto order = RunId::parse(run.plan.order); run.plan.column == Column::local && order && order->is_seed())
            f.seed = run.plan.seed;
        facts.emplace(run.plan.id.str(), std::move(f));
    }
    return facts;
}

class XmlOut {
public:
    explicit XmlOut(std::function<void(std::string_view)> flush) : flush_(std::move(flush)) {}

    void raw(std::string_view text) { text_ += text; }
    void text(std::string_view text) { append_xml_text(text_, text, '\0'); }
    // Between the quotes the value does not hold, where one of them will do: JSON reads as JSON.
    void attribute(std::string_view name, std::string_view value) {
        const char quote = value.find('"') != std::string_view::npos && value.find('\'') == std::string_view::npos ? '\'' : '"';
        text_.append(" ").append(name).append("=").append(1, quote);
        append_xml_text(text_, value, quote);
        text_ += quote;
    }
    void property(std::string_view name, std::string_view value) {
        raw("<property");
        attribute("name", name);
        attribute("value", value);
        raw("/>\n");
    }
    // Whole testcases are written before a flush: the file is taken a megabyte at a time.
    void maybe_flush() {
        if (text_.size() < (std::size_t{1} << 20)) return;
        flush_(text_);
        text_.clear();
    }
    void finish() {
        flush_(text_);
        text_.clear();
    }

private:
    std::function<void(std::string_view)> flush_;
    std::string text_;
};

// The verdicts the table reports as skipped: a <skipped/> element, counted as skipped.
bool reported_skipped(const LedgerRow& row) { return info(row.verdict).status == CaseStatus::skipped; }

bool differed(Outcome outcome) {
    return outcome_class(outcome) != OutcomeClass::pass && outcome_class(outcome) != OutcomeClass::skip;
}

std::string host_of(const Attempt& a, const JUnitContext& context) {
    if (a.column == Column::runner) return a.run.substr(0, a.run.find(':'));
    return a.column == Column::perturbed ? context.host + " (perturbed)" : context.host;
}

// Seconds as JUnit writes them: "0.012".
std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f", seconds);
    return text;
}

// The middle of a test's attempts' durations (the mean of the two middle ones for an even
// count): what one run of the test takes, unmoved by one slow attempt on a loaded machine.
double median(const std::vector<std::pair<std::size_t, double>>& times) {
    std::vector<double> seconds;
    seconds.reserve(times.size());
    for (const auto& t : times) seconds.push_back(t.second);
    if (seconds.empty()) return 0;
    const auto middle = seconds.size() / 2;
    std::nth_element(seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(middle), seconds.end());
    if (seconds.size() % 2 != 0) return seconds[middle];
    const double upper = seconds[middle];
    return (upper + *std::max_element(seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(middle))) / 2;
}

std::string where_it_ran(const Attempt& a, const RunFacts* facts, const JUnitContext& context, std::optional<double> seconds) {
    std::string text = "run " + a.run + ", order " + a.order;
    if (facts != nullptr && facts->seed) text += " (seed " + std::to_string(*facts->seed) + ")";
    text += ", host " + host_of(a, context);
    return seconds ? text + ", " + seconds_text(*seconds) + " s" : text;
}

// One attempt that did not pass, in Surefire's form: a <rerun*> under a failing case, a
// <flaky*> under one that passes; Failure for a failed call, Error for anything else.
void attempt_element(XmlOut& xml, const Attempt& a, bool blocked, const RunFacts* facts, const JUnitContext& context,
                     std::optional<double> seconds) {
    const std::string tag = std::string(blocked ? "rerun" : "flaky") + (a.outcome == Outcome::failed ? "Failure" : "Error");
    const std::string outcome(to_string(a.outcome));
    xml.raw("<" + tag);
    xml.attribute("type", outcome);
    xml.attribute("message", a.run + ": " + outcome + (a.message.empty() ? "" : ": " + a.message));
    xml.raw("><stackTrace>");
    xml.text((a.message.empty() ? outcome : a.message) + "\n" + where_it_ran(a, facts, context, seconds));
    xml.raw("</stackTrace></" + tag + ">\n");
}

std::string joined(const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
}

// Run id -> seconds of each attempt that has a duration.
std::string times_json(const std::vector<std::pair<std::size_t, double>>& times, const RunMatrix& runs) {
    std::string text = "{";
    for (const auto& [run, seconds] : times) {
        if (text.size() > 1) text += ",";
        text += json_string(runs.runs()[run].plan.id.str()) + ":" + seconds_text(seconds);
    }
    return text + "}";
}

std::string outcomes_json(const Outcomes& outcomes) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartObject();
    for (const auto& [run, outcome] : outcomes) w.Key(run.c_str(), static_cast<rapidjson::SizeType>(run.size())), w.String(std::string(to_string(outcome)));
    w.EndObject();
    return std::string(json.text());
}

// What a reader of a CI page needs about a row that does not simply pass.
std::string row_story(const LedgerRow& row) {
    std::string text = std::string(to_string(row.verdict)) + " (gate " + std::string(to_string(row.gate)) + "): " + row.reason;
    if (row.partner) text += "\npartner: " + *row.partner + (row.partner_role ? " (" + *row.partner_role + ")" : "");
    if (row.gate == Gate::defer) text += "\ndeferred until " + row.until.value_or("?") + ", owner " + row.owner.value_or("?");
    if (!row.also.empty()) text += "\nalso: " + to_string(row.also);
    if (!row.dirty.empty()) text += "\ndirty: " + joined(row.dirty);
    if (row.reproduce) text += "\nreproduce: " + *row.reproduce;
    return text;
}

class CaseWriter {
public:
    CaseWriter(XmlOut& xml, const RunMatrix& runs, const JUnitContext& context)
        : xml_(xml), runs_(runs), context_(context), facts_(run_facts(runs)) {}

    void test(const LedgerRow& row, const std::vector<std::pair<std::size_t, double>>& times) {
        const auto address = junit_address(row.test);
        const bool blocked = row.gate == Gate::block;
        std::vector<Attempt> bad;
        if (std::any_of(row.outcomes.begin(), row.outcomes.end(), [](const auto& o) { return differed(o.second); }))
            for (auto& a : runs_.attempts(row.test))
                if (differed(a.outcome)) bad.push_back(std::move(a));
        const auto seconds_in = [&](const std::string& run) -> std::optional<double> {
            const auto it = std::find_if(times.begin(), times.end(), [&](const auto& t) { return runs_.runs()[t.first].plan.id.str() == run; });
            return it == times.end() ? std::nullopt : std::optional<double>(it->second);
        };
        open(address.classname, address.name, median(times));
        xml_.raw("<properties>\n");
        xml_.property("node_id", row.test);
        common_properties(row);
        if (!bad.empty()) {
            const auto first = std::find_if(bad.begin(), bad.end(), [](const Attempt& a) { return a.column == Column::local; });
            const auto& shown = first != bad.end() ? *first : bad.front();
            xml_.property("order", shown.order);
            if (const auto* f = facts(shown.run); f != nullptr && f->seed) xml_.property("seed", std::to_string(*f->seed));
        }
        xml_.property("host", context_.host);
        if (row.reproduce) xml_.property("reproduce", *row.reproduce);
        xml_.property("outcomes", outcomes_json(row.outcomes));
        if (!times.empty()) xml_.property("times", times_json(times, runs_));
        xml_.raw("</properties>\n");
        if (blocked) failure(row);
        for (const auto& a : bad)
            if (a.outcome == Outcome::failed) attempt_element(xml_, a, blocked, facts(a.run), context_, seconds_in(a.run));
        if (reported_skipped(row)) {
            xml_.raw("<skipped");
            xml_.attribute("message", "skipped in every run: " + row.reason);
            xml_.raw("/>\n");
        }
        for (const auto& a : bad)
            if (a.outcome != Outcome::failed) attempt_element(xml_, a, blocked, facts(a.run), context_, seconds_in(a.run));
        close(row);
    }

    // A blocking suite row, so that CI pages show why the gate blocked beyond the tests.
    void check(const LedgerRow& row) {
        open(junit_suite_class(context_.suite), row.test, 0);
        xml_.raw("<properties>\n");
        xml_.property("scope", "suite");
        common_properties(row);
        xml_.raw("</properties>\n");
        failure(row);
        close(row);
    }

private:
    XmlOut& xml_;
    const RunMatrix& runs_;
    const JUnitContext& context_;
    std::unordered_map<std::string, RunFacts> facts_;

    const RunFacts* facts(const std::string& run) const {
        const auto it = facts_.find(run);
        return it == facts_.end() ? nullptr : &it->second;
    }

    void open(const std::string& classname, const std::string& name, double seconds) {
        xml_.raw("<testcase");
        xml_.attribute("classname", classname);
        xml_.attribute("name", name);
        xml_.attribute("time", seconds_text(seconds));
        xml_.raw(">\n");
    }

    void common_properties(const LedgerRow& row) {
        xml_.property("verdict", to_string(row.verdict));
        xml_.property("gate", to_string(row.gate));
        if (row.partner) xml_.property("partner", *row.partner);
        if (row.partner_role) xml_.property("partner_role", *row.partner_role);
        if (row.until) xml_.property("until", *row.until);
        if (row.owner) xml_.property("owner", *row.owner);
        if (!row.dirty.empty()) xml_.property("dirty", joined(row.dirty));
    }

    void failure(const LedgerRow& row) {
        xml_.raw("<failure");
        xml_.attribute("type", to_string(row.verdict));
        xml_.attribute("message", std::string(to_string(row.verdict)) + ": " + row.reason);
        xml_.raw(">");
        xml_.text(row_story(row));
        xml_.raw("</failure>\n");
    }

    void close(const LedgerRow& row) {
        if (row.gate != Gate::pass) {
            xml_.raw("<system-out>");
            xml_.text(row_story(row));
            xml_.raw("</system-out>\n");
        }
        xml_.raw("</testcase>\n");
        xml_.maybe_flush();
    }
};

struct Counts {
    std::size_t tests = 0, failures = 0, skipped = 0;
};

Counts count(const std::vector<LedgerRow>& rows) {
    Counts c;
    for (const auto& row : rows) {
        if (row.suite_scope && row.gate != Gate::block) continue;
        ++c.tests;
        c.failures += row.gate == Gate::block;
        c.skipped += !row.suite_scope && reported_skipped(row) && row.gate != Gate::block;
    }
    return c;
}

// The runs this machine ran itself, completed: what a reader that takes the file back as a
// runner bundle counts as that runner's attempts (as it would from the evidence directory).
std::string local_runs_json(const RunMatrix& runs) {
    JsonWriter json;
    auto& w = json.begin();
    w.StartArray();
    for (const auto& run : runs.runs())
        if (run.plan.column == Column::local && run.problem.empty()) w.String(run.plan.id.str());
    w.EndArray();
    return std::string(json.text());
}

void write_document(const std::vector<LedgerRow>& rows, const RunMatrix& runs, const JUnitContext& context,
                    const std::function<void(std::string_view)>& flush) {
    XmlOut xml(flush);
    const auto counts = count(rows);
    // Each case's time is the median of its attempts; the suite's, their sum (as pytest's is the
    // time its one run took): known before the first case is written.
    std::vector<std::vector<std::pair<std::size_t, double>>> times(rows.size());
    double total = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].suite_scope) continue;
        times[i] = runs.durations(rows[i].test);
        total += median(times[i]);
    }
    xml.raw("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<testsuites>\n<testsuite");
    xml.attribute("name", context.suite);
    xml.attribute("errors", "0");
    xml.attribute("failures", std::to_string(counts.failures));
    xml.attribute("skipped", std::to_string(counts.skipped));
    xml.attribute("tests", std::to_string(counts.tests));
    xml.attribute("time", seconds_text(total));
    xml.attribute("timestamp", iso_time(context.time));
    xml.attribute("hostname", context.host);
    xml.raw(">\n<properties>\n");
    xml.property("suite", context.suite);
    if (!context.commit.empty()) xml.property("commit", context.commit);
    if (!context.branch.empty()) xml.property("branch", context.branch);
    if (!context.receipt.empty()) xml.property("receipt", context.receipt);
    const bool blocked = std::any_of(rows.begin(), rows.end(), [](const LedgerRow& r) { return r.gate == Gate::block; });
    xml.property("decision", blocked ? "BLOCKED" : "PASSED");
    xml.property("local_runs", local_runs_json(runs));
    xml.raw("</properties>\n");
    CaseWriter cases(xml, runs, context);
    for (const auto& row : rows)
        if (row.suite_scope && row.gate == Gate::block) cases.check(row);
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (!rows[i].suite_scope) cases.test(rows[i], times[i]);
    xml.raw("</testsuite>\n</testsuites>\n");
    xml.finish();
}

}  // namespace

std::string junit_suite_class(const std::string& suite) { return "evidence-gate." + suite; }

std::string junit_xml(const std::vector<LedgerRow>& rows, const RunMatrix& runs, const JUnitContext& context) {
    std::string text;
    write_document(rows, runs, context, [&text](std::string_view part) { text += part; });
    return text;
}

void write_junit(const std::filesystem::path& file, const std::vector<LedgerRow>& rows, const RunMatrix& runs,
                 const JUnitContext& context) {
    AtomicFile out(file);
    write_document(rows, runs, context, [&out](std::string_view part) { out.write(part); });
    out.commit();
}

std::optional<JUnitHead> read_junit_head(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return std::nullopt;
    std::string head(1 << 16, '\0');  // the declaration, <testsuites>, the <testsuite> tag and its properties
    in.read(&head[0], static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    const auto start = head.find("<testsuite ");
    const auto tag_end = head.find('>', start);
    if (start == std::string::npos || tag_end == std::string::npos) return std::nullopt;
    // The start tag and the properties right after it, closed: a document of its own.
    std::string part = head.substr(start, tag_end + 1 - start);
    if (part[part.size() - 2] != '/') {
        const auto next = head.find('<', tag_end);
        const auto properties_end = head.find("</properties>", tag_end);
        if (next != std::string::npos && head.compare(next, 12, "<properties>") == 0 && properties_end != std::string::npos)
            part = head.substr(start, properties_end + 13 - start);
        part += "</testsuite>";
    }
    tinyxml2::XMLDocument doc;
    if (doc.Parse(part.data(), part.size()) != tinyxml2::XML_SUCCESS) return std::nullopt;
    const auto* suite = doc.RootElement();
    JUnitHead result;
    if (const char* stamp = suite->Attribute("timestamp")) result.timestamp = parse_iso_time(stamp);
    if (const char* host = suite->Attribute("hostname")) result.hostname = host;
    if (const auto* properties = suite->FirstChildElement("properties"))
        for (const auto* p = properties->FirstChildElement("property"); p != nullptr; p = p->NextSiblingElement("property"))
            if (p->Attribute("name") != nullptr && p->Attribute("value") != nullptr)
                result.properties.emplace(p->Attribute("name"), p->Attribute("value"));
    return result;
}

}  // namespace evgate
