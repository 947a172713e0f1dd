// Natural order of run ids: "seed.2" before "seed.10".
#pragma once

#include <string>

namespace evgate {

bool natural_less(const std::string& a, const std::string& b);

}  // namespace evgate
