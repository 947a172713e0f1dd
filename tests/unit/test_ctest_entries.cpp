#include <catch2/catch.hpp>

#include "verdicts/ctest_entries.hpp"
#include "verdicts/verdict_store.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

SuiteConfig suite_in(const TempDir& dir) {
    SuiteConfig suite;
    suite.name = "billing";
    suite.evidence_dir = dir.path;
    return suite;
}

LedgerRow row(std::string test, std::string verdict, std::string gate, std::string reason) {
    LedgerRow r;
    r.test = std::move(test);
    r.verdict = verdict_named(verdict).value();
    r.gate = gate_named(gate).value();
    r.reason = std::move(reason);
    r.outcomes = {{"seed.0", "failed"}, {"seed.1", "passed"}};
    return r;
}

}  // namespace

TEST_CASE("each entry runs the verdict tool on the suite's store with its node id", "[ctest_entries]") {
    TempDir dir;
    const auto text = ctest_entries(suite_in(dir), {"t.py::a[x]==]y]", "t.py::b\n", "t.py::b\\x0A"}, "/opt/bin/evgate-verdict");
    const auto store = verdict_store_file(suite_in(dir)).string();
    CHECK_THAT(text, Catch::Contains("add_test([=[billing/t.py::a[x]==]y]]=] [[/opt/bin/evgate-verdict]] [[" + store +
                                     "]] [=[t.py::a[x]==]y]]=])"));
    CHECK_THAT(text, Catch::Contains("add_test([[billing/t.py::b\\x0A]] [[/opt/bin/evgate-verdict]] [[" + store + "]] [[t.py::b\n]])"));
    CHECK_THAT(text, Catch::Contains("add_test([[billing/t.py::b\\x0A (2)]] [[/opt/bin/evgate-verdict]] [[" + store +
                                     "]] [[t.py::b\\x0A]])"));
    CHECK_THAT(text, Catch::Contains("FAIL_REGULAR_EXPRESSION [[^block:]] SKIP_REGULAR_EXPRESSION [[^skipped:]]"));
}

TEST_CASE("the ledger step's store holds what each entry prints", "[ctest_entries]") {
    TempDir dir;
    auto deferred = row("t::q", "flaky", "defer", "differs (quarantined until 2026-06-01, owner ana)");
    deferred.until = "2026-06-01";
    deferred.owner = "ana";
    auto suite_row = row("collection", "stable", "pass", "3 tests collected");
    suite_row.suite_scope = true;
    write_verdict_store(suite_in(dir), {row("t::b", "order-dependent", "block", "follows the order"), deferred,
                                        row("t::s", "skipped", "pass", "skipped in every run"), suite_row});
    const auto store = verdict_store_file(suite_in(dir));
    CHECK(find_verdict(store, "t::b") == std::optional<std::string>("block: order-dependent: follows the order\n"
                                                                   "  seed.0: failed\n  seed.1: passed\n"));
    CHECK(find_verdict(store, "t::q") ==
          std::optional<std::string>("defer: flaky: differs (quarantined until 2026-06-01, owner ana)\n"
                                     "until 2026-06-01, owner ana\n  seed.0: failed\n  seed.1: passed\n"));
    CHECK_THAT(*find_verdict(store, "t::s"), Catch::StartsWith("skipped: skipped: skipped in every run\n"));
    CHECK_FALSE(find_verdict(store, "collection"));  // suite rows have no entry
}
