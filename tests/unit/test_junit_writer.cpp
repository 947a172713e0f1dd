#include <catch2/catch.hpp>

#include <filesystem>
#include <map>

#include <tinyxml2.h>

#include "inputs/junit.hpp"
#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "io/timestamp.hpp"
#include "reports/junit_writer.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;
namespace fs = std::filesystem;

namespace {

LoadedRun run(const std::string& id, const std::string& order, std::uint64_t seed, std::map<std::string, TestResult> results,
              Column column = Column::local) {
    LoadedRun r;
    r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
    r.plan.order = order;
    r.plan.seed = seed;
    r.plan.column = column;
    for (const auto& [test, result] : results) r.plan.tests.push_back(test);
    r.records.results = std::move(results);
    r.records.finished = true;
    return r;
}

TestResult failed(std::string message) { return {Outcome::failed, {}, std::move(message), {}}; }
const TestResult kPassed{Outcome::passed, {}, {}, {}};

LedgerRow row(std::string test, const std::string& verdict, const std::string& gate, const RunMatrix& runs) {
    LedgerRow r;
    r.test = std::move(test);
    r.verdict = verdict_named(verdict).value();
    r.gate = gate_named(gate).value();
    r.reason = "because " + verdict;
    r.outcomes = runs.outcomes(runs.find(r.test));
    return r;
}

// Two seeds and a rerun here, a perturbed run, and a runner.
RunMatrix matrix() {
    return RunMatrix{
        run("seed.0", "seed.0", 0, {{"t.py::test_coin", kPassed}, {"t.py::TestA::test_b[1-x]", kPassed}, {"t.py::test_skip", {Outcome::skipped, {}, {}, {}}}, {"t.py::test_gap", kPassed}}),
        run("seed.3", "seed.3", 3, {{"t.py::test_coin", failed("assert 1 == 2")}, {"t.py::TestA::test_b[1-x]", failed("stale config")}, {"t.py::test_skip", {Outcome::skipped, {}, {}, {}}}, {"t.py::test_gap", kPassed}}),
        run("seed.3.rerun.1", "seed.3", 3, {{"t.py::test_coin", {Outcome::error, {}, "fixture broke", {}}}, {"t.py::TestA::test_b[1-x]", failed("stale config")}}),
        run("perturbed", "perturbed", 0, {{"t.py::test_gap", failed("tz")}}, Column::perturbed),
        run("ci-7:seed.0", "ci-7:seed.0", 0, {{"t.py::test_gap", kPassed}}, Column::runner),
    };
}

const JUnitContext kContext{"billing", "vm-1", "5e2b34b3ac47ad9786c13c71cecf5dd00c7ba4db", "main", "r1",
                            *parse_iso_time("2026-12-01T14:25:12.5Z")};

struct Doc {
    tinyxml2::XMLDocument xml;
    explicit Doc(const std::string& text) { REQUIRE(xml.Parse(text.data(), text.size()) == tinyxml2::XML_SUCCESS); }
    const tinyxml2::XMLElement& suite() const { return *xml.RootElement()->FirstChildElement("testsuite"); }
    const tinyxml2::XMLElement& testcase(const std::string& classname, const std::string& name) const {
        const tinyxml2::XMLElement* found = nullptr;
        for (const auto* c = suite().FirstChildElement("testcase"); c != nullptr; c = c->NextSiblingElement("testcase"))
            if (c->Attribute("classname") == classname && c->Attribute("name") == name) found = c;
        INFO("testcase " << classname << "::" << name);
        REQUIRE(found != nullptr);
        return *found;
    }
};

std::string property(const tinyxml2::XMLElement& element, const std::string& name) {
    for (const auto* p = element.FirstChildElement("properties")->FirstChildElement("property"); p != nullptr;
         p = p->NextSiblingElement("property"))
        if (p->Attribute("name") == name) return p->Attribute("value");
    return "(none)";
}

std::vector<std::string> children(const tinyxml2::XMLElement& element) {
    std::vector<std::string> names;
    for (const auto* c = element.FirstChildElement(); c != nullptr; c = c->NextSiblingElement())
        names.push_back(std::string(c->Name()) + (c->Attribute("type") ? "(" + std::string(c->Attribute("type")) + ")" : ""));
    return names;
}

}  // namespace

TEST_CASE("junit.xml: pytest's classname and name, the gate as the status, attempts in Surefire's form", "[junit_writer]") {
    const auto runs = matrix();
    std::vector<LedgerRow> rows{row("t.py::test_coin", "flaky", "block", runs), row("t.py::TestA::test_b[1-x]", "order-dependent", "block", runs),
                                row("t.py::test_skip", "skipped", "pass", runs), row("t.py::test_gap", "portability-gap", "defer", runs)};
    rows[1].partner = "t.py::test_polluter";
    rows[1].partner_role = "polluter";
    rows[1].reproduce = "evgate replay --suite s.json --seed 3 --through 't.py::TestA::test_b[1-x]'";
    rows[3].until = "2099-12-31";
    rows[3].owner = "ana";
    const Doc doc(junit_xml(rows, runs, kContext));
    const auto& suite = doc.suite();
    CHECK(suite.Attribute("name") == std::string("billing"));
    CHECK(suite.Attribute("tests") == std::string("4"));
    CHECK(suite.Attribute("failures") == std::string("2"));
    CHECK(suite.Attribute("skipped") == std::string("1"));
    CHECK(suite.Attribute("timestamp") == std::string("2026-12-01T14:25:12.500000Z"));
    CHECK(suite.Attribute("hostname") == std::string("vm-1"));
    CHECK(property(suite, "commit") == kContext.commit);
    CHECK(property(suite, "decision") == "BLOCKED");
    CHECK(property(suite, "local_runs") == R"(["seed.0","seed.3","seed.3.rerun.1"])");

    // Blocked: a <failure> whose message starts with the verdict, then every attempt that did
    // not pass, failures before errors (Surefire's order).
    const auto& coin = doc.testcase("t", "test_coin");
    CHECK(children(coin) == std::vector<std::string>{"properties", "failure(flaky)", "rerunFailure(failed)", "rerunError(error)", "system-out"});
    CHECK(coin.FirstChildElement("failure")->Attribute("message") == std::string("flaky: because flaky"));
    CHECK(coin.FirstChildElement("rerunFailure")->Attribute("message") == std::string("seed.3: failed: assert 1 == 2"));
    CHECK_THAT(coin.FirstChildElement("rerunFailure")->FirstChildElement("stackTrace")->GetText(),
               Catch::Contains("run seed.3, order seed.3 (seed 3), host vm-1"));
    CHECK(property(coin, "node_id") == "t.py::test_coin");
    CHECK(property(coin, "verdict") == "flaky");
    CHECK(property(coin, "order") == "seed.3");
    CHECK(property(coin, "seed") == "3");
    CHECK(property(coin, "host") == "vm-1");
    CHECK(property(coin, "outcomes") == R"({"seed.0":"passed","seed.3":"failed","seed.3.rerun.1":"error"})");

    const auto& victim = doc.testcase("t.TestA", "test_b[1-x]");
    CHECK(victim.FirstChildElement("failure")->Attribute("message") == std::string("order-dependent: because order-dependent"));
    CHECK(property(victim, "partner") == "t.py::test_polluter");
    CHECK(property(victim, "partner_role") == "polluter");
    CHECK(property(victim, "reproduce") == *rows[1].reproduce);

    const auto& skip = doc.testcase("t", "test_skip");
    CHECK(children(skip) == std::vector<std::string>{"properties", "skipped"});

    // Deferred: passed, the deferral said; the attempt that failed elsewhere is a flaky one.
    const auto& gap = doc.testcase("t", "test_gap");
    CHECK(children(gap) == std::vector<std::string>{"properties", "flakyFailure(failed)", "system-out"});
    CHECK_THAT(gap.FirstChildElement("flakyFailure")->FirstChildElement("stackTrace")->GetText(),
               Catch::Contains("host vm-1 (perturbed)"));
    CHECK_THAT(gap.FirstChildElement("system-out")->GetText(), Catch::Contains("deferred until 2099-12-31, owner ana"));
    CHECK(property(gap, "gate") == "defer");
    CHECK(property(gap, "until") == "2099-12-31");
    CHECK(property(gap, "seed") == "(none)");  // the perturbed run is no seed's order
}

TEST_CASE("junit.xml: each case takes the median of its attempts' durations, each attempt its own", "[junit_writer]") {
    const auto timed = [](const char* outcome, double seconds, std::string message = {}) {
        return TestResult{parse_outcome(outcome).value(), {}, std::move(message), {}, seconds};
    };
    const RunMatrix runs{run("seed.0", "seed.0", 0, {{"t.py::test_a", timed("passed", 0.5)}, {"t.py::test_b", timed("passed", 0.25)}}),
                         run("seed.1", "seed.1", 1, {{"t.py::test_a", timed("failed", 2.0, "boom")}, {"t.py::test_b", timed("passed", 0.75)}}),
                         run("seed.2", "seed.2", 2, {{"t.py::test_a", timed("passed", 0.125)}, {"t.py::test_b", kPassed}})};
    const std::vector<LedgerRow> rows{row("t.py::test_a", "flaky", "block", runs), row("t.py::test_b", "stable", "pass", runs)};
    const Doc doc(junit_xml(rows, runs, kContext));
    const auto& a = doc.testcase("t", "test_a");
    CHECK(a.Attribute("time") == std::string("0.500"));  // of 0.125, 0.5 and 2: one slow attempt does not move it
    CHECK(property(a, "times") == R"({"seed.0":0.500,"seed.1":2.000,"seed.2":0.125})");
    CHECK_THAT(a.FirstChildElement("rerunFailure")->FirstChildElement("stackTrace")->GetText(),
               Catch::Contains("run seed.1, order seed.1 (seed 1), host vm-1, 2.000 s"));
    const auto& b = doc.testcase("t", "test_b");
    CHECK(b.Attribute("time") == std::string("0.500"));  // the two it has: 0.25 and 0.75 (seed.2's result says none)
    CHECK(property(b, "times") == R"({"seed.0":0.250,"seed.1":0.750})");
    CHECK(doc.suite().Attribute("time") == std::string("1.000"));
}

TEST_CASE("junit.xml: suite rows that block are testcases of a pseudo class; the others are not there", "[junit_writer]") {
    const RunMatrix runs;
    LedgerRow died;
    died.test = "run:seed.3";
    died.suite_scope = true;
    died.verdict = Verdict::interrupted;
    died.gate = Gate::block;
    died.reason = "the run did not finish";
    LedgerRow fine = died;
    fine.test = "receipt";
    fine.verdict = Verdict::stable;
    fine.gate = Gate::pass;
    const Doc doc(junit_xml({fine, died}, runs, kContext));
    const auto& check = doc.testcase("evidence-gate.billing", "run:seed.3");
    CHECK(property(check, "scope") == "suite");
    CHECK(check.FirstChildElement("failure")->Attribute("message") == std::string("interrupted: the run did not finish"));
    CHECK(doc.suite().Attribute("tests") == std::string("1"));
}

TEST_CASE("junit.xml: any node id, reason or message stays well-formed XML that says the same", "[junit_writer]") {
    const std::string id = "t.py::test_x[a\x1b[31mb\"<&>'\xF0\x9F\x98\x80\xFF]";
    const auto runs = RunMatrix{run("seed.0", "seed.0", 0, {{id, failed("ansi \x1b[0m \"q\" <tag> & \x01")}})};
    auto r = row(id, "failing", "block", runs);
    r.reason = "line one\nline two \x7f";
    const auto text = junit_xml({r}, runs, kContext);
    const Doc doc(text);
    // pytest's bin_xml_escape: ESC, DEL, U+1F600 and a byte that is not UTF-8 as #xNN.
    const auto& c = doc.testcase("t", "test_x[a#x1B[31mb\"<&>'#x1F600#xFF]");
    CHECK(property(c, "node_id") == "t.py::test_x[a#x1B[31mb\"<&>'#x1F600#xFF]");
    CHECK(c.FirstChildElement("failure")->Attribute("message") == std::string("failing: line one\nline two #x7F"));
    CHECK(c.FirstChildElement("rerunFailure")->Attribute("message") == std::string("seed.0: failed: ansi #x1B[0m \"q\" <tag> & #x01"));
    // Read back as a runner bundle, the case still finds its test, as pytest's own file would.
    const auto back = parse_junit(text, "junit.xml", {id});
    CHECK(back.unmapped.empty());
    CHECK(back.attempts.at("seed.0").at(id).outcome == Outcome::failed);
}

TEST_CASE("read_junit_head: the run's time, host and the receipt's facts from the file's first bytes", "[junit_writer]") {
    TempDir dir;
    const auto runs = matrix();
    write_junit(dir.path / "junit.xml", {row("t.py::test_coin", "flaky", "block", runs)}, runs, kContext);
    const auto head = read_junit_head(dir.path / "junit.xml");
    REQUIRE(head);
    CHECK(head->timestamp == kContext.time);
    CHECK(head->hostname == "vm-1");
    CHECK(head->properties.at("receipt") == "r1");
    CHECK(head->properties.at("branch") == "main");
    CHECK_FALSE(read_junit_head(dir.path / "missing.xml"));
    write_file_atomic(dir.path / "plain.xml", "<?xml version=\"1.0\"?><testsuites><testsuite name=\"pytest\" tests=\"1\"/></testsuites>");
    const auto plain = read_junit_head(dir.path / "plain.xml");
    REQUIRE(plain);
    CHECK_FALSE(plain->timestamp);
}

TEST_CASE("runner bundles read evgate's junit.xml back attempt by attempt, its own runs only", "[junit_writer]") {
    const auto runs = matrix();
    std::vector<LedgerRow> rows{row("t.py::test_coin", "flaky", "block", runs), row("t.py::TestA::test_b[1-x]", "order-dependent", "block", runs),
                                row("t.py::test_skip", "skipped", "pass", runs), row("t.py::test_gap", "portability-gap", "defer", runs)};
    LedgerRow died;
    died.test = "run:seed.9";
    died.suite_scope = true;
    died.verdict = Verdict::missing;
    died.gate = Gate::block;
    rows.push_back(died);
    const auto back = parse_junit(junit_xml(rows, runs, kContext), "junit.xml",
                                  {"t.py::test_coin", "t.py::TestA::test_b[1-x]", "t.py::test_skip", "t.py::test_gap"});
    CHECK(back.name == "vm-1");
    CHECK(back.unmapped.empty());  // the suite row is not a test: not a case matching none
    CHECK(back.results.empty());
    REQUIRE(back.attempts.size() == 3);  // seed.0, seed.3, seed.3.rerun.1: not the perturbed run, not the runner
    CHECK(back.attempts.at("seed.3").at("t.py::test_coin").outcome == Outcome::failed);
    CHECK(back.attempts.at("seed.3.rerun.1").at("t.py::test_coin").outcome == Outcome::error);
    CHECK(back.attempts.at("seed.0").at("t.py::test_skip").outcome == Outcome::skipped);
    CHECK(back.attempts.at("seed.0").at("t.py::test_gap").outcome == Outcome::passed);
    CHECK(back.attempts.at("seed.3.rerun.1").count("t.py::test_gap") == 0);
}
