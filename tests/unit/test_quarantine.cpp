#include <catch2/catch.hpp>

#include <sstream>

#include "inputs/quarantine.hpp"
#include "io/error.hpp"

using evgate::InputError;
using evgate::QuarantineEntry;

namespace {

std::vector<QuarantineEntry> parse(const std::string& text) {
    std::istringstream in(text);
    return evgate::parse_quarantine(in, "quarantine.jsonl");
}

std::string error_of(const std::string& text) {
    try {
        parse(text);
    } catch (const InputError& error) {
        CHECK(error.file() == "quarantine.jsonl");
        return error.what();
    }
    FAIL("no error for: " << text);
    return {};
}

const std::string good =
    R"({"test": "tests/test_a.py::test_x", "until": "2026-03-01", "owner": "ana", "reason": "TZ on CI"})"
    "\n";

}  // namespace

TEST_CASE("quarantine entries are read with their lines", "[quarantine]") {
    auto entries =
        parse(good + "\n   \n" +
              R"({"owner": "bo", "until": "2024-02-29", "test": "tests/test_b.py::T::test_y[1]"})" + "\n");
    REQUIRE(entries.size() == 2);
    CHECK(entries[0].test == "tests/test_a.py::test_x");
    CHECK(to_string(entries[0].until) == "2026-03-01");
    CHECK(entries[0].owner == "ana");
    CHECK(entries[0].reason == "TZ on CI");
    CHECK(entries[0].line == 1);
    CHECK(entries[1].test == "tests/test_b.py::T::test_y[1]");
    CHECK(entries[1].reason.empty());  // reason is optional
    CHECK(entries[1].line == 4);
}

TEST_CASE("an empty quarantine is valid", "[quarantine]") {
    CHECK(parse("").empty());
    CHECK(parse("\n\n").empty());
}

TEST_CASE("a hand-edited last line without a newline is an entry", "[quarantine]") {
    auto text = good + R"({"test": "t2", "until": "2026-01-01", "owner": "x"})";
    auto entries = parse(text);
    REQUIRE(entries.size() == 2);
    CHECK(entries[1].test == "t2");
    CHECK(entries[1].line == 2);
    CHECK(parse("{\"test\": \"t\", \"until\": \"2026-01-01\", \"owner\": \"x\"}\r\n").size() == 1);
}

TEST_CASE("find_entry looks a test up by id", "[quarantine]") {
    auto entries = parse(good);
    REQUIRE(evgate::find_entry(entries, "tests/test_a.py::test_x") != nullptr);
    CHECK(evgate::find_entry(entries, "tests/test_a.py::test_x")->owner == "ana");
    CHECK(evgate::find_entry(entries, "tests/test_a.py::test") == nullptr);
}

TEST_CASE("quarantine errors name file, line and value", "[quarantine]") {
    CHECK(error_of(good + R"({"test": "t", "until": "2026-13-45", "owner": "x"})" + "\n") ==
          "quarantine.jsonl:2: 'until' is not a date: '2026-13-45'");
    CHECK(error_of(R"({"test": "t", "until": "2026-02-30", "owner": "x"})") ==
          "quarantine.jsonl:1: 'until' is not a date: '2026-02-30'");
    CHECK(error_of(good + "\n" + R"({"test": "t", "until": "2026-01-01"})" + "\n") ==
          "quarantine.jsonl:3: missing 'owner'");
    CHECK(error_of(R"({"until": "2026-01-01", "owner": "x"})") == "quarantine.jsonl:1: missing 'test'");
    CHECK(error_of(R"({"test": "t", "owner": "x"})") == "quarantine.jsonl:1: missing 'until'");
    CHECK(error_of(R"({"test": "t", "until": "2026-01-01", "owner": ""})") ==
          "quarantine.jsonl:1: 'owner' is empty");
    CHECK(error_of(R"({"test": "", "until": "2026-01-01", "owner": "x"})") ==
          "quarantine.jsonl:1: 'test' is empty");
    CHECK(error_of(R"({"test": "t", "until": 20260101, "owner": "x"})") ==
          "quarantine.jsonl:1: 'until' is not a string: 20260101");
    CHECK(error_of(R"({"test": "t", "until": "2026-01-01", "owner": "x", "reason": ["a"]})") ==
          "quarantine.jsonl:1: 'reason' is not a string: [\"a\"]");
    CHECK(error_of(good + R"(["t", "2026-01-01"])") ==
          "quarantine.jsonl:2: not a JSON object: [\"t\",\"2026-01-01\"]");
}

TEST_CASE("a duplicate entry names the first line", "[quarantine]") {
    CHECK(error_of(good + "\n" + good) ==
          "quarantine.jsonl:3: duplicate entry for 'tests/test_a.py::test_x' (first on line 1)");
}

TEST_CASE("a line that is not JSON, comments included, is an error with its column", "[quarantine]") {
    CHECK(error_of(good + "# comment\n") == "quarantine.jsonl:2: column 1: not valid JSON: Invalid value.");
    CHECK(error_of(good + R"({"test": "t", "until": "2026-01-01", "owner": "x",})") ==
          "quarantine.jsonl:2: column 51: not valid JSON: Missing a name for object member.");
}
