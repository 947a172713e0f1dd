import json
import pathlib

STORE = pathlib.Path(__file__).parent.parent / "data" / "store.json"


def test_add_item():
    # Writes the shared store without declaring the group: a polluter.
    STORE.write_text(json.dumps({"items": ["a"]}) + "\n")


def test_store_starts_empty():
    assert json.loads(STORE.read_text())["items"] == []
