#include <catch2/catch.hpp>

#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "runs/run_records.hpp"
#include "support.hpp"

using namespace evgate;
using evgate::test::TempDir;

namespace {

// The same run as the plugin writes it (compact) and as json.dumps writes it by default (spaced).
const char* const kCompact =
    R"({"event":"session","rootdir":"/r","configfile":null,"conftests":["/r/conftest.py"],"collected":3,"unlisted":[],"absent":["t::gone"]})"
    "\n"
    R"({"event":"start","test":"t::a"})"
    "\n"
    R"({"event":"result","test":"t::a","outcome":"failed","dirty":["db"],"message":"assert 1 == 2","phases":{"call":"failed"},"duration":0.5})"
    "\n"
    R"({"event":"start","test":"t::b"})"
    "\n"
    R"({"event":"interrupted","test":"t::b","reason":"killed by signal 9"})"
    "\n"
    R"({"event":"end","exitstatus":1})"
    "\n"
    R"({"event":"torn","bytes":12})"
    "\n"
    R"({"event":"finished","complete":true,"receipt":"r1","processes":2,"note":""})"
    "\n";
const char* const kSpaced =
    R"({"absent": ["t::gone"], "collected": 3, "configfile": null, "conftests": ["/r/conftest.py"], "event": "session", "rootdir": "/r", "unlisted": []})"
    "\n"
    R"({"event": "start", "test": "t::a"})"
    "\n"
    R"({"dirty": ["db"], "duration": 0.5, "event": "result", "message": "assert 1 == 2", "outcome": "failed", "phases": {"call": "failed"}, "test": "t::a"})"
    "\n"
    R"({"event": "start", "test": "t::b"})"
    "\n"
    R"({"event": "interrupted", "reason": "killed by signal 9", "test": "t::b"})"
    "\n"
    R"({"event": "end", "exitstatus": 1})"
    "\n"
    R"({"bytes": 12, "event": "torn"})"
    "\n"
    R"({"complete": true, "event": "finished", "note": "", "processes": 2, "receipt": "r1"})"
    "\n";

RunRecords read(const TempDir& dir, const std::string& text) {
    write_file_atomic(dir.path / "seed.0.jsonl", test::sealed(text));
    return read_run_records(dir.path / "seed.0.jsonl");
}

}  // namespace

TEST_CASE("run records read the same, compact or spaced", "[run_records]") {
    TempDir dir;
    for (const char* text : {kCompact, kSpaced}) {
        const auto run = read(dir, text);
        REQUIRE(run.sessions.size() == 1);
        CHECK(run.sessions[0].rootdir == "/r");
        CHECK_FALSE(run.sessions[0].configfile);
        CHECK(run.sessions[0].conftests == std::vector<std::string>{"/r/conftest.py"});
        CHECK(run.sessions[0].collected == 3);
        CHECK(run.sessions[0].absent == std::vector<std::string>{"t::gone"});
        CHECK(run.started == std::vector<std::string>{"t::a", "t::b"});
        REQUIRE(run.results.count("t::a"));
        CHECK(run.results.at("t::a").outcome == Outcome::failed);
        CHECK(run.results.at("t::a").dirty == std::vector<std::string>{"db"});
        CHECK(run.results.at("t::a").message == "assert 1 == 2");
        CHECK(run.interrupted.at("t::b") == "killed by signal 9");
        CHECK(run.processes_ended == 1);
        CHECK(run.exit_statuses == std::vector<int>{1});
        CHECK(run.torn == 1);
        CHECK(run.finished == std::optional<bool>(true));
        CHECK(run.receipt == "r1");
    }
}

TEST_CASE("a run's records that are not records name file, line and value", "[run_records]") {
    TempDir dir;
    const auto file = (dir.path / "seed.0.jsonl").string();
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"start\",\"test\":\"t::a\"}\nnot json\n"),
                      file + ":2: column 2: not valid JSON: Invalid value.");
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"start\",\"test\":\"t::a\"}\n{\"event\":\"result\",\"test\":\"t::a\""),
                      file + ":2: torn record (no newline at the end)");
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"begin\"}\n"), file + ":1: unknown record event 'begin'");
    CHECK_THROWS_WITH(read(dir, "[1, 2]\n"), file + ":1: unknown record event ''");
    CHECK_THROWS_WITH(read(dir, "\n{\"event\":\"result\",\"test\":\"t::a\",\"outcome\":3}\n"), file + ":2: 'outcome' is not a string");
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"result\",\"test\":\"t::a\",\"outcome\":\"pass\"}\n"), file + ":1: unknown outcome 'pass'");
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"start\"}\n"), file + ":1: missing string 'test'");
    CHECK_THROWS_WITH(read(dir, "{\"event\":\"result\",\"test\":\"t::a\",\"outcome\":\"passed\",\"dirty\":[1]}\n"),
                      file + ":1: 'dirty' holds a non-string");
    CHECK_THROWS_WITH(read(dir, "{\"event\":7}\n"), file + ":1: 'event' is not a string");
}

TEST_CASE("a later result of a test replaces the earlier, and members of other events are not checked", "[run_records]") {
    TempDir dir;
    const auto run = read(dir, R"({"event":"result","test":"t::a","outcome":"failed","message":"x"})"
                               "\n"
                               R"({"event":"result","test":"t::a","outcome":"passed","dirty":null})"
                               "\n"
                               R"({"event":"start","test":"t::b","outcome":5,"dirty":"no"})"
                               "\n"
                               R"({"event":"end","exitstatus":3.5})"
                               "\n"
                               R"({"event":"session","collected":"many"})"
                               "\n");
    CHECK(run.results.at("t::a").outcome == Outcome::passed);
    CHECK(run.results.at("t::a").message.empty());
    CHECK(run.exit_statuses.empty());
    CHECK(run.sessions.at(0).collected == 0);
}

TEST_CASE("a run without records has none", "[run_records]") {
    TempDir dir;
    const auto run = read_run_records(dir.path / "absent.jsonl");
    CHECK(run.results.empty());
    CHECK_FALSE(run.finished);
}

TEST_CASE("the finished record seals the records before it: an edit or an append blocks the run", "[run_records]") {
    TempDir dir;
    const auto file = dir.path / "seed.0.jsonl";
    const auto name = file.string();
    {
        RecordsFile records(file);
        records.append(R"({"event":"start","test":"t::a"})"
                       "\n"
                       R"({"event":"result","test":"t::a","outcome":"failed"})"
                       "\n");
        records.append_record(R"({"event":"end","exitstatus":1})");
        records.finish(R"({"event":"finished","complete":true,"receipt":"r1"})");
    }
    const auto sealed = read_file(file);
    CHECK(read_run_records(file).finished == std::optional<bool>(true));
    CHECK(sealed.find(R"("bytes":)" + std::to_string(sealed.rfind("{\"event\":\"finished\"")) + ",") != std::string::npos);

    auto edited = sealed;
    edited.replace(edited.find("failed"), 6, "passed");  // the same length: only the digest tells
    write_file_atomic(file, edited);
    CHECK_THROWS_WITH(read_run_records(file),
                      Catch::StartsWith(name + ":4: the records before the 'finished' record are not what evgate wrote (") &&
                          Catch::EndsWith("): the file was changed after evgate wrote it"));

    write_file_atomic(file, sealed + R"({"event":"result","test":"t::a","outcome":"passed"})"
                                     "\n");
    CHECK_THROWS_WITH(read_run_records(file), name + ":5: a record after the 'finished' record: the file was appended to after evgate closed it");

    const auto unsealed = sealed.substr(0, sealed.find(R"(,"bytes")")) + "}\n";
    write_file_atomic(file, unsealed);
    CHECK_THROWS_WITH(read_run_records(file), Catch::Contains(":4: the 'finished' record carries no length and digest"));

    // The DOM-free reader the gate streams with checks the same.
    std::string storage;
    write_file_atomic(file, edited);
    CHECK_THROWS_AS(read_records(file, storage, [](const RunRecord&) {}), InputError);
}

TEST_CASE("a records file starts empty, and clear() empties it for a run done again", "[run_records]") {
    TempDir dir;
    const auto file = dir.path / "seed.0.jsonl";
    write_file_atomic(file, "left from an earlier invocation\n");
    RecordsFile records(file);
    CHECK(read_file(file).empty());
    records.append_record(R"({"event":"start","test":"t::a"})");
    records.clear();
    records.append_record(R"({"event":"start","test":"t::b"})");
    CHECK(read_file(file) == R"({"event":"start","test":"t::b"})"
                             "\n");
    CHECK(records.text() == read_file(file));
}

TEST_CASE("records that doubt a run: outside any test, unblamed, foreign, order, exit status", "[run_records]") {
    const auto run = parse_run_records(
        R"({"event":"session","rootdir":"/r"})"
        "\n"
        R"({"event":"outside","phase":"collection","changed":["data"]})"
        "\n"
        R"({"event":"start","test":"t::y"})"
        "\n"
        R"x({"event":"result","test":"t::y","outcome":"passed","changed":["data","db"],"dirty":[],"unblamed":["data","db"],"leftover":"a thread left by t::x ('Thread-1')"})x"
        "\n"
        R"({"event":"outside","phase":"session end","changed":["db"]})"
        "\n"
        R"({"event":"end","exitstatus":0,"final":1})"
        "\n"
        R"({"event":"status","reason":"a pytest_sessionfinish hook changed it"})"
        "\n"
        R"({"event":"session","rootdir":"/r"})"
        "\n"
        R"({"event":"foreign","pid":7,"reason":"a process forked during t::y (pid 7) wrote a result record"})"
        "\n"
        R"({"event":"order","reason":"t::b ran 1st, planned 2nd"})"
        "\n"
        R"({"event":"outside","phase":"exit","changed":["data"]})"
        "\n"
        R"({"event":"outside","phase":"fixture teardown","fixture":"server","scope":"session","location":"conftest.py:4","test":"t::z","changed":["data"]})"
        "\n"
        R"({"event":"outside","phase":"fixture setup","fixture":"db","scope":"module","location":null,"test":null,"changed":["db"]})"
        "\n"
        R"({"event":"end","exitstatus":0,"finish":0,"final":1})"
        "\n",
        "seed.0.jsonl");
    std::vector<std::string> shown;
    for (const auto& d : run.doubts) shown.push_back(d.check + "@" + std::to_string(d.process) + ": " + d.reason);
    // Long messages are split over lines: adjacent literals on purpose.
    // NOLINTBEGIN(bugprone-suspicious-missing-comma)
    CHECK(shown == std::vector<std::string>{
                       "outside@1: fixture group 'data' changed outside any test, at start-up or collection (a conftest, "
                       "plugin or test module imported, a session-start or collection hook)",
                       "uncertain@1: groups 'data', 'db' changed during t::y while a thread left by t::x ('Thread-1') was "
                       "running: not blamed on either",
                       "outside@1: fixture group 'db' changed outside any test, at session end (a pytest_sessionfinish or "
                       "pytest_unconfigure hook)",
                       "exit-status@1: a pytest_sessionfinish hook changed it",
                       "foreign@2: a process forked during t::y (pid 7) wrote a result record",
                       "order@2: t::b ran 1st, planned 2nd",
                       "outside@2: fixture group 'data' changed outside any test, after pytest's session ended (an "
                       "atexit handler, or a thread or process still running)",
                       "outside@2: fixture group 'data' changed outside any test, at the teardown of session-scoped "
                       "fixture 'server' (conftest.py:4), in t::z (not blamed on it)",
                       "outside@2: fixture group 'db' changed outside any test, at the setup of module-scoped fixture "
                       "'db', at session end"});
    // NOLINTEND(bugprone-suspicious-missing-comma)
    CHECK(run.final_statuses == std::vector<int>{1, 1});
    CHECK(run.finish_statuses == std::vector<int>{0});
    CHECK(run.changed_outside == std::vector<std::string>{"data", "db", "data", "data", "db"});
    CHECK(run.results.at("t::y").dirty.empty());
    CHECK_THROWS_WITH(parse_run_records(R"({"event":"outside","changed":[]})"
                                        "\n",
                                        "x.jsonl"),
                      "x.jsonl:1: missing string 'phase'");
    CHECK_THROWS_WITH(parse_run_records(R"({"event":"order"})"
                                        "\n",
                                        "x.jsonl"),
                      "x.jsonl:1: missing string 'reason'");
}

TEST_CASE("a line on the record channel that is not a record becomes a noise record naming the running test", "[run_records]") {
    const auto start = check_channel_line(R"({"event":"start","test":"t::a"})");
    CHECK(start.record);
    CHECK(start.event == RunRecord::Event::start);
    CHECK(start.test == "t::a");
    CHECK(check_channel_line(R"({"event":"result","test":"t::a","outcome":"passed","dirty":[]})").event == RunRecord::Event::result);
    // What a test writes there by habit (TAP's "# ..." on descriptor 3), or JSON that is no record.
    for (const char* noise : {"# debug: connecting", "", "{not json}", R"({"debug":1})", R"(["event","start"])",
                              R"({"event":"result"})", R"({"event":"wave"})"})
        CHECK_FALSE(check_channel_line(noise).record);

    const auto record = noise_record(std::string("# debug\x01 ") + std::string(200, 'x'), "t::a");
    CHECK(check_channel_line(record).record);  // the replacement is a record itself
    const auto run = parse_run_records(record + "\n", "seed.0.jsonl");
    REQUIRE(run.doubts.size() == 1);
    CHECK(run.doubts.front().check == "channel");
    CHECK_THAT(run.doubts.front().reason, Catch::StartsWith("t::a wrote, on the run's record channel, a line that is not a record: "
                                                            "209 bytes, '# debug  xxx") &&
                                              Catch::Contains("...'"));
    const auto between = parse_run_records(noise_record("stray", "") + "\n", "seed.0.jsonl");
    CHECK_THAT(between.doubts.front().reason, Catch::StartsWith("between tests, on the run's record channel"));
}
