#include <catch2/catch.hpp>

#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "runs/run_matrix.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

LoadedRun run(const std::string& id, std::vector<std::string> order, const std::map<std::string, std::string>& outcomes,
              Column column = Column::local) {
    LoadedRun r;
    r.plan.order = id;
    r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
    r.plan.column = column;
    r.plan.tests = std::move(order);
    for (auto& [test, outcome] : outcomes) r.records.results[test].outcome = parse_outcome(outcome).value();
    r.records.finished = true;
    r.records.receipt = "r1";
    return r;
}

std::vector<std::string> shown(const std::vector<Attempt>& attempts) {
    std::vector<std::string> out;
    for (const auto& a : attempts) out.push_back(a.run + "=" + std::string(to_string(a.outcome)) + (a.message.empty() ? "" : ":" + a.message));
    return out;
}

// A run's files as the harness and the plugin leave them: plan, then records in its order, the
// `finished` record sealing what came before it.
void write_run(const TempDir& dir, const LoadedRun& r, const std::string& records) {
    write_plan(dir.path / (r.plan.id.str() + ".plan.json"), r.plan);
    write_file_atomic(dir.path / (r.plan.id.str() + ".jsonl"), test::sealed(records));
}

std::string result(const std::string& test, const std::string& outcome, const std::string& extra = "") {
    return R"({"event":"start","test":")" + test + "\"}\n" + R"({"event":"result","test":")" + test +
           R"(","outcome":")" + outcome + "\"" + extra + "}\n";
}

const std::string kFinished = R"({"event":"end","exitstatus":1})"
                              "\n"
                              R"({"event":"finished","complete":true,"receipt":"r1"})"
                              "\n";

}  // namespace

TEST_CASE("attempts: one per planned place, in run order, with what the records say", "[run_matrix]") {
    auto died = run("seed.1", {"t::b", "t::a", "t::c"}, {{"t::b", "failed"}});
    died.records.interrupted["t::a"] = "signal 9";
    died.records.results["t::b"].message = "assert 1 == 2";
    died.records.results["t::b"].dirty = {"db"};
    auto twice = run("seed.0.rerun.1", {"t::a", "t::a"}, {{"t::a", "passed"}});
    twice.plan.order = "seed.0";
    const RunMatrix matrix{run("seed.0", {"t::a", "t::b"}, {{"t::a", "passed"}, {"t::b", "skipped"}}), died, twice,
                           run("ci:seed.0", {"t::a", "t::b"}, {{"t::b", "passed"}}, Column::runner)};
    CHECK(shown(matrix.attempts("t::a")) ==
          std::vector<std::string>{"seed.0=passed", "seed.1=interrupted", "seed.0.rerun.1=passed", "seed.0.rerun.1=passed"});
    CHECK(shown(matrix.attempts("t::b")) == std::vector<std::string>{"seed.0=skipped", "seed.1=failed:assert 1 == 2", "ci:seed.0=passed"});
    CHECK(matrix.attempts("t::b")[1].dirty == std::vector<std::string>{"db"});
    CHECK(matrix.attempts("t::b")[1].order == "seed.1");
    CHECK(matrix.attempts("t::b")[2].column == Column::runner);
    CHECK(shown(matrix.attempts("t::c")) == std::vector<std::string>{"seed.1=missing"});  // a runner without a result says nothing
    CHECK(matrix.attempts("t::never").empty());
    CHECK(matrix.outcomes(matrix.find("t::a")) ==
          std::vector<std::pair<std::string, Outcome>>{{"seed.0", Outcome::passed}, {"seed.1", Outcome::interrupted}, {"seed.0.rerun.1", Outcome::passed}, {"seed.0.rerun.1", Outcome::passed}});
}

TEST_CASE("only the message of a failure or skip is kept, and a run with a problem has no attempts", "[run_matrix]") {
    auto r = run("seed.0", {"t::a", "t::b"}, {{"t::a", "passed"}, {"t::b", "skipped"}});
    r.records.results["t::a"].message = "captured output";
    r.records.results["t::b"].message = "needs a GPU";
    auto stale = run("seed.1", {"t::a"}, {{"t::a", "failed"}});
    stale.problem = "the run belongs to an earlier receipt (r0)";
    const RunMatrix matrix{r, stale};
    CHECK(shown(matrix.attempts("t::a")) == std::vector<std::string>{"seed.0=passed"});
    CHECK(shown(matrix.attempts("t::b")) == std::vector<std::string>{"seed.0=skipped:needs a GPU"});
    CHECK(matrix.size() == 2);
    CHECK(matrix.runs()[1].problem == stale.problem);
    CHECK(matrix.runs()[0].plan.tests.empty());  // the matrix keeps the plan's tests its own way
}

TEST_CASE("tests with the same attempts share a key, a dirty group or message makes a test its own", "[run_matrix]") {
    auto r = run("seed.0", {"t::a", "t::b", "t::c", "t::d"}, {{"t::a", "passed"}, {"t::b", "passed"}, {"t::c", "failed"}, {"t::d", "passed"}});
    r.records.results["t::d"].dirty = {"db"};
    const RunMatrix matrix{r, run("seed.1", {"t::b", "t::a", "t::c"}, {{"t::a", "passed"}, {"t::b", "passed"}, {"t::c", "failed"}})};
    std::string a, b, c, d;
    CHECK(matrix.attempt_key(matrix.find("t::a"), a));
    CHECK(matrix.attempt_key(matrix.find("t::b"), b));
    CHECK(matrix.attempt_key(matrix.find("t::c"), c));
    CHECK(a == b);
    CHECK(a != c);
    CHECK_FALSE(matrix.attempt_key(matrix.find("t::d"), d));
    CHECK(matrix.results(0) == 4);
}

TEST_CASE("runs streamed from their files give the attempts the harness reads", "[run_matrix]") {
    TempDir dir;
    // seed.1's results come out of plan order and include a test it did not plan; seed.2 is of
    // another receipt; seed.10 sorts after seed.2; alone.1 after the seeds.
    write_run(dir, run("seed.0", {"t::a", "t::b", "t::c"}, {}),
              R"({"event":"session","rootdir":"/r","conftests":[]})"
              "\n" +
                  result("t::a", "passed") +
                  result("t::b", "failed", R"(,"message":"boom","dirty":["g"])") + result("t::c", "skipped", R"(,"message":"later")") + kFinished);
    write_run(dir, run("seed.1", {"t::c", "t::b", "t::a"}, {}),
              result("t::c", "passed") + result("t::a", "failed") + result("t::x", "passed") +
                  R"({"event":"interrupted","test":"t::b","reason":"died"})"
                  "\n" +
                  kFinished);
    write_run(dir, run("seed.2", {"t::a"}, {}), result("t::a", "error") + R"({"event":"finished","complete":true,"receipt":"r0"})"
                                                                          "\n");
    write_run(dir, run("seed.10", {"t::b", "t::a"}, {}), result("t::b", "passed") + result("t::a", "passed") + result("t::a", "xfailed") + kFinished);
    auto alone = run("alone.1", {"t::b"}, {});
    alone.plan.order = "alone";
    write_run(dir, alone, result("t::b", "failed", R"(,"message":"alone")") + kFinished);

    RunMatrix streamed;
    streamed.add_runs(dir.path, [] { return std::vector<std::string>{"r1"}; });
    RunMatrix held;
    for (auto& r : load_runs(dir.path, {"r1"})) held.add(std::move(r));
    REQUIRE(streamed.size() == 5);
    std::vector<std::string> ids;
    for (const auto& r : streamed.runs()) ids.push_back(r.plan.id.str());
    CHECK(ids == std::vector<std::string>{"seed.0", "seed.1", "seed.2", "seed.10", "alone.1"});
    CHECK_THAT(streamed.runs()[2].problem, Catch::Contains("earlier receipt"));
    for (const char* test : {"t::a", "t::b", "t::c", "t::x"}) {
        CHECK(shown(streamed.attempts(test)) == shown(held.attempts(test)));
        for (std::size_t i = 0; i < streamed.attempts(test).size(); ++i)
            CHECK(streamed.attempts(test)[i].dirty == held.attempts(test)[i].dirty);
    }
    CHECK(shown(streamed.attempts("t::a")) == std::vector<std::string>{"seed.0=passed", "seed.1=failed", "seed.10=xfailed"});
    CHECK(shown(streamed.attempts("t::b")) ==
          std::vector<std::string>{"seed.0=failed:boom", "seed.1=interrupted", "seed.10=passed", "alone.1=failed:alone"});
    CHECK(streamed.results(1) == 3);  // t::x too: a result, though not planned
    CHECK(streamed.runs()[0].records.sessions.at(0).rootdir == "/r");
    CHECK(streamed.runs()[0].records.exit_statuses == std::vector<int>{1});
}

TEST_CASE("a run whose records cannot be read is a problem, and the rest are still read", "[run_matrix]") {
    TempDir dir;
    write_run(dir, run("seed.0", {"t::a"}, {}), result("t::a", "passed") + "garbage\n" + kFinished);
    write_run(dir, run("seed.1", {"t::a"}, {}), result("t::a", "passed") + kFinished);
    RunMatrix matrix;
    matrix.add_runs(dir.path, [] { return std::vector<std::string>{"r1"}; });
    REQUIRE(matrix.size() == 2);
    CHECK_THAT(matrix.runs()[0].problem, Catch::Contains("seed.0.jsonl:3: column 1: not valid JSON"));
    CHECK(shown(matrix.attempts("t::a")) == std::vector<std::string>{"seed.1=passed"});
}

TEST_CASE("a run whose order is listed keeps its tests in the matrix, a seed's does not", "[run_matrix]") {
    TempDir dir;
    write_run(dir, run("seed.0", {"t::a", "t::b"}, {}), result("t::a", "passed") + result("t::b", "passed") + kFinished);
    auto sweep = run("sweep.1", {"t::b", "t::a"}, {});
    sweep.plan.listed = true;
    write_run(dir, sweep, result("t::b", "passed") + result("t::a", "failed") + kFinished);
    RunMatrix streamed;
    streamed.add_runs(dir.path, [] { return std::vector<std::string>{"r1"}; });
    RunMatrix held;
    for (auto& r : load_runs(dir.path, {"r1"})) held.add(std::move(r));
    for (const auto* matrix : {&streamed, &held}) {
        REQUIRE(matrix->size() == 2);
        CHECK(matrix->runs()[0].plan.tests.empty());  // memory flat in runs: a seed's order is its seed
        CHECK(matrix->runs()[1].plan.listed);
        CHECK(matrix->runs()[1].plan.tests == std::vector<std::string>{"t::b", "t::a"});  // no seed makes it
    }
}
