// Disagreements confirmed alone: which runs that went side by side are done again, with nothing
// else running, before a test may be called flaky, order-dependent or a gap.
#include <catch2/catch.hpp>

#include <set>

#include "fixtures/shared_tree.hpp"
#include "runs/confirm_alone.hpp"

using evgate::Column;
using evgate::LoadedRun;
using evgate::RunId;
using evgate::runs_to_confirm;

namespace {

std::vector<std::string> named(const std::vector<RunId>& ids) {
    std::vector<std::string> names;
    for (const auto& id : ids) names.push_back(id.str());
    return names;
}

// A run `id` of `order` whose lease token is its id; `outcomes` by test, in plan order.
LoadedRun run(const std::string& id, const std::string& order, const std::vector<std::pair<std::string, std::string>>& outcomes,
              Column column = Column::local) {
    LoadedRun r;
    r.plan.lease = id;
    r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
    r.plan.order = order;
    r.plan.column = column;
    for (auto& [test, outcome] : outcomes) {
        r.plan.tests.push_back(test);
        r.records.results[test].outcome = evgate::parse_outcome(outcome).value();
    }
    return r;
}

// Runs that went side by side: those named.
evgate::Overlapped side_by_side(std::set<std::string> ids) {
    return [ids = std::move(ids)](const std::string& lease) { return ids.count(lease) != 0; };
}

const std::set<std::string> kEveryRun = {"seed.0", "seed.1", "seed.2", "seed.2.rerun.1", "seed.2.rerun.2", "alone.1", "perturbed"};

}  // namespace

TEST_CASE("outcomes that differ only between runs side by side: the run with the odd one is done again alone", "[confirm]") {
    // A scratch file in /tmp collided in seed.2: its test failed there only.
    const std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {{"a", "passed"}, {"b", "passed"}}),
                                         run("seed.1", "seed.1", {{"b", "passed"}, {"a", "passed"}}),
                                         run("seed.2", "seed.2", {{"a", "failed"}, {"b", "passed"}})};
    // Every outcome with a witness alone... none is: the failure and one pass are each seen again alone.
    const auto redo = runs_to_confirm(runs, side_by_side(kEveryRun), false);
    CHECK(named(redo) == std::vector<std::string>{"seed.0", "seed.2"});
    // -j1: every seed ran alone; the same outcomes are believed as they stand.
    CHECK(runs_to_confirm(runs, side_by_side({}), false).empty());
    // The pass was seen alone: only the failure needs confirming.
    CHECK(named(runs_to_confirm(runs, side_by_side({"seed.2"}), false)) == std::vector<std::string>{"seed.2"});
}

TEST_CASE("within one order, the rerun that differs is confirmed alone, the cheapest run first", "[confirm]") {
    const std::vector<LoadedRun> runs = {
        run("seed.2", "seed.2", {{"x", "passed"}, {"a", "passed"}, {"b", "passed"}}),  // alone, after its redo
        run("seed.2.rerun.1", "seed.2", {{"x", "passed"}, {"a", "failed"}}),
        run("seed.2.rerun.2", "seed.2", {{"x", "passed"}, {"a", "failed"}, {"b", "passed"}})};
    CHECK(named(runs_to_confirm(runs, side_by_side({"seed.2.rerun.1", "seed.2.rerun.2"}), false)) ==
          std::vector<std::string>{"seed.2.rerun.1"});
    // A failure seen alone in that order: flaky as it stands.
    CHECK(runs_to_confirm(runs, side_by_side({"seed.2.rerun.2"}), false).empty());
}

TEST_CASE("an order dependence seen alone needs nothing more, reruns that agree with their order are not redone",
          "[confirm]") {
    const std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {{"set", "passed"}, {"needs", "passed"}}),
                                         run("seed.1", "seed.1", {{"needs", "failed"}, {"set", "passed"}}),
                                         run("seed.1.rerun.1", "seed.1", {{"needs", "failed"}}),
                                         run("seed.0.rerun.1", "seed.0", {{"set", "passed"}, {"needs", "passed"}})};
    CHECK(runs_to_confirm(runs, side_by_side({"seed.1.rerun.1", "seed.0.rerun.1"}), true).empty());
}

TEST_CASE("a perturbed failure beside other runs is confirmed alone, a test failing everywhere only when asked", "[confirm]") {
    const std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {{"tz", "passed"}, {"broken", "failed"}}),
                                         run("alone.1", "alone", {{"broken", "failed"}}),
                                         run("perturbed", "perturbed", {{"tz", "failed"}, {"broken", "failed"}}, Column::perturbed)};
    CHECK(named(runs_to_confirm(runs, side_by_side({"perturbed"}), false)) == std::vector<std::string>{"perturbed"});
    CHECK(runs_to_confirm(runs, side_by_side({"seed.0"}), false).empty());  // the gap was seen alone
    // "broken" fails in every local run, none alone: its cheapest run, alone.1, is done again.
    CHECK(named(runs_to_confirm(runs, side_by_side({"seed.0", "alone.1"}), true)) == std::vector<std::string>{"alone.1"});
    CHECK(runs_to_confirm(runs, side_by_side({"seed.0", "alone.1"}), false).empty());
}

TEST_CASE("runs that cannot be read, runners' results and skips beside passes ask for nothing", "[confirm]") {
    auto broken = run("seed.1", "seed.1", {{"a", "failed"}});
    broken.problem = "torn records";
    const std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {{"a", "passed"}, {"s", "skipped"}}), broken,
                                         run("runner", "runner", {{"a", "failed"}}, Column::runner),
                                         run("seed.2", "seed.2", {{"a", "passed"}, {"s", "passed"}})};
    CHECK(runs_to_confirm(runs, side_by_side(kEveryRun), true).empty());
}

TEST_CASE("a run overlapped another when their spans cross, whatever either did", "[confirm]") {
    using evgate::RunSpan;
    const std::vector<RunSpan> spans = {{"a", 0, 10, false}, {"b", 5, 15, false}, {"c", 15, 20, false}};
    CHECK(evgate::overlapped_another(spans, "a"));
    CHECK(evgate::overlapped_another(spans, "b"));
    CHECK_FALSE(evgate::overlapped_another(spans, "c"));  // began as b ended
    CHECK_FALSE(evgate::overlapped_another(spans, ""));
    CHECK_FALSE(evgate::overlapped_another(spans, "unknown"));
}

TEST_CASE("a redo alone is a run of its own beside the first, and a run done again is never chosen again", "[confirm]") {
    LoadedRun seed2 = run("seed.2", "seed.2", {{"a", "failed"}, {"b", "passed"}});
    const auto apart = evgate::apart_plan(seed2.plan);
    CHECK(apart.id.str() == "seed.2.apart");
    CHECK(apart.order == "seed.2");  // the same order: what it shows is weighed against seed.2's outcomes
    CHECK(apart.confirms == "seed.2");
    CHECK(apart.tests == seed2.plan.tests);
    CHECK(apart.lease.empty());
    CHECK(apart.access == evgate::TreeAccess::exclusive);
    // The redo passed where seed.2 failed: the failure is still seen only beside others, and
    // nothing is left to do again (seed.2 was redone): the loop over redos ends, with both runs kept.
    LoadedRun redo = run("seed.2.apart", "seed.2", {{"a", "passed"}, {"b", "passed"}});
    redo.plan.confirms = "seed.2";
    const std::vector<LoadedRun> runs = {run("seed.0", "seed.0", {{"a", "passed"}, {"b", "passed"}}), seed2, redo};
    CHECK(runs_to_confirm(runs, side_by_side({"seed.0", "seed.2"}), false).empty());  // the pass was seen alone, in the redo
    CHECK(runs_to_confirm(runs, side_by_side({"seed.2"}), true).empty());
    // Without the redo's word that it confirms seed.2, seed.2 would be chosen again (and again).
    auto unnamed = runs;
    unnamed[2].plan.confirms.clear();
    CHECK(named(runs_to_confirm(unnamed, side_by_side({"seed.0", "seed.2"}), false)) == std::vector<std::string>{"seed.2"});
}

TEST_CASE("the redos witness every outcome at the least cost: one run for many tests, short runs for long tests", "[confirm]") {
    // Three victims: each fails in seed.1, passes in seed.0 and alone first after the collection.
    // Everything went side by side.
    auto runs = std::vector<LoadedRun>{run("seed.0", "seed.0", {{"a", "passed"}, {"b", "passed"}, {"c", "passed"}}),
                                       run("seed.1", "seed.1", {{"a", "failed"}, {"b", "failed"}, {"c", "failed"}}),
                                       run("first.1", "alone", {{"a", "passed"}}), run("first.2", "alone", {{"b", "passed"}}),
                                       run("first.3", "alone", {{"c", "passed"}})};
    const auto every_run = side_by_side({"seed.0", "seed.1", "first.1", "first.2", "first.3"});
    SECTION("quick tests: seed.0 witnesses the three passes, where each test's own run would cost three redos") {
        CHECK(named(runs_to_confirm(runs, every_run, false)) == std::vector<std::string>{"seed.0", "seed.1"});
    }
    SECTION("a slow test beside them: three short runs cost less than the one that holds it") {
        runs[0].plan.tests.push_back("slow");
        runs[0].records.results["slow"].outcome = evgate::Outcome::passed;
        runs[0].records.results["slow"].seconds = 10.0;
        CHECK(named(runs_to_confirm(runs, every_run, false)) == std::vector<std::string>{"seed.1", "first.1", "first.2", "first.3"});
    }
}
