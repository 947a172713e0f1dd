import os


def test_coin_flip():
    assert os.urandom(1)[0] % 2 == 0
