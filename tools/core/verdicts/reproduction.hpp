// What reproduces a row's verdict on this machine: one `evgate replay` request, of the kind the
// verdict table names for the verdict (the test alone, the order it failed or died in, the
// localised partner's order, the environment where it failed).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runs/replay.hpp"
#include "verdicts/gate.hpp"

namespace evgate {

// nullopt where nothing local can reproduce it. `number` is the test's in input.runs: its
// attempts are built only where the request depends on them.
std::optional<ReplayRequest> reproduction(Verdict verdict, const std::string& test, std::optional<std::uint32_t> number,
                                          const GateInput& input);

// The column an attempt ran in: "ci-host" for "ci-host:seed.3", "perturbed" for the perturbed run.
std::string column_name(const Attempt& a);

}  // namespace evgate
