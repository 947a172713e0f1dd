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

import argparse
import ctypes
import gc
import json
import os
import selectors
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time

import pytest

from evidence_gate_manifest import write_json_atomic

# The environment as the interpreter started with it, before any conftest changed it: a run's
# environment is applied as the difference from this.
STARTUP_ENVIRON = dict(os.environ)

# Variables read when the interpreter starts, whose value a fork cannot change.
STARTUP_PREFIXES = ("PYTHON", "LD_", "LC_")
STARTUP_NAMES = ("LANG", "LANGUAGE", "TZ")

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36

# A request larger than this is no request of evgate's.
MAX_REQUEST = 4 * 1024 * 1024


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
    group.addoption("--evidence-gate-serve", metavar="SOCKET",
                    help="with --collect-only: after collection, leave a server of the collected "
                         "session listening on SOCKET (evgate's receipt step)")
    group.addoption("--evidence-gate-serve-status", metavar="PATH",
                    help="where the server's pid and socket, or why there is none, are written")
    group.addoption("--evidence-gate-serve-owner", metavar="PID:START",
                    help="the server ends when this process (pid, start time in clock ticks) is gone")
    group.addoption("--evidence-gate-serve-idle", metavar="SECONDS", type=float, default=900.0,
                    help="the server ends after this long without a run (default 900)")


SERVE_KEY = pytest.StashKey["Forking"]()


def pytest_configure(config):
    if config.option.evidence_gate_serve:
        if not config.option.collectonly:
            raise pytest.UsageError("--evidence-gate-serve needs --collect-only")
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
    threads = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    tasks = len(os.listdir("/proc/self/task"))
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


def child_processes():
    children = set()
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as f:
                children.update(int(pid) for pid in f.read().split())
        except OSError:
            pass
    return children


def prctl(option, value):
    """prctl(2) through the C library; False where it cannot be called."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# ------------------------------------------------------------------ the server


def start_server(session, collected, path, owner, idle):
    """Forks the server. In the receipt's process: the server's pid, or why it could not start.
    In a worker the server forked (much later): the Worker."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o077)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        bound = os.stat(path)
    except OSError as e:
        listener.close()
        return f"cannot listen on {path}: {e.strerror or e}"
    owner_fd = open_owner(owner) if owner else None
    if owner and owner_fd is None:
        listener.close()
        os.unlink(path)
        return f"its owner (process {owner}) is gone"
    ready_r, ready_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid:
        os.close(ready_w)
        listener.close()
        if owner_fd is not None:
            os.close(owner_fd)
        started = os.read(ready_r, 1)
        os.close(ready_r)
        if started != b"+":
            os.waitpid(pid, 0)
            return "the server died as it started"
        return pid
    try:
        # Out of the receipt's process group and session (evgate kills those once the
        # collection ends), and the reaper of whatever its workers leave behind.
        os.close(ready_r)
        after_fork()
        os.setsid()
        if not prctl(PR_SET_CHILD_SUBREAPER, 1):
            os._exit(1)
        listener.listen(64)  # here: a client's SO_PEERCRED names whoever called listen()
        output = detach_output(session.config)
        # What collection built, out of the collector's sight: a worker's collections then never
        # walk (and so copy, page by page) the heap it shares with the server.
        gc.freeze()
        server = Server(session, collected, listener, (bound.st_dev, bound.st_ino), path, owner_fd, idle, output)
        os.write(ready_w, b"+")
        os.close(ready_w)
        return server.serve()  # returns only in a worker
    except BaseException:  # the server never goes back into the receipt's pytest
        os._exit(1)


def after_fork():
    """What Python 3.11 leaves stale in a forked child: the main thread's native id, by which
    /proc/self/task/<tid> is found (evidence_gate_leftovers reads its children there)."""
    main = threading.main_thread()
    if hasattr(main, "_set_native_id"):
        main._set_native_id()


def open_owner(owner):
    """A pidfd of the owner `PID:START`, or None when that process is gone (or its pid reused)."""
    pid_text, _, start = owner.partition(":")
    try:
        fd = os.pidfd_open(int(pid_text))
    except (OSError, ValueError):
        return None
    if start and process_start(int(pid_text)) != start:  # checked after the pidfd pinned it
        os.close(fd)
        return None
    return fd


def process_start(pid):
    """Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


class Connection:
    """One client: its bytes and descriptors so far, and the worker it asked for."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.fds = []
        self.worker = None  # its pid, until reaped
        self.ended = None   # how it ended, once it has: {"exit": n} or {"signal": n}


class Server:
    """The collected session, serving: one selector over the socket, the clients, the workers'
    pidfds and the owner's."""

    def __init__(self, session, collected, listener, bound, path, owner_fd, idle, output):
        self.session = session
        self.config = session.config
        self.collected = collected
        self.output = output
        self.listener = listener
        self.bound = bound
        self.path = path
        self.idle = idle
        self.pid = os.getpid()
        self.receipt = None
        self.served = 0
        self.connections = set()
        self.workers = {}  # pid -> (pidfd until it ended, Connection)
        self.last = time.monotonic()
        self.stamps = source_stamps(self.config)
        self.options = option_parser()
        self.selector = selectors.DefaultSelector()
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ, self.accept)
        if owner_fd is not None:
            self.selector.register(owner_fd, selectors.EVENT_READ, lambda fd: self.exit())

    def serve(self):
        """The server's loop; returns only in a worker (its Worker)."""
        while True:
            timeout = None
            if not self.workers:
                timeout = self.idle - (time.monotonic() - self.last)
                if timeout <= 0:
                    self.exit()
            for key, _ in self.selector.select(timeout):
                worker = key.data(key.fileobj)
                if worker is not None:
                    return worker

    def accept(self, listener):
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return None
        if peer_uid(sock) != os.getuid():  # the state directory is the user's; a path is never trusted alone
            sock.close()
            return None
        sock.setblocking(False)
        connection = Connection(sock)
        self.connections.add(connection)
        self.selector.register(sock, selectors.EVENT_READ, lambda s: self.readable(connection))
        return None

    def readable(self, connection):
        try:
            data, fds, _, _ = socket.recv_fds(connection.sock, 65536, 8)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            data, fds = b"", []
        connection.fds += fds
        connection.buffer += data
        if not data or len(connection.buffer) > MAX_REQUEST:
            self.drop(connection)
            return None
        while b"\n" in connection.buffer:
            line, connection.buffer = connection.buffer.split(b"\n", 1)
            try:
                message = json.loads(line)
                op = message["op"]
            except (ValueError, TypeError, KeyError):
                self.drop(connection)
                return None
            worker = self.handle(connection, op, message)
            if worker is not None:
                return worker
        return None

    def handle(self, connection, op, message):
        self.last = time.monotonic()
        if op == "bind":
            if self.receipt is None:
                self.receipt = message.get("receipt")
            if self.receipt != message.get("receipt"):
                self.send(connection, {"refused": f"the session serves receipt {self.receipt}"})
            else:
                self.send(connection, {"pid": self.pid, "tests": len(self.session.items),
                                       "hash_seed": STARTUP_ENVIRON.get("PYTHONHASHSEED")})
        elif op == "run":
            return self.run(connection, message)
        elif op == "reap":
            self.reap(connection)
        elif op == "stop":
            self.send(connection, {"stopping": True, "served": self.served})
            self.exit()
        else:
            self.drop(connection)
        return None

    def run(self, connection, message):
        fds, connection.fds = connection.fds, []
        why, run = self.check(message, fds)
        if why is None and connection.worker is not None:
            why = "one run per connection"
        if why is not None:
            close_all(fds)
            self.send(connection, {"refused": why})
            return None
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:
            return self.become_worker(run, fds)
        close_all(fds)
        self.served += 1
        pidfd = os.pidfd_open(pid)
        connection.worker = pid
        self.workers[pid] = (pidfd, connection)
        self.selector.register(pidfd, selectors.EVENT_READ, lambda fd: self.worker_ended(pid))
        self.send(connection, {"pid": pid})
        return None

    def check(self, message, fds):
        """(why the run is refused, None), or (None, what the worker needs)."""
        if self.receipt is None:
            return "the session is not bound to a receipt yet", None
        if message.get("receipt") != self.receipt:
            return f"the session serves receipt {self.receipt}, not {message.get('receipt')}", None
        changed = stale(self.stamps)
        if changed:
            return f"{changed} changed since the collection", None
        argv, env, cwd = message.get("argv"), message.get("env"), message.get("cwd")
        if not (isinstance(argv, list) and isinstance(env, list) and isinstance(cwd, str)
                and all(isinstance(a, str) for a in argv + env)):
            return "a malformed request", None
        if len(fds) != 2 or not stat.S_ISSOCK(os.fstat(fds[1]).st_mode):
            return "a request without its log and record channel", None
        args = arguments_after_pytest(argv)
        if args is None:
            return f"the run is not `python -m pytest` with this session's interpreter: {argv[:3]}", None
        differs = different_arguments(args, list(self.config.invocation_params.args))
        if differs:
            return f"the run's command line differs from the collection's: {differs}", None
        environ = dict(entry.split("=", 1) for entry in env if "=" in entry)
        differs = [name for name in sorted(set(environ) | set(STARTUP_ENVIRON))
                   if is_startup_variable(name) and environ.get(name) != STARTUP_ENVIRON.get(name)]
        if differs:
            return f"the run's start-up environment differs from the collection's: {', '.join(differs)}", None
        try:
            options = evidence_gate_options(self.options, args)
        except ValueError as e:
            return f"the run's options do not parse: {e}", None
        return None, {"args": args, "environ": environ, "cwd": cwd, "options": options}

    def become_worker(self, run, fds):
        try:
            after_fork()
            os.setpgid(0, 0)  # evgate kills the worker's group, never the server's
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != self.pid:
                os._exit(1)
            # Nothing of the server's stays open: its socket, its clients, the pidfds it watches.
            for key in list(self.selector.get_map().values()):
                if isinstance(key.fileobj, int):
                    os.close(key.fileobj)
            self.selector.close()
            self.listener.close()
            for connection in self.connections:
                connection.sock.close()
                close_all(connection.fds)
            return Worker(self.session, self.collected, run, fds, self.output)
        except BaseException:
            os._exit(1)

    def worker_ended(self, pid):
        pidfd, connection = self.workers[pid]
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
        if info is None:
            return None
        # It stays a zombie, its pid and group id its own, until the client has read what it
        # sent and killed what it left in its group.
        self.selector.unregister(pidfd)
        os.close(pidfd)
        self.workers[pid] = (None, connection)
        connection.ended = ({"exit": info.si_status} if info.si_code == os.CLD_EXITED
                            else {"signal": info.si_status})
        self.send(connection, connection.ended)
        return None

    def reap(self, connection):
        if connection.worker is None or connection.ended is None:
            self.drop(connection)
            return
        self.forget(connection.worker)
        connection.worker = None
        self.send(connection, {"reaped": True})

    def forget(self, pid):
        """Reaps a worker (killed first if it still runs), then kills what it left behind."""
        pidfd, _ = self.workers.pop(pid)
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)
            kill_group(pid)
        os.waitpid(pid, 0)
        self.last = time.monotonic()
        kill_orphans(set(self.workers))

    def drop(self, connection):
        """A client gone or misbehaving: its worker, if any, goes with it."""
        self.connections.discard(connection)
        try:
            self.selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass
        connection.sock.close()
        close_all(connection.fds)
        connection.fds = []
        if connection.worker in self.workers:
            kill_group(connection.worker)
            self.forget(connection.worker)
        connection.worker = None

    def send(self, connection, message):
        try:
            connection.sock.settimeout(5)
            connection.sock.sendall(json.dumps(message).encode() + b"\n")
            connection.sock.setblocking(False)
        except OSError:
            self.drop(connection)

    def exit(self):
        """The end: every worker killed and reaped, the socket removed while it is still ours."""
        for pid in list(self.workers):
            kill_group(pid)
            self.forget(pid)
        kill_orphans(set())
        try:
            st = os.stat(self.path)
            if (st.st_dev, st.st_ino) == self.bound:
                os.unlink(self.path)
        except OSError:
            pass
        os._exit(0)


def detach_output(config):
    """The server's descriptors that carry the collection's output (stdout, stderr, faulthandler's
    copy), pointed at /dev/null: the server writes nowhere, and keeps no pipe of the collection's
    open. Global capture is stopped first, without reading its temporary files (the collection's
    process shares them). Returns their numbers: each worker points them at its log."""
    capman = config.pluginmanager.get_plugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    if capturing is not None:
        capturing.stop_capturing()
        capman._global_capturing = None
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    output = {identity(fd) for fd in (1, 2)} - {None}
    fds = sorted({1, 2} | {fd for fd in open_descriptors() if identity(fd) in output})
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in fds:
        os.dup2(devnull, fd)
    os.close(devnull)
    return fds


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def peer_uid(sock):
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)  # struct ucred: pid, uid, gid
    return int.from_bytes(credentials[4:8], sys.byteorder)


def kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def kill_orphans(live):
    """Kills every child of the server but the live workers (each kill may orphan more)."""
    for _ in range(64):
        orphans = child_processes() - live
        if not orphans:
            return
        for pid in orphans:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def source_stamps(config):
    """stat stamps of every file the session imported, and of its config file."""
    paths = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    if config.inipath:
        paths.add(str(config.inipath))
    return {path: stamp_of(path) for path in paths if isinstance(path, str) and os.path.isabs(path)}


def stamp_of(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino


def stale(stamps):
    """A file whose stamp moved since the collection, or None."""
    for path, stamp in stamps.items():
        if stamp_of(path) != stamp:
            return path
    return None


def is_startup_variable(name):
    return name.startswith(STARTUP_PREFIXES) or name in STARTUP_NAMES


def arguments_after_pytest(argv):
    """The arguments after `python -m pytest`, when argv runs this interpreter; else None."""
    if len(argv) < 3 or argv[1:3] != ["-m", "pytest"]:
        return None
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if exe is None or os.path.realpath(exe) != os.path.realpath(sys.executable):
        return None
    return argv[3:]


def different_arguments(run, collection):
    """How a run's pytest arguments differ from the collection's, their --evidence-gate-*
    options and the collection's own --collect-only and -q aside; None when they agree."""
    run = [a for a in run if not a.startswith("--evidence-gate-")]
    collection = [a for a in collection if not a.startswith("--evidence-gate-")]
    for own in ("--collect-only", "-q"):
        if own not in collection:
            return f"the collection was not run with {own}"
        collection.remove(own)
    if run == collection:
        return None
    for ours, theirs in zip(run, collection):
        if ours != theirs:
            return f"{ours!r} where the collection had {theirs!r}"
    return f"{len(run)} arguments where the collection had {len(collection)}"


class OptionGroup:
    """What the plugin's pytest_addoption hooks use of pytest's parser, over argparse."""

    def __init__(self, parser):
        self.parser = parser

    def getgroup(self, *args, **kwargs):
        return self

    def addoption(self, *names, **attrs):
        self.parser.add_argument(*names, **attrs)


class RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def option_parser():
    """The --evidence-gate-* options of the plugin, typed as pytest parses them."""
    import evidence_gate_pytest
    parser = RaisingParser(add_help=False, allow_abbrev=False)
    evidence_gate_pytest.pytest_addoption(OptionGroup(parser))
    pytest_addoption(OptionGroup(parser))
    return parser


def evidence_gate_options(parser, args):
    """Every --evidence-gate-* option's value in a run's arguments (the default when absent)."""
    namespace, _ = parser.parse_known_args([a for a in args if a.startswith("--evidence-gate-")])
    return vars(namespace)


# ------------------------------------------------------------------ a worker


class Worker:
    """A fork of the server for one run: the run's options, environment and output, then the
    last two hooks of collection as a fresh pytest calls them."""

    def __init__(self, session, collected, run, fds, output):
        self.session = session
        self.config = session.config
        self.collected = collected
        self.run = run
        self.log, self.channel = fds
        self.output_fds = output

    def begin(self, session):
        config = self.config
        os.chdir(self.run["cwd"])
        self.environment()
        self.output()
        sys.argv = [sys.argv[0], *self.run["args"]]
        params = config.invocation_params
        config.invocation_params = type(params)(args=self.run["args"], plugins=params.plugins, dir=params.dir)
        for dest, value in self.run["options"].items():
            setattr(config.option, dest, value)
        config.option.evidence_gate_channel = self.channel
        # The collection's --collect-only and -q are not the run's.
        config.option.collectonly = False
        config.option.verbose += 1
        if hasattr(config.option, "quiet"):
            config.option.quiet -= 1
        factory = getattr(config, "_tmp_path_factory", None)  # its base is computed once, from TMPDIR
        if factory is not None and getattr(factory, "_given_basetemp", None) is None:
            factory._basetemp = None
        recorder = self.run_mode()
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.stats.pop("deselected", None)  # counted again below
            reporter.pytest_sessionstart(session)  # its header and start time
            reporter.write_line(f"evidence-gate: this run is a fork (pid {os.getpid()}) of the session "
                                f"collected by process {os.getppid()}")
        recorder.pytest_sessionstart(session)
        session.items[:] = self.collected
        try:
            config.hook.pytest_collection_modifyitems(session=session, config=config, items=session.items)
        finally:
            config.hook.pytest_collection_finish(session=session)
        session.testscollected = len(session.items)
        recorder.after_collection()

    def environment(self):
        """The run's environment, as its difference from the one the session started with:
        what the session's own code set, and the run does not change, stays."""
        run = self.run["environ"]
        for name in set(run) | set(STARTUP_ENVIRON):
            if run.get(name) == STARTUP_ENVIRON.get(name):
                continue
            if name in run:
                os.environ[name] = run[name]
            else:
                os.environ.pop(name, None)
        tempfile.tempdir = None  # TMPDIR is looked at again

    def output(self):
        """The run's log wherever the collection's output went, and global capture started
        afresh: its temporary files are this worker's own."""
        for fd in self.output_fds:
            os.dup2(self.log, fd)
        os.close(self.log)
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        if capman is not None:
            capman.start_global_capturing()
            capman.suspend_global_capture()

    def run_mode(self):
        """Run mode registered as evidence_gate_pytest's pytest_configure registers it; collect
        and serve mode gone."""
        import evidence_gate_pytest as entry
        from evidence_gate_records import RunRecorder
        config = self.config
        for key in (entry.COLLECT_KEY, SERVE_KEY):
            plugin = config.stash.get(key, None)
            if plugin is not None:
                config.pluginmanager.unregister(plugin)
                del config.stash[key]
        config.stash[entry.RUN_KEY] = RunRecorder(config)
        config.pluginmanager.register(config.stash[entry.RUN_KEY], "evidence-gate-run")
        return config.stash[entry.RUN_KEY]


def identity(fd):
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def open_descriptors():
    return [int(name) for name in os.listdir("/proc/self/fd") if name.isdigit()]
