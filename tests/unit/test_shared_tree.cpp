#include <catch2/catch.hpp>
#include <filesystem>

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

TEST_CASE("the build trees over a ROOT are registered once each, and pruned when gone", "[tree]") {
    namespace fs = std::filesystem;
    const auto top = fs::temp_directory_path() / ("evgate-tree-" + new_run_token());
    const auto root = top / "src", a = top / "a" / "fixtures", b = top / "b" / "fixtures";
    fs::create_directories(root), fs::create_directories(a), fs::create_directories(b);
    register_store(root, a);
    register_store(root, b);
    register_store(root, a / "." );  // the same directory, spelled otherwise
    CHECK(registered_stores(root) == std::vector<fs::path>{a, b});
    fs::remove_all(top / "b");
    prune_stores(root);
    CHECK(registered_stores(root) == std::vector<fs::path>{a});
    CHECK(registered_stores(top / "elsewhere").empty());  // another ROOT has its own registry
    fs::remove_all(top);
    prune_stores(root);
    CHECK(registered_stores(root).empty());
}
