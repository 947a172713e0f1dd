#include <catch2/catch.hpp>

#include <filesystem>
#include <random>
#include <sstream>

#include <unistd.h>

#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
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

namespace {

// The members a test asks FieldCapture for, in its key order.
evgate::FieldCapture fields() { return evgate::FieldCapture{"s", "n", "l", "o", "b"}; }

}  // namespace

TEST_CASE("JsonlSaxReader reads compact and spaced records alike, in place", "[json_io]") {
    const std::string compact = R"({"s":"a\"b","n":-3,"l":["x","y"],"o":{"k":"v","j":1},"b":true})"
                                "\n";
    const std::string spaced = R"({ "s" : "a\"b" , "n" : -3 , "l" : [ "x" , "y" ] , "o" : { "k" : "v" , "j" : 1 } , "b" : true })"
                               "\r\n";
    for (std::string text : {compact, spaced}) {
        evgate::JsonlSaxReader reader(text, "runs.jsonl");
        auto f = fields();
        REQUIRE(reader.next(f));
        CHECK(f.is_object());
        CHECK(f[0].text == "a\"b");
        CHECK(f[1].kind == evgate::JsonField::Kind::integer);
        CHECK(f[1].integer == -3);
        CHECK(f[2].items == std::vector<std::string_view>{"x", "y"});
        CHECK(f[3].items == std::vector<std::string_view>{"k", "v", "j", ""});
        CHECK_FALSE(f[3].only_strings);
        CHECK(f[4].boolean);
        CHECK_FALSE(reader.next(f));
        CHECK_FALSE(reader.torn());
    }
}

TEST_CASE("FieldCapture keeps the first of duplicate keys and skips what it was not asked for", "[json_io]") {
    std::string text =
        "{\"x\":{\"s\":\"nested\",\"l\":[1]},\"s\":\"first\",\"s\":\"second\",\"l\":[\"a\",[\"deep\"],\"b\"],\"n\":1.5}\n"
        "[\"s\",\"n\"]\n"
        "{\"n\":18446744073709551615,\"l\":null}\n";
    evgate::JsonlSaxReader reader(text, "runs.jsonl");
    auto f = fields();
    REQUIRE(reader.next(f));
    CHECK(f[0].text == "first");
    CHECK(f[2].items == std::vector<std::string_view>{"a", "b"});
    CHECK_FALSE(f[2].only_strings);
    CHECK(f[1].kind == evgate::JsonField::Kind::number);
    CHECK(f[3].kind == evgate::JsonField::Kind::absent);
    REQUIRE(reader.next(f));  // not an object: nothing captured
    CHECK_FALSE(f.is_object());
    CHECK(f[0].kind == evgate::JsonField::Kind::absent);
    REQUIRE(reader.next(f));
    CHECK(f[1].kind == evgate::JsonField::Kind::number);  // beyond 64 bits signed, as IsInt64 says
    CHECK(f[2].kind == evgate::JsonField::Kind::null);
}

TEST_CASE("JsonlSaxReader skips blank lines, names file, line and column, and never takes a torn line", "[json_io]") {
    std::string good = "{\"n\": 1}\n\n  \t\r\n{\"n\": 2}\n";
    evgate::JsonlSaxReader reader(good, "runs.jsonl");
    auto f = fields();
    REQUIRE(reader.next(f));
    CHECK(reader.line() == 1);
    REQUIRE(reader.next(f));
    CHECK(f[1].integer == 2);
    CHECK(reader.line() == 4);
    CHECK_FALSE(reader.next(f));
    CHECK_FALSE(reader.torn());

    std::string bad = "{\"n\": 1}\n{\"n\": }\n";
    evgate::JsonlSaxReader garbage(bad, "runs.jsonl");
    REQUIRE(garbage.next(f));
    CHECK_THROWS_WITH(garbage.next(f), "runs.jsonl:2: column 7: not valid JSON: Invalid value.");

    std::string torn = "{\"n\": 1}\n{\"n\": 2}";  // even a complete object is torn without '\n'
    evgate::JsonlSaxReader cut(torn, "runs.jsonl");
    REQUIRE(cut.next(f));
    CHECK_FALSE(cut.next(f));
    CHECK(cut.torn());
    CHECK(cut.line() == 2);
}

TEST_CASE("captured members are checked like document members, naming file and line", "[json_io]") {
    std::string text = "{\"s\": 1, \"l\": \"x\", \"o\": [\"a\", 2]}\n";
    evgate::JsonlSaxReader reader(text, "runs.jsonl");
    auto f = fields();
    REQUIRE(reader.next(f));
    const std::string source = "runs.jsonl";
    const evgate::Where where{source, reader.line()};
    CHECK_THROWS_WITH(evgate::required_text(f[0], "s", where), "runs.jsonl:1: 's' is not a string");
    CHECK_THROWS_WITH(evgate::required_text(f[1], "n", where), "runs.jsonl:1: missing string 'n'");
    CHECK_FALSE(evgate::optional_text(f[1], "n", where));
    CHECK_THROWS_WITH(evgate::text_list(f[2], "l", where), "runs.jsonl:1: 'l' is not a list");
    CHECK_THROWS_WITH(evgate::text_list(f[3], "o", where), "runs.jsonl:1: 'o' holds a non-string");
    CHECK(evgate::text_list(f[4], "b", where).empty());
}

TEST_CASE("read_file reuses a buffer", "[json_io]") {
    TempDir dir;
    evgate::write_file_atomic(dir.path / "a", "first and second");
    std::string buffer(100, 'x');
    evgate::read_file(dir.path / "a", buffer);
    CHECK(buffer == "first and second");
    evgate::write_file_atomic(dir.path / "b", "");
    evgate::read_file(dir.path / "b", buffer);
    CHECK(buffer.empty());
}
