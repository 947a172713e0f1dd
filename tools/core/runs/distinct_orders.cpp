#include "runs/distinct_orders.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include <xxhash.h>

#include "inputs/run_id.hpp"

namespace evgate {
namespace {

// Orders compared by hash: SEEDS x tests ids would not fit in memory for a large suite, and a
// 128-bit collision between two different orders is not a risk worth a byte.
std::pair<std::uint64_t, std::uint64_t> order_hash(const std::vector<std::string>& order) {
    XXH3_state_t* state = XXH3_createState();
    XXH3_128bits_reset(state);
    for (const auto& id : order) XXH3_128bits_update(state, id.c_str(), id.size() + 1);  // with its '\0': ids never run together
    const auto hash = XXH3_128bits_digest(state);
    XXH3_freeState(state);
    return {hash.high64, hash.low64};
}

}  // namespace

DistinctOrders distinct_orders(const std::vector<CollectedTest>& collected, std::uint64_t first, int seeds,
                               std::string_view orders) {
    DistinctOrders result;
    result.first = first;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> first_run;  // order hash -> the first seed run with it
    for (std::uint64_t k = 0; k <= first + static_cast<std::uint64_t>(std::max(0, seeds)); ++k) {
        const std::string id = RunId::seed(k).str();
        const auto [it, fresh] = first_run.emplace(order_hash(seed_order(collected, k, orders)), id);
        ++result.seeds;
        if (fresh) ++result.distinct;
        else result.repeats.emplace(id, it->second);
    }
    // The alone pass runs each test by itself: an order of the whole suite only when the suite is that test.
    if (collected.size() == 1)
        if (const auto it = first_run.find(order_hash({collected.front().id})); it != first_run.end())
            result.repeats.emplace(RunId::first(1).str(), it->second);
    return result;
}

}  // namespace evgate
