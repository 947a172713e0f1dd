// The rows of the receipt's tests: each test's verdict (triage.hpp) with what the machines,
// the localisation and the reproduction add to it, and the policy that decides its gate: the
// verdict table's gate, and a block deferred by a dated quarantine entry (or an env_sensitive
// marker) where the table lets one defer it.
#pragma once

#include <cstddef>

#include "verdicts/gate.hpp"

namespace evgate {

// The rows of the receipt's tests [begin, end), into out[0 .. end - begin).
void test_rows(const GateInput& input, std::size_t begin, std::size_t end, LedgerRow* out);

}  // namespace evgate
