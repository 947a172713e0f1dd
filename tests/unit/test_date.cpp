#include <catch2/catch.hpp>

#include "io/date.hpp"

using evgate::Date;
using evgate::parse_date;

namespace Catch {
template <>
struct StringMaker<Date> {
    static std::string convert(Date date) { return evgate::to_string(date); }
};
}  // namespace Catch

TEST_CASE("parse_date accepts real calendar days", "[date]") {
    CHECK(parse_date("2026-01-01") == Date{2026, 1, 1});
    CHECK(parse_date("2026-12-31") == Date{2026, 12, 31});
    CHECK(parse_date("2024-02-29") == Date{2024, 2, 29});  // divisible by 4
    CHECK(parse_date("2000-02-29") == Date{2000, 2, 29});  // divisible by 400
    CHECK(parse_date("0001-01-01") == Date{1, 1, 1});
    CHECK(parse_date("9999-12-31") == Date{9999, 12, 31});
}

TEST_CASE("parse_date rejects impossible days and loose spellings", "[date]") {
    auto text = GENERATE(as<std::string>{}, "2026-02-30", "2026-13-45", "2026-00-10", "2026-01-00",
                         "2026-04-31", "2023-02-29", "1900-02-29", "0000-01-01", " 2026-01-01", "2026-01-01 ",
                         "2026-1-1", "2026-01-1", "2026/01/01", "20260101", "", "+026-01-01", "2026-0a-01",
                         "2026-01-01T00:00", "26-01-01");
    INFO(text);
    CHECK_FALSE(parse_date(text).has_value());
}

TEST_CASE("to_string pads every field", "[date]") {
    CHECK(to_string(Date{2026, 3, 7}) == "2026-03-07");
    CHECK(to_string(Date{5, 1, 2}) == "0005-01-02");
    CHECK(to_string(*parse_date("2024-02-29")) == "2024-02-29");
}

TEST_CASE("dates compare by year, then month, then day", "[date]") {
    Date d{2026, 5, 10};
    CHECK(d == Date{2026, 5, 10});
    CHECK(d != Date{2026, 5, 11});
    CHECK(d < Date{2026, 5, 11});
    CHECK(d < Date{2026, 6, 1});
    CHECK(d < Date{2027, 1, 1});
    CHECK(Date{2025, 12, 31} < d);
    CHECK(d <= d);
    CHECK(d >= d);
    CHECK(Date{2026, 5, 11} > d);
    CHECK_FALSE(d < d);
}

TEST_CASE("today_utc is a valid date", "[date]") {
    auto today = evgate::today_utc();
    CHECK(parse_date(to_string(today)) == today);
    CHECK(today >= Date{2024, 1, 1});
}
