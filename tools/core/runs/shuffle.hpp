// The orders a suite runs in: each a pure function of (seed, node ids), the same on every
// machine, and stable under subsets (a subset run with the same seed keeps its relative order),
// so an order can be reproduced and bisected. Seeds come in families (docs/orders.md): the
// collection order (seed 0), the reversed collection order, module-contiguous shuffles (modules,
// then classes, then tests, each by a keyed hash, as pytest-randomly does: module-scoped set-up
// and tear-down stays around a module's tests) and global shuffles (every test anywhere). The
// suite's ORDERS says which family each seed k >= 1 is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

struct CollectedTest {
    std::string id;
    bool serial = false;  // keeps its place in collection order
};

enum class OrderFamily { collection,
                         reversed,
                         module,
                         global };

std::string_view to_string(OrderFamily family);

// ORDERS: "mixed" (seed 1 reversed, then module-contiguous and global shuffles in turn: 2, 4, ...
// module, 3, 5, ... global), "module" (seed 1 reversed, then module-contiguous) or "global"
// (every seed k >= 1 a global shuffle). Seed 0 is always the collection order.
OrderFamily family_of(std::uint64_t seed, std::string_view orders);

// Seed `seed`'s order under ORDERS `orders`.
std::vector<std::string> seed_order(const std::vector<CollectedTest>& collected, std::uint64_t seed, std::string_view orders);

// The families themselves. In each, `serial` tests keep their place in collection order and the
// others fill the places they leave free, in the family's order.
std::vector<std::string> reversed_order(const std::vector<CollectedTest>& collected);
// Non-serial tests sorted by XXH3 keys of (module, container, id), each keyed by the seed: the
// module is the node id up to its first "::", the container up to its last (a class, or the
// module itself for its functions), parameters aside.
std::vector<std::string> module_shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed);
// Seed 0: the collection order. Otherwise non-serial tests sorted by an XXH3 key of (seed, id).
std::vector<std::string> shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed);

}  // namespace evgate
