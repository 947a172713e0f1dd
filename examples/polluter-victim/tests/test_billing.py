import json
import pathlib

CONFIG = pathlib.Path(__file__).parent.parent / "fixtures" / "config" / "billing.json"


def price(amount):
    discount = json.loads(CONFIG.read_text())["discount"]
    return amount * (100 - discount) // 100


def test_apply_discount():
    # The polluter: rewrites a shared fixture it never declared with @pytest.mark.writes.
    CONFIG.write_text(json.dumps({"discount": 10}) + "\n")
    assert price(100) == 90


def test_invoice_totals():
    # The victim: assumes the pristine fixture, so it fails whenever the polluter ran first.
    assert price(200) == 200


def test_rounding():
    assert price(3) == 3 or price(3) == 2


def test_health():
    assert True
