// What report_html.cpp, report_heat_map.cpp and report_markdown.cpp share (report.cpp): the
// rows a section lists and the runs the heat map has a column for. Internal to reports/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/report.hpp"

namespace evgate {

using RowRefs = std::vector<const LedgerRow*>;

// The rows the summary shows with `gate` (suite checks too), in ledger order.
RowRefs rows_with(const GateSummary& summary, Gate gate);
// Whether any of the rows has `field` set: an empty column is left out.
bool any_has(const RowRefs& rows, std::optional<std::string> LedgerRow::*field);
// Run ids in the order given, then any the rows name that the caller did not list, so no
// attempt is left off the map.
std::vector<std::string> heat_columns(const ReportInput& input);

// A fixed class per gate: no ledger text ever lands in an attribute.
std::string_view gate_class(Gate gate);

// The heat map's section (report_heat_map.cpp), and the script that reads its cells.
void html_heat_map(std::string& out, const ReportInput& input, const std::vector<std::string>& columns);
std::string heat_map_script();

}  // namespace evgate
