// Seed-shuffled test orders: a pure function of (seed, node ids), the same on every machine,
// and stable under subsets (a subset run with the same seed keeps its relative order), so an
// order can be reproduced and bisected.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace evgate {

struct CollectedTest {
    std::string id;
    bool serial = false;  // keeps its place in collection order
};

// Seed 0 is the collection order. Otherwise non-serial tests are sorted by an XXH3 key of
// (seed, id) and fill the places the serial tests leave free.
std::vector<std::string> shuffled_order(const std::vector<CollectedTest>& collected, std::uint64_t seed);

}  // namespace evgate
