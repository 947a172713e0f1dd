// Moments as the evidence writes them: ISO 8601 in UTC with microseconds,
// "2026-12-01T14:25:12.123456Z" (junit.xml's timestamp, history.json, archive names).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace evgate {

using TimePoint = std::chrono::system_clock::time_point;

std::string iso_time(TimePoint time);
// "20261201T142512.123456Z": the same moment in a form that sorts by time as a file name.
std::string compact_time(TimePoint time);
// YYYY-MM-DDTHH:MM:SS (years 1900 to 2200), an optional fraction, then Z, +HH:MM or -HH:MM
// (none: UTC, as pytest's own naive timestamps cannot say better); nullopt for anything else.
std::optional<TimePoint> parse_iso_time(std::string_view text);

}  // namespace evgate
