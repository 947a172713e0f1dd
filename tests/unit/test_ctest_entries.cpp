#include <catch2/catch.hpp>

#include "support.hpp"
#include "verdicts/ctest_entries.hpp"
#include "verdicts/verdict_store.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

SuiteConfig suite_in(const TempDir& dir) {
    SuiteConfig suite;
    suite.name = "billing";
    suite.evidence_dir = dir.path;
    return suite;
}

LedgerRow row(std::string test, const std::string& verdict, const std::string& gate, std::string reason) {
    LedgerRow r;
    r.test = std::move(test);
    r.verdict = verdict_named(verdict).value();
    r.gate = gate_named(gate).value();
    r.reason = std::move(reason);
    r.outcomes = {{"seed.0", Outcome::failed}, {"seed.1", Outcome::passed}};
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
    // The verdict is the exit status: no output regex, whose failure reason ctest would print instead of ours.
    CHECK_THAT(text, Catch::Contains("SKIP_RETURN_CODE 77 TIMEOUT 60)"));
    CHECK_THAT(text, !Catch::Contains("REGULAR_EXPRESSION"));
}

TEST_CASE("the ledger step's store holds what each entry prints and its exit status", "[ctest_entries]") {
    TempDir dir;
    auto deferred = row("t::q", "flaky", "defer", "differs (quarantined until 2026-06-01, owner ana)");
    deferred.until = "2026-06-01";
    deferred.owner = "ana";
    auto suite_row = row("collection", "stable", "pass", "3 tests collected");
    suite_row.suite_scope = true;
    write_verdict_store(suite_in(dir), {row("t::b", "order-dependent", "block", "fails after t::a\nin seed.0"), deferred,
                                        row("t::s", "skipped", "pass", "skipped in every run"),
                                        row("t::p", "stable", "pass", "passed in every run"), suite_row});
    const auto store = verdict_store_file(suite_in(dir));
    // The first line is the ledger's reason (one line, whatever it holds), and so is the completion status.
    const auto blocked = entry_output(store, "t::b");
    CHECK(blocked.status == 1);
    CHECK(blocked.text ==
          "order-dependent: fails after t::a\\x0Ain seed.0\ngate: block\n  seed.0: failed\n  seed.1: passed\n"
          "<CTestDetails>order-dependent: fails after t::a\\x0Ain seed.0</CTestDetails>\n");
    const auto defers = entry_output(store, "t::q");
    CHECK(defers.status == 0);
    CHECK(defers.text ==
          "flaky: differs (quarantined until 2026-06-01, owner ana)\ngate: defer\n"
          "until 2026-06-01, owner ana\n  seed.0: failed\n  seed.1: passed\n"
          "<CTestDetails>flaky: differs (quarantined until 2026-06-01, owner ana)</CTestDetails>\n");
    const auto skipped = entry_output(store, "t::s");
    CHECK(skipped.status == kSkippedEntry);
    CHECK_THAT(skipped.text, Catch::StartsWith("skipped: skipped in every run\n"));
    CHECK(entry_output(store, "t::p").status == 0);
    CHECK_FALSE(find_verdict(store, "collection"));  // suite rows have no entry
}
