// baseline.json: what it accepts survives a round trip through baseline_json().
#include <algorithm>

#include "fuzz_support.hpp"
#include "inputs/baseline.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    evgate_fuzz::expect_only_input_errors([&] {
        const auto baseline = evgate::parse_baseline(evgate_fuzz::text(data, size), "baseline.json");
        const auto again = evgate::parse_baseline(evgate::baseline_json(baseline), "baseline.json (rewritten)");
        auto ids = baseline.tests, ids_again = again.tests;
        std::sort(ids.begin(), ids.end());
        std::sort(ids_again.begin(), ids_again.end());
        if (again.collected != baseline.collected || ids != ids_again || again.lists_tests != baseline.lists_tests)
            evgate_fuzz::violated("a baseline survives being written and read back");
    });
    return 0;
}
