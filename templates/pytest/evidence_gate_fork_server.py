"""The server of a collected session (evidence_gate_fork): it listens on a Unix socket in the
user's state directory, takes a run per connection, forks a worker for it, reports how the
worker ended and reaps it with whatever it left behind, and ends when told to, when its owner
(the ctest that ran the receipt step) is gone, or when idle too long. The protocol is in
evidence_gate_fork's docstring.
"""

import ctypes
import gc
import json
import os
import selectors
import signal
import socket
import stat
import sys
import threading
import time

from evidence_gate_fork_worker import (STARTUP_ENVIRON, Worker, arguments_after_pytest, different_arguments,
                                       evidence_gate_options, is_startup_variable, option_parser)
from evidence_gate_protocol import REQUESTS

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36

# A request larger than this is no request of evgate's.
MAX_REQUEST = 4 * 1024 * 1024


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
        self.launch = None  # how evgate started the collection: {"python": argv[0], "env": {...}}
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
        """Each request of the protocol file (evidence_gate_protocol.json) to its ``op_<name>``
        method; the worker when this process became one, else None."""
        self.last = time.monotonic()
        handler = getattr(self, f"op_{op}", None) if op in REQUESTS else None
        if handler is None:
            self.drop(connection)
            return None
        return handler(connection, message)

    def op_bind(self, connection, message):
        if self.receipt is None:
            self.receipt = message.get("receipt")
            self.launch = launch_of(message)
        if self.receipt != message.get("receipt"):
            self.send(connection, {"refused": f"the session serves receipt {self.receipt}"})
        else:
            self.send(connection, {"pid": self.pid, "tests": len(self.session.items),
                                   "hash_seed": STARTUP_ENVIRON.get("PYTHONHASHSEED")})

    def op_stop(self, connection, message):
        self.send(connection, {"stopping": True, "served": self.served})
        self.exit()

    def op_run(self, connection, message):
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
        assert self.launch is not None  # bound with the receipt
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
        args = arguments_after_pytest(argv, self.launch["python"])
        if args is None:
            return f"the run is not `python -m pytest` with this session's interpreter: {argv[:3]}", None
        differs = different_arguments(args, list(self.config.invocation_params.args))
        if differs:
            return f"the run's command line differs from the collection's: {differs}", None
        environ = dict(entry.split("=", 1) for entry in env if "=" in entry)
        launched = self.launch["env"]
        differs = [name for name in sorted(set(environ) | set(launched))
                   if is_startup_variable(name) and environ.get(name) != launched.get(name)]
        if differs:
            return f"the run's start-up environment differs from the collection's: {', '.join(differs)}", None
        try:
            options = evidence_gate_options(self.options, args)
        except ValueError as e:
            return f"the run's options do not parse: {e}", None
        return None, {"args": args, "environ": environ, "launched": launched, "cwd": cwd, "options": options}

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

    def op_reap(self, connection, message):
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


def launch_of(message):
    """How evgate started the collection, as its bind request says: the interpreter it named and
    the environment it gave. Without them (an older evgate), as the interpreter saw itself start."""
    python, env = message.get("python"), message.get("env")
    if not (isinstance(python, str) and isinstance(env, list) and all(isinstance(e, str) for e in env)):
        return {"python": sys.executable, "env": STARTUP_ENVIRON}
    return {"python": python, "env": dict(entry.split("=", 1) for entry in env if "=" in entry)}


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


def child_processes():
    children: set = set()
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


def identity(fd):
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def open_descriptors():
    return [int(name) for name in os.listdir("/proc/self/fd") if name.isdigit()]
