#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "geometry.hpp"

TEST_CASE("distance is Euclidean", "[geo]") {
    geo::set_unit(1.0);
    CHECK(geo::distance({0, 0}, {3, 4}) == Approx(5.0));
}

TEST_CASE("the area of a polygon does not depend on the corners' direction", "[geo]") {
    geo::set_unit(1.0);
    const std::vector<geo::Point> square{{0, 0}, {2, 0}, {2, 2}, {0, 2}};
    CHECK(geo::polygon_area(square) == Approx(4.0));
    CHECK(geo::polygon_area({square.rbegin(), square.rend()}) == Approx(4.0));
}

TEST_CASE("a unit must be a positive length", "[geo]") {
    CHECK_THROWS_AS(geo::set_unit(0), std::invalid_argument);
}
