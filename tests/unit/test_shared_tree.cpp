#include <catch2/catch.hpp>

#include "shared_tree.hpp"

using namespace evgate;

TEST_CASE("a run overlapped a change when another touching run's span crosses its own", "[tree]") {
    const std::vector<RunSpan> spans = {
        {"reader", 100, 200, false},
        {"early", 10, 100, true},   // ended as the reader started: no overlap
        {"beside", 150, 300, true},  // overlaps
        {"quiet", 120, 180, false},  // overlaps, but changed nothing
    };
    CHECK(overlapped_a_change(spans, "reader"));
    CHECK(overlapped_a_change(spans, "quiet"));
    CHECK_FALSE(overlapped_a_change(spans, "early"));
    CHECK_FALSE(overlapped_a_change(spans, "beside"));  // its own change is not a contamination
    CHECK_FALSE(overlapped_a_change(spans, "never-logged"));
    CHECK_FALSE(overlapped_a_change(spans, ""));
}
