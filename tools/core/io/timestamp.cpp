#include "io/timestamp.hpp"

#include <cstdio>
#include <ctime>

namespace evgate {
namespace {

struct Parts {
    std::tm utc{};
    long long micros = 0;
};

Parts parts_of(TimePoint time) {
    const auto since = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
    auto seconds = since / 1000000;
    auto micros = since % 1000000;
    if (micros < 0) micros += 1000000, --seconds;  // before 1970: the fraction stays positive
    Parts p;
    const std::time_t t = static_cast<std::time_t>(seconds);
    ::gmtime_r(&t, &p.utc);
    p.micros = micros;
    return p;
}

// The value of `count` ASCII digits at `pos`, or -1.
int digits(std::string_view text, std::size_t pos, std::size_t count) {
    if (pos + count > text.size()) return -1;
    int value = 0;
    for (std::size_t i = pos; i < pos + count; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

}  // namespace

std::string iso_time(TimePoint time) {
    const auto p = parts_of(time);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", p.utc.tm_year + 1900, p.utc.tm_mon + 1,
                  p.utc.tm_mday, p.utc.tm_hour, p.utc.tm_min, p.utc.tm_sec, p.micros);
    return text;
}

std::string compact_time(TimePoint time) {
    const auto p = parts_of(time);
    char text[64];
    std::snprintf(text, sizeof text, "%04d%02d%02dT%02d%02d%02d.%06lldZ", p.utc.tm_year + 1900, p.utc.tm_mon + 1,
                  p.utc.tm_mday, p.utc.tm_hour, p.utc.tm_min, p.utc.tm_sec, p.micros);
    return text;
}

std::optional<TimePoint> parse_iso_time(std::string_view text) {
    const int year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
    const int hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
    if (text.size() < 19 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != ' ') || text[13] != ':' ||
        text[16] != ':')
        return std::nullopt;
    // Years a time point in nanoseconds holds (1677 to 2262), with room for the offset.
    if (year < 1900 || year > 2200 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
        minute > 59 || second < 0 || second > 60)
        return std::nullopt;
    std::size_t at = 19;
    long long micros = 0;
    if (at < text.size() && text[at] == '.') {
        long long scale = 100000;
        const auto start = ++at;
        for (; at < text.size() && text[at] >= '0' && text[at] <= '9'; ++at, scale /= 10)
            micros += scale * (text[at] - '0');  // digits past the sixth add nothing
        if (at == start) return std::nullopt;
    }
    long offset = 0;  // seconds east of UTC
    if (at < text.size() && text[at] == 'Z') {
        ++at;
    } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
        const int h = digits(text, at + 1, 2), m = digits(text, at + 4, 2);
        if (h < 0 || m < 0 || text.size() < at + 6 || text[at + 3] != ':') return std::nullopt;
        offset = (text[at] == '+' ? 1 : -1) * (h * 3600L + m * 60L);
        at += 6;
    }
    if (at != text.size()) return std::nullopt;
    std::tm utc{};
    utc.tm_year = year - 1900;
    utc.tm_mon = month - 1;
    utc.tm_mday = day;
    utc.tm_hour = hour;
    utc.tm_min = minute;
    utc.tm_sec = second;
    const auto seconds = static_cast<long long>(::timegm(&utc)) - offset;
    return TimePoint(std::chrono::duration_cast<TimePoint::duration>(std::chrono::microseconds(seconds * 1000000 + micros)));
}

}  // namespace evgate
