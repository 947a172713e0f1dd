#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>

#include "inputs/suite_config.hpp"
#include "runs/alone_budget.hpp"
#include "runs/run_plan.hpp"
#include "support.hpp"

namespace fs = std::filesystem;
using evgate::alone_budget;
using evgate::alone_pass_runs;

TEST_CASE("ALONE AUTO spends a quarter of the seed runs' time, never under the floor while few tests are left", "[alone]") {
    // 8 seeds + the collection order of 10 s runs: 90 s of seeds, a quarter of it for the pass.
    CHECK(alone_budget("auto", 8, 10.0, 50) == Approx(22.5));
    CHECK(alone_budget("auto", 8, 10.0, 5000) == Approx(22.5));
    // A quick small suite's seeds would leave it under a second: the floor lets its whole pass run.
    CHECK(alone_budget("auto", 8, 0.1, 30) == Approx(evgate::kAloneFloorSeconds));
    CHECK(alone_budget("auto", 8, 0.1, evgate::kAloneAutoLimit) == Approx(evgate::kAloneFloorSeconds));
    // A quick large suite's pass would not finish in the floor anyway: it takes its share.
    CHECK(alone_budget("auto", 8, 0.8, evgate::kAloneAutoLimit + 1) == Approx(1.8));
    CHECK(alone_budget("auto", 0, 100.0, 10) == Approx(25.0));
}

TEST_CASE("the pass is unbounded under ALONE ON, and under AUTO until a seed run was measured", "[alone]") {
    CHECK_FALSE(alone_budget("on", 8, 10.0, 10));
    CHECK_FALSE(alone_budget("auto", 8, std::nullopt, 10));
    CHECK_FALSE(alone_budget("off", 8, 10.0, 10));
}

TEST_CASE("whether the pass runs: never under OFF, unbudgeted AUTO only for a small suite", "[alone]") {
    CHECK_FALSE(alone_pass_runs("off", true, 1));
    CHECK(alone_pass_runs("on", false, 100000));
    CHECK(alone_pass_runs("auto", true, 100000));
    CHECK(alone_pass_runs("auto", false, evgate::kAloneAutoLimit));
    CHECK_FALSE(alone_pass_runs("auto", false, evgate::kAloneAutoLimit + 1));
}

TEST_CASE("the rule the lines and the ledger row quote says the share and the floor", "[alone]") {
    CHECK(evgate::alone_budget_rule() ==
          "ALONE AUTO spends at most a quarter of the seed runs' time per ctest, or 5 s while at most 200 tests are left");
}

TEST_CASE("a seed run's time is from its plan to its records' last write, the longest of them", "[alone]") {
    evgate::test::TempDir dir;
    evgate::SuiteConfig suite;
    suite.evidence_dir = dir.path;
    CHECK_FALSE(evgate::seed_run_seconds(suite, 3));  // none yet
    const auto now = fs::file_time_type::clock::now();
    const auto written = [&](const std::string& name, double started_ago, double ended_ago) {
        const auto id = evgate::RunId::of(name);
        evgate::test::write_text(evgate::plan_file(suite, id), "{}");
        evgate::test::write_text(evgate::records_file(suite, id), "");
        const auto ago = [&](double s) { return now - std::chrono::duration_cast<fs::file_time_type::duration>(std::chrono::duration<double>(s)); };
        fs::last_write_time(evgate::plan_file(suite, id), ago(started_ago));
        fs::last_write_time(evgate::records_file(suite, id), ago(ended_ago));
    };
    written("seed.0", 10.0, 8.0);  // 2 s
    written("seed.1", 7.0, 4.0);   // 3 s
    written("seed.2", 3.0, 2.5);   // 0.5 s
    REQUIRE(evgate::seed_run_seconds(suite, 3));
    CHECK(*evgate::seed_run_seconds(suite, 3) == Approx(3.0).margin(0.01));
    CHECK(*evgate::seed_run_seconds(suite, 1) == Approx(2.0).margin(0.01));  // seeds beyond the count are not asked
    fs::remove(evgate::records_file(suite, evgate::RunId::seed(1)));         // a run under way: no time yet
    CHECK(*evgate::seed_run_seconds(suite, 3) == Approx(2.0).margin(0.01));
}

TEST_CASE("the pass starts a chunk only where one as long as the last still fits its budget", "[alone]") {
    using evgate::next_chunk_fits;
    CHECK(next_chunk_fits(std::nullopt, 100.0, 10.0));  // no budget
    CHECK(next_chunk_fits(1.0, 0.0, 0.0));              // the first chunk always runs
    CHECK(next_chunk_fits(0.5, 0.0, 0.0));
    CHECK(next_chunk_fits(0.001, 0.002, 0.0));    // the clock has moved before the first: it runs all the same
    CHECK(next_chunk_fits(5.0, 2.0, 2.5));        // 4.5 s: within
    CHECK_FALSE(next_chunk_fits(5.0, 2.6, 2.6));  // 5.2 s: a chunk past it
    CHECK_FALSE(next_chunk_fits(5.0, 5.5, 0.1));  // spent already
}
