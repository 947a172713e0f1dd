#include <catch2/catch.hpp>

#include <set>

#include "io/json_io.hpp"
#include "verdicts/triage.hpp"
#include "verdicts/verdict_table.hpp"

using namespace evgate;

TEST_CASE("every verdict has one row, found by its enum value and by its name", "[verdict_table]") {
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < kVerdictCount; ++i) {
        const auto& v = verdict_table()[i];
        CHECK(static_cast<std::size_t>(v.verdict) == i);
        CHECK(&info(v.verdict) == &v);
        CHECK(names.insert(v.name).second);
        CHECK(verdict_named(v.name) == v.verdict);
        CHECK(to_string(v.verdict) == v.name);
        CHECK(v.rule != nullptr);
        CHECK_FALSE(v.meaning.empty());
    }
    CHECK_FALSE(verdict_named("Flaky"));
    CHECK_FALSE(verdict_named(""));
}

TEST_CASE("the gate decisions are spelled pass, defer and block, and nothing else", "[verdict_table]") {
    for (auto gate : {Gate::pass, Gate::defer, Gate::block}) CHECK(gate_named(to_string(gate)) == gate);
    CHECK(to_string(Gate::defer) == "defer");
    CHECK_FALSE(gate_named("PASS"));
    CHECK_FALSE(gate_named("blocked"));
}

TEST_CASE("precedence: the contract's order, the first that applies wins", "[verdict_table]") {
    std::vector<std::string_view> order;
    for (auto v : by_precedence()) order.push_back(to_string(v));
    CHECK(order == std::vector<std::string_view>{"polluter", "interrupted", "missing", "order-dependent", "flaky",
                                                 "runner-only-pass", "failing", "portability-gap", "skipped", "stable"});
}

TEST_CASE("gate rules: stable and skipped pass, the rest block; quarantine defers only flaky, failing and gaps",
          "[verdict_table]") {
    for (const auto& v : verdict_table()) {
        const bool passes = v.verdict == Verdict::stable || v.verdict == Verdict::skipped;
        CHECK(v.gate == (passes ? Gate::pass : Gate::block));
        const bool deferrable = v.verdict == Verdict::flaky || v.verdict == Verdict::failing ||
                                v.verdict == Verdict::portability_gap;
        CHECK((v.deferral != Deferral::none) == deferrable);
        CHECK((v.deferral == Deferral::quarantine_or_env_sensitive) == (v.verdict == Verdict::portability_gap));
        CHECK((v.status == CaseStatus::skipped) == (v.verdict == Verdict::skipped));
    }
    CHECK(info(Verdict::order_dependent).reproduce == Reproduce::partner_or_failing_order);
    CHECK(info(Verdict::missing).reproduce == Reproduce::nothing);
    CHECK(info(Verdict::runner_only_pass).elsewhere == Elsewhere::pass);
    CHECK(info(Verdict::portability_gap).elsewhere == Elsewhere::failure);
}

TEST_CASE("the pages draw each verdict in a colour and a symbol of its own", "[verdict_table]") {
    std::set<char> symbols;
    for (const auto& v : verdict_table()) {
        CHECK(symbols.insert(v.symbol).second);
        CHECK(v.colour != Swatch::pale);  // pale grey is a run without the test
        CHECK(v.symbol != '-');
        CHECK(v.symbol != '*');  // a verdict of another version
    }
    CHECK(info(Verdict::stable).colour == Swatch::green);
    CHECK(static_cast<char>(info(Verdict::flaky).colour) == 'y');
}

TEST_CASE("each verdict's rule reads what the attempts show, and only its own verdict applies", "[verdict_table]") {
    Observations passed;  // two orders, passed in both
    passed.runs_by_class[OutcomeClass::pass] = {"seed.0", "seed.1"};
    passed.classes_by_order = {{"seed.0", {OutcomeClass::pass}}, {"seed.1", {OutcomeClass::pass}}};
    Observations died = passed;
    died.interrupted = {"seed.2"};
    Observations gap = passed;
    gap.remote_runs_by_class[OutcomeClass::fail] = {"ci:seed.0"};
    for (const auto& v : verdict_table()) {
        CHECK(v.rule(passed).has_value() == (v.verdict == Verdict::stable));
        CHECK(v.rule(died).has_value() == (v.verdict == Verdict::stable || v.verdict == Verdict::interrupted));
        CHECK(v.rule(gap).has_value() == (v.verdict == Verdict::stable || v.verdict == Verdict::portability_gap));
    }
    CHECK(info(Verdict::stable).rule(passed) == std::optional<std::string>("passes in every run (2 runs)"));
    CHECK(info(Verdict::interrupted).rule(died) ==
          std::optional<std::string>("the interpreter died or was killed while it ran (in seed.2)"));
    CHECK(info(Verdict::portability_gap).rule(gap) == std::optional<std::string>("passes in every local run but fails in ci:seed.0"));
}

TEST_CASE("a reason counts the runs the row's outcomes list, perturbed and runners too", "[verdict_table]") {
    Observations failed;  // a one-test suite: seed.0, its rerun alone, and the perturbed run
    failed.runs_by_class[OutcomeClass::fail] = {"seed.0", "alone.1"};
    failed.classes_by_order = {{"seed.0", {OutcomeClass::fail}}};
    failed.alone_tried = true;
    failed.remote_runs_by_class[OutcomeClass::fail] = {"perturbed"};
    CHECK(info(Verdict::failing).rule(failed) == std::optional<std::string>("fails in every run (3 runs, alone too)"));
    failed.remote_runs_by_class = {{OutcomeClass::pass, {"perturbed"}}};
    CHECK(info(Verdict::failing).rule(failed) ==
          std::optional<std::string>("fails in every local run (2 of 3 runs, alone too; not on every other column)"));
    Observations once;
    once.runs_by_class[OutcomeClass::pass] = {"seed.0"};
    once.classes_by_order = {{"seed.0", {OutcomeClass::pass}}};
    CHECK(info(Verdict::stable).rule(once) == std::optional<std::string>("passes in every run (1 run)"));
}

TEST_CASE("evgate verdicts: the table as JSON, every field the tests and tools read", "[verdict_table]") {
    const auto doc = parse_json(verdict_table_json(), "verdicts");
    REQUIRE(doc["verdicts"].IsArray());
    REQUIRE(doc["verdicts"].Size() == kVerdictCount);
    for (rapidjson::SizeType i = 0; i < doc["verdicts"].Size(); ++i) {
        const auto& row = doc["verdicts"][i];
        const auto& v = verdict_table()[i];
        CHECK(row["name"].GetString() == v.name);
        CHECK(row["precedence"].GetInt() == v.precedence);
        CHECK(row["gate"].GetString() == to_string(v.gate));
        CHECK(row["symbol"].GetString() == std::string(1, v.symbol));
        CHECK(row["meaning"].GetString() == v.meaning);
        CHECK(row["colour"].IsString());
        CHECK(row["reproduce"].IsString());
        CHECK(row["deferred_by"].IsArray());
    }
    const auto& gap = doc["verdicts"][static_cast<rapidjson::SizeType>(Verdict::portability_gap)];
    REQUIRE(gap["deferred_by"].Size() == 2);
    CHECK(gap["deferred_by"][0].GetString() == std::string("quarantine"));
    CHECK(gap["deferred_by"][1].GetString() == std::string("env_sensitive"));
    CHECK(gap["elsewhere"].GetString() == std::string("fail"));
    CHECK(doc["verdicts"][0]["elsewhere"].IsNull());
    CHECK(doc["verdicts"][1]["ctest"].GetString() == std::string("skipped"));
    REQUIRE(doc["gates"].Size() == 3);
    CHECK(doc["gates"][2].GetString() == std::string("block"));
}
