"""Fork mode of the Evidence Gate pytest plugin: one collection, many orders.

The receipt's collection (``--collect-only --evidence-gate-serve=SOCKET``, from evgate) leaves
its collected session serving. Once pytest has started, loaded its plugins and conftests and
collected, and before any test has run, the process forks a server that keeps all of that and
listens on SOCKET, while the collection itself ends as any ``--collect-only`` ends.

Each run evgate asks for is a fork of the server (a worker) that takes the run's command line,
environment, log and record channel, puts the collected items back as collection left them,
and calls ``pytest_collection_modifyitems`` and ``pytest_collection_finish`` again with run
mode registered, so every plugin reorders and deselects as it would in a fresh pytest and
``evidence_gate_records`` puts the run's order last. Then it returns from
``pytest_runtestloop`` to pytest's own test loop: from there on it is a fresh pytest that
collected the same items, session end and exit status included, at the cost of a fork.

The server forks only where a fork is that fresh pytest (else evgate runs a process per run,
and the receipt says why): on Linux, with no thread but the main one and no child process
alive after collection, no collection error, and no plugin answering
``pytest_evidence_gate_fork_unsafe``. It refuses a run (evgate then starts a process) whose
command line or start-up environment differs from the session's, or whose receipt is not the
one it was bound to, or when a file the session imported has changed since.

The server is a child subreaper in a session of its own: what a worker leaves behind is
reparented to it and killed when the worker is reaped. It ends when told to (the cleanup step),
when its owner (the ctest that ran the receipt step) is gone, or when idle for too long.

The server and its protocol are in ``evidence_gate_fork_server``, a worker's start and the
checks of a run's request in ``evidence_gate_fork_worker``.

Protocol, over the Unix stream socket, one JSON object a line:

* ``{"op": "bind", "receipt": ID}`` (once): the server serves that receipt's runs from now on;
  answers ``{"pid": ..., "tests": N, "hash_seed": ...}``;
* ``{"op": "run", "receipt": ID, "argv": [...], "env": ["VAR=value", ...], "cwd": ...}`` with
  the run's log and record channel as SCM_RIGHTS descriptors: answers ``{"pid": W}`` (the
  worker, in a process group of its own) or ``{"refused": why}``; when the worker has ended,
  ``{"exit": code}`` or ``{"signal": n}`` (it stays unreaped, its pid its own); then the client
  sends ``{"op": "reap"}`` and gets ``{"reaped": true}`` once it and what it left are gone;
* ``{"op": "stop"}``: answers ``{"stopping": true, "served": N}`` and ends the server.
"""

import os
import socket
import sys
import threading

import pytest

from evidence_gate_aside import idle_threads
from evidence_gate_fork_server import child_processes, start_server
from evidence_gate_fork_worker import Worker
from evidence_gate_manifest import write_json_atomic
from evidence_gate_protocol import OPTION


class ForkHooks:
    @pytest.hookspec(firstresult=True)
    def pytest_evidence_gate_fork_unsafe(self, session):
        """Why a fork of this collected session would not run a test as a fresh pytest would
        (one sentence), or None. Evidence Gate then starts a process for every run. Implement
        it with ``@pytest.hookimpl(optionalhook=True)`` so pytest without the plugin accepts it."""


def pytest_addhooks(pluginmanager):
    pluginmanager.add_hookspecs(ForkHooks)


def pytest_addoption(parser):
    group = parser.getgroup("evidence-gate")
    group.addoption(OPTION.serve, metavar="SOCKET",
                    help="with --collect-only: after collection, leave a server of the collected "
                         "session listening on SOCKET (evgate's receipt step)")
    group.addoption(OPTION.serve_status, metavar="PATH",
                    help="where the server's pid and socket, or why there is none, are written")
    group.addoption(OPTION.serve_owner, metavar="PID:START",
                    help="the server ends when this process (pid, start time in clock ticks) is gone")
    group.addoption(OPTION.serve_idle, metavar="SECONDS", type=float, default=900.0,
                    help="the server ends after this long without a run (default 900)")


SERVE_KEY = pytest.StashKey["Forking"]()


def pytest_configure(config):
    if config.option.evidence_gate_serve:
        if not config.option.collectonly:
            raise pytest.UsageError(f"{OPTION.serve} needs --collect-only")
        config.stash[SERVE_KEY] = Forking(config)
        config.pluginmanager.register(config.stash[SERVE_KEY], "evidence-gate-serve")


def pytest_unconfigure(config):
    forking = config.stash.get(SERVE_KEY, None)
    if forking is not None:
        config.pluginmanager.unregister(forking)
        del config.stash[SERVE_KEY]


class Forking:
    """In the receipt's pytest: the collected items as collection found them, and the fork of
    the server once collection is done."""

    def __init__(self, config):
        self.config = config
        self.collected = None

    # The outermost wrapper: the items before any plugin reordered or deselected them.
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        self.collected = list(items)
        yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session):
        option = self.config.option
        why = unsafe(session)
        if why is None:
            try:
                forked = start_server(session, self.collected, option.evidence_gate_serve,
                                      option.evidence_gate_serve_owner, option.evidence_gate_serve_idle)
            except OSError as e:
                forked = f"the server could not start: {e}"
            if isinstance(forked, Worker):  # in a worker: a run, from here on
                forked.begin(session)
                return None
            if isinstance(forked, int):
                status = {"pid": forked, "socket": option.evidence_gate_serve, "tests": len(session.items)}
            else:
                why = forked
        if why is not None:
            status = {"why": why}
        if option.evidence_gate_serve_status:
            write_json_atomic(option.evidence_gate_serve_status, status)
        return None  # the collection ends as --collect-only does


def unsafe(session):
    """Why forks of this session would not be fresh pytest runs, or None."""
    if sys.platform != "linux" or not hasattr(os, "pidfd_open") or not hasattr(socket, "send_fds"):
        return f"forks of a collected session need Linux and Python 3.9 or later (this is {sys.platform}, Python {sys.version.split()[0]})"
    if session.testsfailed:
        return "the collection had errors: every run stops at them, a fresh process as well"
    if not session.items:
        return "nothing was collected"
    idle = idle_threads(session.config)
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread() and t not in idle]
    tasks = len(os.listdir("/proc/self/task")) - len(idle)
    if threads or tasks > 1:
        named = f" ({', '.join(sorted(threads))})" if threads else ""
        return (f"{tasks - 1} thread(s) besides the main one were alive after collection{named}: "
                "a fork copies only the thread that forks")
    children = child_processes()
    if children:
        return (f"processes started during start-up or collection were still running after it "
                f"(pids {', '.join(map(str, sorted(children)))}): a fork would not have them")
    veto = session.config.hook.pytest_evidence_gate_fork_unsafe(session=session)
    if veto:
        return f"a plugin or conftest says forks are unsafe: {veto}"
    return None
