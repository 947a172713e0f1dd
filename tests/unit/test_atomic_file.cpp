#include <catch2/catch.hpp>

#include <filesystem>

#include "io/atomic_file.hpp"
#include "io/json_io.hpp"
#include "support.hpp"

namespace fs = std::filesystem;

using evgate::test::TempDir;

TEST_CASE("write_file_atomic replaces a file and leaves no temporary behind", "[atomic_file]") {
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

TEST_CASE("an atomic file written in pieces appears whole at commit, and not at all without", "[atomic_file]") {
    TempDir dir;
    {
        evgate::AtomicFile file(dir.path / "a");
        file.write("first ");
        file.write("and second");
        CHECK_FALSE(fs::exists(dir.path / "a"));
        file.commit();
    }
    CHECK(evgate::read_file(dir.path / "a") == "first and second");
    {
        evgate::AtomicFile file(dir.path / "a");
        file.write("abandoned");
    }
    CHECK(evgate::read_file(dir.path / "a") == "first and second");
    CHECK(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}
