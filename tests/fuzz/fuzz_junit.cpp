// JUnit XML from a runner: mapped back onto a fixed set of collected node ids.
#include <algorithm>

#include "fuzz_support.hpp"
#include "inputs/junit.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::vector<std::string> collected = {
        "tests/test_x.py::test_a", "tests/test_x.py::TestY::test_z[1]", "tests/sub/test_w.py::test_b[a-b]",
        "tests/test_x.py::test_a[]==];$x]"};
    evgate_fuzz::expect_only_input_errors([&] {
        const auto run = evgate::parse_junit(evgate_fuzz::text(data, size), "junit.xml", collected);
        for (const auto& [id, result] : run.results)
            if (std::find(collected.begin(), collected.end(), id) == collected.end())
                evgate_fuzz::violated("results are only for collected ids");
    });
    return 0;
}
