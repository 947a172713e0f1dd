#include <catch2/catch.hpp>

#include <filesystem>

#include "history_support.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "io/timestamp.hpp"
#include "reports/history.hpp"
#include "reports/history_pages.hpp"
#include "support.hpp"
#include "verdicts/verdict_table.hpp"

using namespace evgate;
using evgate::test::RunSpec;
using evgate::test::TempDir;
namespace fs = std::filesystem;

namespace {

RunPlace at(const std::string& suite, int hour, const std::string& commit = "") {
    RunPlace p;
    p.suite = suite;
    p.source = suite + "@" + std::to_string(hour);
    p.time = *parse_iso_time("2026-12-01T" + std::string(hour < 10 ? "0" : "") + std::to_string(hour) + ":00:00Z");
    p.commit = commit;
    return p;
}

// Rows that point into `keep`, which must outlive them.
std::vector<HistoryRow> rows(std::vector<std::string>& keep, const std::vector<std::pair<std::string, std::string>>& spec) {
    keep.clear();
    for (const auto& [test, verdict] : spec) keep.push_back(test), keep.push_back(verdict);
    std::vector<HistoryRow> out;
    for (std::size_t i = 0; i < keep.size(); i += 2) {
        const bool pass = keep[i + 1] == "stable" || keep[i + 1] == "skipped";
        out.push_back({keep[i], keep[i + 1], pass ? "pass" : "block", keep[i].rfind("run:", 0) == 0});
    }
    return out;
}

const Track& track(const History& h, const std::string& suite, const std::string& test) {
    const auto& s = h.suites()[*h.suite_index(suite)];
    return s.test_tracks[*s.tests.find(test)];
}

std::string sequence(const History& h, const std::string& suite, const std::string& test) {
    return verdict_sequence(h, track(h, suite, test), 20);
}

// The test ids of history.json in their order.
std::vector<std::string> json_order(const std::string& json) {
    const auto doc = parse_json(json, "history.json");
    std::vector<std::string> ids;
    for (const auto& t : doc["tests"].GetArray()) ids.emplace_back(t["test"].GetString());
    return ids;
}

}  // namespace

TEST_CASE("flips: changes of verdict between consecutive runs of the test, in stretches", "[history]") {
    History h;
    std::vector<std::string> keep;
    h.add(at("billing", 1, "c1"), rows(keep, {{"t::coin", "stable"}, {"t::steady", "stable"}, {"t::broken", "failing"}}));
    h.add(at("billing", 2, "c2"), rows(keep, {{"t::coin", "flaky"}, {"t::steady", "stable"}, {"t::broken", "failing"}}));
    h.add(at("billing", 3, "c3"), rows(keep, {{"t::coin", "flaky"}, {"t::steady", "stable"}, {"t::broken", "failing"}}));
    h.add(at("billing", 4, "c4"), rows(keep, {{"t::coin", "stable"}, {"t::steady", "stable"}, {"t::broken", "flaky"}}));

    const auto& coin = track(h, "billing", "t::coin");
    CHECK(coin.flips() == 2);
    CHECK(coin.runs() == 4);
    CHECK(coin.bad == 2);
    CHECK(coin.first_bad == 1u);
    CHECK(coin.last_bad == 2u);
    CHECK(sequence(h, "billing", "t::coin") ==
          "stable \xE2\x86\x92 flaky \xC3\x97"
          "2 \xE2\x86\x92 stable");
    REQUIRE(coin.stretches.size() == 3);
    CHECK(coin.stretches[1].from == 1);
    CHECK(coin.stretches[1].to == 2);
    CHECK(coin.stretches[1].runs == 2);
    // A change between two bad verdicts is a flip too.
    CHECK(track(h, "billing", "t::broken").flips() == 1);
    CHECK(track(h, "billing", "t::broken").bad == 4);
    CHECK(track(h, "billing", "t::steady").flips() == 0);
    CHECK(track(h, "billing", "t::steady").bad == 0);
    CHECK_FALSE(track(h, "billing", "t::steady").first_bad);

    const auto ranked = ranked_tests(h);
    const auto& suite = h.suites()[0];
    REQUIRE(ranked.size() == 3);
    CHECK(suite.tests.name(ranked[0].test) == "t::coin");    // 2 flips
    CHECK(suite.tests.name(ranked[1].test) == "t::broken");  // 1 flip
    CHECK(suite.tests.name(ranked[2].test) == "t::steady");
}

TEST_CASE("flips count between the test's own runs: other suites' runs and absences do not break a stretch", "[history]") {
    History h;
    std::vector<std::string> keep;
    h.add(at("billing", 1), rows(keep, {{"t::a", "stable"}, {"t::old", "flaky"}}));
    h.add(at("ledger", 2), rows(keep, {{"t::a", "failing"}}));                        // another suite's t::a: another test
    h.add(at("billing", 3), rows(keep, {{"t::a", "stable"}, {"t::new", "stable"}}));  // t::old renamed to t::new
    h.add(at("billing", 4), rows(keep, {{"t::a", "stable"}, {"t::old", "flaky"}, {"t::new", "stable"}}));

    CHECK(track(h, "billing", "t::a").flips() == 0);
    CHECK(track(h, "billing", "t::a").runs() == 3);
    CHECK(track(h, "ledger", "t::a").bad == 1);
    const auto& old = track(h, "billing", "t::old");
    CHECK(old.flips() == 0);  // flaky, gone for a run, flaky again: no change between its runs
    CHECK(old.runs() == 2);
    REQUIRE(old.stretches.size() == 2);  // but the stretches say which runs had it
    CHECK(old.stretches[0].to == 0);
    CHECK(old.stretches[1].from == 3);
    CHECK(old.stretches[1].after_gap);
    CHECK(sequence(h, "billing", "t::old") == "flaky \xE2\x86\x92 (absent) \xE2\x86\x92 flaky");
    REQUIRE(track(h, "billing", "t::a").stretches.size() == 1);  // the other suite's run between is no gap
    CHECK_FALSE(track(h, "billing", "t::a").stretches[0].after_gap);
    CHECK(h.suites().size() == 2);
    CHECK(h.runs()[1].suite == *h.suite_index("ledger"));
}

TEST_CASE("suite rows are checks of their suite, apart from the tests; a row listed twice counts once", "[history]") {
    History h;
    std::vector<std::string> keep;
    h.add(at("billing", 1), rows(keep, {{"run:seed.1", "interrupted"}, {"t::a", "stable"}, {"t::a", "failing"}}));
    h.add(at("billing", 2), rows(keep, {{"run:seed.1", "stable"}, {"t::a", "stable"}}));
    const auto& suite = h.suites()[0];
    CHECK(suite.test_tracks.size() == 1);
    REQUIRE(suite.checks.find("run:seed.1"));
    const auto& check = suite.check_tracks[*suite.checks.find("run:seed.1")];
    CHECK(check.flips() == 1);
    CHECK(check.bad == 1);
    CHECK(track(h, "billing", "t::a").flips() == 0);
    CHECK(h.runs()[0].tests == 1);
    CHECK(h.runs()[0].checks_blocking == 1);
    CHECK(h.runs()[0].blocked());
    CHECK_FALSE(h.runs()[1].blocked());
}

TEST_CASE("read_history_rows: test, scope, verdict and gate, wherever the scope stands", "[history]") {
    TempDir dir;
    const auto ledger = dir.path / "ledger.jsonl";
    write_file_atomic(ledger,
                      R"({"test":"receipt","scope":"suite","verdict":"stable","gate":"pass","reason":"ok"})"
                      "\n"
                      R"({"test":"t::scope","verdict":"flaky","gate":"defer","reason":"says \"scope\" in words","outcomes":{"scope":"failed"}})"
                      "\n"
                      R"({"test":"run:seed.3","verdict":"interrupted","gate":"block","reason":"died","scope":"suite"})"
                      "\n"
                      "\n"
                      R"({"verdict":"stable","gate":"pass","test":"t::b","reason":"ok"})"
                      "\n");
    std::string text;
    std::vector<HistoryRow> rows;
    read_history_rows(ledger, text, rows);
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].suite_scope);
    CHECK_FALSE(rows[1].suite_scope);
    CHECK(rows[1].test == "t::scope");
    CHECK(rows[1].gate == "defer");
    CHECK(rows[2].suite_scope);  // its scope comes after the gate: the row is read whole
    CHECK(rows[2].test == "run:seed.3");
    CHECK(rows[3].test == "t::b");
    CHECK(rows[3].verdict == "stable");
    CHECK(rows[3].orders == 0);  // a ledger before orders were counted
}

TEST_CASE("read_history_rows: the distinct orders a verdict stood on, right after its gate", "[history]") {
    TempDir dir;
    const auto ledger = dir.path / "ledger.jsonl";
    write_file_atomic(ledger, R"({"test":"t::a","verdict":"order-dependent","gate":"block","orders":17,"reason":"r","outcomes":{"seed.0":"passed"}})"
                              "\n"
                              R"({"test":"t::b","verdict":"stable","gate":"pass","reason":"r","orders":3})"
                              "\n");
    std::string text;
    std::vector<HistoryRow> rows;
    read_history_rows(ledger, text, rows);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].orders == 17);
    CHECK(rows[1].orders == 0);  // after the reason: not read (a ledger writes it right after the gate)
}

TEST_CASE("read_history_rows: what is not a ledger is named by file and line", "[history]") {
    TempDir dir;
    const auto ledger = dir.path / "ledger.jsonl";
    std::string text;
    std::vector<HistoryRow> rows;
    const auto fails = [&](const std::string& content, const std::string& message) {
        write_file_atomic(ledger, content);
        CHECK_THROWS_WITH(read_history_rows(ledger, text, rows), Catch::Contains(message));
    };
    fails("{\"test\":\"t::a\",\"verdict\":\"stable\",\"gate\":\"pass\"}\nnot json\n", ledger.string() + ":2: column 2: not valid JSON");
    fails("{\"test\":\"t::a\",\"gate\":\"pass\"}\n", ledger.string() + ":1: missing string 'verdict'");
    fails("{\"test\":\"t::a\",\"verdict\":3,\"gate\":\"pass\"}\n", ":1: 'verdict' is not a string");
    fails("[1,2]\n", ":1: not a JSON object");
    fails("{\"test\":\"t::a\",\"verdict\":\"stable\",\"gate\":\"pass\"}\n{\"test\":\"t::b\",\"verd", ":2: torn last line");
    fails("\n\n", "holds no rows");
}

TEST_CASE("place_run: by junit.xml's head, else the receipt and its mtime, else a bare ledger's mtime", "[history]") {
    TempDir dir;
    RunSpec spec;
    spec.rows = {{"t::a", "stable"}};
    spec.timestamp = "2026-12-01T10:00:00.000000Z";
    test::write_evidence(dir.path / "full", spec);
    auto p = place_run(dir.path / "full");
    CHECK(p.time_from == "junit.xml");
    CHECK(iso_time(p.time) == "2026-12-01T10:00:00.000000Z");
    CHECK(p.suite == "billing");
    CHECK(p.receipt == "r1");
    CHECK(p.commit == "c1");
    CHECK(p.branch == "main");
    CHECK(p.host == "ci-1");
    CHECK_FALSE(p.bare);

    spec.timestamp.clear();
    spec.receipt = "r2";
    test::write_evidence(dir.path / "old", spec);
    test::set_mtime(dir.path / "old" / "receipt.json", 1'700'000'000);
    p = place_run(dir.path / "old" / "ledger.jsonl");  // a ledger.jsonl with its receipt beside is its directory
    CHECK(p.time_from == "receipt.json mtime");
    CHECK(p.time == TimePoint(std::chrono::seconds(1'700'000'000)));
    CHECK(p.receipt == "r2");

    write_file_atomic(dir.path / "ci-41.jsonl", test::ledger_text({{"t::a", "flaky"}}));
    test::set_mtime(dir.path / "ci-41.jsonl", 1'600'000'000);
    p = place_run(dir.path / "ci-41.jsonl");
    CHECK(p.bare);
    CHECK(p.time_from == "ledger.jsonl mtime");
    CHECK(p.time == TimePoint(std::chrono::seconds(1'600'000'000)));
    CHECK(p.suite.empty());

    CHECK_THROWS_WITH(place_run(dir.path / "nothing"), "it does not exist");
    fs::create_directories(dir.path / "empty");
    CHECK_THROWS_WITH(place_run(dir.path / "empty"), "no ledger.jsonl in it");
    write_file_atomic(dir.path / "full" / "receipt.json", "{not json");
    fs::remove(dir.path / "full" / "junit.xml");
    CHECK_THROWS_WITH(place_run(dir.path / "full"), Catch::Contains("receipt.json:1: column 2: not valid JSON"));
}

TEST_CASE("read_history: any order in, time order out; the unreadable named and skipped; duplicates once", "[history]") {
    TempDir dir;
    const auto add = [&](const std::string& name, const std::string& receipt, int hour,
                         std::vector<std::pair<std::string, std::string>> rows) {
        RunSpec spec;
        spec.receipt = receipt;
        spec.commit = "commit-" + receipt;
        spec.timestamp = "2026-12-01T0" + std::to_string(hour) + ":00:00.000000Z";
        spec.rows = std::move(rows);
        test::write_evidence(dir.path / "artifacts" / name, spec);
    };
    add("zz", "r1", 1, {{"t::coin", "stable"}, {"t::a", "stable"}});
    add("aa", "r3", 3, {{"t::coin", "stable"}, {"t::a", "stable"}});
    add("mm", "r2", 2, {{"t::coin", "flaky"}, {"t::a", "stable"}});
    add("torn", "r4", 4, {{"t::coin", "flaky"}});
    write_file_atomic(dir.path / "artifacts" / "torn" / "ledger.jsonl", "{\"test\":\"t::coin\",\"verd");
    fs::create_directories(dir.path / "copy");
    fs::copy(dir.path / "artifacts" / "mm", dir.path / "copy" / "mm");  // the same run, downloaded twice

    const auto h = read_history({(dir.path / "artifacts").string(), (dir.path / "copy" / "mm").string(),
                                 (dir.path / "missing").string()});
    REQUIRE(h.runs().size() == 3);
    CHECK(h.runs()[0].place.receipt == "r1");
    CHECK(h.runs()[1].place.receipt == "r2");
    CHECK(h.runs()[2].place.receipt == "r3");
    CHECK(sequence(h, "billing", "t::coin") == "stable \xE2\x86\x92 flaky \xE2\x86\x92 stable");
    CHECK(track(h, "billing", "t::coin").flips() == 2);
    REQUIRE(h.left_out().size() == 2);
    CHECK(h.left_out()[0].first == (dir.path / "missing").string());
    CHECK(h.left_out()[0].second == "it does not exist");
    CHECK(h.left_out()[1].first == (dir.path / "artifacts" / "torn").string());
    CHECK_THAT(h.left_out()[1].second, Catch::Contains("torn last line"));
    REQUIRE(h.notes().size() == 1);
    CHECK_THAT(h.notes()[0], Catch::Contains("is the same run as") && Catch::Contains("(receipt r2)"));
}

TEST_CASE("read_history: ledgers without a receipt join the one suite the receipts name, or --suite's", "[history]") {
    TempDir dir;
    RunSpec spec;
    spec.timestamp = "2026-12-01T05:00:00.000000Z";
    spec.rows = {{"t::a", "flaky"}};
    test::write_evidence(dir.path / "with-receipt", spec);
    write_file_atomic(dir.path / "bare.jsonl", test::ledger_text({{"t::a", "stable"}}));
    test::set_mtime(dir.path / "bare.jsonl", 1'000'000'000);  // 2001: before the other run

    auto h = read_history({(dir.path / "with-receipt").string(), (dir.path / "bare.jsonl").string()});
    REQUIRE(h.suites().size() == 1);
    CHECK(track(h, "billing", "t::a").flips() == 1);
    CHECK(h.runs()[0].place.time_from == "ledger.jsonl mtime");
    CHECK_THAT(h.notes().at(0), Catch::Contains("taken as suite 'billing'"));

    HistoryOptions options;
    options.suite = "other";
    h = read_history({(dir.path / "with-receipt").string(), (dir.path / "bare.jsonl").string()}, options);
    CHECK(h.suites().size() == 2);
    CHECK(track(h, "other", "t::a").runs() == 1);
}

TEST_CASE("expand_inputs: an evidence tree and an archive, two levels down, without hidden entries", "[history]") {
    TempDir dir;
    RunSpec spec;
    spec.rows = {{"t::a", "stable"}};
    test::write_evidence(dir.path / "build" / "evidence" / "billing", spec);
    test::write_evidence(dir.path / "archive" / "billing" / "20261201T000000.000000Z-c1-r1", spec);
    test::write_evidence(dir.path / "archive" / "billing" / ".tmp-being-written", spec);
    fs::create_directories(dir.path / "archive" / "billing" / "20261201T000000.000000Z-c1-r0");  // no ledger: not a run
    fs::create_directories(dir.path / "nothing" / "a" / "b" / "c");
    test::write_evidence(dir.path / "nothing" / "a" / "b" / "c", spec);  // three levels: too deep

    const auto inputs = expand_inputs({(dir.path / "build" / "evidence").string(), (dir.path / "archive").string(),
                                       (dir.path / "nothing").string()});
    CHECK(inputs.runs == std::vector<fs::path>{dir.path / "build" / "evidence" / "billing",
                                               dir.path / "archive" / "billing" / "20261201T000000.000000Z-c1-r1"});
    REQUIRE(inputs.left_out.size() == 1);
    CHECK(inputs.left_out[0].first == (dir.path / "nothing").string());
}

TEST_CASE("timestamps: written in UTC with microseconds, read with any offset", "[history]") {
    const auto t = parse_iso_time("2026-12-01T14:25:12.1234567Z");
    REQUIRE(t);
    CHECK(iso_time(*t) == "2026-12-01T14:25:12.123456Z");
    CHECK(compact_time(*t) == "20261201T142512.123456Z");
    CHECK(parse_iso_time("2026-12-01T16:25:12.123456+02:00") == t);
    CHECK(parse_iso_time("2026-12-01T14:25:12.123456") == t);  // pytest's naive time: taken as UTC
    for (const char* bad : {"", "2026-12-01", "2026-13-01T00:00:00Z", "2026-12-01T14:25:12.Z", "2026-12-01T14:25:12Zx",
                            "2026-12-01T14:25:12+2:00", "yesterday", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z"})
        CHECK_FALSE(parse_iso_time(bad));
}

TEST_CASE("history.json: the contract's fields, tests by flips, every stretch and where it was bad", "[history]") {
    History h;
    std::vector<std::string> keep;
    auto p = at("billing", 1, "c1");
    p.host = "ci-1";
    h.add(p, rows(keep, {{"run:seed.1", "stable"}, {"t::a", "stable"}, {"t::coin", "stable"}}));
    h.add(at("billing", 2, "c2"), rows(keep, {{"run:seed.1", "interrupted"}, {"t::a", "stable"}, {"t::coin", "flaky"}}));
    h.leave_out("dl/run-9", "ledger.jsonl:3: torn last line");
    const auto json = history_json(h);
    const auto doc = parse_json(json, "history.json");
    CHECK(doc["runs"].GetInt() == 2);
    CHECK(json_order(json) == std::vector<std::string>{"t::coin", "t::a"});
    const auto& coin = doc["tests"][0];
    CHECK(coin["runs"].GetInt() == 2);
    CHECK(coin["flips"].GetInt() == 1);
    CHECK(coin["bad"].GetInt() == 1);
    CHECK(coin["suite"].GetString() == std::string("billing"));
    REQUIRE(coin["verdicts"].Size() == 2);
    CHECK(coin["verdicts"][1]["verdict"].GetString() == std::string("flaky"));
    CHECK(coin["verdicts"][1]["from"].GetInt() == 1);
    CHECK(coin["counts"]["flaky"].GetInt() == 1);
    CHECK(coin["first_bad"]["commit"].GetString() == std::string("c2"));
    CHECK(coin["first_bad"]["run"].GetInt() == 1);
    CHECK(coin["in_last_run"].GetBool());
    CHECK(doc["tests"][1]["first_bad"].IsNull());
    CHECK(doc["timeline"][0]["host"].GetString() == std::string("ci-1"));
    CHECK(doc["timeline"][1]["host"].IsNull());
    CHECK(doc["timeline"][1]["decision"].GetString() == std::string("BLOCKED"));
    CHECK(doc["suites"][0]["checks"][0]["check"].GetString() == std::string("run:seed.1"));
    CHECK(doc["suites"][0]["blocked_runs"].GetInt() == 1);
    CHECK(doc["left_out"][0]["source"].GetString() == std::string("dl/run-9"));
    CHECK(history_json(h) == json);  // deterministic
}

TEST_CASE("history.md and history.html: ranked, every input left out named, ledger text never markup", "[history]") {
    History h;
    std::vector<std::string> keep;
    const std::string hostile = "t.py::test[<script>alert(1)</script>|`x`]";
    h.add(at("billing", 1, "c1"), rows(keep, {{hostile, "stable"}, {"t::calm", "failing"}}));
    h.add(at("billing", 2, "c2"), rows(keep, {{hostile, "order-dependent"}, {"t::calm", "failing"}}));
    h.leave_out("dl/run-<9>", "not JSON");
    const auto md = history_markdown(h);
    CHECK_THAT(md, Catch::Contains("## Tests that flip most often"));
    CHECK(md.find("t.py::test") < md.find("t::calm"));  // 1 flip before 0
    CHECK_THAT(md, Catch::Contains("stable \xE2\x86\x92 order-dependent"));
    CHECK_THAT(md, Catch::Contains("`dl/run-<9>`: not JSON"));
    CHECK_THAT(md, Catch::Contains("\\|"));  // the pipe cannot end the table cell

    const auto html = history_html(h);
    CHECK_THAT(html, Catch::Contains("default-src 'none'"));
    CHECK_THAT(html, !Catch::Contains("<script"));
    CHECK_THAT(html, Catch::Contains("&lt;script&gt;"));
    for (const char* remote : {"http:", "https:", " src=", "url(", "<link"}) CHECK_THAT(html, !Catch::Contains(remote));
    CHECK_THAT(html, Catch::Contains("dl/run-&lt;9&gt;"));
    CHECK_THAT(html, Catch::Contains("<i class=p>.</i><i class=f>o</i>"));  // the strip: stable, then order-dependent
}

TEST_CASE("history.html draws each verdict as the table says, and one it does not know as another verdict", "[history]") {
    History h;
    std::vector<std::string> keep;
    h.add(at("billing", 1), rows(keep, {{"t::a", "stable"}}));
    h.add(at("billing", 2), rows(keep, {{"t::a", "wobbly"}}));  // a verdict of another version
    const auto html = history_html(h);
    for (const auto& v : verdict_table())
        CHECK_THAT(html, Catch::Contains("<i class=" + std::string(1, static_cast<char>(v.colour)) + ">" +
                                         std::string(1, v.symbol) + "</i></span> " + std::string(v.name) + "</span>"));
    CHECK_THAT(html, Catch::Contains("<i class=o>*</i></span> another verdict</span>"));
    CHECK_THAT(html, Catch::Contains("<td class=k><i class=p>.</i><i class=o>*</i></td>"));
}

TEST_CASE("write_history_pages writes the three files", "[history]") {
    TempDir dir;
    History h;
    std::vector<std::string> keep;
    h.add(at("billing", 1), rows(keep, {{"t::a", "stable"}}));
    write_history_pages(dir.path / "out", h);
    for (const char* file : {"history.json", "history.md", "history.html"}) CHECK(fs::file_size(dir.path / "out" / file) > 0);
}
