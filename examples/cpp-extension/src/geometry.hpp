// A small geometry library: distances and areas in the current unit of length.
#pragma once

#include <vector>

namespace geo {

struct Point {
    double x = 0;
    double y = 0;
};

// Lengths are reported in units of `metres_per_unit` metres: a process-wide setting, as many
// C and C++ libraries keep one (a locale, a log level, a unit system).
void set_unit(double metres_per_unit);
double unit();

// Distance between two points given in metres, in the current unit.
double distance(Point a, Point b);

// Area of a simple polygon given in metres (shoelace formula), in the current unit squared.
double polygon_area(const std::vector<Point>& corners);

}  // namespace geo
