"""Module-level state the tests share within one interpreter."""
REGISTRY = {}
FLAGS = {"one": False, "two": False}
MODE = {"value": "good"}
