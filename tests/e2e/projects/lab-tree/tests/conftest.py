import pytest


@pytest.fixture(autouse=True)
def required_env(monkeypatch):
    monkeypatch.setenv("APP_ENV", "test")
