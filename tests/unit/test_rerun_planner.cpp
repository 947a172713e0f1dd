#include <catch2/catch.hpp>

#include "runs/rerun_planner.hpp"

using evgate::LoadedRun;
using evgate::plan_reruns;
using evgate::RerunLimits;
using evgate::RunId;

namespace {

LoadedRun run(int seed, std::vector<std::string> order, const std::map<std::string, std::string>& outcomes) {
    LoadedRun r;
    r.plan.id = RunId::seed(static_cast<std::uint64_t>(seed));
    r.plan.order = r.plan.id.str();
    r.plan.seed = static_cast<std::uint64_t>(seed);
    r.plan.tests = std::move(order);
    for (auto& [test, outcome] : outcomes) r.records.results[test].outcome = evgate::parse_outcome(outcome).value();
    return r;
}

}  // namespace

TEST_CASE("nothing suspicious: no reruns", "[rerun]") {
    const std::vector<LoadedRun> runs = {run(0, {"a", "b"}, {{"a", "passed"}, {"b", "passed"}}),
                                         run(1, {"b", "a"}, {{"a", "passed"}, {"b", "passed"}})};
    CHECK(plan_reruns(runs, RerunLimits{}).empty());
}

TEST_CASE("a test whose outcome differs between orders reruns a prefix of those orders", "[rerun]") {
    const std::vector<LoadedRun> runs = {run(0, {"a", "b", "c"}, {{"a", "passed"}, {"b", "failed"}, {"c", "passed"}}),
                                         run(1, {"c", "b", "a"}, {{"a", "passed"}, {"b", "passed"}, {"c", "passed"}})};
    RerunLimits limits;
    limits.reruns = 2;
    const auto plans = plan_reruns(runs, limits);
    REQUIRE(plans.size() == 4);
    CHECK(plans[0].id.str() == "seed.0.rerun.1");
    CHECK(plans[0].order == "seed.0");
    CHECK(plans[0].seed == 0);
    CHECK(plans[0].tests == std::vector<std::string>{"a", "b"});  // up to the suspicious test
    CHECK(plans[1].id.str() == "seed.0.rerun.2");
    CHECK(plans[2].id.str() == "seed.1.rerun.1");
    CHECK(plans[2].tests == std::vector<std::string>{"c", "b"});
}

TEST_CASE("orders rerun per outcome are bounded", "[rerun]") {
    std::vector<LoadedRun> runs;
    for (int k = 0; k < 6; ++k) runs.push_back(run(k, {"a", "v"}, {{"a", "passed"}, {"v", k % 2 ? "passed" : "failed"}}));
    RerunLimits limits;
    limits.reruns = 1;
    limits.orders_per_outcome = 2;
    CHECK(plan_reruns(runs, limits).size() == 4);  // two failing orders and two passing ones
}

TEST_CASE("a test failing in every order is run alone, within the budget", "[rerun]") {
    const std::vector<LoadedRun> runs = {run(0, {"a", "b", "c"}, {{"a", "failed"}, {"b", "error"}, {"c", "passed"}}),
                                         run(1, {"b", "c", "a"}, {{"a", "failed"}, {"b", "failed"}, {"c", "passed"}})};
    RerunLimits limits;
    limits.alone = 1;
    const auto plans = plan_reruns(runs, limits);
    REQUIRE(plans.size() == 1);
    CHECK(plans[0].order == "alone");
    CHECK(plans[0].tests == std::vector<std::string>{"a"});  // collection order decides who goes first
}

// A later ctest on the same key keeps the earlier reruns (runs/evidence_reuse.hpp).
TEST_CASE("reruns a kept run already holds are not planned again; longer ones are numbered after them", "[rerun]") {
    std::vector<LoadedRun> kept = {run(0, {"a", "b", "c"}, {{"a", "passed"}, {"b", "failed"}, {"c", "passed"}}),
                                   run(1, {"c", "b", "a"}, {{"a", "passed"}, {"b", "passed"}, {"c", "passed"}})};
    LoadedRun rerun = run(0, {"a", "b"}, {{"a", "passed"}, {"b", "failed"}});
    rerun.plan.id = RunId::of("seed.0.rerun.1");
    kept.push_back(rerun);
    LoadedRun alone;
    alone.plan.id = RunId::of("alone.1");
    alone.plan.order = "alone";
    alone.plan.tests = {"x"};
    kept.push_back(alone);

    std::vector<evgate::RunPlan> planned(4);
    planned[0].id = RunId::of("seed.0.rerun.1"), planned[0].order = "seed.0", planned[0].tests = {"a", "b"};       // as far: dropped
    planned[1].id = RunId::of("seed.0.rerun.2"), planned[1].order = "seed.0", planned[1].tests = {"a", "b", "c"};  // new id: kept
    planned[2].id = RunId::of("seed.1.rerun.1"), planned[2].order = "seed.1", planned[2].tests = {"c", "b"};       // new: as planned
    planned[3].id = RunId::of("alone.1"), planned[3].order = "alone", planned[3].tests = {"y"};                    // another test
    auto further = planned[0];
    further.tests = {"a", "b", "c"};  // the same id, further into the order: numbered after the kept ones
    planned.push_back(further);
    auto again = planned[3];
    again.tests = {"x"};  // a test a kept run ran alone: dropped
    planned.push_back(again);

    const auto left = evgate::not_run_yet(planned, kept);
    std::vector<std::string> ids;
    for (const auto& plan : left) ids.push_back(plan.id.str());
    CHECK(ids == std::vector<std::string>{"seed.0.rerun.2", "seed.1.rerun.1", "alone.2", "seed.0.rerun.3"});
    CHECK(left[2].tests == std::vector<std::string>{"y"});
    CHECK(left[3].tests == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("a test kept evidence settles is not rerun for", "[rerun]") {
    const std::vector<LoadedRun> runs = {run(0, {"a", "b", "c"}, {{"a", "passed"}, {"b", "failed"}, {"c", "passed"}}),
                                         run(1, {"c", "b", "a"}, {{"a", "passed"}, {"b", "passed"}, {"c", "passed"}})};
    RerunLimits limits;
    limits.settled = {"b"};
    CHECK(plan_reruns(runs, limits).empty());
}

namespace {

evgate::Localisation found(evgate::Role role, std::vector<std::string> partners) {
    evgate::Localisation f;
    f.role = role;
    f.partners = std::move(partners);
    return f;
}

LoadedRun of_receipt(LoadedRun run, const std::string& receipt) {
    run.records.receipt = receipt;
    return run;
}

}  // namespace

TEST_CASE("a kept localisation settles a test only where its partners explain every new failure", "[rerun][reuse]") {
    using evgate::Role;
    using evgate::settled_by_partners;
    const std::map<std::string, evgate::Localisation> kept = {{"v", found(Role::victim, {"p"})}};
    SECTION("a victim failing only after its polluter is settled; one failing without it is not") {
        const std::vector<LoadedRun> explained = {of_receipt(run(9, {"p", "a", "v"}, {{"v", "failed"}}), "now"),
                                                  of_receipt(run(10, {"v", "p"}, {{"v", "passed"}}), "now")};
        CHECK(settled_by_partners(kept, explained, "now") == std::set<std::string>{"v"});
        const std::vector<LoadedRun> unexplained = {of_receipt(run(9, {"a", "v", "p"}, {{"v", "failed"}}), "now")};
        CHECK(settled_by_partners(kept, unexplained, "now").empty());
    }
    SECTION("a failure in a kept run (another receipt) is explained by the kept search already") {
        const std::vector<LoadedRun> runs = {of_receipt(run(0, {"v", "p"}, {{"v", "failed"}}), "before")};
        CHECK(settled_by_partners(kept, runs, "now") == std::set<std::string>{"v"});
    }
    SECTION("a brittle test is explained where its state-setter did not run before it") {
        const std::map<std::string, evgate::Localisation> brittle = {{"b", found(Role::brittle, {"s"})}};
        CHECK(settled_by_partners(brittle, {of_receipt(run(9, {"b", "s"}, {{"b", "failed"}}), "now")}, "now").size() == 1);
        CHECK(settled_by_partners(brittle, {of_receipt(run(9, {"s", "b"}, {{"b", "failed"}}), "now")}, "now").empty());
    }
    SECTION("a search without a partner, without a role or stopped by its budget settles nothing") {
        auto stopped = found(Role::victim, {"p"});
        stopped.budget_exhausted = true;
        const std::vector<LoadedRun> runs = {of_receipt(run(9, {"p", "v"}, {{"v", "failed"}}), "now")};
        CHECK(settled_by_partners({{"v", stopped}}, runs, "now").empty());
        CHECK(settled_by_partners({{"v", found(Role::victim, {})}}, runs, "now").empty());
        CHECK(settled_by_partners({{"v", found(Role::unknown, {"p"})}}, runs, "now").empty());
    }
}
