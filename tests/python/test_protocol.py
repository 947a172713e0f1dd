"""The plugin against the protocol file (templates/pytest/evidence_gate_protocol.json): every name
it uses is there, and it handles every name there that is sent to it. evgate's side of the same
file is tests/unit/test_protocol.cpp."""

import ast
import importlib
import json
import sys

import pytest

from conftest import PLUGIN_DIR, data_groups

PROTOCOL = json.loads((PLUGIN_DIR / "evidence_gate_protocol.json").read_text(encoding="utf-8"))
PREFIX = PROTOCOL["option_prefix"]


@pytest.fixture(scope="module")
def modules():
    saved = list(sys.path), sys.dont_write_bytecode
    sys.path.insert(0, str(PLUGIN_DIR))
    sys.dont_write_bytecode = True
    try:
        return {name: importlib.import_module(f"evidence_gate_{name}")
                for name in ("protocol", "pytest", "fork", "fork_server", "fork_worker")}
    finally:
        sys.path[:], sys.dont_write_bytecode = saved


def test_the_plugin_registers_every_option_of_the_file_and_no_other(modules):
    parser = modules["fork_worker"].option_parser()
    registered = {flag for action in parser._actions for flag in action.option_strings if flag.startswith(PREFIX)}
    assert registered == set(PROTOCOL["options"].values())


def test_the_fork_server_handles_every_request_of_the_file_and_no_other(modules):
    server = modules["fork_server"].Server
    handled = {name[len("op_"):] for name in dir(server) if name.startswith("op_")}
    assert handled == set(PROTOCOL["fork"]["requests"])


def test_the_protocol_module_names_what_the_file_names(modules):
    protocol = modules["protocol"]
    assert vars(protocol.OPTION) == PROTOCOL["options"]
    assert set(vars(protocol.EVENT)) == set(PROTOCOL["records"]["plugin"]) | set(PROTOCOL["records"]["evgate"])
    assert set(vars(protocol.OP)) == set(PROTOCOL["fork"]["requests"])


CONFTEST = """
import pytest

@pytest.fixture(scope="session")
def wide():
    yield
    open("data/config.txt", "w").write("at teardown\\n")

def pytest_sessionfinish(session):
    open("data/new.txt", "w").write("x\\n")
"""


def test_every_record_the_plugin_sends_is_in_the_file_and_every_event_of_the_file_is_sent(gate):
    groups = data_groups(gate)
    gate.pytester.makeconftest(CONFTEST)
    gate.pytester.makepyfile(test_a="def test_a(wide): pass\ndef test_b(): assert False\n")
    _, records = gate.run_records(groups=groups)
    sent = PROTOCOL["records"]["plugin"]
    for record in records:
        assert record["event"] in sent, record
        assert set(record) <= set(sent[record["event"]]), f"not in the protocol file: {set(record) - set(sent[record['event']])}"
    assert {record["event"] for record in records} == set(sent)
    assert any("fixture" in record for record in records if record["event"] == "outside")


def hand_spelled(tree):
    """Protocol names written out in a module instead of taken from evidence_gate_protocol:
    an option's flag, or an event or operation in a dict literal."""
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                and node.value.startswith(PREFIX)):
            found.append(f"line {node.lineno}: {node.value!r}")
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if (isinstance(key, ast.Constant) and key.value in ("event", "op")
                        and isinstance(value, ast.Constant)):
                    found.append(f"line {node.lineno}: {key.value!r}: {value.value!r}")
    return found


@pytest.mark.parametrize("path", sorted(p.name for p in PLUGIN_DIR.glob("evidence_gate_*.py")
                                        if p.name != "evidence_gate_protocol.py"))
def test_no_module_spells_a_protocol_name_by_hand(path):
    assert hand_spelled(ast.parse((PLUGIN_DIR / path).read_text(encoding="utf-8"))) == []


def test_a_hand_spelled_name_is_found():
    assert hand_spelled(ast.parse('x = {"event": "start"}\ny = "--evidence-gate-run=1"\n')) == [
        "line 1: 'event': 'start'", "line 2: '--evidence-gate-run=1'"]
