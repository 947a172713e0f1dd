#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "history_support.hpp"
#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "reports/history_archive.hpp"
#include "reports/report.hpp"
#include "reports/report_extras.hpp"
#include "reports/run_history.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::RunSpec;
using evgate::test::TempDir;
namespace fs = std::filesystem;

namespace {

// An environment variable for the length of a test.
class Env {
public:
    Env(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
    ~Env() { ::unsetenv(name_); }
    Env(const Env&) = delete;
    Env& operator=(const Env&) = delete;

private:
    const char* name_;
};

RunSpec spec(const std::string& receipt, int hour, std::vector<std::pair<std::string, std::string>> rows) {
    RunSpec s;
    s.receipt = receipt;
    s.commit = "commit-" + receipt;
    s.timestamp = "2026-12-01T" + std::string(hour < 10 ? "0" : "") + std::to_string(hour) + ":00:00.000000Z";
    s.rows = std::move(rows);
    return s;
}

std::vector<std::string> names(const std::vector<fs::path>& paths) {
    std::vector<std::string> out;
    for (const auto& p : paths) out.push_back(p.filename().string());
    return out;
}

LedgerRow ledger_row(std::string test, const std::string& verdict, const std::string& gate) {
    LedgerRow r;
    r.test = std::move(test);
    r.verdict = verdict_named(verdict).value();
    r.gate = gate_named(gate).value();
    r.reason = "because";
    return r;
}

SuiteConfig suite_in(const fs::path& evidence) {
    SuiteConfig suite;
    suite.name = "billing";
    suite.evidence_dir = evidence;
    fs::create_directories(evidence);
    return suite;
}

}  // namespace

TEST_CASE("archive: one directory per run, named by time, commit and receipt, with the run's files", "[history_archive]") {
    TempDir dir;
    test::write_evidence(dir.path / "evidence", spec("r1", 10, {{"t::a", "stable"}}));
    const auto archived = archive_run(dir.path / "evidence", dir.path / "history", 5);
    CHECK(archived.entry == dir.path / "history" / "billing" / "20261201T100000.000000Z-commit-r1-r1");
    for (const char* file : {"ledger.jsonl", "receipt.json", "manifest.json", "junit.xml"})
        CHECK(read_file(archived.entry / file) == read_file(dir.path / "evidence" / file));
    CHECK(archived.removed.empty());

    // The ledger step of the same run again (same receipt): its copy replaces the first.
    test::write_evidence(dir.path / "evidence", spec("r1", 11, {{"t::a", "flaky"}}));
    const auto again = archive_run(dir.path / "evidence", dir.path / "history", 5);
    CHECK(names(archived_runs(dir.path / "history" / "billing")) == std::vector<std::string>{again.entry.filename().string()});
    CHECK(again.removed == std::vector<fs::path>{archived.entry});
    CHECK(read_file(again.entry / "ledger.jsonl") == test::ledger_text({{"t::a", "flaky"}}));
}

TEST_CASE("archive: the newest runs are kept, whatever order they come in", "[history_archive]") {
    TempDir dir;
    for (const auto& [receipt, hour] : std::vector<std::pair<std::string, int>>{{"r3", 3}, {"r1", 1}, {"r4", 4}, {"r2", 2}}) {
        test::write_evidence(dir.path / receipt, spec(receipt, hour, {{"t::a", "stable"}}));
        archive_run(dir.path / receipt, dir.path / "history", 2);
    }
    CHECK(names(archived_runs(dir.path / "history" / "billing")) ==
          std::vector<std::string>{"20261201T030000.000000Z-commit-r3-r3", "20261201T040000.000000Z-commit-r4-r4"});
    CHECK(names(archived_runs(dir.path / "history" / "billing", "r4")) == std::vector<std::string>{"20261201T030000.000000Z-commit-r3-r3"});
}

TEST_CASE("archive: what a receipt or suite names never leaves the archive; bad settings are errors", "[history_archive]") {
    TempDir dir;
    auto s = spec("../../escape", 1, {{"t::a", "stable"}});
    s.commit = "a/b";
    test::write_evidence(dir.path / "evidence", s);
    const auto archived = archive_run(dir.path / "evidence", dir.path / "history", 5);
    CHECK(archived.entry.parent_path() == dir.path / "history" / "billing");
    CHECK(archived.entry.filename() == "20261201T010000.000000Z-a_b-.._.._escape");
    CHECK_THROWS_WITH(suite_archive(dir.path, "../x"), Catch::Contains("cannot name a directory of the history"));
    fs::remove(dir.path / "evidence" / "receipt.json");
    CHECK_THROWS_WITH(archive_run(dir.path / "evidence", dir.path / "history", 5), Catch::Contains("has no receipt.json"));
    {
        Env keep("EVIDENCE_GATE_HISTORY_KEEP", "0");
        CHECK_THROWS_WITH(history_keep(), Catch::Contains("EVIDENCE_GATE_HISTORY_KEEP is not a whole number of runs"));
    }
    {
        Env keep("EVIDENCE_GATE_HISTORY_KEEP", "7");
        CHECK(history_keep() == 7);
    }
    CHECK(history_keep() == kHistoryKeep);
}

TEST_CASE("archive: runs archived at once into one directory leave whole entries, the newest kept", "[history_archive]") {
    TempDir dir;
    constexpr int kRuns = 12;
    for (int i = 0; i < kRuns; ++i)
        test::write_evidence(dir.path / ("run" + std::to_string(i)), spec("r" + std::to_string(i), i, {{"t::a", "stable"}}));
    std::atomic<bool> done{false};
    std::atomic<int> partial{0}, seen{0};
    // A reader meanwhile: every entry it lists is whole, or already gone.
    std::thread reader([&] {
        while (!done) {
            for (const auto& entry : archived_runs(dir.path / "history" / "billing")) {
                std::error_code ec;
                if (!fs::exists(entry, ec)) continue;
                ++seen;
                for (const char* file : {"ledger.jsonl", "receipt.json", "manifest.json", "junit.xml"})
                    if (!fs::exists(entry / file, ec) && fs::exists(entry, ec)) ++partial;
            }
        }
    });
    std::vector<std::thread> writers;
    for (int i = 0; i < kRuns; ++i)
        writers.emplace_back([&, i] { archive_run(dir.path / ("run" + std::to_string(i)), dir.path / "history", 4); });
    for (auto& w : writers) w.join();
    done = true;
    reader.join();
    CHECK(partial == 0);
    CHECK(names(archived_runs(dir.path / "history" / "billing")) ==
          std::vector<std::string>{"20261201T080000.000000Z-commit-r8-r8", "20261201T090000.000000Z-commit-r9-r9",
                                   "20261201T100000.000000Z-commit-r10-r10", "20261201T110000.000000Z-commit-r11-r11"});
    for (const auto& entry : fs::directory_iterator(dir.path / "history" / "billing"))
        CHECK(entry.path().filename().string()[0] != '.');  // no temporary or discarded entry left
}

TEST_CASE("EVIDENCE_GATE_HISTORY: each row that does not pass says how it fared before; flips most often", "[run_history]") {
    TempDir dir;
    const std::vector<std::pair<std::string, int>> earlier{{"r1", 1}, {"r2", 2}, {"r3", 3}};
    const std::vector<std::vector<std::pair<std::string, std::string>>> rows{
        {{"t::coin", "stable"}, {"t::calm", "stable"}, {"t::mixed", "stable"}, {"run:seed.1", "stable"}},
        {{"t::coin", "flaky"}, {"t::calm", "stable"}, {"t::mixed", "flaky"}, {"run:seed.1", "interrupted"}},
        {{"t::coin", "flaky"}, {"t::calm", "stable"}, {"t::mixed", "failing"}, {"run:seed.1", "stable"}}};
    for (std::size_t i = 0; i < earlier.size(); ++i) {
        test::write_evidence(dir.path / earlier[i].first, spec(earlier[i].first, earlier[i].second, rows[i]));
        archive_run(dir.path / earlier[i].first, dir.path / "history", 10);
    }
    const auto suite = suite_in(dir.path / "now");
    write_file_atomic(suite.receipt_file(), test::receipt_text(spec("r4", 4, {})));
    std::vector<LedgerRow> now{ledger_row("t::coin", "stable", "pass"), ledger_row("t::calm", "order-dependent", "block"),
                               ledger_row("t::new", "failing", "block"), ledger_row("run:seed.1", "interrupted", "block"),
                               ledger_row("t::mixed", "failing", "defer")};
    now[3].suite_scope = true;
    const Env history("EVIDENCE_GATE_HISTORY", (dir.path / "history").string());
    const auto extras = run_report_extras(suite, now, "r4");
    REQUIRE(extras);
    REQUIRE(extras->note);
    CHECK(extras->note(now[0]).empty());  // it passes
    CHECK(extras->note(now[1]) == "new: passed in all of the last 3 runs on main that had it");
    CHECK(extras->note(now[2]) == "new: in none of the last 3 runs on main");
    CHECK(extras->note(now[3]) == "interrupted in 1 of the last 3 runs on main, first on commit-r2");
    CHECK_FALSE(extras->already_bad);
    // This run counts: stable, flaky, flaky, stable is two flips.
    CHECK_THAT(extras->markdown, Catch::Contains("### Flips most often") && Catch::Contains("over the last 4 runs of the suite"));
    CHECK_THAT(extras->markdown, Catch::Contains("| `t::coin` | 2 | 2 / 4 | stable \xE2\x86\x92 flaky \xC3\x97"
                                                 "2 \xE2\x86\x92 stable |"));
    CHECK_THAT(extras->html, Catch::Contains("<section id=history><h2>Flips most often</h2>"));

    CHECK(extras->note(now[4]) == "bad in 2 of the last 3 runs on main (flaky 1, failing 1), first on commit-r2");
    Receipt receipt;
    const auto summary = summarize(now);
    ReportInput input{"billing", &now, {}, &receipt, {}, &*extras, &summary};
    const auto md = report_markdown(input);
    CHECK_THAT(md, Catch::Contains("| test | verdict | orders | reason | before |"));
    CHECK_THAT(md, Catch::Contains("new: in none of the last 3 runs on main |"));
    CHECK(md.find("### Counts") < md.find("### Flips most often"));
    CHECK_THAT(report_html(input), Catch::Contains("<div class=\"note\">new: in none of the last 3 runs on main</div>"));
}

TEST_CASE("EVIDENCE_GATE_HISTORY: an archive that cannot be used is said in the reports, and the ledger step goes on", "[run_history]") {
    TempDir dir;
    const auto suite = suite_in(dir.path / "now");
    write_file_atomic(dir.path / "a-file", "not a directory");
    const Env history("EVIDENCE_GATE_HISTORY", (dir.path / "a-file").string());
    const auto extras = run_report_extras(suite, {ledger_row("t::a", "failing", "block")}, "r1");
    REQUIRE(extras);
    CHECK_THAT(extras->markdown, Catch::Contains("cannot be used, and this run is not archived"));
    std::ostringstream out;
    archive_if_asked(suite, out);
    CHECK_THAT(out.str(), Catch::StartsWith("evgate: warning: history: this run is not archived in " + (dir.path / "a-file").string()));
}

TEST_CASE("EVIDENCE_GATE_HISTORY: an archived run that cannot be read is named in the section", "[run_history]") {
    TempDir dir;
    test::write_evidence(dir.path / "r1", spec("r1", 1, {{"t::a", "stable"}}));
    const auto entry = archive_run(dir.path / "r1", dir.path / "history", 10).entry;
    write_file_atomic(entry / "ledger.jsonl", "{\"test\":");
    const auto suite = suite_in(dir.path / "now");
    const Env history("EVIDENCE_GATE_HISTORY", (dir.path / "history").string());
    const auto extras = run_report_extras(suite, {ledger_row("t::a", "failing", "block")}, "r2");
    CHECK_THAT(extras->markdown, Catch::Contains("left out of the history: `" + entry.string() + "`") &&
                                     Catch::Contains("torn last line"));
    CHECK(extras->note(ledger_row("t::a", "failing", "block")) == "no earlier run of the suite in the history");
}

TEST_CASE("EVIDENCE_GATE_COMPARE: report.md tells the rows this change brought from those already bad there", "[run_history]") {
    TempDir dir;
    test::write_evidence(dir.path / "main" / "billing",
                         spec("m1", 1, {{"t::old", "flaky"}, {"t::fixed", "failing"}, {"t::fine", "stable"}}));
    const auto suite = suite_in(dir.path / "now");
    std::vector<LedgerRow> rows{ledger_row("t::old", "failing", "block"), ledger_row("t::fine", "order-dependent", "block"),
                                ledger_row("t::added", "failing", "block"), ledger_row("t::fixed", "stable", "pass")};
    for (const auto& where : {dir.path / "main", dir.path / "main" / "billing", dir.path / "main" / "billing" / "ledger.jsonl"}) {
        const Env compare("EVIDENCE_GATE_COMPARE", where.string());
        const auto extras = run_report_extras(suite, rows, "r9");
        REQUIRE(extras);
        REQUIRE(extras->already_bad);
        CHECK(extras->already_bad(rows[0]));
        CHECK_FALSE(extras->already_bad(rows[1]));
        CHECK_FALSE(extras->already_bad(rows[2]));
        CHECK_FALSE(extras->note);
        Receipt receipt;
        const auto summary = summarize(rows);
        const auto md = report_markdown({"billing", &rows, {}, &receipt, {}, &*extras, &summary});
        const auto fresh = md.find("### Blocking because of this change (not bad in `" + where.string() + "`): 2");
        const auto old = md.find("### Blocking, already bad in `" + where.string() + "`: 1");
        REQUIRE(fresh != std::string::npos);
        REQUIRE(old != std::string::npos);
        CHECK(md.find("`t::fine`") < old);
        CHECK(md.find("`t::added`") < old);
        CHECK(md.find("`t::old`") > old);
        CHECK_THAT(md, Catch::Contains("**BLOCKED**"));  // the decision is the ledger's, whatever was bad before
    }
}

TEST_CASE("EVIDENCE_GATE_COMPARE: an archive gives its newest run of the suite", "[run_history]") {
    TempDir dir;
    for (const auto& [receipt, hour] : std::vector<std::pair<std::string, int>>{{"r2", 2}, {"r1", 1}}) {
        test::write_evidence(dir.path / receipt, spec(receipt, hour, {{"t::a", "stable"}}));
        archive_run(dir.path / receipt, dir.path / "main-history", 5);
    }
    CHECK(compared_ledger((dir.path / "main-history").string(), "billing") ==
          dir.path / "main-history" / "billing" / "20261201T020000.000000Z-commit-r2-r2" / "ledger.jsonl");
}

TEST_CASE("EVIDENCE_GATE_COMPARE: another suite's ledger or nothing at all is said, never silently compared", "[run_history]") {
    TempDir dir;
    auto other = spec("m1", 1, {{"t::a", "flaky"}});
    other.suite = "ledger";
    test::write_evidence(dir.path / "other", other);
    const auto suite = suite_in(dir.path / "now");
    const std::vector<LedgerRow> rows{ledger_row("t::a", "failing", "block")};
    for (const auto& [where, why] : std::vector<std::pair<fs::path, std::string>>{
             {dir.path / "other", "it holds suite 'ledger''s ledger, not 'billing''s"},
             {dir.path / "none", "it does not exist"},
             {dir.path, "no ledger.jsonl in it, nor in billing/ below it"}}) {
        const Env compare("EVIDENCE_GATE_COMPARE", where.string());
        const auto extras = run_report_extras(suite, rows, "r9");
        REQUIRE(extras);
        CHECK_FALSE(extras->already_bad);
        CHECK_THAT(extras->markdown, Catch::Contains("cannot be read") && Catch::Contains("the blocking rows are not told apart by it"));
        CHECK_THAT(extras->markdown, Catch::Contains(why));
    }
}

TEST_CASE("without EVIDENCE_GATE_HISTORY or _COMPARE the reports are the ledger's alone", "[run_history]") {
    TempDir dir;
    CHECK_FALSE(run_report_extras(suite_in(dir.path), {ledger_row("t::a", "failing", "block")}, "r1"));
    std::ostringstream out;
    archive_if_asked(suite_in(dir.path), out);
    CHECK(out.str().empty());
}
