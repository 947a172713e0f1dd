def test_load_library():
    assert "libnative".startswith("lib")


def test_version_string():
    assert "1.2.3".split(".") == ["1", "2", "3"]
