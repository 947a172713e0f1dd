#include "runs/shuffle.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <xxhash.h>

namespace evgate {
namespace {

using Key = std::array<XXH64_hash_t, 3>;

XXH64_hash_t keyed(std::string_view text, std::uint64_t seed) { return XXH3_64bits_withSeed(text.data(), text.size(), seed); }

// The non-serial tests in the order of their keys (ties: by id), into the places the serial tests
// leave free.
template <typename KeyOf>
std::vector<std::string> by_key(const std::vector<CollectedTest>& collected, KeyOf key_of) {
    std::vector<std::pair<Key, const std::string*>> sorted;
    for (const auto& test : collected)
        if (!test.serial) sorted.emplace_back(key_of(test.id), &test.id);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : *a.second < *b.second;
    });
    std::vector<std::string> order;
    order.reserve(collected.size());
    auto next = sorted.begin();
    for (const auto& test : collected) order.push_back(test.serial ? test.id : *(next++)->second);
    return order;
}

// A node id's module and container, its parameters ("[...]", which may hold "::") aside.
std::pair<std::string_view, std::string_view> module_and_container(std::string_view id) {
    const auto base = id.substr(0, id.find('['));
    const auto first = base.find("::");
    const auto last = base.rfind("::");
    return {base.substr(0, first), base.substr(0, last == std::string_view::npos ? base.size() : last)};
}

}  // namespace

std::string_view to_string(OrderFamily family) {
    switch (family) {
        case OrderFamily::collection: return "collection";
        case OrderFamily::reversed: return "reversed";
        case OrderFamily::module: return "module";
        case OrderFamily::global: return "global";
    }
    return "collection";
}

OrderFamily family_of(std::uint64_t seed, std::string_view orders) {
    if (seed == 0) return OrderFamily::collection;
    if (orders == "global") return OrderFamily::global;
    if (seed == 1) return OrderFamily::reversed;
    if (orders == "module") return OrderFamily::module;
    return seed % 2 == 0 ? OrderFamily::module : OrderFamily::global;
}

std::vector<std::string> seed_order(const std::vector<CollectedTest>& collected, std::uint64_t seed, std::string_view orders) {
    switch (family_of(seed, orders)) {
        case OrderFamily::collection: return shuffled_order(collected, 0);
        case OrderFamily::reversed: return reversed_order(collected);
        case OrderFamily::module: return module_shuffled_order(collected, seed);
        case OrderFamily::global: return shuffled_order(collected, seed);
    }
    return shuffled_order(collected, seed);
}

std::vector<std::string> reversed_order(const std::vector<CollectedTest>& collected) {
    std::vector<const std::string*> free;  // the non-serial tests, last first
    for (auto it = collected.rbegin(); it != collected.rend(); ++it)
        if (!it->serial) free.push_back(&it->id);
    std::vector<std::string> order;
    order.reserve(collected.size());
    auto next = free.begin();
    for (const auto& test : collected) order.push_back(test.serial ? test.id : **(next++));
    return order;
}

std::vector<std::string> module_shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed) {
    return by_key(collected, [seed](const std::string& id) {
        const auto [module, container] = module_and_container(id);
        return Key{keyed(module, seed), keyed(container, seed), keyed(id, seed)};
    });
}

std::vector<std::string> shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed) {
    if (seed == 0) {
        std::vector<std::string> order;
        order.reserve(collected.size());
        for (const auto& test : collected) order.push_back(test.id);
        return order;
    }
    return by_key(collected, [seed](const std::string& id) { return Key{keyed(id, seed), 0, 0}; });
}

}  // namespace evgate
