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

The environment manifest is ``evidence_gate_manifest`` beside this module: it
needs no pytest, so taking it costs no pytest start-up.
"""

import contextlib
import errno
import importlib.metadata
import json
import os
import platform
import random
import re
import select
import shlex
import stat
import struct
import sys
import time
import types

import pytest

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

# git's racy-clean margin: a file touched this close to the previous check may
# have been rewritten within one timestamp tick, so its metadata proves nothing.
RACY_NS = 50_000_000

CHUNK = 1 << 20

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
            "dirty": [group for group in changed if group not in declared],
            "message": message,
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


# --------------------------------------------------------------- fixture leases
#
# Every group is checked after every test, in one of two ways with the same verdicts:
#
# * notifications (Linux): inotify, through ctypes, watches every directory of a group's
#   tree, every directory on the way down to it, and every member file (a file's own
#   watch sees writes through a hard link from elsewhere, which directory watches miss).
#   After a test: one non-blocking read; only what the events name is looked at again.
# * the stat scan (anywhere else, and whenever notifications cannot be trusted): lstat
#   every member, and walk the tree again when a directory's mtime moved.
#
# Either way a file's content is hashed only when its lstat metadata moved or is "racy".
#
# Writes through a shared memory mapping raise no event until the mapping's file is
# closed (IN_CLOSE_WRITE): a test that writes a member through mmap and keeps the mapping
# open is seen by the test that closes it, or only by evgate's check after the run. When
# a change arrives that late (the file's ctime is older than the previous check), it is
# reported where it was seen and the rest of the process falls back to the scan, the
# end record saying why.


class Unwatchable(Exception):
    """Notifications cannot be trusted for this run; the message says why."""


class Leases:
    """The fixture groups of a run and how they are checked: "inotify" or "scan".

    check() names the groups that changed since the previous check and makes the
    present state the new baseline, so a change is blamed on one test only.
    """

    def __init__(self, document, mode):
        self.leases = [Lease(spec, document["root"]) for spec in document["groups"]]
        self.how = "scan" if self.leases else None
        self.note = "--evidence-gate-lease=scan" if self.leases and mode == "scan" else None
        self.watches = None
        self.checked_ns = time.time_ns()
        if self.leases and mode == "auto":
            try:
                self.watches = Watches()
                for lease in self.leases:
                    lease.start(self.watches)
                self.how = "inotify"
            except Unwatchable as e:
                self.close()
                self.note = str(e)
        if self.watches is None:
            for lease in self.leases:
                lease.start(None)

    def check(self):
        racy_after = self.checked_ns - RACY_NS
        self.checked_ns = time.time_ns()
        if self.watches is not None:
            try:
                if not self.catch_up(racy_after):
                    return []
            except Unwatchable as e:
                self.close()
                self.how, self.note = "scan", str(e)
                for lease in self.leases:
                    lease.rescan(lease.base, None, racy_after)
        else:
            for lease in self.leases:
                lease.check_by_scan(racy_after)
        changed = [lease for lease in self.leases if lease.changed]
        for lease in changed:
            lease.changed = False
        return sorted(lease.name for lease in changed)

    def catch_up(self, racy_after):
        """Look at what the events since the previous check name; False if there were none."""
        events = self.watches.read()
        if not events:
            return False
        owners = self.watches.owners
        for wd, mask, name in events:
            if mask & IN_Q_OVERFLOW:  # events were lost: walk every tree again
                for lease in self.leases:
                    lease.stale.add(lease.base)
                continue
            for lease, kind, rel in owners.get(wd, ()):
                lease.event(kind, rel, mask, name)
            if mask & IN_IGNORED:
                self.watches.forget(wd)
        for lease in self.leases:
            if lease.stale or lease.stale_files:
                lease.catch_up(self.watches, racy_after)
        self.watches.prune()
        return True

    def close(self):
        if self.watches is not None:
            self.watches.close()
            self.watches = None


class Lease:
    """One fixture group: its members and the tree of directories they are found in.

    The tree is the base directory, reached from ROOT through plain directories only (as
    evgate lists a group), and its subdirectories down to max_depth. Links are never
    followed: a directory that became a link is no longer in the tree.
    """

    def __init__(self, spec, root):
        self.name = spec["name"]
        self.root = root
        self.regex = re.compile(spec["regex"])
        self.base = spec["base"]
        self.max_depth = int(spec["max_depth"])
        self.listed = {member["path"]: (member["identity"], member["mode"]) for member in spec["files"]}
        parts = self.base.split("/") if self.base else []
        # Each directory above the base, with the name in it that leads on to the base.
        self.above = {"/".join(parts[:i]): parts[i] for i in range(len(parts))}
        self.way_down = (*self.above, self.base)
        self.members = {}  # rel -> Member; absent ones stay, so that their return counts
        self.dirs = {}  # rel -> st_mtime_ns of each directory of the tree, as last listed
        self.way = []  # (st_dev, st_ino) of the way_down directories, as far as each is plain
        self.current = []  # the members whose directory is in the tree: all the scan looks at
        self.stale = set()  # directories notifications say to walk again
        self.stale_files = set()  # members notifications say to look at again
        self.changed = False

    def path(self, rel):
        return f"{self.root}/{rel}" if rel else self.root

    def is_member(self, rel):
        # What evgate listed is a member whatever Python's regex dialect says.
        return rel in self.listed or self.regex.fullmatch(rel) is not None

    def start(self, watches):
        """The baseline: evgate's identities for what it listed, the present state of files that came since."""
        self.members = {}
        for rel in self.walk(self.base, watches):
            member = self.members[rel] = Member(self.path(rel), parent_of(rel))
            st = self.lstat_member(rel, member, watches)
            member.key = stat_key(st)
            member.state = self.listed[rel] if rel in self.listed and st is not None else state_of(member.path, st)
        self.current = list(self.members.values())

    def check_by_scan(self, racy_after):
        if self.tree_moved(racy_after):
            self.rescan(self.base, None, racy_after)
            return
        for member in self.current:
            if member.update(lstat(member.path), racy_after):
                self.changed = True

    def tree_moved(self, racy_after):
        """Whether the way to the base changed or a directory of the tree may have new entries."""
        if self.reach(None) != self.way:
            return True
        for rel, mtime in self.dirs.items():
            st = lstat(self.path(rel))
            if st is None or not stat.S_ISDIR(st.st_mode) or st.st_mtime_ns != mtime or mtime >= racy_after:
                return True
        return False

    def event(self, kind, rel, mask, name):
        """Note what one notification asks to look at again (catch_up looks)."""
        if kind == FILE:
            self.stale_files.add(rel)
        elif kind == ABOVE:
            if not name or name == self.above[rel]:  # the way down to the base changed
                self.stale.add(self.base)
        elif not name or mask & IN_ISDIR:  # the directory itself, or a subdirectory in it
            self.stale.add(rel)
        else:
            child = f"{rel}/{name}" if rel else name
            if self.is_member(child):
                self.stale_files.add(child)

    def catch_up(self, watches, racy_after):
        stale, self.stale = self.stale, set()
        stale_files, self.stale_files = self.stale_files, set()
        walked, looked = [], set()
        for top in sorted(stale, key=len):  # a directory before those below it
            if any(within(top, done) for done in walked) or (top != self.base and top not in self.dirs):
                continue
            looked.update(self.rescan(top, watches, racy_after))
            walked.append(top)
        for rel in stale_files - looked:
            self.look(rel, watches, racy_after, present=True)

    def rescan(self, top, watches, racy_after):
        """Walk the tree at and below top again and look at every member in it; returns them."""
        found = self.walk(top, watches)
        looked = [rel for rel in self.members if within(rel, top)]
        looked += found - self.members.keys()
        for rel in looked:
            self.look(rel, watches, racy_after, present=rel in found)
        self.current = [member for member in self.members.values() if member.directory in self.dirs]
        return looked

    def look(self, rel, watches, racy_after, present):
        member = self.members.get(rel)
        if member is None:
            member = self.members[rel] = Member(self.path(rel), parent_of(rel))
        inode = None if member.key is None else member.key[3]
        st = self.lstat_member(rel, member, watches) if present else None
        if st is None and watches is not None:
            watches.drop(self, FILE, rel)
        if member.update(st, racy_after):
            self.changed = True
            # The same inode changed, and the kernel stamped that before the previous check.
            if watches is not None and st is not None and st.st_ino == inode and st.st_ctime_ns < racy_after:
                raise Unwatchable(f"{rel} (group {self.name!r}) changed before the previous check but was "
                                  "notified only now (written through a shared mapping?)")

    def lstat_member(self, rel, member, watches):
        """lstat of a member in the tree.

        With notifications a file is watched before the lstat that becomes its baseline,
        or a change in between would go unseen. A file still on its watched inode is not
        watched again: that would cost a call, and fail once a test made it unreadable.
        """
        if member.directory not in self.dirs:
            return None
        if watches is None:
            return lstat(member.path)
        if member.key is not None and watches.has(self, FILE, rel):
            st = lstat(member.path)
            if st is not None and st.st_ino == member.key[3]:
                return st
        return lstat(member.path) if watches.add(self, FILE, rel) else None

    def walk(self, top, watches):
        """The members at and below top, its directories listed (and watched) afresh."""
        for rel in [rel for rel in self.dirs if within(rel, top)]:
            del self.dirs[rel]
            if watches is not None:
                watches.drop(self, DIRECTORY, rel)
        if top == self.base:
            self.way = self.reach(watches)
            if len(self.way) < len(self.way_down):
                return set()
        found = set()
        pending = [(top, components(top) - components(self.base))]  # depth below the base
        while pending:
            rel, depth = pending.pop()
            if watches is not None and not watches.add(self, DIRECTORY, rel):
                continue
            st = lstat(self.path(rel))
            entries = list_directory(self.path(rel)) if st is not None and stat.S_ISDIR(st.st_mode) else None
            if entries is None:
                if watches is not None:
                    watches.drop(self, DIRECTORY, rel)
                continue
            self.dirs[rel] = st.st_mtime_ns
            deeper = self.max_depth < 0 or depth < self.max_depth  # max_depth: levels below the base
            prefix = f"{rel}/" if rel else ""
            for entry in entries:
                child = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if deeper:
                        pending.append((child, depth + 1))
                elif self.is_member(child):
                    found.add(child)
        return found

    def reach(self, watches):
        """(st_dev, st_ino) of the directories from ROOT down to the base, as far as each is plain.

        With notifications, each directory above the base is watched on the way, so that
        a change to the way down (a directory renamed, replaced, created) is noticed.
        """
        way = []
        for rel in self.way_down:
            if watches is not None and rel != self.base and not watches.add(self, ABOVE, rel):
                break
            st = lstat(self.path(rel))
            if st is None or not stat.S_ISDIR(st.st_mode):
                break
            way.append((st.st_dev, st.st_ino))
        if watches is not None:
            for rel in list(self.above)[len(way) + 1:]:  # below where the way ends
                watches.drop(self, ABOVE, rel)
        return way


class Member:
    """A file of a group: its lstat key when last looked at, and its (identity, mode), or None while absent."""

    __slots__ = ("path", "directory", "key", "state")

    def __init__(self, path, directory):
        self.path = path
        self.directory = directory
        self.key = None
        self.state = None

    def update(self, st, racy_after):
        """Take the file's present lstat; True if its (identity, mode) moved."""
        key = stat_key(st)
        if key == self.key and (st is None or not is_racy(st, racy_after)):
            return False
        self.key = key
        state = state_of(self.path, st)
        if state == self.state:
            return False
        self.state = state
        return True


def parent_of(rel):
    return rel.rpartition("/")[0]


def components(rel):
    return rel.count("/") + 1 if rel else 0


def within(rel, top):
    return rel == top or not top or rel.startswith(top + "/")


def list_directory(path):
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return None


def lstat(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def stat_key(st):
    return None if st is None else (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def is_racy(st, racy_after):
    return st.st_mtime_ns >= racy_after or st.st_ctime_ns >= racy_after


def state_of(path, st):
    return None if st is None else (identity(path, st), stat.S_IMODE(st.st_mode))


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
        import hashlib  # here, not at the top: loading OpenSSL costs milliseconds, most runs hash nothing
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


# What a watch is on: a member file, a directory of a group's tree, a directory above a base.
FILE, DIRECTORY, ABOVE = "file", "directory", "above"

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000

# Directories report entries coming and going, files their content and metadata (IN_ATTRIB:
# mode, times, link count). Directories do not ask for IN_MODIFY: a write would then queue
# one event per watch, which never coalesce, and a large write would overflow the queue.
# IN_DONT_FOLLOW: a link is watched as itself; IN_ONLYDIR: a directory that became anything
# else is not watched.
SELF_EVENTS = IN_DELETE_SELF | IN_MOVE_SELF
DIRECTORY_MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | SELF_EVENTS | IN_ONLYDIR | IN_DONT_FOLLOW
MASKS = {
    FILE: IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | SELF_EVENTS | IN_DONT_FOLLOW,
    DIRECTORY: DIRECTORY_MASK,
    ABOVE: DIRECTORY_MASK,
}

INOTIFY_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
INOTIFY_READ = 1 << 16
LONGEST_EVENT = INOTIFY_EVENT.size + 256  # NAME_MAX and its NUL

# Filesystems on which every change passes through this kernel, so that a watch sees it.
# On the others (NFS, CIFS/SMB, 9p, virtiofs, FUSE, Ceph, Lustre, ...) another client or
# the server behind the mount can change a file without an event here: they get the scan.
# overlay: changing its layers underneath a mounted overlay is undefined for overlayfs itself.
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "zfs", "jfs", "reiserfs",
    "tmpfs", "ramfs", "overlay", "vfat", "exfat", "ntfs3", "hfsplus",
})


class Watches:
    """One inotify instance for the run, through ctypes, and who owns each of its watches.

    A watch (wd) is per inode, so it may have several owners (lease, kind, rel): a
    directory of two groups, a file reached under two names.
    """

    def __init__(self):
        if sys.platform != "linux":
            raise Unwatchable(f"no inotify on {sys.platform}")
        try:
            import ctypes  # here, not at the top: only runs that watch need it
            libc = ctypes.CDLL(None, use_errno=True)
            init1, self.add_watch, self.rm_watch = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (ImportError, OSError, AttributeError) as e:
            raise Unwatchable(f"no inotify through ctypes: {e}") from None
        init1.argtypes = [ctypes.c_int]
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.get_errno = ctypes.get_errno
        self.fd = init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise Unwatchable(inotify_failure("inotify_init1", self.get_errno()))
        self.queued = select.poll()
        self.queued.register(self.fd, select.POLLIN)
        self.owners = {}  # wd -> {(lease, kind, rel)}
        self.wd_of = {}  # (lease, kind, rel) -> wd
        self.unowned = set()  # wds that lost their last owner; prune() removes them unless owned again
        self.trusted = set()  # st_dev of the filesystems checked against LOCAL_FILESYSTEMS
        self.mounts = None

    def add(self, lease, kind, rel):
        """Watch rel of the lease; False if it is not there (or, as a directory, is no longer one)."""
        path = lease.path(rel)
        if kind != FILE:
            self.trust(path)
        wd = self.add_watch(self.fd, os.fsencode(path), MASKS[kind])
        if wd < 0:
            error = self.get_errno()
            if error not in (errno.ENOENT, errno.ENOTDIR):
                raise Unwatchable(inotify_failure("inotify_add_watch", error, path))
            self.drop(lease, kind, rel)
            return False
        owner = (lease, kind, rel)
        old = self.wd_of.get(owner)
        if old != wd:
            if old is not None:
                self.disown(owner, old)
            self.wd_of[owner] = wd
            self.owners.setdefault(wd, set()).add(owner)
            self.unowned.discard(wd)
        return True

    def has(self, lease, kind, rel):
        return (lease, kind, rel) in self.wd_of

    def drop(self, lease, kind, rel):
        owner = (lease, kind, rel)
        wd = self.wd_of.pop(owner, None)
        if wd is not None:
            self.disown(owner, wd)

    def disown(self, owner, wd):
        owners = self.owners[wd]
        owners.discard(owner)
        if not owners:
            self.unowned.add(wd)

    def forget(self, wd):
        """The kernel removed this watch (its inode is gone, or prune() removed it)."""
        for owner in self.owners.pop(wd, ()):
            if self.wd_of.get(owner) == wd:
                del self.wd_of[owner]
        self.unowned.discard(wd)

    def prune(self):
        """Remove the watches nothing owns any more: their inodes left every group."""
        for wd in self.unowned:
            if not self.owners.get(wd):
                self.owners.pop(wd, None)
                self.rm_watch(self.fd, wd)
        self.unowned.clear()

    def read(self):
        """The events queued since the last read, as (wd, mask, name), without waiting."""
        events = []
        # poll first: when nothing is queued (after most tests) it is cheaper than a failing read.
        while self.queued.poll(0):
            try:
                data = os.read(self.fd, INOTIFY_READ)
            except OSError as e:  # a test closed descriptors it did not own
                raise Unwatchable(f"cannot read the inotify queue: {e}") from None
            offset = 0
            while offset < len(data):
                wd, mask, _, size = INOTIFY_EVENT.unpack_from(data, offset)
                offset += INOTIFY_EVENT.size
                events.append((wd, mask, os.fsdecode(data[offset:offset + size].rstrip(b"\0"))))
                offset += size
            if len(data) <= INOTIFY_READ - LONGEST_EVENT:  # the queue was emptied
                break
        return events

    def trust(self, path):
        """Refuse a directory on a filesystem where a change can bypass this kernel."""
        st = lstat(path)
        if st is None or st.st_dev in self.trusted:
            return
        if self.mounts is None:
            self.mounts = read_mounts()
        real = os.path.realpath(path)
        # The longest mount point above it; of mounts on the same point, the last one shows.
        _, kind = max(((point, kind) for point, kind in reversed(self.mounts) if within(real, point.rstrip("/"))),
                      key=lambda mount: len(mount[0]), default=(None, "an unknown filesystem"))
        if kind not in LOCAL_FILESYSTEMS:
            raise Unwatchable(f"{path} is on {kind}, where a change need not pass through this kernel")
        self.trusted.add(st.st_dev)

    def close(self):
        with contextlib.suppress(OSError):  # already closed by a test that closed descriptors it did not own
            os.close(self.fd)


def inotify_failure(call, error, path=None):
    limit = {errno.ENOSPC: " (the limit is fs.inotify.max_user_watches)",
             errno.EMFILE: " (the limits are fs.inotify.max_user_instances and the open-file limit)"}
    where = f" {path}" if path else ""
    return f"{call}{where}: {os.strerror(error)}{limit.get(error, '')}"


def read_mounts():
    """(mount point, filesystem type) of each mount this process sees, in mount order."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Unwatchable(f"cannot tell filesystems apart: {e}") from None
    mounts = []
    for line in lines:
        # ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
        fields = line.split(b" ")
        point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])  # \040 is a space
        mounts.append((os.fsdecode(point), os.fsdecode(fields[fields.index(b"-", 6) + 1])))
    return mounts


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
