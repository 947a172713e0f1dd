// fixtures.manifest: `name: glob` lines. Every group it accepts has a valid name and a glob
// that compiles.
#include <sstream>

#include "fuzz_support.hpp"
#include "inputs/fixture_manifest.hpp"
#include "inputs/glob.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    evgate_fuzz::expect_only_input_errors([&] {
        std::istringstream in{std::string(evgate_fuzz::text(data, size))};
        for (const auto& group : evgate::parse_fixture_manifest(in, "fixtures.manifest")) {
            if (group.name.empty() || group.pattern.empty() || group.line < 1) evgate_fuzz::violated("groups are whole");
            evgate::compile_glob(group.pattern);
        }
    });
    return 0;
}
