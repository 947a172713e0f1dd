// A count with its noun, "1 test", "12 runs": one spelling for the ledger's reasons, the gate's
// summary line, the reports and the per-test entries, so that none says "1 tests".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace evgate {

inline std::string counted(std::size_t n, std::string_view noun) {
    return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace evgate
