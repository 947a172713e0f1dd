"""A pytest plugin that lists a test file's scenarios for CTest, loaded only by
cmake/PytestScenariosAddTests.cmake around ``pytest --collect-only``: it writes the CTest test
file named by ``EVIDENCE_GATE_SCENARIOS``, one entry per test. Tests that share a fixture wider
than a test and narrower than the session (a module-scoped consumer build) are one entry, named
for that fixture, so that its setup is paid once; ``ctest -R`` picks entries by these names."""

import os

import pytest

SHARED_SCOPES = ("class", "module", "package")


def _bracket(text: str) -> str:
    """A CMake bracket argument holding text as it is."""
    equals = "="
    while f"]{equals}]" in text:
        equals += "="
    return f"[{equals}[{text}]{equals}]"


def _entries(items):
    """(name, node ids) of every entry, in collection order."""
    entries: dict = {}
    for item in items:
        defs = getattr(item, "_fixtureinfo").name2fixturedefs
        shared = sorted(name for name, d in defs.items() if d and d[-1].scope in SHARED_SCOPES)
        name = shared[0] if shared else item.nodeid.split("::", 1)[1]
        entries.setdefault(name, []).append(item.nodeid)
    return entries


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    prefix = os.environ["EVIDENCE_GATE_SCENARIOS_PREFIX"]
    lines = []
    for name, node_ids in _entries(session.items).items():
        if ";" in name or any(";" in node_id for node_id in node_ids):
            raise pytest.UsageError(f"a test id holds ';', which CTest reads as a list: {node_ids}")
        entry = _bracket(f"{prefix}.{name}")
        # scenario_command: the collection's own command, without --collect-only.
        lines.append(f"add_test({entry} ${{scenario_command}} {' '.join(map(_bracket, node_ids))})")
        lines.append(f"list(APPEND scenario_names {entry})")
    with open(os.environ["EVIDENCE_GATE_SCENARIOS"], "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
