"""Run mode of the Evidence Gate pytest plugin: the tests in evgate's order, one record per event.

``--evidence-gate-channel`` (from evgate) or ``--evidence-gate-records`` (by hand). The
tests run exactly in the order file's order (``--evidence-gate-order``), ``random`` is
reseeded per test from the seed and the node id, and one JSON Lines record goes out per
event as it happens, so a crashed run still leaves readable evidence:

* ``session``: what was collected and planned, the configuration, the reordering plugins;
* ``start`` and ``result`` of each test: its outcome by phase, the fixture groups it changed
  (``evidence_gate_leases``), those it changed undeclared, what it touched in the source
  tree outside them, or, when an earlier test's thread or process still ran
  (``evidence_gate_leftovers``), the change blamed on nobody;
* ``outside``: a change to the groups outside any test (start-up and collection, session end);
* ``end``: pytest's count and what it exits with, once everything else is done.

evgate reads the channel and writes the records file itself: only this process's records count.
"""

import importlib.metadata
import json
import os
import random
import re
import stat

import pytest

from evidence_gate_collect import loaded_conftests
from evidence_gate_leases import Leases
from evidence_gate_leftovers import Leftovers, describe_leftovers
from evidence_gate_tree import SOURCE_TREE

# Plugins that reorder tests themselves; evgate passes -p no:<name> for them.
REORDERERS = {"randomly": "pytest-randomly", "random_order": "pytest-random-order"}

PHASES = ("setup", "call", "teardown")

# Compact, one line, keys sorted; made once (json.dumps builds an encoder per call).
RECORD_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class RunRecorder:
    """Hooks and state of run mode."""

    def __init__(self, config):
        self.config = config
        option = config.option
        self.run_id = option.evidence_gate_run
        self.seed = option.evidence_gate_seed
        self.order = read_order(option.evidence_gate_order) if option.evidence_gate_order else None
        self.groups = read_json(option.evidence_gate_groups) if option.evidence_gate_groups else None
        self.records = open_records(option)
        self.leases = None
        self.leftovers = Leftovers()
        self.session = None
        self.exitstatus = None
        self.disabled = []
        self.collected = 0
        self.unlisted = []
        self.absent = []
        self.reports = {}

    def emit(self, record):
        self.write_line(RECORD_ENCODER.encode(record))

    def write_line(self, text):
        # One write per record, unbuffered: a crash loses at most this line (evgate calls a
        # torn last line torn), and a process forked from this one has nothing of ours to flush.
        # Lone surrogates (undecodable file names) become JSON \uDCxx escapes.
        data = (text + "\n").encode("utf-8", "backslashreplace")
        while data:
            data = data[os.write(self.records, data):]

    def pytest_sessionstart(self, session):
        self.session = session
        if self.groups is not None:
            self.leases = Leases(self.groups, self.config.option.evidence_gate_lease,
                                 self.config.option.evidence_gate_verified_ns)
        self.disabled = [name for name in installed_reorderers() if not self.config.pluginmanager.has_plugin(name)]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for name in self.disabled:
                reporter.write_line(f"evidence-gate: disabled {REORDERERS[name]} (the order is evidence-gate's)")
            for name in self.active_reorderers():
                reporter.write_line(f"evidence-gate: warning: {REORDERERS[name]} is active; "
                                    f"evgate runs pass -p no:{name}")

    def active_reorderers(self):
        return sorted(name for name in REORDERERS if self.config.pluginmanager.has_plugin(name))

    # trylast: the order file is final, whatever other plugins did before us.
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        self.collected = len(items)
        if self.order is None:
            return
        by_id = {}
        for item in items:
            by_id.setdefault(item.nodeid, []).append(item)
        listed = set(self.order)
        deselected = [item for item in items if item.nodeid not in listed]
        self.unlisted = [item.nodeid for item in deselected]
        self.absent = [nodeid for nodeid in self.order if nodeid not in by_id]
        items[:] = [item for nodeid in self.order for item in by_id.get(nodeid, ())]
        if deselected:
            config.hook.pytest_deselected(items=deselected)

    def pytest_collection_finish(self, session):
        self.emit({
            "event": "session",
            "run": self.run_id,
            "pid": os.getpid(),
            "seed": self.seed,
            "rootdir": str(self.config.rootpath),
            "configfile": str(self.config.inipath) if self.config.inipath else None,
            "conftests": loaded_conftests(self.config),
            "collected": self.collected,
            "planned": len(session.items),
            "unlisted": self.unlisted,
            "absent": self.absent,
            "disabled": self.disabled,
            "active": self.active_reorderers(),
            **self.lease_fields(),
        })

    # tryfirst: the outermost wrapper, so this runs after every collection hook and before
    # anything else of the test loop.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session):
        self.after_collection()
        yield

    def after_collection(self):
        """What the test loop starts with (a fork of a collected session, evidence_gate_fork,
        calls it itself): changes to the groups since start-up, and what start-up and collection
        left running."""
        self.check_outside("collection")
        self.leftovers.note("collection")

    def check_outside(self, phase):
        """Changes to the groups since the last check, made outside any test: in `phase`."""
        changed = self.leases.check() if self.leases is not None else []
        if changed:
            self.emit({"event": "outside", "phase": phase, "changed": changed})

    def lease_fields(self):
        """How fixture groups are checked ("inotify", "scan", None without groups) and why not by notification."""
        if self.leases is None:
            return {"lease": None, "lease_note": None}
        return {"lease": self.leases.how, "lease_note": self.leases.note}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.reports = {}
        # What emit() writes for {"event": "start", "test": ...}, without a dict to build and sort.
        self.write_line('{"event":"start","test":' + RECORD_ENCODER.encode(item.nodeid) + "}")
        # What earlier tests left running: a change made while it runs may be theirs.
        earlier = self.leftovers.running()
        # String seeds hash the same way on every Python version.
        random.seed(f"evidence-gate:{self.seed}:{item.nodeid}")
        outcome = yield
        if outcome.excinfo is not None:
            # Interrupted (Ctrl-C, pytest.exit): leave a start without a result.
            return
        # Check every lease, declared or not, so the next test starts from
        # what this one left.
        changed = self.leases.check() if self.leases is not None else []
        self.leftovers.note(item.nodeid)
        declared = {group for mark in item.iter_markers("writes") for group in mark.args} if changed else set()
        dirty = [group for group in changed if group not in declared and group != SOURCE_TREE]
        result, message = classify(self.reports)
        record = {
            "event": "result",
            "test": item.nodeid,
            "outcome": result,
            "phases": {when: report.outcome for when, report in self.reports.items()},
            "duration": sum(report.duration for report in self.reports.values()),
            "changed": changed,
            "dirty": dirty,
            "message": message,
            "tree": self.leases.tree_touched if self.leases is not None else [],  # outside the groups
        }
        if dirty and earlier:
            # Not certain whose change it is: neither test is blamed, evgate blocks the run.
            record.update(dirty=[], unblamed=dirty, leftover=describe_leftovers(earlier))
        self.emit(record)

    def pytest_runtest_logreport(self, report):
        self.reports[report.when] = report

    # A wrapper: its first half runs whatever the other implementations do (one may raise).
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.exitstatus = int(exitstatus)  # pytest's own count, before any hook changes it
        yield

    def finish(self):
        """The end record, once every pytest_sessionfinish and every conftest's pytest_unconfigure
        is done (and pytest has taken a pytest.exit() raised in them): what pytest exits with."""
        if self.exitstatus is None:  # the session never got to its end
            return
        self.check_outside("session end")
        # The lease fields again: notifications may have been given up during the run.
        self.emit({"event": "end", "exitstatus": self.exitstatus, "final": int(self.session.exitstatus),
                   **self.lease_fields()})

    def close(self):
        """At pytest_unconfigure: finish(), then every descriptor of run mode closed."""
        self.finish()
        os.close(self.records)
        self.leftovers.close()
        if self.leases is not None:
            self.leases.close()


def open_records(option):
    """The descriptor records go to: evgate's channel, or a file named by hand."""
    if option.evidence_gate_channel is not None:
        fd = option.evidence_gate_channel
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise OSError(f"descriptor {fd} is not a socket")
            # Not inherited across exec: a program a test starts has no business on it.
            os.set_inheritable(fd, False)
        except OSError as e:
            raise pytest.UsageError(f"--evidence-gate-channel={fd}: {e}") from None
        return fd
    try:
        # Append: earlier runs' records in the same file must survive.
        return os.open(option.evidence_gate_records, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise pytest.UsageError(f"--evidence-gate-records: {e}") from None


def read_order(path):
    """Node ids from a JSON Lines file, one JSON string per line."""
    order = []
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                nodeid = json.loads(line)
                if not isinstance(nodeid, str):
                    raise ValueError("not a JSON string")
                order.append(nodeid)
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"--evidence-gate-order: {path}: {e}") from None
    if len(set(order)) != len(order):
        raise pytest.UsageError(f"--evidence-gate-order: {path}: a node id is listed twice")
    return order


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"{path}: {e}") from None


def installed_reorderers():
    """Reordering plugins installed as pytest11 entry points, enabled or not."""
    installed = []
    for name, dist in REORDERERS.items():
        # By name: reading every installed distribution's entry points costs milliseconds.
        try:
            entry_points = importlib.metadata.distribution(dist).entry_points
        except importlib.metadata.PackageNotFoundError:
            continue
        if any(ep.group == "pytest11" and ep.name == name for ep in entry_points):
            installed.append(name)
    return sorted(installed)


def classify(reports):
    """(outcome, message) of one test from its phase reports, as pytest counts it."""
    setup, call, teardown = (reports.get(when) for when in PHASES)
    if setup is not None and setup.failed:
        return "error", failure_line(setup)
    if call is not None and call.failed:
        return "failed", failure_line(call)
    if teardown is not None and teardown.failed:
        return "error", failure_line(teardown)
    ran = [report for report in (setup, call, teardown) if report is not None]
    for report in ran:
        if hasattr(report, "wasxfail"):
            return ("xfailed" if report.skipped else "xpassed"), first_line(report.wasxfail)
    for report in ran:
        if report.skipped:
            # Skip reports carry (path, lineno, "Skipped: reason").
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            return "skipped", first_line(reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason)
    return "passed", ""


def failure_line(report):
    # The crash line ("AssertionError: ...") says more than the traceback's first line.
    crash = getattr(report.longrepr, "reprcrash", None)
    return first_line(crash.message if crash is not None else str(report.longrepr))


# Terminal colour codes some libraries put into their messages: a ledger is not a terminal.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def first_line(text):
    for line in ANSI_ESCAPE.sub("", str(text)).splitlines():
        if line.strip():
            return line.strip()
    return ""
