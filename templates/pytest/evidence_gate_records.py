"""Run mode of the Evidence Gate pytest plugin: the tests in evgate's order, one record per event.

``--evidence-gate-channel`` (from evgate) or ``--evidence-gate-records`` (by hand). The
tests run exactly in the order file's order (``--evidence-gate-order``), ``random`` is
reseeded per test from the seed and the node id, and one JSON Lines record goes out per
event as it happens, so a crashed run still leaves readable evidence:

* ``session``: what was collected and planned, the configuration, the reordering plugins;
* ``start`` and ``result`` of each test: its outcome by phase, the fixture groups it changed
  (``evidence_gate_leases``), those it changed undeclared, what it touched in the source
  tree outside them, or, when an earlier test's thread or process still ran
  (``evidence_gate_leftovers``), the change blamed on nobody. A test whose call phase never
  ran, though it was neither skipped nor failed in setup, is ``uncalled``, never ``passed``;
* ``outside``: a change to the groups outside any test (start-up and collection, session end)
  or made by a fixture wider than a test while it was set up or torn down
  (``evidence_gate_scopes``);
* ``end``: pytest's count, the status after every pytest_sessionfinish hook and what it
  exits with, once everything else is done.

evgate reads the channel and writes the records file itself: only this process's records count.
"""

import json
import os
import random
import re
import stat

import pytest

from evidence_gate_aside import REORDERERS, idle_threads, installed_reorderers, set_aside
from evidence_gate_collect import loaded_conftests
from evidence_gate_leases import Leases
from evidence_gate_leftovers import Leftovers, describe_leftovers
from evidence_gate_protocol import EVENT, OPTION
from evidence_gate_scopes import Scopes, merged
from evidence_gate_tree import SOURCE_TREE

PHASES = ("setup", "call", "teardown")

# Compact, one line, keys sorted; made once (json.dumps builds an encoder per call).
RECORD_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))
# What emit() writes for {"event": "start", "test": ...} up to the node id, without a dict to build and sort.
START_PREFIX = '{"event":' + RECORD_ENCODER.encode(EVENT.start) + ',"test":'


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
        self.scopes = None
        self.leftovers = Leftovers(known=idle_threads(config))
        self.session = None
        self.exitstatus = None
        self.after_finish = None
        self.disabled = []
        self.collected = 0
        self.unlisted = []
        self.absent = []
        self.reports = {}
        self.running = None  # the node id of the test whose protocol runs
        self.called = False  # whether pytest_runtest_call ran for it
        self.call_error = None  # what the test raised in it, other than a skip or xfail: "Type: first line"

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
            self.scopes = Scopes(self.leases, self.emit, str(self.config.rootpath))
        self.disabled = [name for name in installed_reorderers() if not self.config.pluginmanager.has_plugin(name)]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for name in self.disabled:
                reporter.write_line(f"evidence-gate: disabled {REORDERERS[name]} (the order is evidence-gate's)")
            for name in self.active_reorderers():
                reporter.write_line(f"evidence-gate: warning: {REORDERERS[name]} is active; "
                                    f"evgate runs pass -p no:{name}")
            for phrase in set_aside(self.config):
                reporter.write_line(f"evidence-gate: set aside {phrase}")

    def active_reorderers(self):
        return sorted(name for name in REORDERERS if self.config.pluginmanager.has_plugin(name))

    # trylast: the order file is final, whatever other plugins did before us.
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        self.collected = len(items)
        if self.order is None:
            return
        by_id: dict = {}
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
            "event": EVENT.session,
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
            self.emit({"event": EVENT.outside, "phase": phase, "changed": changed})

    def lease_fields(self):
        """How fixture groups are checked ("inotify", "scan", None without groups) and why not by notification."""
        if self.leases is None:
            return {"lease": None, "lease_note": None}
        return {"lease": self.leases.how, "lease_note": self.leases.note}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.reports = {}
        self.running, self.called, self.call_error = item.nodeid, False, None
        self.write_line(START_PREFIX + RECORD_ENCODER.encode(item.nodeid) + "}")
        # What earlier tests left running: a change made while it runs may be theirs.
        earlier = self.leftovers.running()
        # String seeds hash the same way on every Python version.
        random.seed(f"evidence-gate:{self.seed}:{item.nodeid}")
        if self.scopes is not None:
            self.scopes.test_started(item)
        outcome = yield
        self.running = None
        if outcome.excinfo is not None:
            # Interrupted (Ctrl-C, pytest.exit): leave a start without a result.
            return
        # Check every lease, declared or not, so the next test starts from what this one left.
        # What wide fixtures changed for tests that all declared it is this test's change, not
        # its undeclared one.
        own, owned, tree = self.scopes.test_changes() if self.scopes is not None else ([], [], [])
        self.leftovers.note(item.nodeid)
        declared = {group for mark in item.iter_markers("writes") for group in mark.args} if own else set()
        dirty = [group for group in own if group not in declared and group != SOURCE_TREE]
        result, message = classify(self.reports, self.called, self.call_error)
        record = {
            "event": EVENT.result,
            "test": item.nodeid,
            "outcome": result,
            "phases": {when: report.outcome for when, report in self.reports.items()},
            "duration": sum(report.duration for report in self.reports.values()),
            "changed": merged(own, owned),
            "dirty": dirty,
            "message": message,
            "tree": tree,  # outside the groups
        }
        if dirty and earlier:
            # Not certain whose change it is: neither test is blamed, evgate blocks the run.
            record.update(dirty=[], unblamed=dirty, leftover=describe_leftovers(earlier))
        self.emit(record)

    # tryfirst: the outermost wrapper, so it counts only a call pytest really entered, and sees
    # what the test raised as pytest's report is made from it.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        ours = item.nodeid == self.running
        if ours:
            self.called, self.call_error = True, None
        outcome = yield
        error = outcome.excinfo[1] if outcome.excinfo is not None else None
        if ours and error is not None and not isinstance(error, (pytest.skip.Exception, pytest.xfail.Exception)):
            # Its words only: the exception would keep the test's frames alive.
            self.call_error = f"{type(error).__name__}: {first_line(error)}"

    def pytest_runtest_logreport(self, report):
        if report.nodeid == self.running:  # another test's report is not this one's phase
            self.reports[report.when] = report

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef):
        if self.scopes is not None:
            self.scopes.before_setup(fixturedef)
        yield
        if self.scopes is not None:
            self.scopes.after_setup(fixturedef)

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_fixture_post_finalizer(self, fixturedef):
        yield
        if self.scopes is not None:
            self.scopes.after_teardown(fixturedef)

    # A wrapper: its first half runs whatever the other implementations do (one may raise).
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        self.exitstatus = int(exitstatus)  # pytest's own count, before any hook changes it
        outcome = yield
        # After every pytest_sessionfinish hook; a pytest.exit() raised in one is what pytest
        # takes as its status (with a returncode).
        self.after_finish = int(session.exitstatus)
        error = outcome.excinfo[1] if outcome.excinfo is not None else None
        if isinstance(error, pytest.exit.Exception) and error.returncode is not None:
            self.after_finish = int(error.returncode)

    def finish(self):
        """The end record, once every pytest_sessionfinish and every conftest's pytest_unconfigure
        is done (and pytest has taken a pytest.exit() raised in them): what pytest exits with."""
        if self.exitstatus is None:  # the session never got to its end
            return
        assert self.session is not None  # it had an end, so a start
        self.check_outside("session end")
        # The lease fields again: notifications may have been given up during the run.
        final = int(self.session.exitstatus)
        # No status after the session's end: a hook raised out of pytest_sessionfinish (a
        # pytest.exit() there, re-raised by a wrapper before ours got its turn), and pytest took
        # its status from that.
        finish = self.after_finish if self.after_finish is not None else final
        self.emit({"event": EVENT.end, "exitstatus": self.exitstatus, "finish": finish, "final": final,
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
            raise pytest.UsageError(f"{OPTION.channel}={fd}: {e}") from None
        return fd
    try:
        # Append: earlier runs' records in the same file must survive.
        return os.open(option.evidence_gate_records, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise pytest.UsageError(f"{OPTION.records}: {e}") from None


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
        raise pytest.UsageError(f"{OPTION.order}: {path}: {e}") from None
    if len(set(order)) != len(order):
        raise pytest.UsageError(f"{OPTION.order}: {path}: a node id is listed twice")
    return order


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise pytest.UsageError(f"{path}: {e}") from None


def classify(reports, called=True, call_error=None):
    """(outcome, message) of one test from its phase reports, as pytest counts it; `called`:
    whether pytest_runtest_call ran for it, `call_error`: what the test raised there (not a
    skip or an xfail), as "Type: first line".

    A failure stands whoever reported it, and so does an exception the test raised that a
    plugin or conftest reported as a pass. Otherwise a test whose setup passed (or that has no
    setup report) must have had its call phase run, or it is "uncalled": a plugin or conftest
    (its pytest_runtest_protocol) left the test out, or reported a call that never happened.
    """
    setup, call, teardown = (reports.get(when) for when in PHASES)
    if setup is not None and setup.failed:
        return "error", failure_line(setup)
    if call is not None and call.failed:
        return "failed", failure_line(call)
    if teardown is not None and teardown.failed:
        return "error", failure_line(teardown)
    if call is not None and call.passed and call_error is not None and not hasattr(call, "wasxfail"):
        return "failed", f"{call_error} (raised by the test; a plugin or conftest reported its call as passed)"
    if (not called or call is None) and (setup is None or setup.passed):
        return "uncalled", uncalled_line(reports, call, called)
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


def uncalled_line(reports, call, called):
    if called:
        return "pytest_runtest_call ran, but no 'call' report came: a plugin or conftest kept the call's outcome back"
    if call is not None:
        return (f"a 'call' report said {call.outcome}, but pytest_runtest_call never ran the test: "
                "a plugin or conftest reported a call that did not happen")
    if not reports:
        return ("no phase of the test ran (no setup, call or teardown report): a plugin or conftest's "
                "pytest_runtest_protocol returned without running it")
    phases = " and ".join(f"{when} {report.outcome}" for when, report in reports.items())
    return (f"{phases}, but no call: a plugin or conftest's pytest_runtest_protocol "
            "ran the test without calling it")


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
