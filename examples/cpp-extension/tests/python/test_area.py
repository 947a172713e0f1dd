import pygeo

SQUARE = [pygeo.Point(0, 0), pygeo.Point(1, 0), pygeo.Point(1, 1), pygeo.Point(0, 1)]


def test_unit_square_has_area_one():
    # Assumes the unit is still the metre: true only if no test before it changed it.
    assert pygeo.polygon_area(SQUARE) == 1.0


def test_degenerate_polygon_has_no_area():
    assert pygeo.polygon_area([pygeo.Point(0, 0), pygeo.Point(1, 1)]) == 0.0
