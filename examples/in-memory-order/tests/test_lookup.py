import pytest

import plugins


def test_csv_plugin_is_available():
    # Brittle: relies on test_register_csv_plugin having run earlier in the same
    # interpreter. Collection order runs test_lookup.py first, so it fails there.
    assert plugins.lookup("csv")() == "csv-writer"


def test_unknown_plugin_raises():
    with pytest.raises(LookupError):
        plugins.lookup("does-not-exist")
