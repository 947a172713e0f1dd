import os

import pytest


def test_env_is_set_by_conftest():
    assert os.environ["APP_ENV"] == "test"


@pytest.mark.slow
def test_slow_path():
    assert True


def test_fast_path():
    assert True
