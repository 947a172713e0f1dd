// The column a run's results go in: this machine's runs, another machine's (a runner's, a
// foreign shard's), or the perturbed run. A run's plan says it; the verdicts weigh each apart.
#pragma once

#include <string_view>

namespace evgate {

enum class Column { local,
                    runner,
                    perturbed };
std::string_view to_string(Column column);
bool parse_column(std::string_view text, Column& column);

}  // namespace evgate
