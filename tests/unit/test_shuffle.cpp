#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "runs/shuffle.hpp"

using namespace evgate;

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
    CHECK(shuffled_order({{"tests/test_x.py::test_a", false}, {"tests/test_x.py::test_b[1]", false}, {"tests/test_x.py::test_c", false}}, 42) ==
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

namespace {

// Three modules, a class in one of them, a parametrised test whose parameter holds "::".
std::vector<CollectedTest> modules() {
    std::vector<CollectedTest> out;
    for (const char* module : {"tests/test_a.py", "tests/test_b.py", "tests/sub/test_c.py"})
        for (int i = 0; i < 6; ++i) out.push_back({std::string(module) + "::test_" + std::to_string(i), false});
    for (int i = 0; i < 4; ++i) out.push_back({"tests/test_b.py::TestK::test_" + std::to_string(i), false});
    out.push_back({"tests/test_b.py::TestK::test_p[a::b]", false});
    out.push_back({"tests/test_b.py::TestK::test_p[c::d]", false});
    return out;
}

std::string module_of(const std::string& id) { return id.substr(0, id.find("::")); }

// How often the sequence changes from one key to another: each key once when contiguous.
template <typename KeyOf>
std::size_t runs_of(const std::vector<std::string>& order, KeyOf key_of) {
    std::size_t runs = 0;
    for (std::size_t i = 0; i < order.size(); ++i) runs += i == 0 || key_of(order[i]) != key_of(order[i - 1]);
    return runs;
}

std::vector<std::string> kept(const std::vector<std::string>& order, const std::vector<std::string>& part) {
    std::vector<std::string> out;
    for (const auto& id : order)
        if (std::find(part.begin(), part.end(), id) != part.end()) out.push_back(id);
    return out;
}

}  // namespace

TEST_CASE("seeds come in families: collection, reversed, then module-contiguous and global in turn", "[shuffle]") {
    CHECK(family_of(0, "mixed") == OrderFamily::collection);
    CHECK(family_of(1, "mixed") == OrderFamily::reversed);
    CHECK(family_of(2, "mixed") == OrderFamily::module);
    CHECK(family_of(3, "mixed") == OrderFamily::global);
    CHECK(family_of(16, "mixed") == OrderFamily::module);
    CHECK(family_of(1, "module") == OrderFamily::reversed);
    CHECK(family_of(3, "module") == OrderFamily::module);
    CHECK(family_of(0, "global") == OrderFamily::collection);
    CHECK(family_of(1, "global") == OrderFamily::global);
    const auto collected = modules();
    // ORDERS global: the orders of versions before families, seed for seed.
    for (std::uint64_t seed = 0; seed < 5; ++seed) CHECK(seed_order(collected, seed, "global") == shuffled_order(collected, seed));
    CHECK(seed_order(collected, 2, "mixed") == module_shuffled_order(collected, 2));
    CHECK(seed_order(collected, 3, "mixed") == shuffled_order(collected, 3));
}

TEST_CASE("the reversed order is the collection order backwards, serial tests in place", "[shuffle]") {
    auto collected = tests(6);
    auto expected = ids(collected);
    std::reverse(expected.begin(), expected.end());
    CHECK(reversed_order(collected) == expected);
    collected[2].serial = true;
    CHECK(reversed_order(collected) == std::vector<std::string>{"tests/test_m.py::test_5", "tests/test_m.py::test_4",
                                                                "tests/test_m.py::test_2", "tests/test_m.py::test_3",
                                                                "tests/test_m.py::test_1", "tests/test_m.py::test_0"});
}

TEST_CASE("a module-contiguous shuffle keeps modules and classes together and moves them", "[shuffle]") {
    const auto collected = modules();
    for (std::uint64_t seed = 1; seed < 20; ++seed) {
        const auto order = module_shuffled_order(collected, seed);
        CHECK(runs_of(order, module_of) == 3);
        // The class and its parametrised tests ("[a::b]" is a parameter, not a class) together.
        CHECK(runs_of(order, [](const std::string& id) { return id.find("::TestK::") != std::string::npos; }) <= 3);
        auto sorted = order, expected = ids(collected);
        std::sort(sorted.begin(), sorted.end());
        std::sort(expected.begin(), expected.end());
        CHECK(sorted == expected);
    }
    std::set<std::string> firsts;  // which module comes first moves with the seed
    for (std::uint64_t seed = 1; seed < 20; ++seed) firsts.insert(module_of(module_shuffled_order(collected, seed).front()));
    CHECK(firsts.size() == 3);
    CHECK(module_shuffled_order(collected, 5) != module_shuffled_order(collected, 6));
}

TEST_CASE("a module-contiguous order is pinned on every machine", "[shuffle]") {
    // XXH3 is specified bit for bit; if this changes, recorded orders stop reproducing.
    const std::vector<CollectedTest> collected = {{"a.py::t1", false}, {"a.py::t2", false}, {"b.py::t1", false}, {"b.py::C::t1", false}, {"b.py::C::t2", false}};
    CHECK(module_shuffled_order(collected, 2) ==
          std::vector<std::string>{"b.py::t1", "b.py::C::t1", "b.py::C::t2", "a.py::t2", "a.py::t1"});
}

TEST_CASE("every family is stable under subsets and keeps serial tests in place", "[shuffle]") {
    auto collected = modules();
    std::vector<CollectedTest> subset;
    for (std::size_t i = 0; i < collected.size(); i += 2) subset.push_back(collected[i]);
    for (std::uint64_t seed = 0; seed < 8; ++seed) {
        const auto part = seed_order(subset, seed, "mixed");
        CHECK(kept(seed_order(collected, seed, "mixed"), part) == part);
    }
    collected[4].serial = true;
    for (std::uint64_t seed = 0; seed < 8; ++seed) CHECK(seed_order(collected, seed, "mixed")[4] == collected[4].id);
}
