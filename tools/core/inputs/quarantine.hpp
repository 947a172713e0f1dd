// quarantine.jsonl: dated exceptions that let a flaky, failing or non-portable test defer
// instead of block, until a day its owner committed to.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "io/date.hpp"

namespace evgate {

struct QuarantineEntry {
    std::string test;  // pytest node id relative to ROOT
    Date until;        // the entry defers while today <= until
    std::string owner;
    std::string reason;  // optional: "" when absent
    int line;
};

// One JSON object a line: {"test", "until", "owner"} required non-empty strings, "reason"
// an optional string. Blank lines are skipped; a last line without '\n' is an ordinary
// line (people edit this file by hand). Throws InputError naming `source` and the line.
std::vector<QuarantineEntry> parse_quarantine(std::istream& in, const std::string& source);

// The entry for `test`, or nullptr.
const QuarantineEntry* find_entry(const std::vector<QuarantineEntry>& entries, std::string_view test);

}  // namespace evgate
