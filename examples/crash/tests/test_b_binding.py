import os


def test_checksum():
    assert sum(b"abc") == 294


def test_native_call_crashes():
    # Stands in for a segfaulting extension module: the interpreter dies mid-suite,
    # without pytest getting to report anything.
    os._exit(3)


def test_after_crash_same_module():
    assert len("after") == 5
