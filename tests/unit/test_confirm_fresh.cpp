#include <catch2/catch.hpp>

#include "runs/confirm_fresh.hpp"
#include "verdicts/triage.hpp"

using namespace evgate;

namespace {

LoadedRun run(const std::string& id, std::string order, std::vector<std::string> tests, const std::map<std::string, std::string>& outcomes,
              std::string isolation = "fork") {
    LoadedRun r;
    r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
    r.plan.order = std::move(order);
    r.plan.tests = std::move(tests);
    for (auto& [test, outcome] : outcomes) r.records.results[test].outcome = parse_outcome(outcome).value();
    r.records.isolation = std::move(isolation);
    return r;
}

Receipt receipt_of(std::vector<std::string> ids) {
    Receipt receipt;
    for (auto& id : ids) {
        ReceiptTest test;
        test.id = std::move(id);
        receipt.tests.push_back(std::move(test));
    }
    return receipt;
}

}  // namespace

TEST_CASE("what blocks on forks' failures is replayed in fresh processes, the worst order, through the test", "[confirm_fresh]") {
    const std::vector<LoadedRun> runs = {
        run("seed.0", "seed.0", {"a", "t", "b"}, {{"a", "passed"}, {"t", "passed"}, {"b", "passed"}}),
        run("seed.1", "seed.1", {"b", "t", "a"}, {{"a", "passed"}, {"t", "failed"}, {"b", "passed"}}),
        run("seed.1.rerun.1", "seed.1", {"b", "t"}, {{"b", "passed"}, {"t", "failed"}}),
        run("seed.1.rerun.2", "seed.1", {"b", "t"}, {{"b", "passed"}, {"t", "failed"}}),
    };
    const auto first = plan_fresh(runs, receipt_of({"a", "t", "b"}), FreshLimits{}, triage_answers());
    REQUIRE(first.size() == 1);                            // one first: if it fails, the forks are confirmed
    CHECK(first[0].id.str() == "seed.1.rerun.1.fresh.1");  // the cheapest failing run of that order
    CHECK(first[0].fresh);
    CHECK(first[0].order == "seed.1");
    CHECK(first[0].tests == std::vector<std::string>{"b", "t"});

    const auto done = [](const RunPlan& plan, const char* outcome) {
        LoadedRun run;
        run.plan = plan;
        run.records.results["b"].outcome = Outcome::passed;
        run.records.results["t"].outcome = parse_outcome(outcome).value();
        run.records.isolation = "process";
        return run;
    };
    // It failed: confirmed, nothing more to plan.
    auto failed = runs;
    failed.push_back(done(first[0], "failed"));
    CHECK(plan_fresh(failed, receipt_of({"a", "t", "b"}), FreshLimits{}, triage_answers()).empty());
    // It passed: the rest of what 3 failures of 3 call for (seven in all).
    auto passed = runs;
    passed.push_back(done(first[0], "passed"));
    const auto rest = plan_fresh(passed, receipt_of({"a", "t", "b"}), FreshLimits{}, triage_answers());
    REQUIRE(rest.size() == 6);
    CHECK(rest.front().id.str() == "seed.1.rerun.1.fresh.2");
    CHECK(rest.back().id.str() == "seed.1.rerun.1.fresh.7");
    for (const auto& plan : rest) passed.push_back(done(plan, "passed"));
    CHECK(plan_fresh(passed, receipt_of({"a", "t", "b"}), FreshLimits{}, triage_answers()).empty());
}

TEST_CASE("too few forks failed a test for fresh processes to tell: none are run", "[confirm_fresh]") {
    const std::vector<LoadedRun> runs = {
        run("seed.0", "seed.0", {"t", "a"}, {{"a", "passed"}, {"t", "passed"}}),
        run("seed.1", "seed.1", {"a", "t"}, {{"a", "passed"}, {"t", "failed"}}),
        run("seed.1.rerun.1", "seed.1", {"a", "t"}, {{"a", "passed"}, {"t", "passed"}}),
    };
    CHECK(plan_fresh(runs, receipt_of({"t", "a"}), FreshLimits{}, triage_answers()).empty());
}

TEST_CASE("tests that forks failed in one order share one fresh replay of it", "[confirm_fresh]") {
    std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {"p", "u", "v"}, {{"p", "passed"}, {"u", "passed"}, {"v", "passed"}}),
                                   run("seed.1", "seed.1", {"v", "u", "p"}, {{"p", "passed"}, {"u", "failed"}, {"v", "failed"}})};
    for (int j = 1; j <= 2; ++j)
        runs.push_back(run("seed.1.rerun." + std::to_string(j), "seed.1", {"v", "u"}, {{"u", "failed"}, {"v", "failed"}}));
    const auto plans = plan_fresh(runs, receipt_of({"p", "u", "v"}), FreshLimits{}, triage_answers());
    REQUIRE(plans.size() == 1);
    CHECK(plans[0].id.str() == "seed.1.rerun.1.fresh.1");
    CHECK(plans[0].tests == std::vector<std::string>{"v", "u"});  // through the later of the two
}

TEST_CASE("failures processes showed too, or no forks at all, need no fresh processes", "[confirm_fresh]") {
    const std::vector<LoadedRun> processes = {
        run("seed.0", "seed.0", {"t"}, {{"t", "passed"}}, "process"),
        run("seed.1", "seed.1", {"t"}, {{"t", "failed"}}, "process"),
        run("seed.1.rerun.1", "seed.1", {"t"}, {{"t", "failed"}}, "process"),
    };
    CHECK(plan_fresh(processes, receipt_of({"t"}), FreshLimits{}, triage_answers()).empty());
    const std::vector<LoadedRun> stable = {run("seed.0", "seed.0", {"t"}, {{"t", "passed"}})};
    CHECK(plan_fresh(stable, receipt_of({"t"}), FreshLimits{}, triage_answers()).empty());
}

TEST_CASE("a test that changed a group is replayed alone in a fresh process, once", "[confirm_fresh]") {
    auto seed = run("seed.0", "seed.0", {"a", "p"}, {{"a", "passed"}, {"p", "passed"}});
    seed.records.results["p"].dirty = {"data"};
    const auto plans = plan_fresh({seed}, receipt_of({"a", "p"}), FreshLimits{}, triage_answers());
    REQUIRE(plans.size() == 1);
    CHECK(plans[0].id.str() == "first.2.fresh.1");
    CHECK(plans[0].order == "alone");
    CHECK(plans[0].tests == std::vector<std::string>{"p"});
    LoadedRun alone;
    alone.plan = plans[0];
    alone.records.results["p"].outcome = Outcome::passed;
    CHECK(plan_fresh({seed, alone}, receipt_of({"a", "p"}), FreshLimits{}, triage_answers()).empty());
}
