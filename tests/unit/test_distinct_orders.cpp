#include <catch2/catch.hpp>

#include "runs/distinct_orders.hpp"
#include "runs/receipt.hpp"
#include "support.hpp"

using namespace evgate;

TEST_CASE("a one-test suite has one order: every later seed and the alone pass repeat seed 0", "[distinct_orders]") {
    const auto orders = distinct_orders({{"t.py::test_one", false}}, 0, 8, "mixed");
    CHECK(orders.seeds == 9);
    CHECK(orders.distinct == 1);
    CHECK(orders.repeats.size() == 9);
    CHECK(orders.repeats.at("seed.8") == "seed.0");
    CHECK(orders.repeats.at("first.1") == "seed.0");
}

TEST_CASE("two tests have two orders, each run once under the first seed that gives it", "[distinct_orders]") {
    const auto orders = distinct_orders({{"t.py::test_a", false}, {"t.py::test_b", false}}, 0, 6, "global");
    CHECK(orders.distinct == 2);
    CHECK(orders.repeats.size() == 5);
    CHECK_FALSE(orders.repeats.count("seed.0"));
    for (const auto& [run, earlier] : orders.repeats) {
        INFO(run << " repeats " << earlier);
        CHECK((earlier == "seed.0" || earlier == "seed.1"));  // the collection order and its reverse
        CHECK(earlier < run);
    }
    CHECK_FALSE(orders.repeats.count("first.1"));  // the alone pass of two tests is no order of the suite
}

TEST_CASE("serial tests keep their place: a suite of serial tests has the collection order only", "[distinct_orders]") {
    const auto orders = distinct_orders({{"t.py::a", true}, {"t.py::b", true}, {"t.py::c", true}}, 0, 4, "mixed");
    CHECK(orders.distinct == 1);
    CHECK(orders.repeats.size() == 4);
}

TEST_CASE("a larger suite's seeds are distinct orders: nothing is left out", "[distinct_orders]") {
    std::vector<CollectedTest> tests;
    for (int n = 0; n < 12; ++n) tests.push_back({"t.py::test_" + std::to_string(n), false});
    const auto orders = distinct_orders(tests, 0, 8, "mixed");
    CHECK(orders.distinct == 9);
    CHECK(orders.repeats.empty());
}

TEST_CASE("the receipt's orders are read back, and a repeat that names no seed run is an error naming the file",
          "[distinct_orders]") {
    evgate::test::TempDir dir;
    const auto file = dir.path / "receipt.json";
    const auto with_repeats = [&](const std::string& repeats) {
        evgate::test::write_text(file, R"({"rootdir": "/r", "tests": [], "orders": {"seeds": 3, "distinct": 1, "repeats": )" +
                                           repeats + "}}");
    };
    with_repeats(R"({"seed.1": "seed.0", "first.1": "seed.0"})");
    const auto receipt = load_receipt(file);
    CHECK(receipt.orders.seeds == 3);
    CHECK(receipt.orders.distinct == 1);
    CHECK(receipt.orders.repeats == std::map<std::string, std::string>{{"first.1", "seed.0"}, {"seed.1", "seed.0"}});
    with_repeats(R"({"seed.1": "seed.x"})");
    CHECK_THROWS_WITH(load_receipt(file), Catch::Contains(file.string()) && Catch::Contains("'seed.1' -> 'seed.x'"));
}
