#include <catch2/catch.hpp>

#include <sstream>

#include "error.hpp"
#include "json_io.hpp"
#include "support.hpp"
#include "verdict_store.hpp"

using namespace evgate;
using evgate::test::TempDir;
using namespace std::string_literals;

namespace {

std::filesystem::path written(const TempDir& dir, const VerdictStoreWriter& store) {
    const auto file = dir.path / "verdicts.store";
    write_file_atomic(file, {store.index(), store.records()});
    return file;
}

}  // namespace

TEST_CASE("the verdict store gives back each test's text, and nothing for a test it lacks", "[verdict_store]") {
    TempDir dir;
    VerdictStoreWriter store;
    std::vector<std::string> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back("tests/test_x.py::test_" + std::to_string(i));
    ids.push_back("t.py::odd[a\nb\t]==]\xC3\xBC;$\"x\"]");  // whatever pytest allows in an id
    ids.push_back("");
    for (const auto& id : ids) store.add(id, "pass: stable: " + id + "\n  seed.0: passed\n");
    const auto file = written(dir, store);
    for (const auto& id : ids) CHECK(find_verdict(file, id) == std::optional<std::string>("pass: stable: " + id + "\n  seed.0: passed\n"));
    CHECK_FALSE(find_verdict(file, "tests/test_x.py::test_1000"));
    CHECK_FALSE(find_verdict(file, "tests/test_x.py::test_1"s + '\0'));
    CHECK_FALSE(find_verdict(dir.path / "absent.store", "t::a"));
}

TEST_CASE("of two verdicts for one test the first is kept, and an empty store knows no test", "[verdict_store]") {
    TempDir dir;
    VerdictStoreWriter store;
    store.add("t::a", "block: failing: first\n");
    store.add("t::b", "pass: stable\n");
    store.add("t::a", "pass: stable: second\n");
    CHECK(find_verdict(written(dir, store), "t::a") == std::optional<std::string>("block: failing: first\n"));
    CHECK_FALSE(find_verdict(written(dir, VerdictStoreWriter{}), "t::a"));
}

TEST_CASE("a damaged store is an error naming it, never a verdict", "[verdict_store]") {
    TempDir dir;
    VerdictStoreWriter store;
    store.add("t::a", "pass: stable\n");
    const auto file = written(dir, store);
    const auto bytes = read_file(file);
    write_file_atomic(file, bytes.substr(0, bytes.size() - 3));  // a record cut short
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::StartsWith("cannot read the verdict store " + file.string()));
    write_file_atomic(file, bytes.substr(0, 20));  // the index cut short
    CHECK_THROWS_AS(find_verdict(file, "t::a"), Error);
    write_file_atomic(file, "pass: stable: t::a\n");  // not a store at all: the files of old
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::EndsWith("not a verdict store"));
}

TEST_CASE("an entry prints its verdict, and fails saying why when there is none", "[verdict_store]") {
    TempDir dir;
    VerdictStoreWriter store;
    store.add("t::a", "block: failing: fails in every run (8 runs)\n  seed.0: failed\n");
    const auto file = written(dir, store);
    std::ostringstream out;
    CHECK(print_verdict(file, "t::a", out) == 0);
    CHECK(out.str() == "block: failing: fails in every run (8 runs)\n  seed.0: failed\n");

    std::ostringstream gone;
    CHECK(print_verdict(file, "t::renamed", gone) == 1);
    CHECK_THAT(gone.str(), Catch::StartsWith("no verdict: t::renamed has no row in the ledger") &&
                               Catch::Contains("does not collect it any more"));
    std::ostringstream none;
    CHECK(print_verdict(dir.path / "absent.store", "t::a", none) == 1);
    CHECK_THAT(none.str(), Catch::Contains("does not exist: the suite's ledger step has not run"));
}
