#include <catch2/catch.hpp>

#include "io/atomic_file.hpp"
#include "io/error.hpp"
#include "io/json_io.hpp"
#include "support.hpp"
#include "verdicts/verdict_store.hpp"

using namespace evgate;
using evgate::test::TempDir;
using namespace std::string_literals;

namespace {

// A store of (test, text) pairs, as the ledger step writes it.
std::filesystem::path written(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& verdicts) {
    std::string bytes;
    VerdictStoreWriter store([&bytes](std::string_view part) { bytes += part; });
    for (const auto& [test, text] : verdicts) store.add(test, text);
    store.finish();
    auto file = dir.path / "verdicts.store";
    write_file_atomic(file, bytes);
    return file;
}

}  // namespace

TEST_CASE("the verdict store gives back each test's text, and nothing for a test it lacks", "[verdict_store]") {
    TempDir dir;
    std::vector<std::string> ids;
    for (int i = 0; i < 1000; ++i) ids.push_back("tests/test_x.py::test_" + std::to_string(i));
    ids.push_back("t.py::odd[a\nb\t]==]\xC3\xBC;$\"x\"]");  // whatever pytest allows in an id
    ids.push_back("");
    ids.push_back(std::string(3 << 20, 'x'));  // a verdict larger than the pieces the store is written in
    std::vector<std::pair<std::string, std::string>> verdicts;
    for (const auto& id : ids) verdicts.emplace_back(id, "pass: stable: " + id + "\n  seed.0: passed\n");
    const auto file = written(dir, verdicts);
    for (const auto& id : ids) CHECK(find_verdict(file, id) == std::optional<std::string>("pass: stable: " + id + "\n  seed.0: passed\n"));
    CHECK_FALSE(find_verdict(file, "tests/test_x.py::test_1000"));
    CHECK_FALSE(find_verdict(file, "tests/test_x.py::test_1"s + '\0'));
    CHECK_FALSE(find_verdict(dir.path / "absent.store", "t::a"));
}

TEST_CASE("of two verdicts for one test the first is kept, and an empty store knows no test", "[verdict_store]") {
    TempDir dir;
    const auto file = written(dir, {{"t::a", "block: failing: first\n"}, {"t::b", "pass: stable\n"}, {"t::a", "pass: stable: second\n"}});
    CHECK(find_verdict(file, "t::a") == std::optional<std::string>("block: failing: first\n"));
    CHECK(find_verdict(file, "t::b") == std::optional<std::string>("pass: stable\n"));
    CHECK_FALSE(find_verdict(written(dir, {}), "t::a"));
}

TEST_CASE("a damaged store is an error naming it, never a verdict", "[verdict_store]") {
    TempDir dir;
    const auto file = written(dir, {{"t::a", "pass: stable\n"}});
    const auto bytes = read_file(file);
    const auto footer = bytes.substr(bytes.size() - 16);
    write_file_atomic(file, bytes.substr(4));  // a record cut short: the index points past the records
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::StartsWith("cannot read the verdict store " + file.string()));
    write_file_atomic(file, bytes.substr(bytes.size() - 20));  // the index cut short
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::EndsWith("its index is cut short"));
    write_file_atomic(file, "pass: stable: t::a\n");  // not a store at all: the files of old
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::EndsWith("not a verdict store"));
    write_file_atomic(file, footer.substr(1));
    CHECK_THROWS_WITH(find_verdict(file, "t::a"), Catch::EndsWith("it is cut short"));
}

TEST_CASE("an entry prints its verdict with its exit status, and fails saying why when there is none", "[verdict_store]") {
    TempDir dir;
    const auto file = written(dir, {{"t::a", "1\nfailing: fails in every run (8 runs)\n  seed.0: failed\n"},
                                    {"t::s", "77\nskipped: skipped in every run\n"},
                                    {"t::old", "block: failing: a record without a status\n"}});
    const auto found = entry_output(file, "t::a");
    CHECK(found.status == 1);
    CHECK(found.text == "failing: fails in every run (8 runs)\n  seed.0: failed\n");
    CHECK(entry_output(file, "t::s").status == 77);
    const auto old = entry_output(file, "t::old");
    CHECK(old.status == 1);
    CHECK_THAT(old.text, Catch::StartsWith("no verdict: the store's record of t::old has no exit status"));

    const auto gone = entry_output(file, "t::renamed");
    CHECK(gone.status == 1);
    CHECK_THAT(gone.text, Catch::StartsWith("no verdict: t::renamed has no row in the ledger") &&
                              Catch::Contains("does not collect it any more") &&
                              Catch::Contains("<CTestDetails>no verdict: no longer collected</CTestDetails>"));
    const auto none = entry_output(dir.path / "absent.store", "t::a");
    CHECK(none.status == 1);
    CHECK_THAT(none.text, Catch::Contains("does not exist: the suite's ledger step has not run"));
}
