"""Shared helpers of the plugin tests (one test file per plugin module): a pytester front end
(Gate), a groups file like evgate's, the two ways leases are checked, and the plugin's modules
imported here to drive them directly.

Run from the repository root with
``PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest tests/python -p pytester -p no:cacheprovider``.
Every subprocess runs in a temporary directory without bytecode or cache
writes, so nothing lands in the source tree.
"""

import hashlib
import importlib
import json
import os
import re
import stat
import sys
import types
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


@pytest.fixture
def fake_randomly(gate, monkeypatch):
    """An installed 'pytest-randomly' (pytest11 entry point 'randomly') that reverses the tests."""
    site = gate.path / "site"
    dist_info = site / "pytest_randomly-9.9.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-randomly\nVersion: 9.9\n")
    (dist_info / "entry_points.txt").write_text("[pytest11]\nrandomly = randomly\n")
    (site / "randomly.py").write_text("def pytest_collection_modifyitems(items):\n    items.reverse()\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_DIR), str(site)]))
    # Entry points must load here, as in a real installation.
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    gate.pytester.makepyfile(test_abc="def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n")
    return ["test_abc.py::test_b", "test_abc.py::test_c", "test_abc.py::test_a"]


# A conftest.py shaped as pytest-rerunfailures is when pytest-xdist is installed: at configuration
# it keeps, as config.failures_db, a server of rerun counts for xdist's workers, whose thread waits
# for them from then on. `target` is the thread's: the server's own method, or anything else.
def status_server_conftest(target="self.run_server"):
    return f"""
import threading

class StatusServer:
    def __init__(self):
        self.stop = threading.Event()
        threading.Thread(target={target}, daemon=True).start()

    def run_server(self):
        self.stop.wait()

def pytest_configure(config):
    config.failures_db = StatusServer()
"""


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


def lease_document(root, groups, **extra):
    """The groups file evgate writes: write_groups' members, with each group's directories and
    their modes, and whatever `extra` adds (exclude, tree)."""
    document = json.loads(write_groups(root, groups).read_text())
    for spec in document["groups"]:
        base = root / spec["base"]
        spec["directories"] = [{"path": str(d.relative_to(root)), "mode": d.stat().st_mode & 0o7777}
                               for d in [base, *base.rglob("*")] if d.is_dir() and not d.is_symlink()]
    document.update(extra)
    path = root / "groups.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def data_groups(gate):
    make_tree(gate.path, {"data/config.txt": "pristine\n"})
    return [("data", "data", r"data/[^/]*", 0)]


# ------------------------------------------------- the two ways leases are checked


# What the session record says for each --evidence-gate-lease on this (Linux, local disk) machine.
LEASE_PATHS = {"auto": "inotify", "scan": "scan"}


@pytest.fixture(params=list(LEASE_PATHS))
def lease_mode(request):
    """Each lease test runs on both paths, notifications and the scan, for the same verdicts."""
    return request.param


def run_leased(gate, lease_mode, groups, *args):
    """Records of a run in lease_mode, checking that its session record names the path taken."""
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", *args, groups=groups)
    session = only(records, "session")
    assert session["lease"] == LEASE_PATHS[lease_mode], session
    assert session["lease_note"] == (None if lease_mode == "auto" else "--evidence-gate-lease=scan")
    return records


def by_test(records, key):
    return {nodeid.split("::")[-1]: r[key] for nodeid, r in results(records).items()}


# ---------------------------------------------------- the plugin's modules, driven here


@pytest.fixture(scope="session")
def plugin():
    """The lease modules imported into this process (no bytecode written), by their short
    names: plugin.files, plugin.inotify, plugin.tree, plugin.leases."""
    saved = list(sys.path), sys.dont_write_bytecode
    sys.path.insert(0, str(PLUGIN_DIR))
    sys.dont_write_bytecode = True
    try:
        return types.SimpleNamespace(**{name: importlib.import_module(f"evidence_gate_{name}")
                                        for name in ("files", "inotify", "tree", "leases")})
    finally:
        sys.path[:], sys.dont_write_bytecode = saved


def patch_everywhere(monkeypatch, plugin, name, replacement):
    """Replace evidence_gate_files' function `name` in every module of the plugin that calls it
    (each imported its own reference), for the rest of the test."""
    real = getattr(plugin.files, name)
    for module in vars(plugin).values():
        if getattr(module, name, None) is real:
            monkeypatch.setattr(module, name, replacement)


@pytest.fixture
def open_leases(plugin, lease_mode):
    """Leases(document) on the lease_mode path, closed (with their inotify instance) after the test."""
    opened = []

    def open_document(document):
        opened.append(plugin.leases.Leases(document, lease_mode))
        assert opened[-1].how == LEASE_PATHS[lease_mode], opened[-1].note
        return opened[-1]
    yield open_document
    for leases in opened:
        leases.close()


@pytest.fixture
def one_lease(open_leases, tmp_path):
    """Leases of one group "g" (regex, like g/*) made of these files under tmp_path."""
    def make(files, regex=r"g/.*"):
        make_tree(tmp_path, files)
        return open_leases(json.loads(write_groups(tmp_path, [("g", "g", regex, 0)]).read_text()))
    return make
