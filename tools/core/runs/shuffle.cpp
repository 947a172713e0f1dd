#include "runs/shuffle.hpp"

#include <algorithm>
#include <utility>

#include <xxhash.h>

namespace evgate {

std::vector<std::string> shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed) {
    std::vector<std::string> order;
    order.reserve(collected.size());
    if (seed == 0) {
        for (const auto& test : collected) order.push_back(test.id);
        return order;
    }
    std::vector<std::pair<XXH64_hash_t, const std::string*>> keyed;
    for (const auto& test : collected) {
        if (!test.serial) keyed.emplace_back(XXH3_64bits_withSeed(test.id.data(), test.id.size(), seed), &test.id);
    }
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    });
    auto next = keyed.begin();
    for (const auto& test : collected) {
        order.push_back(test.serial ? test.id : *(next++)->second);
    }
    return order;
}

}  // namespace evgate
