// Orders that would repeat one already run: a suite of one test has one order, two tests have
// two, and serial tests or one-test modules leave a small suite few more, so several seeds (and
// the alone pass of a one-test suite) would give an order an earlier seed already gives. Such a
// run is no new evidence, only another attempt of the same order: it is not run again under
// another name (reruns, which repeat an order on purpose, are another matter). Worked out once,
// by the receipt step, from the collection it took; the seed and alone steps and the ledger read
// it from the receipt.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runs/shuffle.hpp"

namespace evgate {

struct DistinctOrders {
    std::uint64_t first = 0;                     // the first seed this invocation runs: the seeds before it are kept (evidence_reuse.hpp)
    std::size_t seeds = 0;                       // seed runs planned, kept ones included: seed.0 .. seed.<first + SEEDS>
    std::size_t distinct = 0;                    // different orders among them
    std::map<std::string, std::string> repeats;  // run id -> the earlier seed run whose order it is ("seed.3" -> "seed.1")
};

// Seeds 0..`first` + `seeds` under ORDERS `orders`, and the alone pass's runs (first.<n>: test n
// alone), each compared with the seeds before it by a 128-bit hash of its order.
DistinctOrders distinct_orders(const std::vector<CollectedTest>& collected, std::uint64_t first, int seeds,
                               std::string_view orders);

}  // namespace evgate
