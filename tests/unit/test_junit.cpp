#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

#include "inputs/junit.hpp"
#include "io/error.hpp"

using namespace evgate;
namespace fs = std::filesystem;

namespace {

// Real output of pytest 7.2.1 (`/usr/bin/python3 -m pytest --junitxml=x.xml -p no:cacheprovider
// tests`), failure bodies cut to their last line. Note the second <testcase> for the teardown
// error of a test that already failed.
constexpr const char* kPytestReport = R"xml(<?xml version="1.0" encoding="utf-8"?>
<testsuites>
<testsuite name="pytest" errors="3" failures="3" skipped="2" tests="20" time="0.126" timestamp="2026-11-30T00:20:13.012912" hostname="vm">
<testcase classname="tests.test_teardown" name="test_passes_then_teardown_error" time="0.001">
<error message="failed on teardown with &quot;RuntimeError: teardown broke&quot;">tests/test_teardown.py:7: RuntimeError</error>
</testcase>
<testcase classname="tests.test_teardown" name="test_fails_then_teardown_error" time="0.001">
<failure message="assert False">tests/test_teardown.py:20: AssertionError</failure>
</testcase>
<testcase classname="tests.test_teardown" name="test_fails_then_teardown_error" time="0.000">
<error message="failed on teardown with &quot;RuntimeError: teardown broke&quot;">tests/test_teardown.py:7: RuntimeError</error>
</testcase>
<testcase classname="tests.test_teardown" name="test_setup_error" time="0.000">
<error message="failed on setup with &quot;RuntimeError: setup broke&quot;">tests/test_teardown.py:12: RuntimeError</error>
</testcase>
<testcase classname="tests.test_x" name="test_plain" time="0.000" />
<testcase classname="tests.test_x" name="test_fails" time="0.001">
<failure message="assert 1 == 2">tests/test_x.py:9: AssertionError</failure>
</testcase>
<testcase classname="tests.test_x" name="test_café" time="0.000" />
<testcase classname="tests.test_x.TestY" name="test_z[1]" time="0.001" />
<testcase classname="tests.test_x.TestY" name="test_z[2]" time="0.005">
<failure message="assert 2 == 1">tests/test_x.py:19: AssertionError</failure>
</testcase>
<testcase classname="tests.test_x.TestY.TestInner" name="test_deep" time="0.000" />
<testcase classname="tests.test_x" name="test_params[a b]" time="0.001" />
<testcase classname="tests.test_x" name="test_params[x.y]" time="0.000" />
<testcase classname="tests.test_x" name="test_params[[n]]" time="0.000" />
<testcase classname="tests.test_x" name="test_params[a::b/c]" time="0.000" />
<testcase classname="tests.test_x" name="test_params[\xe9]" time="0.001" />
<testcase classname="tests.test_x" name="test_skipped" time="0.000">
<skipped type="pytest.skip" message="not here">/tmp/port-junit/tree/tests/test_x.py:31: not here</skipped>
</testcase>
<testcase classname="tests.test_x" name="test_xfail" time="0.000">
<skipped type="pytest.xfail" message="known" />
</testcase>
<testcase classname="tests.test_x" name="test_xpass" time="0.004" />
<testcase classname="tests.pkg.test_pkg" name="test_in_package" time="0.001" />
<testcase classname="tests.v1.2.test_dots" name="test_in_dotted_dir" time="0.000" />
</testsuite>
</testsuites>
)xml";

// `pytest --collect-only -q` of the same tree.
const std::vector<std::string> kCollected = {
    "tests/test_teardown.py::test_passes_then_teardown_error",
    "tests/test_teardown.py::test_fails_then_teardown_error",
    "tests/test_teardown.py::test_setup_error",
    "tests/test_x.py::test_plain",
    "tests/test_x.py::test_fails",
    "tests/test_x.py::test_café",
    "tests/test_x.py::TestY::test_z[1]",
    "tests/test_x.py::TestY::test_z[2]",
    "tests/test_x.py::TestY::TestInner::test_deep",
    "tests/test_x.py::test_params[a b]",
    "tests/test_x.py::test_params[x.y]",
    "tests/test_x.py::test_params[[n]]",
    "tests/test_x.py::test_params[a::b/c]",
    "tests/test_x.py::test_params[\\xe9]",
    "tests/test_x.py::test_skipped",
    "tests/test_x.py::test_xfail",
    "tests/test_x.py::test_xpass",
    "tests/pkg/test_pkg.py::test_in_package",
    "tests/v1.2/test_dots.py::test_in_dotted_dir",
};

// Real pytest 7.2.1 output with disable_test_id_escaping_and_forfeit_all_rights_to_community_support:
// parameter ids reach the report raw, and pytest escapes what XML cannot hold as "#xNN".
constexpr const char* kRawIdsReport =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite name=\"pytest\" errors=\"0\" failures=\"0\" "
    "skipped=\"0\" tests=\"3\" time=\"0.051\" timestamp=\"2026-11-30T00:20:16.991398\" hostname=\"vm\">"
    "<testcase classname=\"tests.test_raw\" name=\"test_raw[\xc3\xa9]\" time=\"0.001\" />"
    "<testcase classname=\"tests.test_raw\" name=\"test_raw[#x1F600]\" time=\"0.004\" />"
    "<testcase classname=\"tests.test_raw\" name=\"test_raw[bell#x07]\" time=\"0.001\" /></testsuite></testsuites>";

// Real pytest 7.2.1 output with -o junit_family=xunit1 for two tests that share one address.
constexpr const char* kAmbiguousReport = R"xml(<?xml version="1.0" encoding="utf-8"?>
<testsuites>
<testsuite name="pytest" errors="0" failures="1" skipped="0" tests="2" time="0.053" timestamp="2026-11-30T00:22:49.460882" hostname="vm">
<testcase classname="tests.test_a.TestB" name="test_c" file="tests/test_a.py" line="1" time="0.000" />
<testcase classname="tests.test_a.TestB" name="test_c" file="tests/test_a/TestB.py" line="0" time="0.007">
<failure message="assert False">tests/test_a/TestB.py:2: AssertionError</failure>
</testcase>
</testsuite>
</testsuites>
)xml";
const std::vector<std::string> kAmbiguousIds = {"tests/test_a.py::TestB::test_c", "tests/test_a/TestB.py::test_c"};

std::string outcome(const JUnitRun& run, const std::string& id) {
    const auto it = run.results.find(id);
    return it == run.results.end() ? "(no result)" : std::string(to_string(it->second.outcome));
}

}  // namespace

TEST_CASE("junit_address files a node id the way pytest's junitxml does", "[junit]") {
    const auto check = [](const std::string& id, const std::string& classname, const std::string& name) {
        const auto address = junit_address(id);
        CHECK(address.classname == classname);
        CHECK(address.name == name);
    };
    check("tests/test_x.py::test_a", "tests.test_x", "test_a");
    check("tests/test_x.py::TestY::TestInner::test_deep", "tests.test_x.TestY.TestInner", "test_deep");
    check("tests/test_x.py::test_p[a::b/c.py]", "tests.test_x", "test_p[a::b/c.py]");  // parameters stay whole
    check("test_top.py::test_a", "test_top", "test_a");
    check("tests/v1.2/test_dots.py::test_a", "tests.v1.2.test_dots", "test_a");
    check("tests/test_x.pyc.py::test_a", "tests.test_x.pyc", "test_a");  // only a final ".py" goes
    check("tests/doc.txt", "", "tests.doc.txt");                         // no "::": all of it is the name
    check("tests/test_x.py::test_p[\xc3\xa9]", "tests.test_x", "test_p[\xc3\xa9]");
    check("tests/test_x.py::test_p[\xf0\x9f\x98\x80]", "tests.test_x", "test_p[#x1F600]");
    check("tests/test_x.py::test_p[a\x07\x7f\tb]", "tests.test_x", "test_p[a#x07#x7F\tb]");
    check("tests/test_x.py::test_p[\xef\xbf\xbe]", "tests.test_x", "test_p[#xFFFE]");
}

TEST_CASE("read_junit maps real pytest output back to the collected node ids", "[junit]") {
    const auto run = parse_junit(kPytestReport, "ci/report.xml", kCollected);
    CHECK(run.unmapped.empty());
    CHECK(run.hostname == "vm");
    CHECK(run.name == "vm");
    CHECK(run.results.size() == kCollected.size());

    CHECK(outcome(run, "tests/test_x.py::test_plain") == "passed");
    CHECK(outcome(run, "tests/test_x.py::test_fails") == "failed");
    CHECK(run.results.at("tests/test_x.py::test_fails").message == "assert 1 == 2");
    CHECK(outcome(run, "tests/test_x.py::test_café") == "passed");
    CHECK(outcome(run, "tests/test_x.py::TestY::test_z[1]") == "passed");
    CHECK(outcome(run, "tests/test_x.py::TestY::test_z[2]") == "failed");
    CHECK(outcome(run, "tests/test_x.py::TestY::TestInner::test_deep") == "passed");
    for (const auto* id : {"tests/test_x.py::test_params[a b]", "tests/test_x.py::test_params[x.y]",
                           "tests/test_x.py::test_params[[n]]", "tests/test_x.py::test_params[a::b/c]",
                           "tests/test_x.py::test_params[\\xe9]"})
        CHECK(outcome(run, id) == "passed");
    CHECK(outcome(run, "tests/pkg/test_pkg.py::test_in_package") == "passed");
    CHECK(outcome(run, "tests/v1.2/test_dots.py::test_in_dotted_dir") == "passed");
}

TEST_CASE("read_junit reads setup and teardown errors, skips and xfails as pytest counts them", "[junit]") {
    const auto run = parse_junit(kPytestReport, "report.xml", kCollected);
    CHECK(outcome(run, "tests/test_teardown.py::test_passes_then_teardown_error") == "error");
    CHECK(run.results.at("tests/test_teardown.py::test_passes_then_teardown_error").message ==
          "failed on teardown with \"RuntimeError: teardown broke\"");
    // Two <testcase> elements, a failure and a teardown error: the failure is what happened.
    CHECK(outcome(run, "tests/test_teardown.py::test_fails_then_teardown_error") == "failed");
    CHECK(run.results.at("tests/test_teardown.py::test_fails_then_teardown_error").message == "assert False");
    CHECK(outcome(run, "tests/test_teardown.py::test_setup_error") == "error");
    CHECK(outcome(run, "tests/test_x.py::test_skipped") == "skipped");
    CHECK(run.results.at("tests/test_x.py::test_skipped").message == "not here");
    CHECK(outcome(run, "tests/test_x.py::test_xfail") == "xfailed");
    CHECK(outcome(run, "tests/test_x.py::test_xpass") == "passed");  // a report cannot tell an xpass
}

TEST_CASE("read_junit matches parameter ids that pytest escaped for XML", "[junit]") {
    const std::vector<std::string> ids = {"tests/test_raw.py::test_raw[\xc3\xa9]",
                                          "tests/test_raw.py::test_raw[\xf0\x9f\x98\x80]",
                                          "tests/test_raw.py::test_raw[bell\x07]"};
    const auto run = parse_junit(kRawIdsReport, "raw.xml", ids);
    CHECK(run.unmapped.empty());
    for (const auto& id : ids) CHECK(outcome(run, id) == "passed");
}

TEST_CASE("read_junit reports what it cannot map, once, and never guesses", "[junit]") {
    SECTION("a testcase no collected id matches") {
        const std::vector<std::string> fewer(kCollected.begin() + 3, kCollected.end());
        const auto run = parse_junit(kPytestReport, "report.xml", fewer);
        CHECK(run.unmapped == std::vector<std::string>{"tests.test_teardown::test_fails_then_teardown_error",
                                                       "tests.test_teardown::test_passes_then_teardown_error",
                                                       "tests.test_teardown::test_setup_error"});
        CHECK(run.results.size() == fewer.size());
    }
    SECTION("two collected ids at one address: xunit1's file attribute settles it") {
        const auto run = parse_junit(kAmbiguousReport, "report.xml", kAmbiguousIds);
        CHECK(run.unmapped.empty());
        CHECK(outcome(run, "tests/test_a.py::TestB::test_c") == "passed");
        CHECK(outcome(run, "tests/test_a/TestB.py::test_c") == "failed");
    }
    SECTION("two collected ids at one address and no file attribute: unmapped") {
        const auto run = parse_junit(
            R"(<testsuite><testcase classname="tests.test_a.TestB" name="test_c"/></testsuite>)", "r.xml", kAmbiguousIds);
        CHECK(run.results.empty());
        CHECK(run.unmapped == std::vector<std::string>{"tests.test_a.TestB::test_c"});
    }
    SECTION("a collected id listed twice is one id, not an ambiguity") {
        const auto run = parse_junit(R"(<testsuite><testcase classname="t" name="test_a"/></testsuite>)", "r.xml",
                                     {"t.py::test_a", "t.py::test_a"});
        CHECK(outcome(run, "t.py::test_a") == "passed");
    }
}

TEST_CASE("read_junit takes suites at any depth and names a run without a host by its file", "[junit]") {
    const auto run = parse_junit(R"(<testsuites><testsuite name="outer"><testsuite name="inner">
        <testcase classname="t" name="test_a"><failure/></testcase></testsuite></testsuite></testsuites>)",
                                 "/ci/artifacts/linux-py311.xml", {"t.py::test_a"});
    CHECK(run.hostname.empty());
    CHECK(run.name == "linux-py311");
    CHECK(outcome(run, "t.py::test_a") == "failed");
}

TEST_CASE("read_junit rejects what is not a JUnit report, naming file and line", "[junit]") {
    CHECK_THROWS_WITH(parse_junit("<testsuites>\n<testsuite>\n<testcase name='a'>\n</testsuite>\n", "r.xml", {}),
                      "r.xml:3: not valid XML: XML_ERROR_MISMATCHED_ELEMENT in <testcase>");
    CHECK_THROWS_WITH(parse_junit("{\"tests\": []}", "r.xml", {}), "r.xml:1: not valid XML: XML_ERROR_PARSING_TEXT");
    CHECK_THROWS_WITH(parse_junit("", "r.xml", {}), "r.xml: not valid XML: XML_ERROR_EMPTY_DOCUMENT");
    CHECK_THROWS_WITH(parse_junit("<?xml version=\"1.0\"?>\n<html>\n</html>\n", "r.xml", {}),
                      "r.xml:2: not a JUnit XML report: no <testsuite> element");
    CHECK_THROWS_WITH(parse_junit("<testsuites/>", "r.xml", {}),
                      "r.xml:1: not a JUnit XML report: no <testsuite> element");
    CHECK_THROWS_AS(read_junit("/nonexistent/evgate/report.xml", {}), Error);
    // evgate's own junit.xml: every attempt's outcome is a word it knows.
    CHECK_THROWS_WITH(parse_junit("<testsuite>\n<testcase classname='t' name='a'>\n<properties>\n"
                                  "<property name='outcomes' value='{\"seed.0\":\"passd\"}'/>\n</properties></testcase></testsuite>",
                                  "r.xml", {"t.py::a"}),
                      "r.xml:2: unknown outcome 'passd'");
}

TEST_CASE("read_junit reads a file", "[junit]") {
    const auto dir = fs::temp_directory_path() /
                     ("evgate-junit-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
    std::ofstream(dir / "runner.xml") << kPytestReport;
    const auto run = read_junit(dir / "runner.xml", kCollected);
    fs::remove_all(dir);
    CHECK(run.results.size() == kCollected.size());
}

TEST_CASE("read_junit maps 100k testcases against 100k collected ids", "[junit]") {
    constexpr int n = 100000;
    std::vector<std::string> ids;
    std::string xml = "<testsuites><testsuite hostname=\"ci\">";
    for (int i = 0; i < n; ++i) {
        const auto k = std::to_string(i);
        ids.push_back("tests/test_m" + std::to_string(i % 100) + ".py::TestC::test_" + k + "[p" + k + "]");
        xml += "<testcase classname=\"tests.test_m" + std::to_string(i % 100) + ".TestC\" name=\"test_" + k + "[p" + k +
               "]\"/>";
    }
    xml += "</testsuite></testsuites>";
    const auto run = parse_junit(xml, "big.xml", ids);
    CHECK(run.results.size() == static_cast<std::size_t>(n));
    CHECK(run.unmapped.empty());
}
