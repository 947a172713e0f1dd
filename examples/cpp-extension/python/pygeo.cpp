// pygeo: the geometry library for Python.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "geometry.hpp"

namespace py = pybind11;

PYBIND11_MODULE(pygeo, m) {
    m.doc() = "distances and areas in the current unit of length";
    py::class_<geo::Point>(m, "Point")
        .def(py::init<double, double>(), py::arg("x"), py::arg("y"))
        .def_readwrite("x", &geo::Point::x)
        .def_readwrite("y", &geo::Point::y);
    m.def("set_unit", &geo::set_unit, py::arg("metres_per_unit"));
    m.def("unit", &geo::unit);
    m.def("distance", &geo::distance);
    m.def("polygon_area", &geo::polygon_area);
}
