// quarantine.jsonl: every entry it accepts has a test, an owner and a real date.
#include <sstream>

#include "fuzz_support.hpp"
#include "inputs/quarantine.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    evgate_fuzz::expect_only_input_errors([&] {
        std::istringstream in{std::string(evgate_fuzz::text(data, size))};
        const auto entries = evgate::parse_quarantine(in, "quarantine.jsonl");
        for (const auto& entry : entries) {
            if (entry.test.empty() || entry.owner.empty()) evgate_fuzz::violated("entries have a test and an owner");
            if (!evgate::parse_date(evgate::to_string(entry.until))) evgate_fuzz::violated("'until' is a real date");
            if (evgate::find_entry(entries, entry.test) == nullptr) evgate_fuzz::violated("an entry is found by its test");
        }
    });
    return 0;
}
