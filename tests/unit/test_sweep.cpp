#include <catch2/catch.hpp>

#include "runs/sweep.hpp"
#include "support.hpp"

using evgate::read_plan;
using evgate::RunId;
using evgate::sweep_plan;
using evgate::sweep_reruns;

using Tests = std::vector<std::string>;

TEST_CASE("a sweep puts the partner set first, in its order, then every other test in collection order", "[sweep]") {
    const auto plan = sweep_plan(2, {"m::p2", "m::p1"}, {"a::v", "m::p1", "b::w", "m::p2", "c::x"});
    CHECK(plan.id.str() == "sweep.2");
    CHECK(plan.order == "sweep.2");
    CHECK(plan.tests == Tests{"m::p2", "m::p1", "a::v", "b::w", "c::x"});
    CHECK(plan.listed);  // no seed makes this order: a reproduce command lists its tests
}

TEST_CASE("a plan file says whether its order is listed, and a seed's plan is not", "[sweep]") {
    evgate::test::TempDir dir;
    const auto sweep = sweep_plan(1, {"p"}, {"a", "p"});
    evgate::write_plan(dir.path / "sweep.1.plan.json", sweep);
    CHECK(read_plan(dir.path / "sweep.1.plan.json").listed);
    evgate::RunPlan seed;
    seed.id = RunId::seed(1);
    seed.order = seed.id.str();
    evgate::write_plan(dir.path / "seed.1.plan.json", seed);
    CHECK_FALSE(read_plan(dir.path / "seed.1.plan.json").listed);
    evgate::test::write_text(dir.path / "bad.plan.json",
                             R"({"id":"seed.1","order":"seed.1","seed":0,"environment":[],"listed":"yes","tests":[]})");
    CHECK_THROWS_WITH(read_plan(dir.path / "bad.plan.json"), Catch::Contains("'listed' is not true or false"));
    evgate::test::write_text(dir.path / "bad.plan.json", R"({"id":"seed.01","order":"x","seed":0,"environment":[],"tests":[]})");
    CHECK_THROWS_WITH(read_plan(dir.path / "bad.plan.json"), (dir.path / "bad.plan.json").string() + ": 'id' is not a run id: 'seed.01'");
    evgate::test::write_text(dir.path / "ci-7:seed.2.plan.json", R"({"id":"ci-7:seed.2","order":"ci-7:seed.2","seed":2,"environment":[],"tests":[]})");
    CHECK(read_plan(dir.path / "ci-7:seed.2.plan.json").id == RunId::seed(2).on("ci-7"));  // a foreign shard's, imported
}

TEST_CASE("a sweep's reruns replay its order through the last test it found, under the sweep's order", "[sweep]") {
    auto plan = sweep_plan(1, {"p"}, {"a", "p", "b", "c", "d"});
    plan.seed = 7;
    const auto reruns = sweep_reruns(plan, {"b", "a"}, 2);
    REQUIRE(reruns.size() == 2);
    CHECK(reruns[0].id.str() == "sweep.1.rerun.1");
    CHECK(reruns[1].id.str() == "sweep.1.rerun.2");
    for (const auto& rerun : reruns) {
        CHECK(rerun.order == "sweep.1");  // the same order: a different outcome there is flaky
        CHECK(rerun.seed == 7);
        CHECK(rerun.listed);
        CHECK(rerun.tests == Tests{"p", "a", "b"});
    }
}

TEST_CASE("no reruns without a test to replay, or with RERUNS 0", "[sweep]") {
    const auto plan = sweep_plan(1, {"p"}, {"a", "p"});
    CHECK(sweep_reruns(plan, {"elsewhere"}, 2).empty());
    CHECK(sweep_reruns(plan, {"a"}, 0).empty());
}
