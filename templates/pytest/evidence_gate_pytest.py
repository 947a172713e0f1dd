"""Evidence Gate plugin for pytest.

Loaded by the ``evgate`` tool with ``-p evidence_gate_pytest``. Without an
``--evidence-gate-*`` option it only registers its markers. With them it:

* run mode (``--evidence-gate-channel`` from evgate, or ``--evidence-gate-records``
  by hand): runs the tests in the order evgate chose, reseeds ``random`` per
  test, watches fixture groups for undeclared writes (by inotify on Linux, else
  by a stat scan; ``--evidence-gate-lease``) during each test and outside them
  (start-up and collection, session end), notes the threads and processes a
  test leaves running, and sends one JSON Lines record per event as it happens,
  so a crashed run still leaves readable evidence. evgate reads the channel and
  writes the records file itself: only this process's records count;
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
import stat
import sys
import threading
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
    group.addoption("--evidence-gate-channel", metavar="FD", type=int,
                    help="run mode: send JSON Lines run records on this inherited socket (evgate's)")
    group.addoption("--evidence-gate-records", metavar="PATH",
                    help="run mode by hand: append JSON Lines run records to PATH")
    group.addoption("--evidence-gate-run", metavar="ID",
                    help="run id copied into the session record")
    group.addoption("--evidence-gate-seed", metavar="N", type=int, default=0,
                    help="reseed random per test from N and the node id (default 0)")
    group.addoption("--evidence-gate-order", metavar="PATH",
                    help="JSON Lines node ids: run exactly these, in this order")
    group.addoption("--evidence-gate-groups", metavar="PATH",
                    help="run mode: fixture groups (JSON) to watch for undeclared writes")
    group.addoption("--evidence-gate-verified-ns", metavar="T", type=int,
                    help="run mode: when evgate last found the groups as listed (ns since the epoch); "
                         "what changed since counts as changed outside any test")
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
    if config.option.evidence_gate_channel is not None or config.option.evidence_gate_records:
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
        # Last of the unconfigure hooks (this module was registered before any conftest).
        run.finish()
        os.close(run.records)
        run.leftovers.close()
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
        self.check_outside("collection")
        self.leftovers.note("collection")
        yield

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


class Leftovers:
    """Threads and child processes left running by a test (or by start-up and collection).

    note(owner) after each test takes what appeared since the previous note. Cheap when
    nothing did: with only the main thread, no thread list is built, and each thread's
    children are read with one pread of a /proc/self/task/<tid>/children kept open. A change
    made while an earlier test's leftovers run cannot be blamed on anyone.
    """

    def __init__(self):
        self.threads = {threading.main_thread()}  # known: anything else was started by someone
        self.children = set()
        self.left = []  # (owner, thread or pid), still running at the last look
        self.tasks = {}  # thread -> descriptor of its /proc/self/task/<tid>/children

    def note(self, owner):
        if len(self.threads) == 1 and not self.children and threading.active_count() == 1 \
                and not self.children_of(threading.main_thread()):
            return  # as at the last note: the main thread alone, no child (most tests)
        threads = set(threading.enumerate())
        children = self.child_pids(threads)
        self.left += [(owner, thread) for thread in threads - self.threads]
        self.left += [(owner, pid) for pid in children - self.children]
        self.threads, self.children = threads, children

    def running(self):
        """The leftovers still running, oldest first (nothing to look at, most of the time)."""
        if self.left:
            children = self.child_pids(set(threading.enumerate()))
            self.left = [(owner, what) for owner, what in self.left
                         if (what.is_alive() if isinstance(what, threading.Thread)
                             else what in children and process_running(what))]
        return self.left

    def child_pids(self, threads):
        """Child processes of this process: each thread's are listed under its own task."""
        for gone in [thread for thread in self.tasks if thread not in threads]:
            close_quietly(self.tasks.pop(gone))
        pids = set()
        for thread in threads:
            pids.update(self.children_of(thread))
        return pids

    def children_of(self, thread):
        for attempt in (1, 2):  # once more on a fresh descriptor: a test may have closed ours
            fd = self.tasks.get(thread)
            try:
                if fd is None:
                    if thread.native_id is None:
                        return []
                    fd = self.tasks[thread] = os.open(f"/proc/self/task/{thread.native_id}/children",
                                                      os.O_RDONLY | os.O_CLOEXEC)
                return [int(word) for word in os.pread(fd, 65536, 0).split()]
            except (OSError, ValueError):  # not Linux, an old kernel, the thread just ended, a closed fd
                if fd is not None:
                    close_quietly(self.tasks.pop(thread))
        return []

    def close(self):
        for fd in self.tasks.values():
            close_quietly(fd)
        self.tasks = {}


def close_quietly(fd):
    try:
        os.close(fd)
    except OSError:
        pass


def process_running(pid):
    """False once it is a zombie: ended, only waiting to be reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def describe_leftovers(leftovers):
    owner, what = leftovers[0]
    by = "started at start-up or collection" if owner == "collection" else f"left by {owner}"
    text = f"a thread {by} ({what.name!r})" if isinstance(what, threading.Thread) else f"a process {by} (pid {what})"
    return text + (f" and {len(leftovers) - 1} more" if len(leftovers) > 1 else "")


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
            # The same by source: evgate says where an option that thins the run came from.
            "addopts_ini": list(config.getini("addopts")),
            "addopts_env": shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
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
