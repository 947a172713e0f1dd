import pytest

import pygeo


def test_distance_in_millimetres():
    pygeo.set_unit(0.001)  # and never set back: the library keeps it for the whole process
    assert pygeo.distance(pygeo.Point(0, 0), pygeo.Point(0.003, 0.004)) == pytest.approx(5.0)


def test_unit_must_be_positive():
    with pytest.raises(ValueError):
        pygeo.set_unit(-1.0)
