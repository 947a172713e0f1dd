"""The fault matrix, part three: runs as faithful as a fresh pytest.

Every run of the gate is a fork of one collected session, or a fresh process. A healthy suite
must never block where a plain `pytest` passes, and a BLOCK must name a defect a user can
reproduce. Each scenario here is one way a fork, or the gate's own sandbox, could differ from a
fresh pytest — state a module takes at import (a pid, a time, a temp or home path), a temp
directory too long for a Unix socket, a memory mapping taken before the fork, a daemon that
writes while another test runs, a test that writes on a descriptor it did not open — and
asserts what the ledger says of it. Each goes through real CMake and CTest
(``Project.checked()``: the source tree byte-identical afterwards, the canary nowhere).
"""

import json
import subprocess
import sys

import pytest

from harness import SUITE, gate_summary, step_output

TESTS = "tests"


def passed(project, result, what):
    summary = gate_summary(project.build)
    assert result.returncode == 0 and summary == "PASSED", f"{what}: the gate must pass (gate: {summary}):\n{result.describe()}\n{project.ledger()}"


def blocked(project, result, what):
    summary = gate_summary(project.build)
    assert result.returncode != 0 and summary == "BLOCKED", f"{what}: the gate must block (gate: {summary}):\n{result.describe()}"


def plain_pytest_passes(project):
    """The suite as a user runs it, without the gate."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TESTS], cwd=project.root,
                          capture_output=True, text=True, env=project.env(PYTHONDONTWRITEBYTECODE="1"), timeout=120)
    assert done.returncode == 0, f"plain pytest must pass:\n{done.stdout}\n{done.stderr}"


def warning_row(project, name):
    rows = {row["test"]: row for row in project.ledger().suite_rows}
    assert name in rows and rows[name].get("warning"), f"expected a WARN row {name!r}:\n{project.ledger()}"
    return rows[name]


def runs_isolation(project):
    """Run id -> how its processes started, from each run's `finished` record."""
    out = {}
    for path in (project.evidence_dir() / "runs").glob("*.jsonl"):
        out[path.name[:-len(".jsonl")]] = json.loads(path.read_text().splitlines()[-1]).get("isolation")
    return out


# ============================================================== state taken at import


def test_a_pid_taken_at_import_is_fork_sensitive_and_passes_as_in_fresh_processes(project):
    """A module that keeps per-process state keyed by the pid it was imported in (as a connection
    pool does): every fork fails where every fresh pytest passes. The gate confirms the failure
    in fresh processes, finds none, and passes with a WARN row naming the test. (On the build
    before: `failing`, blocked.)"""
    project.write(f"{TESTS}/test_pool.py", """
        import os
        OWNER = os.getpid()

        def test_pool_belongs_to_this_process():
            assert os.getpid() == OWNER, "the pool was made in another process"

        def test_other():
            pass
    """)
    project.suite(f"SEEDS 2 PERTURB OFF TESTS {TESTS}")
    plain_pytest_passes(project)
    with project.checked():
        project.configured()
        result = project.evidence()
        passed(project, result, "a pid taken at import")
        row = warning_row(project, "fork-sensitive")
        assert row["tests"] == ["tests/test_pool.py::test_pool_belongs_to_this_process"], row
        test = project.ledger().tests["tests/test_pool.py::test_pool_belongs_to_this_process"]
        assert test["verdict"] == "stable" and test.get("fork_sensitive") is True, test
        fresh = sorted(run for run in test["outcomes"] if ".fresh." in run)
        assert len(fresh) >= 2 and all(test["outcomes"][run] == "passed" for run in fresh), test
        assert all(runs_isolation(project)[run] == "process" for run in fresh)


def test_a_token_stamped_at_import_that_expires_is_not_flaky(project):
    """A token issued at import for 5 s, checked by a test: a plain pytest checks it within a
    second or two; forks of a session collected long before see it expired. Fresh processes of
    the failing order pass: a WARN row, never a block. (On the build before: `flaky`.)"""
    project.write(f"{TESTS}/test_token.py", """
        import time

        class Token:
            issued = time.time()
            lifetime = 5.0

        def test_token_is_valid():
            assert time.time() < Token.issued + Token.lifetime, "token expired"
    """)
    project.write(f"{TESTS}/test_slow.py", """
        import time

        def test_takes_a_while():
            time.sleep(1.5)
    """)
    project.write(f"{TESTS}/test_more.py", "".join(f"def test_{n}():\n    pass\n\n" for n in range(4)))  # orders to tell apart
    project.suite(f"SEEDS 6 PERTURB OFF TESTS {TESTS}")
    plain_pytest_passes(project)
    with project.checked():
        project.configured()
        result = project.evidence()
        passed(project, result, "a token stamped at import")
        assert warning_row(project, "fork-sensitive")["tests"] == ["tests/test_token.py::test_token_is_valid"]
        outcomes = project.ledger().tests["tests/test_token.py::test_token_is_valid"]["outcomes"]
        assert "failed" in outcomes.values(), f"no fork ever saw the token expired: the scenario tests nothing\n{outcomes}"


@pytest.mark.parametrize("where", ["tmp", "home"])
def test_a_path_taken_at_import_is_never_shared_between_runs(project, where):
    """tempfile.gettempdir() or Path.home() evaluated at import is the collection's sandbox in
    every fork: runs would share a directory each must have fresh and empty. A fork that writes
    there starts its run over in a process, and every later run is a process. (On the build
    before: the test failed in every fork after the first: blocked.)"""
    base = "tempfile.gettempdir()" if where == "tmp" else "pathlib.Path.home()"
    project.write(f"{TESTS}/test_scratch.py", f"""
        import os
        import pathlib
        import tempfile
        SCRATCH = os.path.join({base}, "scratch-of-this-run")

        def test_scratch_starts_empty():
            assert not os.path.exists(SCRATCH), "scratch left by an earlier run"
            os.makedirs(SCRATCH)
    """)
    project.write(f"{TESTS}/test_other.py", "def test_other():\n    pass\n")
    project.suite(f"SEEDS 3 PERTURB OFF TESTS {TESTS}")
    with project.checked():
        project.configured()
        result = project.evidence()
        passed(project, result, f"a {where} path taken at import")
        declined = (project.evidence_dir() / "forks.declined").read_text()
        assert "collection's HOME or TMPDIR" in declined, declined
        assert set(runs_isolation(project).values()) <= {"process", "fork, then process"}, runs_isolation(project)


# ============================================================== the sandbox's paths


def test_a_unix_socket_below_tmpdir_fits_wherever_the_build_tree_is(tmp_path, build_dir, canary):
    """multiprocessing's Manager binds pymp-XXXXXXXX/listener-XXXXXXXX below TMPDIR. With the
    checkout deep below a CI path, every kind of run (seed, rerun, alone, fresh) must leave it
    room. (On the build before: AF_UNIX path too long, every test blocked.)"""
    from harness.project import Project
    deep = tmp_path / "builds" / "a-group-of-projects" / "a-subgroup-of-them" / "a-project-with-a-long-name"
    deep.mkdir(parents=True)
    project = Project(deep, build_dir, canary)
    project.write(f"{TESTS}/test_manager.py", """
        import multiprocessing

        def test_manager():
            with multiprocessing.Manager() as manager:
                shared = manager.dict()
                shared["a"] = 1
                assert shared["a"] == 1
    """)
    project.suite(f"SEEDS 2 PERTURB OFF TESTS {TESTS}")
    assert len(str(project.build / "evidence" / SUITE / "sandbox" / "seed.0.rerun.1" / "tmp")) + 32 > 107
    with project.checked():
        project.configured()
        result = project.evidence()
        passed(project, result, "a multiprocessing.Manager below a long build tree")
        sandbox = json.loads((project.evidence_dir() / "receipt.json").read_text())["sandbox"]
        assert len(sandbox["TMPDIR"].replace("<run>", "12345678")) + 32 < 100, sandbox
        assert not (project.build / "evidence" / SUITE / "sandbox").exists()
        assert not list(__import__("pathlib").Path(sandbox["dir"]).glob("*")), "every run's sandbox is removed"


# ============================================================== runs beside each other


def test_a_test_that_collides_with_its_own_copy_beside_it_is_not_flaky(project):
    """A test binds a fixed port for a while, as a test of a server would: plain pytest, one
    run at a time, always passes it; two seed runs side by side (ctest -j2) collide on the port.
    Each run that failed beside another is done again alone and passes: a WARN `collides` row,
    never a block. (On the build before: `flaky`.)"""
    port = 20000 + int.from_bytes(str(project.root).encode()[-6:], "big") % 20000
    project.write(f"{TESTS}/test_server.py", f"""
        import socket
        import time

        def test_serves_on_its_port():
            server = socket.socket()
            server.bind(("127.0.0.1", {port}))
            server.listen()
            time.sleep(1.0)
            server.close()

        def test_other():
            pass
    """)
    project.write(f"{TESTS}/test_more.py", "".join(f"def test_{n}():\n    pass\n\n" for n in range(4)))  # orders to tell apart
    project.suite(f"SEEDS 7 PERTURB OFF ALONE OFF TESTS {TESTS}")
    plain_pytest_passes(project)
    with project.checked():
        project.configured()
        result = project.evidence()
        passed(project, result, "a test that collides with a copy of itself beside it")
        row = project.ledger().tests["tests/test_server.py::test_serves_on_its_port"]
        assert "failed" in row["outcomes"].values(), f"no run collided: the scenario tests nothing\n{row}"
        assert row.get("collides") is True and row["verdict"] == "stable", row
        assert warning_row(project, "collides")["tests"] == ["tests/test_server.py::test_serves_on_its_port"]


# ============================================================== leases across the fork


def test_a_write_through_a_mapping_taken_at_import_is_a_polluter(project):
    """A module maps a fixture file at import (before the fork) and a test writes through the
    mapping: the change notifications miss it, and the re-check runs in a fresh process, where
    the mapping is of the file as restored. (On the build before: re-checked in a fork whose
    mapping was of the replaced file, nothing seen, PASSED.)"""
    project.write("data/mapped.bin", "pristine-value-0123456789\n")
    project.write("fixtures.manifest", "mapped: data/mapped.bin\n")
    project.write(f"{TESTS}/test_mapped.py", """
        import mmap
        import pathlib
        _file = open(pathlib.Path(__file__).parent.parent / "data" / "mapped.bin", "r+b")
        MAPPED = mmap.mmap(_file.fileno(), 0)

        def test_rewrites_through_the_mapping():
            MAPPED[0:8] = b"POLLUTED"
            MAPPED.flush()

        def test_reads():
            assert len(MAPPED) > 8
    """)
    project.suite(f"SEEDS 1 PERTURB OFF PER_TEST OFF TESTS {TESTS}")
    with project.checked():
        project.configured()
        result = project.evidence()
        blocked(project, result, "a write through a mapping taken at import")
        row = project.ledger().tests["tests/test_mapped.py::test_rewrites_through_the_mapping"]
        assert row["verdict"] == "polluter" and row["dirty"] == ["mapped"], row
        assert project.ledger().tests["tests/test_mapped.py::test_reads"]["verdict"] == "stable"


def test_a_detached_daemon_writing_a_group_blames_no_innocent_test(project):
    """A test starts a fully detached process (double fork, setsid) that writes a fixture group
    0.5 s later, while the next test runs. That next test does not change the group alone in a
    fresh process: it is not blamed; a row of its own blocks, naming the group. (On the build
    before: the innocent test was a `polluter` in every seed.)"""
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "state: data/state.txt\n")
    project.write(f"{TESTS}/test_daemon.py", """
        import os
        import pathlib
        import time
        STATE = pathlib.Path(__file__).resolve().parent.parent / "data" / "state.txt"

        def test_a_starts_a_daemon():
            pid = os.fork()
            if pid == 0:
                os.setsid()
                if os.fork() == 0:
                    time.sleep(0.5)
                    STATE.write_text("written by the daemon\\n")
                os._exit(0)
            os.waitpid(pid, 0)

        def test_b_innocent():
            time.sleep(1.5)
    """)
    project.suite(f"SEEDS 0 PERTURB OFF ALONE OFF PER_TEST OFF TESTS {TESTS}")
    with project.checked():
        project.configured()
        result = project.evidence()
        blocked(project, result, "a detached daemon's write")
        ledger = project.ledger()
        innocent = ledger.tests["tests/test_daemon.py::test_b_innocent"]
        assert innocent["verdict"] == "stable" and innocent["unattributed"] == ["state"], innocent
        rows = [row for row in ledger.blocking_suite_rows() if row["test"] == "unattributed:tests/test_daemon.py::test_b_innocent"]
        assert rows and "'state' changed while tests/test_daemon.py::test_b_innocent ran" in rows[0]["reason"], ledger
        assert ledger.blocking() == ["unattributed:tests/test_daemon.py::test_b_innocent"], ledger


# ============================================================== the record channel


def test_a_test_writing_to_a_low_descriptor_does_not_reach_the_record_channel(project):
    """A bats habit: debug text to descriptor 3, the TAP stream, when a socket is open there
    (here: any of 3-9, wherever the process's descriptors fell). The channel is never there
    (a plain pytest has no socket there either): the gate passes. (On the build before: the
    step failed on 'not valid JSON', no ledger.)"""
    project.write(f"{TESTS}/test_tap.py", """
        import os
        import stat

        def test_debug_to_a_low_socket():
            for fd in range(3, 10):
                try:
                    if stat.S_ISSOCK(os.fstat(fd).st_mode):
                        os.write(fd, b"# debug: hello\\n")
                except OSError:
                    pass

        def test_after():
            pass
    """)
    project.suite(f"SEEDS 1 PERTURB OFF TESTS {TESTS}")
    plain_pytest_passes(project)
    with project.checked():
        project.configured()
        passed(project, project.evidence(), "a test writing to descriptor 3")


@pytest.mark.parametrize("isolation", ["fork", "process"])
def test_a_line_on_the_record_channel_that_is_not_a_record_is_a_row_naming_the_test(project, isolation):
    """A test that finds the channel (its number is on pytest's command line) and writes text on
    it: a blocking row names the test that wrote it, the ledger is written, nothing crashes."""
    project.write(f"{TESTS}/test_noise.py", """
        import os
        import sys

        def test_writes_on_the_channel():
            channel = next(int(a.split("=", 1)[1]) for a in sys.argv if a.startswith("--evidence-gate-channel="))
            assert channel >= 100, channel
            os.write(channel, b"debug text, not a record\\n")

        def test_after():
            pass
    """)
    project.suite(f"SEEDS 0 PERTURB OFF ALONE OFF ISOLATION {isolation} TESTS {TESTS}")
    with project.checked():
        project.configured()
        result = project.evidence()
        blocked(project, result, "text on the record channel")
        rows = [row for row in project.ledger().blocking_suite_rows() if row["test"].startswith("channel:")]
        assert rows, project.ledger()
        assert "tests/test_noise.py::test_writes_on_the_channel wrote, on the run's record channel" in rows[0]["reason"]
        assert "debug text, not a record" in rows[0]["reason"]
        assert project.ledger().tests["tests/test_noise.py::test_after"]["verdict"] == "stable"
        assert "not valid JSON" not in (step_output(project.build, f"{SUITE}.seed.0") or "")


# ============================================================== the build tree's bytecode cache


def cut_short(cache):
    """The .pyc files of this interpreter's below `cache` whose code does not load."""
    import importlib.util
    import marshal
    bad = []
    for path in cache.rglob(f"*.{sys.implementation.cache_tag}*.pyc"):
        data = path.read_bytes()
        try:
            if data[:4] == importlib.util.MAGIC_NUMBER:
                marshal.loads(data[16:])
        except (EOFError, ValueError, TypeError):
            bad.append(path)
    return bad


def test_bytecode_cut_short_by_one_invocation_never_poisons_the_next(project):
    """One ctest under a file-size limit (ulimit -f) leaves .pyc files cut short in the build
    tree's bytecode cache — the standard library's among them — and CPython reads them back without a check:
    without one, every later run fails with 'EOFError: marshal data too short'. The next ctest
    checks what was written to the cache since it last looked before pytest starts. (On the
    build before: every step of the next ctest failed.)"""
    project.write(f"{TESTS}/bulky.py", "TABLE = " + repr([f"row {i} " * 8 for i in range(3000)]) + "\n")
    project.write(f"{TESTS}/test_bulky.py", """
        import bulky

        def test_table():
            assert len(bulky.TABLE) == 3000
    """)
    project.write("conftest.py", "import sys, pathlib\nsys.path.insert(0, str(pathlib.Path(__file__).parent / 'tests'))\n")
    project.suite(f"SEEDS 1 PERTURB OFF TESTS {TESTS}")
    with project.checked():
        project.configured()
        # The manifest step alone: in a whole ctest, the receipt step after it already checks the
        # cache (and the snapshot of this suite's 300 KB module is itself cut short there).
        project.ctest("-R", rf"^{SUITE}\.manifest$", wrapper=("bash", "-c", 'ulimit -f 64 && exec "$@"', "bash"))
        poisoned = cut_short(project.evidence_dir() / "pycache")
        assert poisoned, "no bytecode was cut short: the scenario tests nothing"
        result = project.evidence()
        passed(project, result, "the ctest after one under a file-size limit")
        assert not cut_short(project.evidence_dir() / "pycache")
