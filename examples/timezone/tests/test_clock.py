import time


def test_epoch_is_midnight():
    # Environment-bound: true only where the local timezone is UTC.
    assert time.localtime(0).tm_hour == 0


def test_epoch_roundtrip():
    # Portable: holds in every timezone.
    assert time.mktime(time.localtime(0)) == 0
