"""Evidence Gate plugin for pytest.

Loaded by the ``evgate`` tool with ``-p evidence_gate_pytest``. Without an
``--evidence-gate-*`` option it only registers its markers. With them it:

* run mode (``--evidence-gate-records``): runs the tests in the order evgate
  chose, reseeds ``random`` per test, watches fixture groups for undeclared
  writes, and appends one JSON Lines record per event so a crashed run still
  leaves readable evidence;
* collect mode (``--evidence-gate-collect`` with ``--collect-only``): writes
  one JSON document describing the suite and the configuration that found it.

``python -m evidence_gate_pytest manifest OUT.json [--root DIR]`` writes the
environment manifest as seen by this interpreter.
"""

import argparse
import hashlib
import importlib.metadata
import json
import locale
import os
import platform
import random
import re
import shlex
import stat
import sys
import tempfile
import time
import types

import pytest

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

# git's racy-clean margin: a file touched this close to the previous check may
# have been rewritten within one timestamp tick, so its metadata proves nothing.
RACY_NS = 50_000_000

CHUNK = 1 << 20


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
        self.leases = []
        self.collected = 0
        self.unlisted = []
        self.absent = []
        self.reports = {}

    def emit(self, record):
        # One write and a flush per record: a crash loses at most this line,
        # and evgate drops a torn last line.
        line = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
        # Lone surrogates (undecodable file names) become JSON \uDCxx escapes.
        self.records.write(line.encode("utf-8", "backslashreplace"))
        self.records.flush()

    def pytest_sessionstart(self, session):
        if self.groups is not None:
            self.leases = [Lease(spec, self.groups["root"]) for spec in self.groups["groups"]]
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for name in self.disabled_reorderers():
                reporter.write_line(f"evidence-gate: disabled {REORDERERS[name]} (the order is evidence-gate's)")
            for name in self.active_reorderers():
                reporter.write_line(f"evidence-gate: warning: {REORDERERS[name]} is active; "
                                    f"evgate runs pass -p no:{name}")

    def disabled_reorderers(self):
        return [name for name in installed_reorderers() if not self.config.pluginmanager.has_plugin(name)]

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
            "disabled": self.disabled_reorderers(),
            "active": self.active_reorderers(),
        })

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.reports = {}
        self.emit({"event": "start", "test": item.nodeid})
        # String seeds hash the same way on every Python version.
        random.seed(f"evidence-gate:{self.seed}:{item.nodeid}")
        outcome = yield
        if outcome.excinfo is not None:
            # Interrupted (Ctrl-C, pytest.exit): leave a start without a result.
            return
        declared = {group for mark in item.iter_markers("writes") for group in mark.args}
        # Check every lease, declared or not, so the next test starts from
        # what this one left.
        changed = {lease.name for lease in self.leases if lease.check()}
        result, message = classify(self.reports)
        self.emit({
            "event": "result",
            "test": item.nodeid,
            "outcome": result,
            "phases": {when: report.outcome for when, report in self.reports.items()},
            "duration": sum(report.duration for report in self.reports.values()),
            "dirty": sorted(changed - declared),
            "message": message,
        })

    def pytest_runtest_logreport(self, report):
        self.reports[report.when] = report

    def pytest_sessionfinish(self, exitstatus):
        self.emit({"event": "end", "exitstatus": int(exitstatus)})


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
    eps = importlib.metadata.entry_points()
    # Python < 3.10 returns a dict of groups instead of a selectable object.
    eps = eps.select(group="pytest11") if hasattr(eps, "select") else eps.get("pytest11", ())
    return sorted({ep.name for ep in eps} & REORDERERS.keys())


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


# --------------------------------------------------------------- fixture leases


class Lease:
    """One fixture group: its files and the directories new members could appear in.

    check() reports whether anything changed since the previous check and makes
    the current state the new baseline, so a change is blamed on one test only.
    """

    def __init__(self, spec, root):
        self.name = spec["name"]
        self.root = root
        self.regex = re.compile(spec["regex"])
        self.base = spec["base"]
        self.max_depth = int(spec["max_depth"])
        self.checked_ns = time.time_ns()
        # path -> (stat key or None if missing, (identity, mode) or None)
        self.files = {}
        for member in spec["files"]:
            st = lstat(self.path(member["path"]))
            state = None if st is None else (member["identity"], member["mode"])
            self.files[member["path"]] = (stat_key(st), state)
        self.dirs, found = self.scan()
        for rel in found - self.files.keys():
            # Appeared after evgate listed the group but before any test ran.
            st = lstat(self.path(rel))
            self.files[rel] = (stat_key(st), self.state(rel, st))

    def path(self, rel):
        return os.path.join(self.root, rel)

    def check(self):
        racy_after = self.checked_ns - RACY_NS
        self.checked_ns = time.time_ns()
        changed = False
        if any(self.dir_moved(rel, mtime, racy_after) for rel, mtime in self.dirs.items()):
            self.dirs, found = self.scan()
            for rel in found - self.files.keys():
                self.files[rel] = (None, None)  # absent until now, so its arrival counts
        for rel, (old_key, old_state) in list(self.files.items()):
            st = lstat(self.path(rel))
            key = stat_key(st)
            if key == old_key and not (st is not None and is_racy(st, racy_after)):
                continue
            state = self.state(rel, st)
            self.files[rel] = (key, state)
            changed = changed or state != old_state
        return changed

    def state(self, rel, st):
        return None if st is None else (identity(self.path(rel), st), stat.S_IMODE(st.st_mode))

    def dir_moved(self, rel, mtime, racy_after):
        st = lstat(self.path(rel))
        if st is None or not stat.S_ISDIR(st.st_mode):
            return mtime is not None
        return st.st_mtime_ns != mtime or st.st_mtime_ns >= racy_after

    def scan(self):
        """({dir: mtime_ns} to watch, {matching non-directory paths}) under base.

        Never follows symlinks; the base is watched even while missing (None) so
        that its creation is noticed.
        """
        dirs, found = {self.base: None}, set()
        pending = [(self.base, 0)]
        while pending:
            rel, depth = pending.pop()
            try:
                st = os.lstat(self.path(rel))
                if not stat.S_ISDIR(st.st_mode):
                    continue
                dirs[rel] = st.st_mtime_ns
                with os.scandir(self.path(rel)) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                child = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if self.max_depth < 0 or depth + 1 < self.max_depth:
                        pending.append((child, depth + 1))
                elif self.regex.fullmatch(child):
                    found.add(child)
        return dirs, found


def lstat(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def stat_key(st):
    return None if st is None else (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def is_racy(st, racy_after):
    return st.st_mtime_ns >= racy_after or st.st_ctime_ns >= racy_after


def identity(path, st):
    """The identity evgate computes: sha256 of content, link target, or "special"."""
    if stat.S_ISLNK(st.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError:
            return "unreadable"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    try:
        # O_NONBLOCK|O_NOFOLLOW: if the file was swapped for a FIFO or a link
        # after lstat, opening must neither hang nor follow it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return "unreadable"
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "special"
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


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


def write_json_atomic(path, document):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
        json.dump(document, f, ensure_ascii=False, sort_keys=True, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


# ---------------------------------------------------------------- manifest mode


def manifest(root):
    """The environment as this interpreter sees it; env values only if allowlisted."""
    return {
        "schema": SCHEMA,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "os_release": platform.release(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "locale": effective_locale(),
        "timezone": {
            "TZ": os.environ.get("TZ"),
            "utc_offset_minutes": time.localtime().tm_gmtoff // 60,
            "tzname": list(time.tzname),
        },
        "case_sensitive": {
            "root": None if root is None else dir_case_sensitive(root),
            "tempdir": tempdir_case_sensitive(),
        },
        "encodings": {
            "default": sys.getdefaultencoding(),
            "filesystem": sys.getfilesystemencoding(),
            "preferred": locale.getpreferredencoding(False),
        },
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "umask": format(current_umask(), "04o"),
        "pytest_version": pytest.__version__,
        "distributions": installed_distributions(),
        "env": {name: value for name, value in sorted(os.environ.items()) if env_value_allowed(name)},
        "env_names": sorted(os.environ),
    }


# Fail closed: only these values are written, every other variable by name only. The
# PYTHON* ones are CPython's own, named one by one: a pattern would let PYTHONPYPITOKEN in.
ENV_VALUE_ALLOWED = re.compile(
    r"TZ|LANG|LC_[A-Z]+|PYTHON(?:HASHSEED|PATH|HOME|DONTWRITEBYTECODE|PYCACHEPREFIX|IOENCODING|UTF8|WARNINGS"
    r"|OPTIMIZE|DEVMODE|FAULTHANDLER|NOUSERSITE|USERBASE|UNBUFFERED|VERBOSE|SAFEPATH|INTMAXSTRDIGITS"
    r"|COERCECLOCALE|MALLOC|BREAKPOINT|PLATLIBDIR|STARTUP|TRACEMALLOC|INSPECT|DEBUG)")


def env_value_allowed(name):
    return ENV_VALUE_ALLOWED.fullmatch(name) is not None


def effective_locale():
    result = {"env": {name: value for name, value in sorted(os.environ.items())
                      if name == "LANG" or re.fullmatch(r"LC_[A-Z]+", name)}}
    saved = locale.setlocale(locale.LC_ALL)
    try:
        result["setlocale"] = locale.setlocale(locale.LC_ALL, "")
        result["getlocale"] = list(locale.getlocale())
    except (locale.Error, ValueError) as e:
        result["setlocale"] = None
        result["getlocale"] = None
        result["error"] = str(e)
    finally:
        locale.setlocale(locale.LC_ALL, saved)
    return result


def current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def dir_case_sensitive(directory, names=None):
    """Probe by looking up an existing entry under its case-swapped name; never writes.

    None when no entry name has letters (nothing to probe with).
    """
    try:
        names = os.listdir(directory) if names is None else names
    except OSError:
        return None
    present = set(names)
    for name in names:
        swapped = name.swapcase()
        if swapped == name:
            continue
        if swapped in present:
            return True  # two entries differ only in case
        original = lstat(os.path.join(directory, name))
        other = lstat(os.path.join(directory, swapped))
        if original is None:
            continue  # vanished meanwhile
        return other is None or (other.st_dev, other.st_ino) != (original.st_dev, original.st_ino)
    return None


def tempdir_case_sensitive():
    directory = tempfile.gettempdir()
    try:
        fd, path = tempfile.mkstemp(prefix="evidence-gate-Case-", dir=directory)
    except OSError:
        return None
    os.close(fd)
    try:
        return dir_case_sensitive(directory, [os.path.basename(path)])
    finally:
        os.unlink(path)


def installed_distributions():
    versions = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and name not in versions:  # the first on sys.path is the one imported
            versions[name] = dist.version
    return dict(sorted(versions.items()))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m evidence_gate_pytest")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("manifest", help="write the environment manifest (JSON)")
    command.add_argument("out", metavar="OUT.json")
    command.add_argument("--root", metavar="DIR", help="also probe case sensitivity of DIR (read-only)")
    args = parser.parse_args(argv)
    write_json_atomic(args.out, manifest(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
