import json
import pathlib

import pytest

STOCK = pathlib.Path(__file__).parent.parent / "fixtures" / "reference" / "stock.json"


def stock():
    return json.loads(STOCK.read_text())


def test_reference_is_read_only():
    # Reads the shared reference group; never writes it.
    assert stock()["widget"] == 3


@pytest.mark.parametrize("item, in_stock", [("widget", True), ("gadget", False), ("gizmo", True)])
def test_in_stock(item, in_stock):
    assert (stock()[item] > 0) is in_stock


@pytest.mark.parametrize("sku", ["a[1]", "b::2", "c d"])
def test_odd_ids(sku):
    # Node ids with brackets, '::' and a space inside the parameter part.
    assert sku[0] in "abc"
