#include <catch2/catch.hpp>

#include <filesystem>
#include <random>

#include <unistd.h>

#include "io/json_io.hpp"
#include "reports/assets.hpp"
#include "reports/report.hpp"

using namespace evgate;
namespace fs = std::filesystem;

namespace {

const std::string kHostile = "tests/t.py::test[<script>alert(\"x\")</script>&'y'\n\xC3\xBC|`z`]";
const std::string kHostileEscaped = "tests/t.py::test[&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;y&#39;\n\xC3\xBC|`z`]";

LedgerRow row(std::string test, const std::string& verdict, const std::string& gate, const std::vector<std::pair<std::string, std::string>>& outcomes = {}) {
    LedgerRow r;
    r.test = std::move(test);
    r.verdict = verdict_named(verdict).value();
    r.gate = gate_named(gate).value();
    r.reason = "because " + verdict;
    for (const auto& [run, word] : outcomes) r.outcomes.emplace_back(run, parse_outcome(word).value());
    return r;
}

LedgerRow suite_check(std::string name, const std::string& verdict, const std::string& gate) {
    auto r = row(std::move(name), verdict, gate);
    r.suite_scope = true;
    return r;
}

struct Fixture {
    Receipt receipt;
    std::vector<LedgerRow> rows;
    GateSummary summary;
    ReportInput input;

    Fixture() {
        receipt.id = "r1";
        receipt.rootdir = "/src";
        receipt.configfile = "/src/pytest.ini";
        input.suite = "billing";
        input.columns = {"seed.0", "seed.1"};
        rows = {suite_check("collection", "stable", "pass"),
                row("t::passes", "stable", "pass", {{"seed.0", "passed"}, {"seed.1", "passed"}}),
                row("t::deferred", "flaky", "defer", {{"seed.0", "failed"}, {"seed.1", "passed"}}),
                row("t::blocks", "order-dependent", "block", {{"seed.0", "failed"}, {"seed.1", "passed"}})};
        rows[2].until = "2026-07-01";
        rows[2].owner = "ana";
        rows[3].partner = "t::polluter";
        rows[3].partner_role = "polluter";
        rows[3].reproduce = "cd /src && python3 -m pytest -p no:randomly 't::polluter' 't::blocks'";
    }

    const ReportInput& in() {
        input.rows = &rows;
        input.receipt = &receipt;
        summary = summarize(rows);
        input.summary = &summary;
        return input;
    }
};

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

std::string section(const std::string& html, const std::string& id) {
    const auto begin = html.find("<section id=" + id + ">");
    REQUIRE(begin != std::string::npos);
    return html.substr(begin, html.find("</section>", begin) - begin);
}

// The heat-map markup of one test's row.
std::string heat_cells(const std::string& html, const std::string& test) {
    const auto heat = section(html, "heatmap");
    const auto name = heat.find(">" + test + "</td>");
    REQUIRE(name != std::string::npos);
    const auto begin = heat.rfind("<td class=k>", name);
    return heat.substr(begin, heat.find("</td>", begin) - begin);
}

}  // namespace

TEST_CASE("everything from the ledger is HTML-escaped", "[report]") {
    Fixture f;
    f.rows[3].test = kHostile;
    f.rows[3].reason = "<b>bold</b> & co";
    f.rows[3].partner = "<img src=x onerror=alert(1)>";
    f.rows[3].reproduce = "echo \"</code><script>\"";
    f.rows[1].outcomes.emplace_back("<i>run</i>", Outcome::passed);
    f.receipt.rootdir = "/src/<dir>";
    f.receipt.errors = {"t.py: <ImportError> 'x'"};
    f.input.suite = "s<u>ite";
    f.input.drift = {{"<runner>", {{"env.<TZ>", std::string("\"<a>\""), std::nullopt, drift_rank::locale_timezone}}}};
    const auto html = report_html(f.in());

    CHECK(count(html, "<script>") == 1);  // ours
    CHECK(html.find("<b>bold") == std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("<i>run") == std::string::npos);
    CHECK(html.find("<runner>") == std::string::npos);
    CHECK(html.find("<u>") == std::string::npos);
    CHECK(count(html, kHostileEscaped) == 2);  // the blocking table and the heat map
    CHECK_THAT(html, Catch::Contains("&lt;b&gt;bold&lt;/b&gt; &amp; co"));
    CHECK_THAT(html, Catch::Contains("&lt;img src=x onerror=alert(1)&gt;"));
    CHECK_THAT(html, Catch::Contains("echo &quot;&lt;/code&gt;&lt;script&gt;&quot;"));
    CHECK_THAT(html, Catch::Contains("/src/&lt;dir&gt;"));
    CHECK_THAT(html, Catch::Contains("t.py: &lt;ImportError&gt; &#39;x&#39;"));
    CHECK_THAT(html, Catch::Contains("&quot;&lt;a&gt;&quot;"));
    CHECK_THAT(html, Catch::Contains("<title>s&lt;u&gt;ite: BLOCKED"));
}

TEST_CASE("the page is self-contained: nothing is loaded from anywhere", "[report]") {
    Fixture f;
    const auto html = report_html(f.in());
    CHECK(html.find("http:") == std::string::npos);
    CHECK(html.find("https:") == std::string::npos);
    CHECK(html.find(" src=") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
    CHECK_THAT(html, Catch::Contains("Content-Security-Policy content=\"default-src 'none'"));
}

TEST_CASE("the style and the script are reports/assets/ compiled in, their top comments left out", "[report]") {
    Fixture f;
    const auto html = report_html(f.in());
    CHECK(assets::report_css.rfind(":root{", 0) == 0);
    CHECK(assets::report_js.rfind("(function () {", 0) == 0);
    CHECK_THAT(html, Catch::Contains("<style>\n" + std::string(assets::report_css) + "</style>"));
    CHECK(html.find("embed.cmake") == std::string::npos);
    CHECK(html.find("OUTCOMES") == std::string::npos);  // the slot holds the outcome names
    CHECK_THAT(html, Catch::Contains("{'.':'passed','F':'failed','E':'error'"));
}

TEST_CASE("blocking rows come first, then deferred ones, then the heat map", "[report]") {
    Fixture f;
    const auto html = report_html(f.in());
    const auto blocking = section(html, "blocking");
    CHECK_THAT(blocking, Catch::Contains("t::blocks"));
    CHECK_THAT(blocking, Catch::Contains("t::polluter"));
    CHECK_THAT(blocking, Catch::Contains("<span class=\"tag\">polluter</span>"));
    CHECK_THAT(blocking, Catch::Contains("<code class=\"cmd\">cd /src &amp;&amp; python3 -m pytest"));
    CHECK(blocking.find("t::deferred") == std::string::npos);
    const auto deferred = section(html, "deferred");
    CHECK_THAT(deferred, Catch::Contains("t::deferred"));
    CHECK_THAT(deferred, Catch::Contains("<th>until</th><th>owner</th>"));
    CHECK_THAT(deferred, Catch::Contains("2026-07-01"));
    CHECK(deferred.find("reproduce") == std::string::npos);  // no row has one: no empty column

    CHECK(html.find("id=blocking") < html.find("id=deferred"));
    CHECK(html.find("id=deferred") < html.find("id=heatmap"));
    const auto heat = section(html, "heatmap");
    CHECK(heat.find("t::blocks") < heat.find("t::deferred"));
    CHECK(heat.find("t::deferred") < heat.find("<details>"));
    CHECK(heat.find("<details>") < heat.find("t::passes"));
    CHECK_THAT(heat, Catch::Contains("<summary>1 passing test (stable or skipped)</summary>"));
}

TEST_CASE("a blocking suite check is listed with the blocking rows and blocks the page", "[report]") {
    Fixture f;
    f.rows = {suite_check("run:seed.1", "interrupted", "block"), row("t::a", "stable", "pass", {{"seed.0", "passed"}})};
    const auto html = report_html(f.in());
    CHECK_THAT(section(html, "blocking"), Catch::Contains("run:seed.1<span class=tag>suite check</span>"));
    CHECK_THAT(html, Catch::Contains("<span class=\"status BLOCKED\">BLOCKED</span>"));
    CHECK_THAT(html, Catch::Contains("1 test over 1 run: 0 block, 0 defer, 1 pass; 1 suite check blocks"));
    CHECK(section(html, "heatmap").find("run:seed.1") == std::string::npos);
}

TEST_CASE("the page opens with what blocks; warnings in the open, passing suite checks folded", "[report]") {
    Fixture f;
    f.rows.push_back(suite_check("run:seed.0", "stable", "pass"));
    auto warning = suite_check("stray-config:tests/pytest.ini", "stable", "pass");
    warning.warning = true;
    f.rows.push_back(warning);
    f.rows.push_back(suite_check("run:seed.1", "interrupted", "block"));
    const auto html = report_html(f.in());
    CHECK(html.find("<section id=blocking>") < html.find("<section id=deferred>"));
    CHECK(html.find("<section id=deferred>") < html.find("<section id=summary>"));
    const auto summary = section(html, "summary");
    CHECK_THAT(summary, Catch::Contains("<h3>1 suite check warns</h3>"));
    CHECK(summary.find("stray-config:tests/pytest.ini") < summary.find("<details class=passing-checks>"));
    CHECK_THAT(summary, Catch::Contains("<details class=passing-checks><summary>2 suite checks pass (1 blocking: above)</summary>"));
    CHECK(summary.find("run:seed.0") > summary.find("<details class=passing-checks>"));
    CHECK(summary.find("run:seed.1") == std::string::npos);  // among the blocking rows
    CHECK(html.find("<details open") == std::string::npos);
}

TEST_CASE("the summary counts gates and verdicts", "[report]") {
    Fixture f;
    const auto html = report_html(f.in());
    CHECK_THAT(html, Catch::Contains("3 tests over 2 runs: 1 block, 1 defer, 1 pass"));
    CHECK_THAT(html, Catch::Contains("<b>1</b><span>order-dependent</span>"));
    CHECK_THAT(html, Catch::Contains("<b>1</b><span>flaky</span>"));
    CHECK_THAT(html, Catch::Contains("<b>2</b><span>runs</span>"));
    CHECK(html.find("<b>1</b><span>order-dependent</span>") < html.find("<b>1</b><span>flaky</span>"));  // priority order

    f.rows.pop_back();
    f.rows.pop_back();
    CHECK_THAT(report_html(f.in()), Catch::Contains("<span class=\"status PASSED\">PASSED</span>"));
}

TEST_CASE("heat-map cells carry outcome class and symbol, equal neighbours merged", "[report]") {
    Fixture f;
    f.input.columns = {"seed.0", "seed.1", "seed.2", "seed.0.rerun.1"};
    f.rows[3].outcomes = {{"seed.0", Outcome::failed}, {"seed.1", Outcome::passed}, {"seed.2", Outcome::passed}, {"alone.1", Outcome::error}};
    f.rows[1].outcomes = {{"seed.0", Outcome::passed}, {"seed.1", Outcome::passed}, {"seed.2", Outcome::passed}, {"seed.0.rerun.1", Outcome::skipped}};
    f.rows[2].outcomes = {{"seed.0", Outcome::interrupted}, {"seed.1", Outcome::missing}, {"seed.2", Outcome::xfailed}, {"seed.0.rerun.1", Outcome::uncalled}};
    const auto html = report_html(f.in());
    // alone.1 is not among the columns given, so it is added as a fifth column, not dropped.
    CHECK_THAT(html, Catch::Contains("<i>seed.0.rerun.1</i><i>alone.1</i></span>"));
    CHECK(heat_cells(html, "t::blocks") == "<td class=k><i class=f>F</i><i class=p>..</i><i class=n>-</i><i class=e>E</i>");
    CHECK(heat_cells(html, "t::passes") == "<td class=k><i class=p>...</i><i class=s>s</i><i class=n>-</i>");
    CHECK(heat_cells(html, "t::deferred") ==
          "<td class=k><i class=i>!</i><i class=m>?</i><i class=x>x</i><i class=m>u</i><i class=n>-</i>");
    CHECK_THAT(section(html, "heatmap"), Catch::Contains("<i class=n>-</i></span> not run (not in this run's plan)"));
}

TEST_CASE("the legend names only known outcomes when no other is used", "[report]") {
    Fixture f;
    CHECK(report_html(f.in()).find("does not know") == std::string::npos);
}

TEST_CASE("the drift table lists suspicious keys and folds the rest", "[report]") {
    Fixture f;
    CHECK_THAT(section(report_html(f.in()), "drift"), Catch::Contains("No perturbed run or runner"));
    f.input.drift = {{"perturbed",
                      {{"timezone.TZ", std::nullopt, std::string("\"Asia/Kolkata\""), drift_rank::locale_timezone},
                       {"host.hostname", std::string("\"vm\""), std::string("\"ci\""), drift_rank::noise}}},
                     {"ci-mac", {}}};
    const auto drift = section(report_html(f.in()), "drift");
    CHECK_THAT(drift, Catch::Contains("<h3>local vs perturbed</h3>"));
    CHECK_THAT(drift, Catch::Contains("<td class=\"id\">timezone.TZ</td><td class=\"id\">(absent)</td>"
                                      "<td class=\"id\">&quot;Asia/Kolkata&quot;</td><td>locale or timezone</td>"));
    CHECK(drift.find("timezone.TZ") < drift.find("<summary>1 less telling keys</summary>"));
    CHECK(drift.find("<summary>1 less telling keys</summary>") < drift.find("host.hostname"));
    CHECK_THAT(drift, Catch::Contains("<h3>local vs ci-mac</h3><p class=empty>The manifests agree.</p>"));
}

TEST_CASE("the receipt section shows where pytest ran and what it collected", "[report]") {
    Fixture f;
    f.receipt.conftests = {"/src/conftest.py"};
    f.receipt.errors = {"tests/test_x.py: ImportError"};
    f.receipt.tests = {{"t::a", true, {"config"}, std::nullopt}, {"t::b", false, {}, EnvSensitive{"2026-01-01", "ana", "tz"}}};
    const auto receipt = section(report_html(f.in()), "receipt");
    CHECK_THAT(receipt, Catch::Contains("<th>rootdir</th><td class=\"id\">/src</td>"));
    CHECK_THAT(receipt, Catch::Contains("<th>configfile</th><td class=\"id\">/src/pytest.ini</td>"));
    CHECK_THAT(receipt, Catch::Contains("<pre>/src/conftest.py</pre>"));
    CHECK_THAT(receipt, Catch::Contains("2 (1 serial, 1 declare writes, 1 env_sensitive)"));
    CHECK_THAT(receipt, Catch::Contains("<pre>tests/test_x.py: ImportError</pre>"));
}

TEST_CASE("report.md: title, blocking rows with partner and reproduce, deferred with until and owner, counts", "[report]") {
    Fixture f;
    const auto md = report_markdown(f.in());
    CHECK(md.rfind("## Evidence Gate: billing **BLOCKED**\n\n3 tests over 2 runs: 1 block, 1 defer, 1 pass\n", 0) == 0);
    CHECK_THAT(md, Catch::Contains("### Blocking: 1\n\n| test | verdict | orders | reason | partner | reproduce |\n"));
    CHECK_THAT(md, Catch::Contains("| `t::blocks` | order-dependent | 0 | because order-dependent | `t::polluter` (polluter) | "
                                   "`cd /src && python3 -m pytest -p no:randomly 't::polluter' 't::blocks'` |\n"));
    CHECK_THAT(md, Catch::Contains("### Deferred: 1\n\n| test | verdict | orders | reason | until | owner |\n"));
    CHECK_THAT(md, Catch::Contains("| `t::deferred` | flaky | 0 | because flaky | 2026-07-01 | ana |"));
    CHECK_THAT(md, Catch::Contains("| order-dependent | 1 |\n| flaky | 1 |\n| stable | 1 |\n| **all** | **3** |"));
    CHECK(md.find("### Blocking") < md.find("### Deferred"));
    CHECK(md.find("### Deferred") < md.find("### Counts"));
}

TEST_CASE("report.md caps each list and says how many more", "[report]") {
    Fixture f;
    f.rows.clear();
    for (int i = 0; i < 60; ++i) f.rows.push_back(row("t::b" + std::to_string(i), "failing", "block"));
    const auto md = report_markdown(f.in());
    CHECK_THAT(md, Catch::Contains("### Blocking: 60"));
    CHECK_THAT(md, Catch::Contains("`t::b49`"));
    CHECK(md.find("`t::b50`") == std::string::npos);
    CHECK_THAT(md, Catch::Contains("…and 10 more in report.html"));
}

TEST_CASE("report.md escapes pipes, backticks, markup and line breaks", "[report]") {
    Fixture f;
    f.rows = {row(kHostile, "failing", "block")};
    f.rows[0].reason = "a | b *c* <d> $x$\nnext";
    f.rows[0].reproduce = "printf '`a|b`'";
    const auto md = report_markdown(f.in());
    CHECK_THAT(md, Catch::Contains("| ``tests/t.py::test[<script>alert(\"x\")</script>&'y' \xC3\xBC\\|`z`]`` | failing |"));
    CHECK_THAT(md, Catch::Contains("| a \\| b \\*c\\* \\<d\\> \\$x\\$ next |"));
    CHECK_THAT(md, Catch::Contains("| ``printf '`a\\|b`'`` |"));
}

TEST_CASE("reports are deterministic", "[report]") {
    Fixture a, b;
    CHECK(report_html(a.in()) == report_html(b.in()));
    CHECK(report_markdown(a.in()) == report_markdown(b.in()));
}

TEST_CASE("report_columns orders seeds, reruns, alone runs, perturbed runs, runners", "[report]") {
    const auto run = [](const std::string& id, std::string order, Column column = Column::local) {
        LoadedRun r;
        r.plan.id = RunId::parse_any(id).value_or(RunId::runner_run(id));
        r.plan.order = std::move(order);
        r.plan.column = column;
        return r;
    };
    const std::vector<LoadedRun> runs = {run("alone.1", "alone"), run("ci", "ci", Column::runner),
                                         run("perturbed", "perturbed", Column::perturbed), run("seed.0", "seed.0"),
                                         run("seed.0.rerun.1", "seed.0"), run("seed.1", "seed.1")};
    CHECK(report_columns(runs) ==
          std::vector<std::string>{"seed.0", "seed.1", "seed.0.rerun.1", "alone.1", "perturbed", "ci"});
}

TEST_CASE("write_reports writes report.html and report.md", "[report]") {
    const auto dir = fs::temp_directory_path() /
                     ("evgate-report-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
    Fixture f;
    CHECK(write_reports(dir, f.in()) == dir / "report.html");
    CHECK(read_file(dir / "report.html") == report_html(f.in()));
    CHECK(read_file(dir / "report.md") == report_markdown(f.in()));
    fs::remove_all(dir);
}

TEST_CASE("a reproduce command is one line of its own below its row, with a copy button", "[report]") {
    Fixture f;
    const auto blocking = section(report_html(f.in()), "blocking");
    const auto row = blocking.find("<tr class=\"gb has-cmd\"><td class=id>t::blocks</td>");
    REQUIRE(row != std::string::npos);
    const auto command = blocking.find(
        "<tr class=\"cmdrow gb\"><td colspan=4><div class=repro><span class=tag>reproduce</span>"
        "<code class=\"cmd\">cd /src &amp;&amp; python3 -m pytest");
    CHECK(command > row);
    CHECK(blocking.find("</tr>", row) < command);  // its own row, spanning the table: not a narrow column
    CHECK_THAT(blocking, Catch::Contains("</code><button type=button class=copy>copy</button></div></td></tr>"));
    CHECK(blocking.find("<th>reproduce</th>") == std::string::npos);
    CHECK_THAT(std::string(assets::report_css), Catch::Contains(".repro code.cmd{flex:1 1 0;width:0;min-width:0;white-space:pre;"));
}

TEST_CASE("the heat map shows a blocking row's partners next to it, not folded away with the passing tests", "[report]") {
    Fixture f;
    f.rows.push_back(row("t::other", "stable", "pass", {{"seed.0", "passed"}, {"seed.1", "passed"}}));
    f.rows.push_back(row("t::polluter", "stable", "pass", {{"seed.0", "passed"}, {"seed.1", "passed"}}));
    f.rows[3].partners = {"t::polluter"};
    const auto heat = section(report_html(f.in()), "heatmap");
    const auto blocked = heat.find(">t::blocks</td>");
    const auto partner = heat.find(">t::polluter</td>");
    REQUIRE(partner != std::string::npos);
    CHECK(blocked < partner);
    CHECK(partner < heat.find(">t::deferred</td>"));
    CHECK(partner < heat.find("<details>"));
    CHECK(heat.find(">t::polluter</td>", partner + 1) == std::string::npos);  // once
    CHECK_THAT(heat, Catch::Contains("<tr class=partner><td class=k>"));
    CHECK_THAT(heat, Catch::Contains("<span class=\"tag\">partner: polluter of the row above</span>"));
    CHECK_THAT(heat, Catch::Contains("<summary>2 passing tests (stable or skipped)</summary>"));
}
