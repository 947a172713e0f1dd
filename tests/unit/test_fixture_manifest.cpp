#include <catch2/catch.hpp>

#include <sstream>

#include "inputs/fixture_manifest.hpp"
#include "io/error.hpp"

using evgate::FixtureGroup;
using evgate::InputError;
using namespace std::string_literals;

namespace {

std::vector<FixtureGroup> parse(const std::string& text) {
    std::istringstream in(text);
    return evgate::parse_fixture_manifest(in, "fixtures.manifest");
}

// The message of the InputError that parsing `text` throws.
std::string error_of(const std::string& text) {
    try {
        parse(text);
    } catch (const InputError& error) {
        CHECK(error.file() == "fixtures.manifest");
        return error.what();
    }
    FAIL("no error for: " << text);
    return {};
}

}  // namespace

TEST_CASE("a manifest lists groups with their lines", "[fixture_manifest]") {
    auto groups = parse(
        "# fixture groups of the billing suite\n"
        "\n"
        "db: fixtures/db/*.sqlite\n"
        "  golden-files.v2 :\ttests/golden/**/*.json  \r\n"
        "   # an indented comment\n"
        "clock_state: state/clock.txt\n"
        "odd: data/a:b/*\n");
    REQUIRE(groups.size() == 4);
    CHECK(groups[0].name == "db");
    CHECK(groups[0].pattern == "fixtures/db/*.sqlite");
    CHECK(groups[0].line == 3);
    CHECK(groups[1].name == "golden-files.v2");
    CHECK(groups[1].pattern == "tests/golden/**/*.json");
    CHECK(groups[1].line == 4);
    CHECK(groups[2].name == "clock_state");
    CHECK(groups[2].line == 6);
    CHECK(groups[3].pattern == "data/a:b/*");  // only the first colon separates
}

TEST_CASE("a manifest without groups is valid", "[fixture_manifest]") {
    CHECK(parse("").empty());
    CHECK(parse("# nothing yet\n\n   \n").empty());
}

TEST_CASE("a last line without a newline still counts", "[fixture_manifest]") {
    auto groups = parse("a: x/*\nb: y/*");
    REQUIRE(groups.size() == 2);
    CHECK(groups[1].line == 2);
}

TEST_CASE("manifest errors name file, line and value", "[fixture_manifest]") {
    CHECK(error_of("db: a/*\nno colon here\n") ==
          "fixtures.manifest:2: expected 'name: glob': 'no colon here'");
    CHECK(error_of(": data/*\n") == "fixtures.manifest:1: empty group name: ': data/*'");
    CHECK(error_of("\n\nmy group: data/*\n") ==
          "fixtures.manifest:3: group name may hold only A-Z a-z 0-9 _ . -: 'my group'");
    CHECK(error_of("db/x: data/*\n") ==
          "fixtures.manifest:1: group name may hold only A-Z a-z 0-9 _ . -: 'db/x'");
    CHECK(error_of("db:   \n") == "fixtures.manifest:1: empty glob for group 'db'");
    CHECK(error_of("db: a/*\n# c\ncache: b/*\ndb: c/*\n") ==
          "fixtures.manifest:4: group 'db' is already defined on line 1");
}

TEST_CASE("a glob that leaves ROOT is an error", "[fixture_manifest]") {
    CHECK(error_of("# x\n\netc: ../../etc/*\n") == "fixtures.manifest:3: glob leaves ROOT: '../../etc/*'");
    CHECK(error_of("a: /etc/passwd\n") == "fixtures.manifest:1: glob leaves ROOT: '/etc/passwd'");
    CHECK(error_of("a: ~/secrets/*\n") == "fixtures.manifest:1: glob leaves ROOT: '~/secrets/*'");
    CHECK(error_of("a: data/../../x\n") == "fixtures.manifest:1: glob leaves ROOT: 'data/../../x'");
    CHECK(error_of("a: data/..\n") == "fixtures.manifest:1: glob leaves ROOT: 'data/..'");
    CHECK(error_of("a: data\\x\n") == "fixtures.manifest:1: glob leaves ROOT: 'data\\x'");
    CHECK(error_of("a: data/x\0y\n"s) == "fixtures.manifest:1: glob leaves ROOT: 'data/x\\0y'");
}

TEST_CASE("a bad glob is an error on its line", "[fixture_manifest]") {
    CHECK(error_of("ok: a/*\nbad: data/[ab\n") == "fixtures.manifest:2: unclosed '[' in glob 'data/[ab'");
    CHECK(error_of("bad: data//x\n") == "fixtures.manifest:1: empty segment in glob 'data//x'");
}

TEST_CASE("names like ..x and dotted segments are fine when they stay inside", "[fixture_manifest]") {
    auto groups = parse("a: data/..x/*\nb: ./data/*\n");
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].pattern == "data/..x/*");
    CHECK(groups[1].pattern == "./data/*");
}
