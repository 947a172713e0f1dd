#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>

#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "support.hpp"
#include "verdicts/gate.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

LoadedRun finished_run(const std::string& id, std::vector<std::string> order, const std::map<std::string, std::string>& outcomes,
                       const std::string& receipt_id = "r1") {
    LoadedRun r;
    r.plan.order = id;
    r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
    r.plan.tests = std::move(order);
    SessionInfo session;
    session.rootdir = "/";
    r.records.sessions.push_back(session);
    for (auto& [test, outcome] : outcomes) r.records.results[test].outcome = parse_outcome(outcome).value();
    r.records.finished = true;
    r.records.receipt = receipt_id;
    return r;
}

GateInput input_for(const std::vector<std::string>& tests) {
    GateInput input;
    input.receipt.id = "r1";
    input.receipt.rootdir = "/";
    input.root = "/";
    for (auto& t : tests) input.receipt.tests.push_back({t, false, {}, std::nullopt});
    input.today = Date{2026, 6, 1};
    return input;
}

const LedgerRow& row_of(const std::vector<LedgerRow>& rows, const std::string& test) {
    for (const auto& row : rows)
        if (row.test == test) return row;
    FAIL("no ledger row for " << test);
    throw;
}

bool has_row(const std::vector<LedgerRow>& rows, const std::string& test) {
    return std::any_of(rows.begin(), rows.end(), [&](const LedgerRow& row) { return row.test == test; });
}

}  // namespace

TEST_CASE("a clean suite passes and every row is written", "[gate]") {
    auto input = input_for({"t::a", "t::b"});
    input.runs = {finished_run("seed.0", {"t::a", "t::b"}, {{"t::a", "passed"}, {"t::b", "skipped"}})};
    input.expected_runs = {"seed.0"};
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "t::a").gate == Gate::pass);
    CHECK(row_of(rows, "t::b").verdict == Verdict::skipped);
    CHECK(row_of(rows, "collection").suite_scope);
    std::ostringstream out;
    CHECK(print_gate(out, "s", rows) == 0);
    CHECK_THAT(out.str(), Catch::Contains("-> PASSED"));
}

TEST_CASE("quarantine defers flaky and failing rows until the date, then blocks", "[gate]") {
    auto input = input_for({"t::f"});
    input.runs = {finished_run("seed.0", {"t::f"}, {{"t::f", "failed"}}),
                  finished_run("seed.1", {"t::f"}, {{"t::f", "failed"}})};
    input.quarantine = {{"t::f", Date{2026, 6, 1}, "ana", "ticket 12", 1}};
    auto rows = build_ledger(input);
    CHECK(row_of(rows, "t::f").verdict == Verdict::failing);
    CHECK(row_of(rows, "t::f").gate == Gate::defer);
    CHECK(row_of(rows, "t::f").until == std::optional<std::string>("2026-06-01"));
    CHECK(row_of(rows, "t::f").owner == std::optional<std::string>("ana"));

    input.today = Date{2026, 6, 2};
    rows = build_ledger(input);
    CHECK(row_of(rows, "t::f").gate == Gate::block);
    CHECK_THAT(row_of(rows, "t::f").reason, Catch::Contains("expired on 2026-06-01"));
}

TEST_CASE("quarantine never defers a polluter or an order dependence", "[gate]") {
    auto input = input_for({"t::v"});
    input.runs = {finished_run("seed.0", {"t::v"}, {{"t::v", "failed"}}),
                  finished_run("seed.1", {"t::v"}, {{"t::v", "passed"}})};
    input.quarantine = {{"t::v", Date{2099, 1, 1}, "ana", "", 1}};
    CHECK(row_of(build_ledger(input), "t::v").gate == Gate::block);
}

TEST_CASE("suite rows block on runs that did not finish, are missing or come from another receipt", "[gate]") {
    auto input = input_for({"t::a"});
    auto unfinished = finished_run("seed.1", {"t::a"}, {{"t::a", "passed"}});
    unfinished.records.finished = false;
    unfinished.records.finish_note = "gave up";
    LoadedRun stale;
    stale.plan.id = RunId::seed(2);
    stale.problem = "the run belongs to an earlier receipt (r0)";
    input.runs = {finished_run("seed.0", {"t::a"}, {{"t::a", "passed"}}), unfinished, stale};
    input.expected_runs = {"seed.0", "seed.1", "seed.2", "seed.3"};
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "run:seed.0").gate == Gate::pass);
    CHECK(row_of(rows, "run:seed.1").verdict == Verdict::interrupted);
    CHECK_THAT(row_of(rows, "run:seed.2").reason, Catch::Contains("earlier receipt"));
    CHECK(row_of(rows, "run:seed.3").verdict == Verdict::missing);
    std::ostringstream out;
    CHECK(print_gate(out, "s", rows) == 3);
    CHECK_THAT(out.str(), Catch::Contains("BLOCK run:seed.3: missing"));
}

TEST_CASE("a run that saw another rootdir or unknown tests blocks", "[gate]") {
    auto input = input_for({"t::a"});
    auto moved = finished_run("seed.0", {"t::a"}, {{"t::a", "passed"}});
    moved.records.sessions[0].rootdir = "/sub";
    auto extra = finished_run("seed.1", {"t::a"}, {{"t::a", "passed"}});
    extra.records.sessions[0].unlisted = {"t::new"};
    input.runs = {moved, extra};
    const auto rows = build_ledger(input);
    CHECK_THAT(row_of(rows, "run:seed.0").reason, Catch::Contains("rootdir '/sub'"));
    CHECK(row_of(rows, "run:seed.1").reason ==
          "the receipt lacks tests pytest collected in this run, so no run planned them: t::new (added since the receipt "
          "was taken, or collected in runs only)");
    // A test a hook took out of the receipt's collection: the row says who.
    input.receipt.deselected = {{"t::new", "conftest.py:8 (pytest_collection_modifyitems)"}};
    CHECK(row_of(build_ledger(input), "run:seed.1").reason ==
          "the receipt lacks tests pytest collected in this run, so no run planned them: t::new (deselected in the "
          "receipt's collection by conftest.py:8 (pytest_collection_modifyitems); in this run evidence-gate's order "
          "left it out, and the hook came after it)");
}

TEST_CASE("collection errors, an empty collection and a shrunken baseline block", "[gate]") {
    auto input = input_for({});
    CHECK(row_of(build_ledger(input), "collection").gate == Gate::block);
    input = input_for({"t::a"});
    input.receipt.errors = {"tests/test_b.py: ImportError"};
    CHECK_THAT(row_of(build_ledger(input), "collection").reason, Catch::Contains("ImportError"));
    input = input_for({"t::a"});
    input.baseline = Baseline{2, {"t::a", "t::b"}, true};
    input.baseline_file = "baseline.json";
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "baseline").gate == Gate::block);
    CHECK_THAT(row_of(rows, "baseline").reason, Catch::Contains("t::b") && Catch::Contains("expects 2"));
    input.baseline_tolerance = 1;
    CHECK(row_of(build_ledger(input), "baseline").gate == Gate::pass);
}

TEST_CASE("a configured baseline that was never written blocks, saying how to write it", "[gate]") {
    auto input = input_for({"t::a"});
    input.baseline_file = "evidence/b.json";
    CHECK_THAT(row_of(build_ledger(input), "baseline").reason, Catch::Contains("evgate baseline"));
}

TEST_CASE("the receipt row blocks on another rootdir or config; stray configs warn", "[gate]") {
    auto input = input_for({"t::a"});
    input.root = "/";
    input.receipt.rootdir = "/";
    input.receipt.configfile = "/tests/pytest.ini";
    input.receipt.expected_configfile = std::nullopt;
    input.receipt.stray_configs = {"src/pytest.ini"};
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "receipt").gate == Gate::block);
    CHECK_THAT(row_of(rows, "receipt").reason, Catch::Contains("/tests/pytest.ini"));
    CHECK(row_of(rows, "stray-config:src/pytest.ini").warning);
    CHECK(row_of(rows, "stray-config:src/pytest.ini").gate == Gate::pass);
}

TEST_CASE("the ledger is byte-identical for the same inputs and keeps every attempt", "[gate]") {
    auto input = input_for({"t::a"});
    input.runs = {finished_run("seed.0", {"t::a"}, {{"t::a", "passed"}}),
                  finished_run("seed.1", {"t::a"}, {{"t::a", "failed"}})};
    const auto text = ledger_jsonl(build_ledger(input));
    CHECK(text == ledger_jsonl(build_ledger(input)));
    CHECK_THAT(text, Catch::Contains(R"("outcomes":{"seed.0":"passed","seed.1":"failed"})"));
    CHECK_THAT(text, Catch::Contains(R"("scope":"suite")"));
}

TEST_CASE("tests with the same attempts are judged alike, each with its own quarantine, partner and command", "[gate]") {
    auto input = input_for({"t::q", "t::r", "t::s"});
    input.runs = {finished_run("seed.0", {"t::q", "t::r", "t::s"}, {{"t::q", "failed"}, {"t::r", "failed"}, {"t::s", "passed"}}),
                  finished_run("seed.1", {"t::s", "t::r", "t::q"}, {{"t::q", "failed"}, {"t::r", "failed"}, {"t::s", "passed"}})};
    input.quarantine = {{"t::q", Date{2026, 6, 1}, "ana", "ticket 12", 1}};
    input.evgate = "/bin/evgate";
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "t::q").gate == Gate::defer);
    CHECK(row_of(rows, "t::r").gate == Gate::block);
    CHECK(row_of(rows, "t::q").reason != row_of(rows, "t::r").reason);
    CHECK_THAT(*row_of(rows, "t::r").reproduce, Catch::Contains("--test t::r"));
    CHECK_THAT(*row_of(rows, "t::q").reproduce, Catch::Contains("--test t::q"));
    CHECK(row_of(rows, "t::s").verdict == Verdict::stable);
}

TEST_CASE("the gate read back from the ledger prints what the gate printed when it built it", "[gate]") {
    auto input = input_for({"t::a", "t::f", "t::q", "t::s"});
    input.runs = {finished_run("seed.0", {"t::a", "t::f", "t::q", "t::s"},
                               {{"t::a", "passed"}, {"t::f", "failed"}, {"t::q", "failed"}, {"t::s", "skipped"}}),
                  finished_run("seed.1", {"t::s", "t::q", "t::f", "t::a"},
                               {{"t::a", "passed"}, {"t::f", "failed"}, {"t::q", "failed"}, {"t::s", "skipped"}})};
    input.quarantine = {{"t::q", Date{2026, 6, 1}, "ana", "ticket 12", 1}};
    input.receipt.stray_configs = {"sub/pytest.ini"};
    input.runners = {"ci"};
    const auto rows = build_ledger(input);
    TempDir dir;
    write_file_atomic(dir.path / "ledger.jsonl", ledger_jsonl(rows));
    const auto read = read_gate_summary(dir.path / "ledger.jsonl");
    std::ostringstream built, printed;
    CHECK(print_gate(built, "s", rows) == print_gate(printed, "s", read));
    CHECK(summarize(rows).runs == read.runs);  // one count of runs, built or read back
    CHECK(printed.str() == built.str());
    CHECK_THAT(printed.str(), Catch::Contains("BLOCK t::f: failing") && Catch::Contains("DEFER t::q: failing") &&
                                  Catch::Contains("WARN stray-config:sub/pytest.ini"));
    CHECK(read.runs == 2);
    CHECK(read.runners == 1);
    CHECK(read.tests == 4);
    CHECK(read.deferred == 1);
}

TEST_CASE("the gate reads a ledger written with spaces too, and names file and line of a bad row", "[gate]") {
    TempDir dir;
    const auto file = dir.path / "ledger.jsonl";
    write_file_atomic(file, R"({ "test" : "t::a" , "verdict" : "failing" , "gate" : "block" , "reason" : "fails" , "outcomes" : { "seed.0" : "failed" , "seed.1" : "failed" } })"
                            "\n"
                            "\n"
                            R"({"test": "t::b", "verdict": "stable", "gate": "pass", "reason": "passes", "outcomes": {"seed.2": "passed"}})"
                            "\n");
    const auto read = read_gate_summary(file);
    CHECK(read.tests == 2);
    CHECK(read.blocked == 1);
    CHECK(read.runs == 3);
    REQUIRE(read.shown.size() == 1);
    CHECK(read.shown[0].reason == "fails");

    write_file_atomic(file, R"({"test":"t::a","verdict":"stable","gate":"pass"})"
                            "\n");
    CHECK_THROWS_WITH(read_gate_summary(file), file.string() + ":1: missing string 'reason'");
    write_file_atomic(file, R"({"test":"t::a","verdict":"stable","gate":"pass","reason":"r","until":1})"
                            "\n");
    CHECK_THROWS_WITH(read_gate_summary(file), file.string() + ":1: 'until' is not a string");
    write_file_atomic(file, R"({"test":"t::a","verdict":"stable","gate":"pass","reason":"r"})"
                            "\n{\"test\":");
    CHECK_THROWS_WITH(read_gate_summary(file), file.string() + ":2: torn last line");
    CHECK_THROWS_WITH(read_gate_summary(dir.path / "absent.jsonl"), Catch::Contains("the ledger step writes it"));
}

TEST_CASE("the gate reads back only the table's verdicts and gates: another word is an error, never a pass", "[gate]") {
    TempDir dir;
    const auto file = dir.path / "ledger.jsonl";
    write_file_atomic(file, R"({"test":"t::a","verdict":"stable","gate":"pass","reason":"r"})"
                            "\n"
                            R"({"test":"t::b","verdict":"failing","gate":"blocked","reason":"r"})"
                            "\n");
    CHECK_THROWS_WITH(read_gate_summary(file), file.string() + ":2: 'gate' is not pass, defer or block: 'blocked'");
    write_file_atomic(file, R"({"test":"t::a","verdict":"wobbly","gate":"block","reason":"r"})"
                            "\n");
    CHECK_THROWS_WITH(read_gate_summary(file), file.string() + ":1: 'verdict' is not a verdict: 'wobbly'");
}

TEST_CASE("one summary: the gate's counts, the verdicts in precedence order, the line the reports print", "[gate]") {
    auto input = input_for({"t::a", "t::f", "t::s"});
    input.runs = {finished_run("seed.0", {"t::a", "t::f", "t::s"}, {{"t::a", "passed"}, {"t::f", "failed"}, {"t::s", "skipped"}})};
    const auto summary = summarize(build_ledger(input));
    CHECK(summary.tests == 3);
    CHECK(summary.blocked == 1);
    CHECK(summary.passed() == 2);
    CHECK(summary.decision() == "BLOCKED");
    CHECK(summary.verdict_counts() ==
          std::vector<std::pair<Verdict, int>>{{Verdict::failing, 1}, {Verdict::skipped, 1}, {Verdict::stable, 1}});
    CHECK(summary_line(summary) == "3 tests over 1 run: 1 block, 0 defer, 2 pass");
    auto one = summary;
    one.tests = 1, one.blocked = 1, one.suite_blocks = 1, one.runs = 12;
    CHECK(summary_line(one) == "1 test over 12 runs: 1 block, 0 defer, 0 pass; 1 suite check blocks");
}

TEST_CASE("node ids collected more than once block the collection row, naming them", "[gate]") {
    auto input = input_for({"t.checks::a", "t.checks::b", "t.checks::a", "t.checks::a"});
    const auto duplicates = duplicate_ids(input.receipt);
    REQUIRE(duplicates.size() == 1);
    CHECK(duplicates.front() == std::pair<std::string, int>("t.checks::a", 3));
    const auto& row = row_of(receipt_rows(input), "collection");
    CHECK(row.gate == Gate::block);
    CHECK_THAT(row.reason, Catch::Contains("'t.checks::a' (3 times)"));
}

TEST_CASE("options that thin the run warn; options under which no test is called block", "[gate]") {
    auto input = input_for({"t::a"});
    input.receipt.thinning = {"-o python_functions=test_ok (PYTEST_ADDOPTS)"};
    auto rows = receipt_rows(input);
    CHECK(row_of(rows, "thinning").warning);
    CHECK(row_of(rows, "thinning").gate == Gate::pass);
    CHECK_THAT(row_of(rows, "thinning").reason, Catch::Contains("-o python_functions=test_ok (PYTEST_ADDOPTS)"));
    CHECK_THAT(row_of(rows, "thinning").reason, !Catch::Contains("deselected"));
    input.receipt.hollow = {"--setup-only (PYTEST_ARGS)"};
    rows = receipt_rows(input);
    CHECK(row_of(rows, "options").gate == Gate::block);
    CHECK_THAT(row_of(rows, "options").reason, Catch::Contains("--setup-only (PYTEST_ARGS)"));
}

TEST_CASE("what every run sets aside of the suite's own setup warns, one phrase per plugin", "[gate]") {
    auto input = input_for({"t::a"});
    CHECK_FALSE(has_row(receipt_rows(input), "set-aside"));
    input.receipt.set_aside = {"pytest's cache's --ff: off", "pytest-xdist's -n 4: one process"};
    const auto rows = receipt_rows(input);
    const auto& row = row_of(rows, "set-aside");
    CHECK(row.warning);
    CHECK(row.gate == Gate::pass);
    CHECK(row.reason == "warning: every run sets aside pytest's cache's --ff: off; pytest-xdist's -n 4: one process");
}

TEST_CASE("tests hooks took out of the receipt's collection warn, naming who, and PYTEST_PLUGINS", "[gate]") {
    auto input = input_for({"t::b"});
    CHECK_FALSE(has_row(receipt_rows(input), "thinning"));
    input.receipt.pytest_plugins = {"thinplug"};
    CHECK_FALSE(has_row(receipt_rows(input), "thinning"));  // loaded, but nothing thinned
    input.receipt.deselected = {{"t::a", "conftest.py:4 (pytest_collection_modifyitems)"},
                                {"t::c", "thinplug (pytest_collection_modifyitems)"},
                                {"t::d", ""},
                                {"t::e", "conftest.py:4 (pytest_collection_modifyitems)"}};
    const auto rows = receipt_rows(input);
    const auto& row = row_of(rows, "thinning");
    CHECK(row.warning);
    CHECK(row.gate == Gate::pass);
    CHECK(row.reason ==
          "warning: 4 test(s) deselected in the receipt's collection: t::a, t::e by conftest.py:4 "
          "(pytest_collection_modifyitems); t::c by thinplug (pytest_collection_modifyitems), a plugin PYTEST_PLUGINS "
          "loads; t::d by a hook that took it out of the items without pytest_deselected; PYTEST_PLUGINS in the "
          "environment loads thinplug (a baseline catches what they drop)");
}

TEST_CASE("quarantine entries for no collected test, or dated more than a year ahead, warn with file and line", "[gate]") {
    auto input = input_for({"t::a"});
    input.quarantine_file = "/evidence/quarantine.jsonl";
    input.runs = {finished_run("seed.0", {"t::a"}, {{"t::a", "passed"}})};
    input.quarantine = {{"t::gone", Date{2026, 7, 1}, "ana", "", 1},
                        {"t::a", Date{2027, 6, 1}, "ana", "", 2},  // a year to the day: fine
                        {"t::a", Date{2027, 6, 2}, "bob", "", 3},  // a day more
                        {"t::also_gone", Date{2099, 1, 1}, "cy", "", 4}};
    const auto rows = build_ledger(input);
    const auto& gone = row_of(rows, "quarantine:evidence/quarantine.jsonl:1");
    CHECK(gone.warning);
    CHECK(gone.gate == Gate::pass);
    CHECK_THAT(gone.reason, Catch::Contains("'t::gone'") && Catch::Contains("matches no collected test"));
    const auto& far = row_of(rows, "quarantine:evidence/quarantine.jsonl:3");
    CHECK_THAT(far.reason, Catch::Contains("until 2027-06-02") && Catch::Contains("more than a year after today (2026-06-01)"));
    const auto& both = row_of(rows, "quarantine:evidence/quarantine.jsonl:4");
    CHECK_THAT(both.reason, Catch::Contains("matches no collected test") && Catch::Contains("more than a year"));
    CHECK(std::none_of(rows.begin(), rows.end(), [](const LedgerRow& r) { return r.test == "quarantine:evidence/quarantine.jsonl:2"; }));
    std::ostringstream out;
    CHECK(print_gate(out, "s", rows) == 0);
}

TEST_CASE("every test skipped in every run is named, those whose reason points at the sandbox apart", "[gate]") {
    const std::vector<std::string> ids = {"t::ini", "t::tilde", "t::env", "t::platform", "t::sometimes", "t::tmp", "t::brew"};
    auto input = input_for(ids);
    input.home = "/home/ana";
    input.receipt.sandbox_dir = "/b/evidence/s/sandbox";
    input.receipt.sandboxed = {"HOME", "TMPDIR", "XDG_CONFIG_HOME"};
    RunMatrix runs;
    for (const char* seed : {"seed.0", "seed.1"}) {
        auto r = finished_run(seed, ids, {});
        const auto skip = [&](const std::string& id, const std::string& message) {
            r.records.results[id].outcome = Outcome::skipped;
            r.records.results[id].message = message;
        };
        skip("t::ini", "/b/evidence/s/sandbox/" + std::string(seed) + "/home/.myapp.ini is absent");
        skip("t::tilde", "needs ~/.config/app");
        skip("t::env", "$HOME has no .netrc");
        skip("t::platform", "not on this platform");
        if (std::string(seed) == "seed.0") skip("t::sometimes", "needs ~/.config/app");
        else r.records.results["t::sometimes"].outcome = Outcome::passed;
        skip("t::tmp", "TMPDIR is not writable");
        skip("t::brew", "HOMEBREW_PREFIX is not set");
        runs.add(r);
    }
    input.runs = std::move(runs);
    auto rows = build_ledger(input);
    const auto& sandbox = row_of(rows, "sandbox");
    CHECK(sandbox.warning);
    CHECK(sandbox.gate == Gate::pass);
    CHECK(sandbox.suite_scope);
    CHECK_THAT(sandbox.reason, Catch::StartsWith("warning: 6 test(s) skipped in every run"));
    CHECK(sandbox.tests == std::vector<std::string>{"t::ini", "t::tilde", "t::env", "t::platform", "t::tmp", "t::brew"});
    CHECK_THAT(sandbox.reason, Catch::Contains("t::platform ('not on this platform')"));
    CHECK_THAT(sandbox.reason, Catch::Contains("every run has its own empty HOME, TMPDIR, XDG_CONFIG_HOME (below '/b/evidence/s/sandbox')"));
    CHECK_THAT(sandbox.reason, Catch::Contains("4 of them for a reason that points at the home or temp dir (t::ini, t::tilde, t::env, t::tmp)"));
    CHECK_THAT(sandbox.reason, Catch::Contains("your own HOME ('/home/ana')"));
    CHECK_THAT(sandbox.reason, !Catch::Contains("t::sometimes"));
    CHECK_THAT(ledger_jsonl({sandbox}), Catch::Contains(R"("tests":["t::ini","t::tilde","t::env","t::platform","t::tmp","t::brew"])"));
    // Suite rows come first: the sandbox row sits before the first test row.
    const auto at = std::find_if(rows.begin(), rows.end(), [](const LedgerRow& r) { return r.test == "sandbox"; });
    CHECK(std::all_of(rows.begin(), at, [](const LedgerRow& r) { return r.suite_scope; }));

    // A suite that pins HOME with ENVIRONMENT: the tests are still named, and a skip about the
    // home directory is its own doing.
    input.receipt.sandboxed = {"TMPDIR"};
    rows = build_ledger(input);
    CHECK_THAT(row_of(rows, "sandbox").reason, Catch::StartsWith("warning: 6 test(s)") &&
                                                   Catch::Contains("2 of them for a reason that points at the home or temp dir (t::ini, t::tmp)"));
    input.receipt.sandboxed = {};
    input.receipt.sandbox_dir = "/elsewhere";
    rows = build_ledger(input);
    CHECK_THAT(row_of(rows, "sandbox").reason, Catch::Contains("the suite pins what the sandbox would replace") &&
                                                   !Catch::Contains("points at") && !Catch::Contains("plain pytest"));
}

TEST_CASE("a test skipped in every run of this machine is named, one that ran here once is not", "[gate]") {
    auto input = input_for({"t::local", "t::perturbed"});
    auto seed = finished_run("seed.0", {"t::local", "t::perturbed"}, {{"t::local", "skipped"}, {"t::perturbed", "skipped"}});
    auto perturbed = finished_run("perturbed", {"t::local", "t::perturbed"}, {{"t::local", "skipped"}, {"t::perturbed", "failed"}});
    perturbed.plan.column = Column::perturbed;
    auto runner = finished_run("ci", {"t::local", "t::perturbed"}, {{"t::local", "passed"}, {"t::perturbed", "passed"}});
    runner.plan.column = Column::runner;
    RunMatrix runs;
    for (auto* r : {&seed, &perturbed, &runner}) runs.add(std::move(*r));
    input.runs = std::move(runs);
    const auto rows = build_ledger(input);
    CHECK(row_of(rows, "sandbox").tests == std::vector<std::string>{"t::local"});  // another machine's home is not ours
}

TEST_CASE("env_sensitive markers dated more than a year ahead warn, as quarantine entries do", "[gate]") {
    auto input = input_for({"t::far", "t::near", "t::bad", "t::none"});
    input.receipt.tests[0].env_sensitive = EnvSensitive{"9999-12-31", "qa", "TZ"};
    input.receipt.tests[1].env_sensitive = EnvSensitive{"2027-06-01", "qa", "TZ"};  // a year and no more
    input.receipt.tests[2].env_sensitive = EnvSensitive{"someday", "qa", ""};
    input.runs = {finished_run("seed.0", {"t::far", "t::near", "t::bad", "t::none"},
                               {{"t::far", "passed"}, {"t::near", "passed"}, {"t::bad", "passed"}, {"t::none", "passed"}})};
    input.expected_runs = {"seed.0"};
    const auto rows = build_ledger(input);
    const auto& far = row_of(rows, "env_sensitive:t::far");
    CHECK(far.warning);
    CHECK(far.gate == Gate::pass);
    CHECK_THAT(far.reason, Catch::Contains("'t::far' (until 9999-12-31, owner qa) is dated more than a year after today (2026-06-01)"));
    for (const char* quiet : {"env_sensitive:t::near", "env_sensitive:t::bad", "env_sensitive:t::none"})
        CHECK(std::none_of(rows.begin(), rows.end(), [&](const LedgerRow& r) { return r.test == quiet; }));
    std::ostringstream out;
    CHECK(print_gate(out, "s", rows) == 0);
    CHECK_THAT(out.str(), Catch::Contains("WARN env_sensitive:t::far: "));
}

TEST_CASE("a config chosen by an option blocks the receipt naming the option, a stray one as a stray", "[gate]") {
    auto input = input_for({"t::a"});
    input.receipt.configfile = "/src/ci.ini";
    input.receipt.expected_configfile = "/src/pytest.ini";
    CHECK_THAT(row_of(receipt_rows(input), "receipt").reason, Catch::Contains("a stray config file re-rooted collection"));
    input.receipt.thinning = {"-k fast (PYTEST_ARGS)", "-c ci.ini (PYTEST_ADDOPTS)"};
    const auto rows = receipt_rows(input);
    CHECK(row_of(rows, "receipt").gate == Gate::block);
    CHECK_THAT(row_of(rows, "receipt").reason, Catch::Contains("an option chose another config, and with it other tests: "
                                                               "-c ci.ini (PYTEST_ADDOPTS)") &&
                                                   !Catch::Contains("-k fast"));
    CHECK_THAT(row_of(rows, "thinning").reason, Catch::Contains("-c ci.ini (PYTEST_ADDOPTS)"));
}

TEST_CASE("an option naming the config or rootdir pytest would choose anyway is no thinning", "[gate]") {
    auto input = input_for({"t::a"});
    input.receipt.thinning = {"-c pytest.ini (addopts)", "--rootdir . (PYTEST_ARGS)"};
    CHECK_FALSE(has_row(receipt_rows(input), "thinning"));
    input.receipt.thinning.push_back("-k fast (PYTEST_ADDOPTS)");
    const auto rows = receipt_rows(input);
    CHECK_THAT(row_of(rows, "thinning").reason, Catch::Contains("-k fast") && !Catch::Contains("-c pytest.ini"));
    // Another rootdir: the blocking row names the option too.
    input.receipt.rootdir = "/elsewhere";
    input.receipt.thinning = {"--rootdir /elsewhere (PYTEST_ADDOPTS)"};
    const auto moved = receipt_rows(input);
    CHECK(row_of(moved, "receipt").gate == Gate::block);
    CHECK_THAT(row_of(moved, "receipt").reason, Catch::Contains("--rootdir /elsewhere (PYTEST_ADDOPTS)"));
    CHECK_THAT(row_of(moved, "thinning").reason, Catch::Contains("--rootdir /elsewhere"));
}

TEST_CASE("a flaky row replays the order it ran in: a seed's by its number, a sweep's by its tests", "[gate]") {
    auto input = input_for({"t::a", "t::p", "t::v"});
    auto sweep = finished_run("sweep.1", {"t::p", "t::a", "t::v"}, {{"t::p", "passed"}, {"t::a", "failed"}, {"t::v", "passed"}});
    auto again = finished_run("sweep.1.rerun.1", {"t::p", "t::a"}, {{"t::p", "passed"}, {"t::a", "passed"}});
    again.plan.order = "sweep.1";
    sweep.plan.listed = again.plan.listed = true;  // as sweep_plan and sweep_reruns make them
    auto seed = finished_run("seed.2", {"t::v", "t::p", "t::a"}, {{"t::v", "failed"}, {"t::p", "passed"}, {"t::a", "passed"}});
    auto seed_again = finished_run("seed.2.rerun.1", {"t::v"}, {{"t::v", "passed"}});
    seed_again.plan.order = "seed.2";
    seed.plan.seed = seed_again.plan.seed = 2;
    input.runs = {finished_run("seed.0", {"t::a", "t::p", "t::v"}, {{"t::a", "passed"}, {"t::p", "passed"}, {"t::v", "passed"}}),
                  seed, seed_again, sweep, again};
    input.evgate = "/bin/evgate";
    const auto rows = build_ledger(input);
    REQUIRE(row_of(rows, "t::a").verdict == Verdict::flaky);
    const auto& from_sweep = *row_of(rows, "t::a").reproduce;
    CHECK_THAT(from_sweep, Catch::Contains("--test t::p --test t::a"));
    CHECK_THAT(from_sweep, !Catch::Contains("--through"));
    REQUIRE(row_of(rows, "t::v").verdict == Verdict::flaky);
    CHECK_THAT(*row_of(rows, "t::v").reproduce, Catch::Contains("--seed 2 --through t::v"));
}
