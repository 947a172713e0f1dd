#include <catch2/catch.hpp>

#include "inputs/baseline.hpp"
#include "io/error.hpp"

using evgate::Baseline;
using evgate::InputError;
using evgate::parse_baseline;
using Ids = std::vector<std::string>;

namespace {

std::string error_of(const std::string& text) {
    try {
        parse_baseline(text, "billing.baseline.json");
    } catch (const InputError& error) {
        CHECK(error.file() == "billing.baseline.json");
        return error.what();
    }
    FAIL("no error for: " << text);
    return {};
}

}  // namespace

TEST_CASE("a baseline with and without its ids", "[baseline]") {
    auto full = parse_baseline(R"({"collected": 3, "tests": ["t::a", "t::b"]})", "b.json");
    CHECK(full.collected == 3);
    CHECK(full.tests == Ids{"t::a", "t::b"});
    CHECK(full.lists_tests);

    auto count = parse_baseline(R"({"collected": 0})", "b.json");
    CHECK(count.collected == 0);
    CHECK(count.tests.empty());
    CHECK_FALSE(count.lists_tests);

    CHECK(parse_baseline(R"({"collected": 0, "tests": []})", "b.json").lists_tests);
}

TEST_CASE("baseline_json is sorted, one id a line, and reads back", "[baseline]") {
    Baseline baseline{4, {"tests/test_b.py::test_z", "tests/test_a.py::test_x[\"q\"]"}, true};
    auto text = evgate::baseline_json(baseline);
    CHECK(text ==
          "{\n"
          "  \"collected\": 4,\n"
          "  \"tests\": [\n"
          "    \"tests/test_a.py::test_x[\\\"q\\\"]\",\n"
          "    \"tests/test_b.py::test_z\"\n"
          "  ]\n"
          "}\n");
    auto back = parse_baseline(text, "b.json");
    CHECK(back.collected == 4);
    CHECK(back.tests == Ids{"tests/test_a.py::test_x[\"q\"]", "tests/test_b.py::test_z"});
    CHECK(evgate::baseline_json(back) == text);

    CHECK(evgate::baseline_json(Baseline{7, {}, false}) == "{\n  \"collected\": 7\n}\n");
    CHECK(evgate::baseline_json(Baseline{0, {}, true}) == "{\n  \"collected\": 0,\n  \"tests\": []\n}\n");
}

TEST_CASE("baseline errors name file, line and value", "[baseline]") {
    CHECK(error_of("{\n  \"collected\": 3,\n  \"tests\": [\"a\",]\n}") ==
          "billing.baseline.json:3: column 17: not valid JSON: Invalid value.");
    CHECK(error_of("[1, 2]") == "billing.baseline.json: not a JSON object");
    CHECK(error_of(R"({"tests": []})") == "billing.baseline.json: missing 'collected'");
    CHECK(error_of("{\n  \"collected\": 3.5\n}") ==
          "billing.baseline.json:2: 'collected' is not a non-negative integer: 3.5");
    CHECK(error_of("{\n  \"collected\": -1\n}") ==
          "billing.baseline.json:2: 'collected' is not a non-negative integer: -1");
    CHECK(error_of(R"({"collected": "12"})") ==
          "billing.baseline.json:1: 'collected' is not a non-negative integer: \"12\"");
    CHECK(error_of(R"({"collected": 18446744073709551615})") ==
          "billing.baseline.json:1: 'collected' is not a non-negative integer: 18446744073709551615");
    CHECK(error_of("{\"collected\": 1,\n\"tests\": \"t::a\"}") ==
          "billing.baseline.json:2: 'tests' is not a list of ids: \"t::a\"");
    CHECK(error_of("{\"collected\": 2,\n\"tests\": [\"t::a\", 5]}") ==
          "billing.baseline.json:2: 'tests' holds a non-string: 5");
    CHECK(error_of("{\"collected\": 2,\n\"tests\": [\"\"]}") ==
          "billing.baseline.json:2: 'tests' holds an empty id");
}

TEST_CASE("duplicate ids and a count below the list are errors", "[baseline]") {
    CHECK(error_of(
              "{\n  \"collected\": 3,\n  \"tests\": [\n    \"t::a\",\n    \"t::b\",\n    \"t::a\"\n  ]\n}") ==
          "billing.baseline.json:6: duplicate id in 'tests': 't::a'");
    CHECK(error_of("{\n  \"collected\": 1,\n  \"tests\": [\"t::a\", \"t::b\"]\n}") ==
          "billing.baseline.json:2: 'collected' is 1 but 'tests' lists 2 ids");
}
