#include <catch2/catch.hpp>

#include "verdicts/triage.hpp"

using evgate::Attempt;
using evgate::classify;
using evgate::Column;
using evgate::Verdict;

namespace {

Attempt attempt(std::string run, std::string order, const std::string& outcome, std::vector<std::string> dirty = {}) {
    Attempt a;
    a.run = std::move(run);
    a.order = std::move(order);
    a.outcome = evgate::parse_outcome(outcome).value();
    a.dirty = std::move(dirty);
    return a;
}

Attempt seed(int k, const std::string& outcome) { return attempt("seed." + std::to_string(k), "seed." + std::to_string(k), outcome); }

Attempt remote(const std::string& run, const std::string& outcome, Column column = Column::runner) {
    auto a = attempt(run, run, outcome);
    a.column = column;
    return a;
}

}  // namespace

TEST_CASE("passing everywhere is stable, skipping everywhere is skipped", "[triage]") {
    CHECK(classify({seed(0, "passed"), seed(1, "passed"), seed(2, "xfailed")}).verdict == Verdict::stable);
    CHECK(classify({seed(0, "skipped"), seed(1, "skipped")}).verdict == Verdict::skipped);
}

TEST_CASE("a test that changed an undeclared group is a polluter, even when it passes", "[triage]") {
    const auto c = classify({seed(0, "passed"), attempt("seed.1", "seed.1", "passed", {"db"})});
    CHECK(c.verdict == Verdict::polluter);
    CHECK(c.dirty == std::vector<std::string>{"db"});
    CHECK_THAT(c.reason, Catch::Contains("'db'") && Catch::Contains("seed.1"));
}

TEST_CASE("outcome fixed per order but different between orders: order-dependent", "[triage]") {
    const auto c = classify({seed(0, "passed"), seed(1, "failed"), attempt("seed.1.rerun.1", "seed.1", "failed"),
                             seed(2, "passed"), attempt("seed.2.rerun.1", "seed.2", "passed")});
    CHECK(c.verdict == Verdict::order_dependent);
    CHECK_THAT(c.reason, Catch::Contains("fails in seed.1"));
}

TEST_CASE("outcomes that differ within one order: flaky, which outranks order-dependent", "[triage]") {
    const auto c = classify({seed(0, "passed"), seed(1, "failed"), attempt("seed.1.rerun.1", "seed.1", "passed")});
    CHECK(c.verdict == Verdict::flaky);
    CHECK_THAT(c.reason, Catch::Contains("seed.1"));
}

TEST_CASE("failing everywhere but passing alone is order-dependent, failing alone too is failing", "[triage]") {
    CHECK(classify({seed(0, "failed"), seed(1, "failed"), attempt("alone.1", "alone", "passed")}).verdict ==
          Verdict::order_dependent);
    const auto failing = classify({seed(0, "failed"), seed(1, "error"), attempt("alone.1", "alone", "failed")});
    CHECK(failing.verdict == Verdict::failing);
    CHECK_THAT(failing.reason, Catch::Contains("alone too"));
    CHECK_THAT(classify({seed(0, "failed")}).reason, Catch::Contains("not tried alone"));
}

TEST_CASE("a run that died in the test makes it interrupted; no result makes it missing", "[triage]") {
    const auto c = classify({seed(0, "passed"), seed(1, "interrupted")});
    CHECK(c.verdict == Verdict::interrupted);
    CHECK(classify({seed(0, "passed"), seed(1, "missing")}).verdict == Verdict::missing);
    CHECK(classify({}).verdict == Verdict::missing);
}

TEST_CASE("a test whose call phase never ran is missing, never stable, and the row says why", "[triage]") {
    auto uncalled = seed(1, "uncalled");
    uncalled.message = "its call phase never ran (setup passed, teardown passed)";
    const auto c = classify({seed(0, "passed"), uncalled});
    CHECK(c.verdict == Verdict::missing);
    CHECK(c.reason == "collected, but its call phase never ran in seed.1: its call phase never ran (setup passed, teardown passed)");
    CHECK(classify({seed(0, "uncalled"), seed(1, "uncalled")}).verdict == Verdict::missing);
    CHECK(classify({seed(0, "missing"), seed(1, "uncalled")}).reason ==
          "collected, but no result in seed.0; its call phase never ran in seed.1");
    // A failure elsewhere does not hide it: missing outranks failing.
    CHECK(classify({seed(0, "failed"), seed(1, "uncalled")}).verdict == Verdict::missing);
}

TEST_CASE("priority: the first verdict wins and the others are kept", "[triage]") {
    const auto c = classify({attempt("seed.0", "seed.0", "passed", {"db"}), seed(1, "interrupted"), seed(2, "failed")});
    CHECK(c.verdict == Verdict::polluter);
    REQUIRE(c.also.size() >= 2);
    CHECK(c.also[0] == Verdict::interrupted);
    CHECK(c.also[1] == Verdict::order_dependent);
}

TEST_CASE("runner columns: local pass and remote fail is a gap, the inverse blocks", "[triage]") {
    CHECK(classify({seed(0, "passed"), seed(1, "passed"), remote("ci-host", "failed")}).verdict ==
          Verdict::portability_gap);
    CHECK(classify({seed(0, "passed"), remote("perturbed", "failed", Column::perturbed)}).verdict ==
          Verdict::portability_gap);
    CHECK(classify({seed(0, "failed"), seed(1, "failed"), remote("ci-host", "passed")}).verdict ==
          Verdict::runner_only_pass);
}

TEST_CASE("passing in some orders and skipped in others never failed: stable, not order-dependent", "[triage]") {
    const auto c = classify({seed(0, "passed"), seed(1, "skipped"), seed(2, "passed")});
    CHECK(c.verdict == Verdict::stable);
    CHECK_THAT(c.reason, Catch::Contains("skipped in seed.1"));
    CHECK(classify({seed(0, "failed"), seed(1, "skipped")}).verdict == Verdict::order_dependent);
}

TEST_CASE("a failure seen only beside other runs, gone when they were done again alone, is flaky and says so", "[triage]") {
    auto beside = seed(2, "failed");
    beside.beside = true;
    const auto apart = attempt("seed.2.apart", "seed.2", "passed");
    const auto c = classify({seed(0, "passed"), seed(1, "passed"), beside, apart});
    CHECK(c.verdict == Verdict::flaky);  // never stable: the redo adds evidence, it does not take any back
    CHECK_THAT(c.reason, Catch::Contains("failed only in runs that went beside other runs (seed.2)") &&
                             Catch::Contains("collide with another copy of itself"));
    // The failure seen again alone: a plain order dependence, no word about runs side by side.
    const auto again = classify({seed(0, "passed"), seed(1, "passed"), beside, attempt("seed.2.apart", "seed.2", "failed")});
    CHECK(again.verdict == Verdict::order_dependent);
    CHECK_THAT(again.reason, !Catch::Contains("beside"));
    // A perturbed failure beside others, passing alone: still a gap, with the same word.
    auto perturbed = remote("perturbed", "failed", Column::perturbed);
    perturbed.beside = true;
    const auto gap = classify({seed(0, "passed"), perturbed, remote("perturbed.apart", "passed", Column::perturbed)});
    CHECK(gap.verdict == Verdict::portability_gap);
    CHECK_THAT(gap.reason, Catch::Contains("went beside other runs (perturbed)"));
}

namespace {

Attempt forked(Attempt a) {
    a.fork = true;
    return a;
}

Attempt fresh(std::string run, std::string order, const std::string& outcome, std::vector<std::string> dirty = {}) {
    auto a = attempt(std::move(run), std::move(order), outcome, std::move(dirty));
    a.fresh = true;
    return a;
}

}  // namespace

TEST_CASE("fresh processes needed to set forks' failures aside: as many as make chance less than once in 100", "[triage]") {
    using evgate::fresh_runs_needed;
    CHECK(fresh_runs_needed(0, 5) == 0);
    CHECK(fresh_runs_needed(3, 3) == 7);                      // C(3,3)/C(10,3) = 1/120
    CHECK(fresh_runs_needed(5, 5) == 4);                      // 1/126
    CHECK(fresh_runs_needed(10, 10) == 3);                    // 1/286
    CHECK(fresh_runs_needed(8, 10) == 5);                     // 45/3268760... 45/C(15,8) = 45/6435
    CHECK(fresh_runs_needed(2, 3) > evgate::kMostFreshRuns);  // too few forks failed it to tell
    CHECK(fresh_runs_needed(1, 10) > evgate::kMostFreshRuns);
}

namespace {

std::vector<Attempt> fresh_passes(const std::string& order, int count) {
    std::vector<Attempt> out;
    for (int j = 1; j <= count; ++j) out.push_back(fresh(order + ".fresh." + std::to_string(j), order, "passed"));
    return out;
}

std::vector<Attempt> plus(std::vector<Attempt> a, const std::vector<Attempt>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

}  // namespace

TEST_CASE("a test that failed only in forks and passes in fresh processes of that order is fork-sensitive, not flaky", "[triage]") {
    // A token stamped at import: the first forks pass, later ones (seed.3 and its reruns) fail.
    const std::vector<Attempt> forks = {forked(seed(0, "passed")), forked(seed(1, "passed")),
                                        forked(attempt("seed.1.rerun.1", "seed.1", "failed")),
                                        forked(seed(3, "failed")), forked(attempt("seed.3.rerun.1", "seed.3", "failed")),
                                        forked(attempt("seed.3.rerun.2", "seed.3", "failed"))};
    CHECK(classify(forks).verdict == Verdict::flaky);
    CHECK_FALSE(classify(forks).fork_sensitive);
    CHECK_FALSE(classify(plus(forks, fresh_passes("seed.3", 6))).fork_sensitive);  // 3 of 3 failed: seven are needed
    const auto c = classify(plus(forks, fresh_passes("seed.3", 7)));
    CHECK(c.verdict == Verdict::stable);
    CHECK(c.fork_sensitive);
    CHECK_THAT(c.reason, Catch::Contains("fork-sensitive") && Catch::Contains("seed.3.rerun.1") &&
                             Catch::Contains("seed.3.fresh.1") && Catch::Contains("state taken when the collection imported it"));
    // A fresh process that fails, or a process that failed all along: the failures are the test's.
    auto failed_fresh = plus(forks, fresh_passes("seed.3", 7));
    failed_fresh.push_back(fresh("seed.3.fresh.8", "seed.3", "failed"));
    CHECK(classify(failed_fresh).verdict == Verdict::flaky);
    auto process_failed = plus(forks, fresh_passes("seed.3", 7));
    process_failed.push_back(attempt("seed.5", "seed.5", "failed"));
    CHECK_FALSE(classify(process_failed).fork_sensitive);
}

TEST_CASE("a test every fork failed, whatever its order, is fork-sensitive after fresh processes of any order pass", "[triage]") {
    // A pid taken at import: every fork fails it, one attempt per order.
    const std::vector<Attempt> forks = {forked(seed(0, "failed")), forked(seed(1, "failed")), forked(seed(2, "failed")),
                                        forked(attempt("first.1", "alone", "failed")), forked(attempt("alone.1", "alone", "failed"))};
    CHECK(classify(forks).verdict == Verdict::failing);
    CHECK_FALSE(classify(plus(forks, fresh_passes("seed.0", 3))).fork_sensitive);  // 5 of 5: four are needed
    const auto c = classify(plus(forks, fresh_passes("seed.0", 4)));
    CHECK(c.verdict == Verdict::stable);
    CHECK(c.fork_sensitive);
    CHECK_THAT(c.reason, Catch::Contains("fresh processes of its orders"));
}

TEST_CASE("an order dependence seen only in forks is fork-sensitive when fresh processes of the failing order pass", "[triage]") {
    const std::vector<Attempt> forks = {forked(seed(0, "passed")), forked(seed(3, "failed")),
                                        forked(attempt("seed.3.rerun.1", "seed.3", "failed")),
                                        forked(attempt("seed.3.rerun.2", "seed.3", "failed"))};
    const auto c = classify(plus(forks, fresh_passes("seed.3", 7)));
    CHECK(c.verdict == Verdict::stable);
    CHECK(c.fork_sensitive);
    // The same in a fresh process: a real order dependence.
    auto real = forks;
    real.push_back(fresh("seed.3.fresh.1", "seed.3", "failed"));
    CHECK(classify(real).verdict == Verdict::order_dependent);
    CHECK_FALSE(classify(real).fork_sensitive);
}

TEST_CASE("a change a test does not make alone in a fresh process is not blamed on it", "[triage]") {
    const std::vector<Attempt> attempts = {attempt("seed.0", "seed.0", "passed", {"data"}), attempt("seed.1", "seed.1", "passed", {"data"}),
                                           attempt("seed.2", "seed.2", "passed"), fresh("first.2.fresh.1", "alone", "passed")};
    const auto c = classify(attempts);
    CHECK(c.verdict == Verdict::stable);
    CHECK(c.dirty.empty());
    CHECK(c.unattributed == std::vector<std::string>{"data"});
    CHECK(c.unattributed_in == std::vector<std::string>{"seed.0", "seed.1"});
    CHECK_THAT(c.reason, Catch::Contains("not blamed for changing data") && Catch::Contains("first.2.fresh.1"));
    // Alone, it changes the group: a polluter.
    auto own = attempts;
    own.back().dirty = {"data"};
    const auto polluter = classify(own);
    CHECK(polluter.verdict == Verdict::polluter);
    CHECK(polluter.unattributed.empty());
    // Not replayed alone yet: a polluter, as the runs show.
    CHECK(classify({attempts.begin(), attempts.begin() + 3}).verdict == Verdict::polluter);
}

TEST_CASE("a test that fails only beside other runs, and passes each time they are done again alone, collides", "[triage]") {
    const auto beside = [](std::string run, std::string order, const std::string& outcome) {
        auto a = attempt(std::move(run), std::move(order), outcome);
        a.beside = true;
        return a;
    };
    const std::vector<Attempt> once = {beside("seed.0", "seed.0", "failed"), attempt("seed.0.apart", "seed.0", "passed"),
                                       seed(1, "passed")};
    CHECK(classify(once).verdict == Verdict::flaky);  // once is chance as much as a collision
    CHECK_FALSE(classify(once).collides);
    std::vector<Attempt> twice = {beside("seed.0", "seed.0", "failed"), attempt("seed.0.apart", "seed.0", "passed"),
                                  beside("seed.2", "seed.2", "failed"), attempt("seed.2.apart", "seed.2", "passed"),
                                  seed(1, "passed")};
    CHECK_FALSE(classify(twice).collides);  // 2 of 2 beside: chance is not ruled out
    for (int k = 3; k <= 6; ++k) {          // 5 of 5 beside, 5 passes alone: 1 chance in 126
        if (k == 5) continue;
        twice.push_back(beside("seed." + std::to_string(k), "seed." + std::to_string(k), "failed"));
        twice.push_back(attempt("seed." + std::to_string(k) + ".apart", "seed." + std::to_string(k), "passed"));
    }
    twice.push_back(beside("seed.7", "seed.7", "failed"));
    twice.push_back(attempt("seed.7.apart", "seed.7", "passed"));
    const auto c = classify(twice);
    CHECK(c.verdict == Verdict::stable);
    CHECK(c.collides);
    CHECK_THAT(c.reason, Catch::Contains("collides with another copy of itself") && Catch::Contains("seed.0.apart"));
    auto alone_too = twice;
    alone_too.push_back(seed(3, "failed"));  // it fails with nothing beside it too
    CHECK_FALSE(classify(alone_too).collides);
}
