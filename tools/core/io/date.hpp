// Calendar dates as quarantine and env_sensitive entries write them: YYYY-MM-DD, UTC.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace evgate {

struct Date {
    int year;
    int month;
    int day;
};

inline bool operator==(Date a, Date b) {
    return std::tie(a.year, a.month, a.day) == std::tie(b.year, b.month, b.day);
}
inline bool operator<(Date a, Date b) {
    return std::tie(a.year, a.month, a.day) < std::tie(b.year, b.month, b.day);
}
inline bool operator!=(Date a, Date b) { return !(a == b); }
inline bool operator>(Date a, Date b) { return b < a; }
inline bool operator<=(Date a, Date b) { return !(b < a); }
inline bool operator>=(Date a, Date b) { return !(a < b); }

// Exactly YYYY-MM-DD naming a real day (years 0001-9999); nullopt for anything else,
// including surrounding whitespace and unpadded fields.
std::optional<Date> parse_date(std::string_view text);

std::string to_string(Date date);  // YYYY-MM-DD

// The current day in UTC, so that an entry expires at the same moment on every machine.
Date today_utc();

}  // namespace evgate
