#include "geometry.hpp"

#include <cmath>
#include <stdexcept>

namespace geo {
namespace {
double metres_per_unit = 1.0;
}

void set_unit(double value) {
    if (!(value > 0)) throw std::invalid_argument("a unit must be a positive length");
    metres_per_unit = value;
}

double unit() { return metres_per_unit; }

double distance(Point a, Point b) { return std::hypot(a.x - b.x, a.y - b.y) / metres_per_unit; }

double polygon_area(const std::vector<Point>& corners) {
    double twice = 0;
    for (std::size_t i = 0; i < corners.size(); ++i) {
        const auto& p = corners[i];
        const auto& q = corners[(i + 1) % corners.size()];
        twice += p.x * q.y - q.x * p.y;
    }
    return std::abs(twice) / 2 / (metres_per_unit * metres_per_unit);
}

}  // namespace geo
