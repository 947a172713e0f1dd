#include <catch2/catch.hpp>

#include "runs/sweep.hpp"
#include "support.hpp"

using evgate::read_plan;
using evgate::sweep_plan;
using evgate::sweep_reruns;

using Tests = std::vector<std::string>;

TEST_CASE("a sweep puts the partner set first, in its order, then every other test in collection order", "[sweep]") {
    const auto plan = sweep_plan(2, {"m::p2", "m::p1"}, {"a::v", "m::p1", "b::w", "m::p2", "c::x"});
    CHECK(plan.id == "sweep.2");
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
    seed.id = seed.order = "seed.1";
    evgate::write_plan(dir.path / "seed.1.plan.json", seed);
    CHECK_FALSE(read_plan(dir.path / "seed.1.plan.json").listed);
    evgate::test::write_text(dir.path / "bad.plan.json",
                             R"({"id":"x","order":"x","seed":0,"environment":[],"listed":"yes","tests":[]})");
    CHECK_THROWS_WITH(read_plan(dir.path / "bad.plan.json"), Catch::Contains("'listed' is not true or false"));
}

TEST_CASE("a sweep's reruns replay its order through the last test it found, under the sweep's order", "[sweep]") {
    auto plan = sweep_plan(1, {"p"}, {"a", "p", "b", "c", "d"});
    plan.seed = 7;
    const auto reruns = sweep_reruns(plan, {"b", "a"}, 2);
    REQUIRE(reruns.size() == 2);
    CHECK(reruns[0].id == "sweep.1.rerun.1");
    CHECK(reruns[1].id == "sweep.1.rerun.2");
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
