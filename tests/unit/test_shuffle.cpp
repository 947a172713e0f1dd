#include <algorithm>
#include <catch2/catch.hpp>

#include "runs/shuffle.hpp"

using evgate::CollectedTest;
using evgate::shuffled_order;

namespace {

std::vector<CollectedTest> tests(int n) {
    std::vector<CollectedTest> out;
    for (int i = 0; i < n; ++i) out.push_back({"tests/test_m.py::test_" + std::to_string(i), false});
    return out;
}

std::vector<std::string> ids(const std::vector<CollectedTest>& collected) {
    std::vector<std::string> out;
    for (const auto& t : collected) out.push_back(t.id);
    return out;
}

}  // namespace

TEST_CASE("seed 0 is the collection order", "[shuffle]") {
    const auto collected = tests(20);
    CHECK(shuffled_order(collected, 0) == ids(collected));
}

TEST_CASE("a seed gives a permutation, the same every time, and seeds differ", "[shuffle]") {
    const auto collected = tests(50);
    const auto a = shuffled_order(collected, 3);
    CHECK(a == shuffled_order(collected, 3));
    CHECK(a != ids(collected));
    CHECK(a != shuffled_order(collected, 4));
    auto sorted = a;
    auto expected = ids(collected);
    std::sort(sorted.begin(), sorted.end());
    std::sort(expected.begin(), expected.end());
    CHECK(sorted == expected);
}

TEST_CASE("the order is a pure function of seed and ids: pinned on every machine", "[shuffle]") {
    // XXH3 is specified bit for bit; if this changes, recorded orders stop reproducing.
    const std::vector<CollectedTest> collected = {{"a", false}, {"b", false}, {"c", false}, {"d", false}};
    const auto order = shuffled_order(collected, 1);
    CHECK(order == std::vector<std::string>{"c", "d", "b", "a"});
    CHECK(shuffled_order({{"d", false}, {"c", false}, {"b", false}, {"a", false}}, 1) == order);
    CHECK(shuffled_order({{"tests/test_x.py::test_a", false}, {"tests/test_x.py::test_b[1]", false},
                          {"tests/test_x.py::test_c", false}}, 42) ==
          std::vector<std::string>{"tests/test_x.py::test_b[1]", "tests/test_x.py::test_c", "tests/test_x.py::test_a"});
}

TEST_CASE("orders are stable under subsets", "[shuffle]") {
    const auto collected = tests(40);
    std::vector<CollectedTest> subset;
    for (std::size_t i = 0; i < collected.size(); i += 3) subset.push_back(collected[i]);
    const auto full = shuffled_order(collected, 7);
    const auto part = shuffled_order(subset, 7);
    std::vector<std::string> filtered;
    for (const auto& id : full)
        if (std::find(part.begin(), part.end(), id) != part.end()) filtered.push_back(id);
    CHECK(filtered == part);
}

TEST_CASE("serial tests keep their place in collection order", "[shuffle]") {
    auto collected = tests(30);
    collected[0].serial = true;
    collected[17].serial = true;
    for (std::uint64_t seed = 1; seed < 10; ++seed) {
        const auto order = shuffled_order(collected, seed);
        CHECK(order[0] == collected[0].id);
        CHECK(order[17] == collected[17].id);
    }
}
