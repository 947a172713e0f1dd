"""Evidence Gate plugin for pytest.

Loaded by the ``evgate`` tool with ``-p evidence_gate_pytest``. Without an
``--evidence-gate-*`` option it only registers its markers. With them it:

* run mode (``--evidence-gate-records``): runs the tests in the order evgate
  chose, reseeds ``random`` per test, watches fixture groups for undeclared
  writes (by inotify on Linux, else by a stat scan; ``--evidence-gate-lease``),
  and appends one JSON Lines record per event so a crashed run still leaves
  readable evidence;
* collect mode (``--evidence-gate-collect`` with ``--collect-only``): writes
  one JSON document describing the suite and the configuration that found it.

Beside it: ``evidence_gate_leases`` (who changed which fixture group) and
``evidence_gate_manifest`` (the environment manifest, which needs no pytest, so
taking it costs no pytest start-up).
"""

import importlib.metadata
import json
import os
import platform
import random
import re
import shlex
import sys
import types

import pytest

from evidence_gate_leases import SOURCE_TREE, Leases
from evidence_gate_manifest import write_json_atomic

SCHEMA = 1

MARKERS = (
    "writes(group, ...): the test owns these evidence-gate fixture groups.",
    "serial: evidence-gate keeps this test's place in collection order.",
    'env_sensitive(until="YYYY-MM-DD", owner="...", reason="..."): '
    "the test depends on the environment; evidence-gate tolerates it until the date.",
)

# Plugins that reorder tests themselves; evgate passes -p no:<name> for them.
REORDERERS = {"randomly": "pytest-randomly", "random_order": "pytest-random-order"}

PHASES = ("setup", "call", "teardown")

# Compact, one line, keys sorted; made once (json.dumps builds an encoder per call).
RECORD_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def pytest_addoption(parser):
    group = parser.getgroup("evidence-gate", "Evidence Gate (options are set by evgate)")
    group.addoption("--evidence-gate-records", metavar="PATH",
                    help="run mode: append JSON Lines run records to PATH")
    group.addoption("--evidence-gate-run", metavar="ID",
                    help="run id copied into the session record")
    group.addoption("--evidence-gate-seed", metavar="N", type=int, default=0,
                    help="reseed random per test from N and the node id (default 0)")
    group.addoption("--evidence-gate-order", metavar="PATH",
                    help="JSON Lines node ids: run exactly these, in this order")
    group.addoption("--evidence-gate-groups", metavar="PATH",
                    help="run mode: fixture groups (JSON) to watch for undeclared writes")
    group.addoption("--evidence-gate-lease", choices=("auto", "scan"), default="auto",
                    help="how groups are checked after each test: auto (change notifications "
                         "where they can be trusted, else the stat scan) or scan (default auto)")
    group.addoption("--evidence-gate-collect", metavar="PATH",
                    help="collect mode (with --collect-only): write the suite description to PATH")


RUN_KEY = pytest.StashKey["RunRecorder"]()
COLLECT_KEY = pytest.StashKey["CollectRecorder"]()


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if config.option.evidence_gate_records:
        config.stash[RUN_KEY] = RunRecorder(config)
        config.pluginmanager.register(config.stash[RUN_KEY], "evidence-gate-run")
    if config.option.evidence_gate_collect:
        if not config.option.collectonly:
            raise pytest.UsageError("--evidence-gate-collect needs --collect-only")
        config.stash[COLLECT_KEY] = CollectRecorder(config)
        config.pluginmanager.register(config.stash[COLLECT_KEY], "evidence-gate-collect")


def pytest_unconfigure(config):
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        run.records.close()
        if run.leases is not None:
            run.leases.close()
        config.pluginmanager.unregister(run)
        del config.stash[RUN_KEY]
    collect = config.stash.get(COLLECT_KEY, None)
    if collect is not None:
        config.pluginmanager.unregister(collect)
        del config.stash[COLLECT_KEY]


# --------------------------------------------------------------------- run mode


class RunRecorder:
    """Hooks and state of run mode."""

    def __init__(self, config):
        self.config = config
        option = config.option
        self.run_id = option.evidence_gate_run
        self.seed = option.evidence_gate_seed
        self.order = read_order(option.evidence_gate_order) if option.evidence_gate_order else None
        self.groups = read_json(option.evidence_gate_groups) if option.evidence_gate_groups else None
        try:
            # Append: earlier runs' records in the same file must survive.
            self.records = open(option.evidence_gate_records, "ab")
        except OSError as e:
            raise pytest.UsageError(f"--evidence-gate-records: {e}") from None
        self.leases = None
        self.disabled = []
        self.collected = 0
        self.unlisted = []
        self.absent = []
        self.reports = {}

    def emit(self, record):
        self.write_line(RECORD_ENCODER.encode(record))

    def write_line(self, text):
        # One write and a flush per record: a crash loses at most this line,
        # and evgate drops a torn last line.
        # Lone surrogates (undecodable file names) become JSON \uDCxx escapes.
        self.records.write((text + "\n").encode("utf-8", "backslashreplace"))
        self.records.flush()

    def pytest_sessionstart(self, session):
        if self.groups is not None:
            self.leases = Leases(self.groups, self.config.option.evidence_gate_lease)
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
        # String seeds hash the same way on every Python version.
        random.seed(f"evidence-gate:{self.seed}:{item.nodeid}")
        outcome = yield
        if outcome.excinfo is not None:
            # Interrupted (Ctrl-C, pytest.exit): leave a start without a result.
            return
        # Check every lease, declared or not, so the next test starts from
        # what this one left.
        changed = self.leases.check() if self.leases is not None else []
        declared = {group for mark in item.iter_markers("writes") for group in mark.args} if changed else set()
        result, message = classify(self.reports)
        self.emit({
            "event": "result",
            "test": item.nodeid,
            "outcome": result,
            "phases": {when: report.outcome for when, report in self.reports.items()},
            "duration": sum(report.duration for report in self.reports.values()),
            "changed": changed,
            "dirty": [group for group in changed if group not in declared and group != SOURCE_TREE],
            "message": message,
            "tree": self.leases.tree_touched if self.leases is not None else [],  # outside the groups
        })

    def pytest_runtest_logreport(self, report):
        self.reports[report.when] = report

    def pytest_sessionfinish(self, exitstatus):
        # The lease fields again: notifications may have been given up during the run.
        self.emit({"event": "end", "exitstatus": int(exitstatus), **self.lease_fields()})


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


def loaded_conftests(config):
    return sorted({
        os.path.abspath(plugin.__file__)
        for plugin in config.pluginmanager.get_plugins()
        if isinstance(plugin, types.ModuleType)
        and os.path.basename(getattr(plugin, "__file__", None) or "") == "conftest.py"
    })


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


# ----------------------------------------------------------------- collect mode


class CollectRecorder:
    """Hooks and state of collect mode."""

    def __init__(self, config):
        self.config = config
        self.errors = []

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append({"nodeid": report.nodeid, "message": str(report.longrepr)[:2000]})

    def pytest_sessionfinish(self, session, exitstatus):
        config = self.config
        write_json_atomic(config.option.evidence_gate_collect, {
            "schema": SCHEMA,
            "rootdir": str(config.rootpath),
            "configfile": str(config.inipath) if config.inipath else None,
            "inifile_kind": config.inipath.name if config.inipath else None,
            "testpaths": list(config.getini("testpaths")),
            "addopts": list(config.getini("addopts")) + shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
            "args": list(config.args),
            "invocation_dir": str(config.invocation_params.dir),
            "conftests": loaded_conftests(config),
            "plugins": plugin_list(config),
            "python": sys.executable,
            "python_version": platform.python_version(),
            "pytest_version": pytest.__version__,
            "tests": [describe(item) for item in session.items],
            "errors": self.errors,
            "exitstatus": int(exitstatus),
        })


def plugin_list(config):
    """Plugin modules that are neither pytest's own nor conftests, with their distribution."""
    dists = {id(plugin): dist for plugin, dist in config.pluginmanager.list_plugin_distinfo()}
    plugins = []
    for name, plugin in config.pluginmanager.list_name_plugin():
        # Non-module plugins are state objects of a module plugin listed anyway.
        if (not isinstance(plugin, types.ModuleType) or name.isdigit()
                or plugin.__name__ == "_pytest" or plugin.__name__.startswith("_pytest.")
                or os.path.basename(getattr(plugin, "__file__", None) or "") == "conftest.py"):
            continue
        dist = dists.get(id(plugin))
        plugins.append({
            "name": name,
            "dist": dist.project_name if dist is not None else None,
            "version": dist.version if dist is not None else None,
        })
    return sorted(plugins, key=lambda p: p["name"])


def describe(item):
    sensitive = item.get_closest_marker("env_sensitive")
    return {
        "id": item.nodeid,
        "serial": item.get_closest_marker("serial") is not None,
        "writes": sorted({group for mark in item.iter_markers("writes") for group in mark.args}),
        "env_sensitive": None if sensitive is None else {
            # str(): a datetime.date for "until" becomes YYYY-MM-DD.
            key: None if sensitive.kwargs.get(key) is None else str(sensitive.kwargs[key])
            for key in ("until", "owner", "reason")
        },
    }
