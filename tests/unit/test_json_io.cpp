#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <sstream>

#include <unistd.h>

#include "error.hpp"
#include "json_io.hpp"
#include "support.hpp"

namespace fs = std::filesystem;

using evgate::test::TempDir;

TEST_CASE("parse_json reports file, line and column", "[json_io]") {
    CHECK(evgate::parse_json(R"({"a": [1, 2]})", "x.json")["a"].Size() == 2);
    CHECK_THROWS_WITH(evgate::parse_json("{\n  \"a\": tru\n}", "x.json"),
                      "x.json:2: column 11: not valid JSON: Invalid value.");
    CHECK_THROWS_AS(evgate::parse_json("", "x.json"), evgate::InputError);
}

TEST_CASE("JsonlReader skips blank lines and counts them", "[json_io]") {
    std::istringstream in("{\"n\": 1}\n\n  \t\n{\"n\": 2}\n");
    evgate::JsonlReader reader(in, "runs.jsonl");
    rapidjson::Document doc;
    REQUIRE(reader.next(doc));
    CHECK(doc["n"].GetInt() == 1);
    CHECK(reader.line() == 1);
    REQUIRE(reader.next(doc));
    CHECK(doc["n"].GetInt() == 2);
    CHECK(reader.line() == 4);
    CHECK_FALSE(reader.next(doc));
    CHECK_FALSE(reader.torn());
}

TEST_CASE("JsonlReader never takes a torn last line for a record", "[json_io]") {
    std::istringstream in("{\"n\": 1}\n{\"n\": 2, \"outc");
    evgate::JsonlReader reader(in, "runs.jsonl");
    rapidjson::Document doc;
    REQUIRE(reader.next(doc));
    CHECK_FALSE(reader.next(doc));
    CHECK(reader.torn());
    CHECK(reader.line() == 2);

    std::istringstream complete("{\"n\": 1}");  // even a complete object is torn without '\n'
    evgate::JsonlReader again(complete, "runs.jsonl");
    CHECK_FALSE(again.next(doc));
    CHECK(again.torn());
}

TEST_CASE("JsonlReader names file, line and column of bad JSON", "[json_io]") {
    std::istringstream in("{\"n\": 1}\n{\"n\": }\n");
    evgate::JsonlReader reader(in, "runs.jsonl");
    rapidjson::Document doc;
    REQUIRE(reader.next(doc));
    CHECK_THROWS_WITH(reader.next(doc), "runs.jsonl:2: column 7: not valid JSON: Invalid value.");
}

TEST_CASE("json_string and to_json write compact JSON", "[json_io]") {
    CHECK(evgate::json_string("a\"b\n") == R"("a\"b\n")");
    CHECK(evgate::to_json(evgate::parse_json(R"({ "a" : [ 1 , true ] })", "x")) == R"({"a":[1,true]})");
}

TEST_CASE("typed member access names source and key", "[json_io]") {
    auto doc = evgate::parse_json(R"({"s": "x", "n": 1, "l": ["a", "b"], "bad": [1]})", "x.json");
    CHECK(evgate::string_member(doc, "s", "x.json") == "x");
    CHECK_FALSE(evgate::optional_string(doc, "missing", "x.json"));
    CHECK(evgate::string_array(doc, "l", "x.json") == std::vector<std::string>{"a", "b"});
    CHECK_THROWS_WITH(evgate::string_member(doc, "missing", "x.json"), "x.json: missing string 'missing'");
    CHECK_THROWS_WITH(evgate::string_member(doc, "n", "x.json"), "x.json: 'n' is not a string");
    CHECK_THROWS_WITH(evgate::string_array(doc, "bad", "x.json"), "x.json: 'bad' holds a non-string");
}

TEST_CASE("write_file_atomic replaces a file and leaves no temporary behind", "[json_io]") {
    TempDir dir;
    auto file = dir.path / "ledger.jsonl";
    evgate::write_file_atomic(file, "first\n");
    CHECK(evgate::read_file(file) == "first\n");
    evgate::write_file_atomic(file, "second\n");
    CHECK(evgate::read_file(file) == "second\n");
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);

    CHECK_THROWS_WITH(evgate::write_file_atomic(dir.path / "missing" / "x.json", "{}"),
                      Catch::StartsWith("cannot write " + (dir.path / "missing").string()) &&
                          Catch::EndsWith("No such file or directory"));
    CHECK_THROWS_WITH(evgate::read_file(dir.path / "absent"),
                      "cannot read " + (dir.path / "absent").string() + ": No such file or directory");
}
