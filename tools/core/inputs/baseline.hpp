// baseline.json: the committed size of a suite's collection, so that a run which silently
// collects less than before is never green.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace evgate {

struct Baseline {
    std::int64_t collected;          // tests collected when the baseline was written
    std::vector<std::string> tests;  // their node ids, if listed
    bool lists_tests;                // whether the file has "tests" (it is optional)
};

// {"collected": N, "tests": [ids...]}. Throws InputError naming `source`, the line where it
// can be found, and the value at fault.
Baseline parse_baseline(std::string_view text, const std::string& source);

// Pretty JSON with one id a line, sorted, ending in '\n': stable diffs when committed.
std::string baseline_json(const Baseline& baseline);

}  // namespace evgate
