"""Shared helpers of the plugin tests: a pytester front end (Gate) and a groups file like evgate's.

Run from the repository root with
``PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest tests/python -p pytester -p no:cacheprovider``.
Every subprocess runs in a temporary directory without bytecode or cache
writes, so nothing lands in the source tree.
"""

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

PLUGIN_DIR = Path(__file__).resolve().parents[2] / "templates" / "pytest"
TIMEOUT = 120


@pytest.fixture
def gate(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(PLUGIN_DIR))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    # Only our plugin: installed plugins must not change what is measured.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    return Gate(pytester)


class Gate:
    def __init__(self, pytester):
        self.pytester = pytester
        self.path = pytester.path
        self.records_path = pytester.path / "records.jsonl"

    def run(self, *args):
        return self.pytester.runpytest_subprocess(
            "-p", "evidence_gate_pytest", "-p", "no:cacheprovider", *args, timeout=TIMEOUT)

    def run_records(self, *args, order=None, groups=None):
        """Run in run mode; returns (result, records of this file so far)."""
        extra = [f"--evidence-gate-records={self.records_path}"]
        if order is not None:
            order_path = self.path / "order.jsonl"
            order_path.write_text("".join(json.dumps(i) + "\n" for i in order), encoding="utf-8")
            extra.append(f"--evidence-gate-order={order_path}")
        if groups is not None:
            extra.append(f"--evidence-gate-groups={write_groups(self.path, groups)}")
        result = self.run(*extra, *args)
        return result, self.records()

    def records(self):
        if not self.records_path.exists():
            return []
        with open(self.records_path, encoding="utf-8") as f:
            return [json.loads(line) for line in f]


def results(records):
    return {r["test"]: r for r in records if r["event"] == "result"}


def started(records):
    return [r["test"] for r in records if r["event"] == "start"]


def only(records, event):
    found = [r for r in records if r["event"] == event]
    assert len(found) == 1, records
    return found[0]


# ------------------------------------------------------ groups file like evgate's


def write_groups(root, groups):
    """Write the groups JSON evgate would write; groups are (name, base, regex, max_depth)."""
    document = {"root": str(root), "groups": [
        {"name": name, "pattern": regex, "regex": regex, "base": base, "max_depth": max_depth,
         "files": [{"path": rel, "identity": identity_of(root / rel), "mode": stat.S_IMODE(os.lstat(root / rel).st_mode)}
                   for rel in sorted(members(root, base, regex, max_depth))]}
        for name, base, regex, max_depth in groups]}
    path = root / "groups.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def members(root, base, regex, max_depth, depth=0):
    if not (root / base).is_dir():
        return
    for entry in os.scandir(root / base):
        rel = f"{base}/{entry.name}" if base else entry.name
        if entry.is_dir(follow_symlinks=False):
            if max_depth < 0 or depth < max_depth:
                yield from members(root, rel, regex, max_depth, depth + 1)
        elif re.fullmatch(regex, rel):
            yield rel


def identity_of(path):
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    return "special"


def make_tree(root, files):
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
