"""Tests of templates/pytest/evidence_gate_fork.py: the collected session left serving forks.

Each test starts the receipt's collection as evgate does (--collect-only -q with
--evidence-gate-serve) in a project of its own, then talks to the server on its socket as
evgate's fork_session.cpp does: bind, run (with a log and a record channel passed as
descriptors), reap, stop.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import PLUGIN_DIR, TIMEOUT, make_tree, status_server_conftest


class Served:
    """A project whose collection is left serving, and a client of its server."""

    def __init__(self, root, tests="tests"):
        self.root = root
        self.socket = root / "s.sock"
        self.status_file = root / "status.json"
        self.env = {**os.environ, "PYTHONPATH": str(PLUGIN_DIR), "PYTHONDONTWRITEBYTECODE": "1",
                    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": "7"}
        self.env.pop("PYTEST_ADDOPTS", None)
        self.args = ["-p", "evidence_gate_pytest", "-p", "no:cacheprovider", f"--rootdir={root}", tests]
        self.server = None

    def collect(self, *serve_options, python=sys.executable):
        """The receipt's collection; returns (its process, the status it wrote)."""
        argv = [python, "-m", "pytest", "--collect-only", "-q",
                f"--evidence-gate-collect={self.root / 'collect.json'}", f"--evidence-gate-serve={self.socket}",
                f"--evidence-gate-serve-status={self.status_file}", *serve_options, *self.args]
        done = subprocess.run(argv, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=TIMEOUT)
        status = json.loads(self.status_file.read_text()) if self.status_file.exists() else None
        if status and "pid" in status:
            self.server = status["pid"]
        return done, status

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(TIMEOUT)
        sock.connect(str(self.socket))
        return Lines(sock)

    def bind(self, receipt="R1", **launch):
        """Binds the server; `launch` (python=, env=) says how the collection was started, as evgate does."""
        connection = self.connect()
        connection.send({"op": "bind", "receipt": receipt, **launch})
        return connection.next()

    def start(self, order, receipt="R1", env=None, args=None, run_id="seed.1", python=sys.executable):
        """Asks for a run of `order`; returns (connection, the answer, record channel, log path)."""
        order_file = self.root / f"{run_id}.order.jsonl"
        order_file.write_text("".join(json.dumps(t) + "\n" for t in order))
        log = self.root / f"{run_id}.log"
        ours, theirs = socket.socketpair()
        log_fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        argv = [python, "-m", "pytest", *self.args[:-1], "--evidence-gate-channel=99",
                f"--evidence-gate-run={run_id}", "--evidence-gate-seed=1", f"--evidence-gate-order={order_file}",
                self.args[-1]] if args is None else args
        environment = {**self.env, "HOME": str(self.root / "run-home"), **(env or {})}
        connection = self.connect()
        connection.send({"op": "run", "receipt": receipt, "argv": argv, "cwd": str(self.root),
                         "env": [f"{k}={v}" for k, v in environment.items()]}, [log_fd, theirs.fileno()])
        os.close(log_fd)
        theirs.close()
        return connection, connection.next(), ours, log

    def run(self, order, **kwargs):
        """A whole run: (how it ended, its records, its log)."""
        connection, answer, channel, log = self.start(order, **kwargs)
        assert "pid" in answer, answer
        ended = connection.next()
        connection.send({"op": "reap"})
        assert connection.next() == {"reaped": True}
        return ended, read_records(channel), log.read_text()

    def stop(self):
        if self.server is None:
            return
        try:
            connection = self.connect()
            connection.send({"op": "stop"})
            connection.next()
        except OSError:
            pass
        wait_gone(self.server)
        self.server = None


class Lines:
    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""

    def send(self, message, fds=()):
        socket.send_fds(self.sock, [json.dumps(message).encode() + b"\n"], list(fds))

    def next(self):
        while b"\n" not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                return None
            self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def read_records(channel):
    channel.settimeout(5)
    data = b""
    while True:
        chunk = channel.recv(65536)
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.decode().splitlines()]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def wait_gone(pid, seconds=10):
    end = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return not alive(pid)


@pytest.fixture
def served(tmp_path):
    server = Served(tmp_path)
    yield server
    if server.server is not None and alive(server.server):
        server.stop()
        if alive(server.server or 0):
            os.kill(server.server, signal.SIGKILL)


SUITE = {
    "conftest.py": "import os\nos.environ.setdefault('SET_BY_CONFTEST', 'at import')\n",
    "tests/test_a.py": """\
import os
import sys
import tempfile
import threading

STATE = []

def test_one(tmp_path):
    STATE.append(1)
    print("one's output")
    assert str(tmp_path).startswith(os.path.realpath(tempfile.gettempdir()))

def test_two(capsys):
    print("captured")
    assert capsys.readouterr().out == "captured\\n"

def test_three():
    assert STATE == [1], STATE

def test_environment():
    assert os.environ["HOME"].endswith("run-home")
    assert os.environ["SET_BY_CONFTEST"] == "at import"
    assert threading.main_thread().native_id == threading.get_native_id()
    assert "--evidence-gate-run=seed.1" in sys.argv

def test_fails():
    assert 0, "boom"
""",
}
IDS = [f"tests/test_a.py::{name}" for name in ("test_one", "test_two", "test_three", "test_environment", "test_fails")]


def results(records):
    return {r["test"]: r["outcome"] for r in records if r["event"] == "result"}


# ------------------------------------------------------------------ serving


def test_serve_needs_collect_only(served):
    make_tree(served.root, SUITE)
    done = subprocess.run([sys.executable, "-m", "pytest", f"--evidence-gate-serve={served.socket}", *served.args],
                          cwd=served.root, env=served.env, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stderr
    assert not served.socket.exists()


def test_the_collection_ends_as_collect_only_and_leaves_a_server(served):
    make_tree(served.root, SUITE)
    done, status = served.collect()
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((served.root / "collect.json").read_text())["tests"][0]["id"] == IDS[0]
    assert status == {"pid": served.server, "socket": str(served.socket), "tests": 5}
    assert alive(served.server)
    # Out of the collection's process group and session: evgate kills those after the collection.
    assert os.getpgid(served.server) == served.server and os.getsid(served.server) == served.server
    assert served.bind() == {"pid": served.server, "tests": 5, "hash_seed": "7"}


def test_a_fork_runs_an_order_as_a_fresh_pytest_would(served):
    make_tree(served.root, SUITE)
    served.collect()
    served.bind()
    order = [IDS[2], IDS[0], IDS[1], IDS[3], IDS[4]]
    ended, records, log = served.run(order)
    assert ended == {"exit": 1}
    session = records[0]
    assert session["event"] == "session" and session["run"] == "seed.1" and session["planned"] == 5
    assert session["pid"] != served.server
    assert [r["test"] for r in records if r["event"] == "start"] == order
    # test_three ran before test_one in this fork: no state from another fork or the server.
    assert results(records) == {IDS[0]: "passed", IDS[1]: "passed", IDS[2]: "failed", IDS[3]: "passed", IDS[4]: "failed"}
    assert records[-1] == {"event": "end", "exitstatus": 1, "finish": 1, "final": 1, "lease": None, "lease_note": None}
    assert "this run is a fork" in log and "AssertionError: boom" in log and "2 failed, 3 passed" in log
    # The next fork starts from the collected session again, not from the last fork.
    ended, records, _ = served.run([IDS[0], IDS[2]], run_id="seed.2")
    assert ended == {"exit": 0} and results(records) == {IDS[0]: "passed", IDS[2]: "passed"}


def test_a_session_started_through_a_wrapper_serves_forks_that_see_what_a_fresh_process_would(served):
    """A pyenv shim, say: a script that sets its own variables and execs the interpreter. The
    runs name the wrapper, as the collection's launch did; the wrapper's variables stay in the
    fork (a fresh process through the wrapper has them too), the run's own sandbox replaces the
    collection's, and the record channel is nowhere a test would stumble on it (3-9)."""
    make_tree(served.root, {"tests/test_w.py": """\
import os
import stat

def test_sees_a_fresh_process():
    assert os.environ["SET_BY_WRAPPER"] == "yes"
    assert os.environ["HOME"].endswith("run-home")
    sockets = [fd for fd in range(3, 10) if os.path.exists(f"/proc/self/fd/{fd}")
               and stat.S_ISSOCK(os.fstat(fd).st_mode)]
    assert sockets == [], sockets
"""})
    wrapper = served.root / "python-wrapper"
    wrapper.write_text(f"#!/bin/sh\nSET_BY_WRAPPER=yes exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    done, status = served.collect(python=str(wrapper))
    assert done.returncode == 0 and "pid" in status, done.stdout + done.stderr
    assert "pid" in served.bind(python=str(wrapper), env=[f"{k}={v}" for k, v in served.env.items()])
    ended, records, log = served.run(["tests/test_w.py::test_sees_a_fresh_process"], python=str(wrapper))
    assert ended == {"exit": 0}, log
    assert results(records) == {"tests/test_w.py::test_sees_a_fresh_process": "passed"}, log


def test_forks_side_by_side_keep_their_output_apart(served):
    """Two forks capture at the same time: pytest's capture files are each fork's own."""
    make_tree(served.root, {"tests/test_talk.py": """\
import sys, time

def test_talks():
    run = [a for a in sys.argv if a.startswith("--evidence-gate-run=")][0]
    for i in range(200):
        print("line", i, run)
        time.sleep(0.002)
    assert 0
"""})
    served.collect()
    served.bind()
    started = [served.start(["tests/test_talk.py::test_talks"], run_id=run) for run in ("seed.1", "seed.2")]
    for connection, answer, channel, log in started:
        assert "pid" in answer
        assert connection.next() == {"exit": 1}
        connection.send({"op": "reap"})
        connection.next()
    for (_, _, _, log), run in zip(started, ("seed.1", "seed.2")):
        captured = [line for line in log.read_text().splitlines() if line.startswith("line ")]
        assert captured == [f"line {i} --evidence-gate-run={run}" for i in range(200)], log.read_text()


def test_plugins_reorder_and_deselect_in_the_fork_as_in_a_fresh_pytest(served):
    """pytest_collection_modifyitems runs again in the fork on the items as collected: a wrapper
    that reverses them after evidence-gate's order shows as a divergence, as in a process."""
    make_tree(served.root, {**SUITE, "conftest.py": """\
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_collection_modifyitems(items):
    yield
    items.reverse()
"""})
    served.collect()
    served.bind()
    _, records, _ = served.run([IDS[0], IDS[1]])
    assert [r["test"] for r in records if r["event"] == "start"] == [IDS[1], IDS[0]]


# ------------------------------------------------------------------ where forks are unsafe


UNSAFE = {
    "a-thread": ("import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n",
                 r"1 thread\(s\) besides the main one"),
    "a-child-process": ("import subprocess\nsubprocess.Popen(['sleep', '60'])\n",
                        r"processes started during start-up or collection"),
    "a-plugin-says-so": ("import pytest\n\n@pytest.hookimpl(optionalhook=True)\n"
                         "def pytest_evidence_gate_fork_unsafe(session):\n    return 'it holds a GPU context'\n",
                         r"a plugin or conftest says forks are unsafe: it holds a GPU context"),
    "a-collection-error": ("", r"the collection had errors"),
}


@pytest.mark.parametrize("case", sorted(UNSAFE))
def test_no_server_where_a_fork_is_unsafe(served, case):
    conftest, why = UNSAFE[case]
    make_tree(served.root, {**SUITE, "conftest.py": conftest})
    if case == "a-collection-error":
        make_tree(served.root, {"tests/test_broken.py": "import no_such_module_here\n"})
    done, status = served.collect()
    assert set(status) == {"why"}, status
    assert __import__("re").search(why, status["why"]), status
    assert not served.socket.exists()
    assert done.returncode == (2 if case == "a-collection-error" else 0), done.stdout


def test_pytest_rerunfailures_idle_server_thread_leaves_forks_safe(served):
    # No worker of pytest-xdist ever reaches it (every run is one process): a fork need not have it.
    make_tree(served.root, {**SUITE, "conftest.py": status_server_conftest()})
    _, status = served.collect()
    assert set(status) == {"pid", "socket", "tests"}, status
    served.bind()
    _, records, _ = served.run([IDS[0]])
    assert results(records) == {IDS[0]: "passed"}, records


# ------------------------------------------------------------------ refusals


def test_runs_are_refused_unless_bound_to_their_receipt(served):
    make_tree(served.root, SUITE)
    served.collect()
    _, answer, _, _ = served.start(IDS[:1])
    assert answer == {"refused": "the session is not bound to a receipt yet"}
    served.bind("R1")
    assert served.bind("R2") == {"refused": "the session serves receipt R1"}
    _, answer, _, _ = served.start(IDS[:1], receipt="R2")
    assert answer == {"refused": "the session serves receipt R1, not R2"}


def test_a_source_change_makes_the_server_stale(served):
    make_tree(served.root, SUITE)
    served.collect()
    served.bind()
    test_file = served.root / "tests" / "test_a.py"
    test_file.write_text(test_file.read_text() + "\ndef test_new():\n    pass\n")
    _, answer, _, _ = served.start(IDS[:1])
    assert answer == {"refused": f"{test_file} changed since the collection"}


REFUSED = {
    "another-hash-seed": ({"env": {"PYTHONHASHSEED": "8"}},
                          "the run's start-up environment differs from the collection's: PYTHONHASHSEED"),
    "another-test-path": ({"args": [sys.executable, "-m", "pytest", "-p", "evidence_gate_pytest", "-p", "no:cacheprovider",
                                    "--rootdir=ROOT", "--evidence-gate-channel=9", "other"]},
                          "the run's command line differs from the collection's: 'other' where the collection had 'tests'"),
    "another-interpreter": ({"args": ["/bin/sh", "-m", "pytest"]},
                            "the run is not `python -m pytest` with this session's interpreter"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_run_the_collection_does_not_match_is_refused(served, case):
    make_tree(served.root, SUITE)
    served.collect()
    served.bind()
    kwargs, why = REFUSED[case]
    if "args" in kwargs:
        kwargs = {"args": [a.replace("ROOT", str(served.root)) for a in kwargs["args"]]}
    _, answer, _, _ = served.start(IDS[:1], **kwargs)
    assert answer["refused"].startswith(why), answer


# ------------------------------------------------------------------ what a worker leaves, and the end


def test_what_a_worker_leaves_outside_its_group_is_killed_when_it_is_reaped(served):
    make_tree(served.root, {"tests/test_daemon.py": """\
import os, subprocess

def test_leaves_a_daemon():
    daemon = subprocess.Popen(["sleep", "300"], start_new_session=True)
    open("daemon.pid", "w").write(str(daemon.pid))
"""})
    served.collect()
    served.bind()
    ended, records, _ = served.run(["tests/test_daemon.py::test_leaves_a_daemon"])
    assert ended == {"exit": 0}
    assert wait_gone(int((served.root / "daemon.pid").read_text()), seconds=5)


def test_a_worker_killed_is_reported_with_its_signal(served):
    make_tree(served.root, {"tests/test_hangs.py": "import time\n\ndef test_hangs():\n    time.sleep(300)\n"})
    served.collect()
    served.bind()
    connection, answer, channel, _ = served.start(["tests/test_hangs.py::test_hangs"])
    time.sleep(0.5)
    os.killpg(answer["pid"], signal.SIGTERM)
    assert connection.next() == {"signal": signal.SIGTERM}
    connection.send({"op": "reap"})
    assert connection.next() == {"reaped": True}
    assert not alive(answer["pid"])


def test_a_client_gone_takes_its_worker_with_it(served):
    make_tree(served.root, {"tests/test_hangs.py": "import time\n\ndef test_hangs():\n    time.sleep(300)\n"})
    served.collect()
    served.bind()
    connection, answer, _, _ = served.start(["tests/test_hangs.py::test_hangs"])
    connection.sock.close()
    assert wait_gone(answer["pid"])


def test_stop_ends_the_server_and_its_workers(served):
    make_tree(served.root, {"tests/test_hangs.py": "import time\n\ndef test_hangs():\n    time.sleep(300)\n"})
    served.collect()
    served.bind()
    _, answer, _, _ = served.start(["tests/test_hangs.py::test_hangs"])
    server = served.server
    served.stop()
    assert not alive(server) and wait_gone(answer["pid"])
    assert not served.socket.exists()


def test_the_server_ends_when_its_owner_is_gone(served):
    make_tree(served.root, SUITE)
    owner = subprocess.Popen(["sleep", "300"])
    with open(f"/proc/{owner.pid}/stat") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    _, status = served.collect(f"--evidence-gate-serve-owner={owner.pid}:{start}")
    assert alive(status["pid"])
    owner.kill()
    owner.wait()
    assert wait_gone(status["pid"], seconds=5)


def test_an_owner_already_gone_leaves_no_server(served):
    make_tree(served.root, SUITE)
    _, status = served.collect(f"--evidence-gate-serve-owner={os.getpid()}:1")  # our pid, another start time
    assert status == {"why": f"its owner (process {os.getpid()}:1) is gone"}
    assert not served.socket.exists()


def test_an_idle_server_ends(served):
    make_tree(served.root, SUITE)
    _, status = served.collect("--evidence-gate-serve-idle=0.5")
    assert wait_gone(status["pid"], seconds=5)
    assert not served.socket.exists()
