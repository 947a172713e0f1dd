"""The fault matrix for ISOLATION fork: one collection, every run a fork of it.

What a fork must not change: a hanging test costs TEST_TIMEOUT per occurrence (probes
included), a test that attacks the server ends only its own order (the rest goes on in
processes), where forking is unsafe every run starts a process and says why, a source change
after the collection is never served from the stale session, two build trees never share a
server, and no server outlives its ctest.
"""

import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from harness import (FAST, HANGING_FORK_SERVER, SUITE, cmake_configure, ctest, gate_summary, process_alive,
                     record_files, step_output, wait_until_gone)

TEST_FILE = "tests/test_suite.py"


def receipt(project, binary=None):
    return json.loads(((binary or project.build) / "evidence" / SUITE / "receipt.json").read_text())


def finished(project, run="seed.0", binary=None):
    """The `finished` record evgate closed a run's records with."""
    path = (binary or project.build) / "evidence" / SUITE / "runs" / f"{run}.jsonl"
    return json.loads(path.read_text().splitlines()[-1])


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sessions(project, run="seed.0"):
    path = project.evidence_dir() / "runs" / f"{run}.jsonl"
    return [r for r in records(path) if r["event"] == "session"]


def expect_never_green(project, result, what):
    assert result.returncode != 0 and gate_summary(project.build) != "PASSED", f"{what}:\n{result.describe()}"


def nothing_left(project):
    left = wait_until_gone(str(project.root), seconds=10)
    assert not left, f"processes left after ctest: {left}"


# ============================================================== forks are the default, and end


def test_every_run_is_a_fork_of_the_receipt_collection_and_the_server_ends_with_ctest(project):
    project.write(TEST_FILE, "def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    project.suite(f"{FAST} RERUNS 1 TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        taken = receipt(project)
        assert taken["isolation"]["runs"] == "fork", taken["isolation"]
        server = taken["isolation"]["server"]["pid"]
        assert re.fullmatch(r"[1-9][0-9]*", taken["hash_seed"]), taken["hash_seed"]
        for run in ("seed.0", "seed.1"):
            assert finished(project, run)["isolation"] == "fork", finished(project, run)
            (session,) = sessions(project, run)
            assert session["pid"] != server
        assert "stopped the collected session" in step_output(project.build, f"{SUITE}.release")
        assert not process_alive(server)
        nothing_left(project)


def test_a_kill_of_ctest_leaves_no_server(project):
    """ctest killed with SIGKILL mid-run: the server sees its owner gone and ends, with its workers."""
    project.write(TEST_FILE, "import time\n\ndef test_waits():\n    time.sleep(120)\n")
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        process = subprocess.Popen(["ctest", "--test-dir", str(project.build), "-L", "evidence"], env=project.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        log = project.evidence_dir() / "logs" / "seed.0.log"
        deadline = time.monotonic() + 120
        while not (log.exists() and "collected 1 item" in log.read_text()):
            assert time.monotonic() < deadline and process.poll() is None, "seed.0 never started its test"
            time.sleep(0.1)
        server = receipt(project)["isolation"]["server"]["pid"]
        assert process_alive(server)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        nothing_left(project)
        assert not process_alive(server)


# ============================================================== TEST_TIMEOUT


HANGS = """
    import time

    def test_a_hangs():
        time.sleep(3600)

    def test_b_polluter():
        open("data/config.txt", "w").write("polluted\\n")

    def test_c_victim():
        assert open("data/config.txt").read() == "pristine\\n"
"""

TEST_TIMEOUT = 2
SLACK = 3.0  # per process: a fork (or an interpreter) to start, the restore, the kill's grace


@pytest.mark.parametrize("isolation", ["fork", "process"])
def test_a_hanging_test_costs_at_most_test_timeout_per_occurrence(project, isolation):
    """test_a_hangs hangs wherever it runs: in every seed, every rerun and every localisation
    probe whose order holds it. Each time it is interrupted at TEST_TIMEOUT ("exceeded
    TEST_TIMEOUT") and the rest of the order goes on, so the victim is still found and
    localised; no step costs more than its hangs times TEST_TIMEOUT (TIMEOUT is 120 s)."""
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, HANGS)
    project.suite(f"SEEDS 2 PERTURB OFF PER_TEST OFF TIMEOUT 120 TEST_TIMEOUT {TEST_TIMEOUT} ISOLATION {isolation} "
                  "TESTS tests")
    with project.checked():
        project.configured()
        start = time.monotonic()
        result = project.evidence()
        took = time.monotonic() - start
        expect_never_green(project, result, "a hanging test")
        ledger = project.ledger()
        verdicts = ledger.verdicts()
        assert verdicts[f"{TEST_FILE}::test_a_hangs"][0] == "interrupted", ledger
        assert verdicts[f"{TEST_FILE}::test_c_victim"][0] == "order-dependent", ledger
        assert ledger.tests[f"{TEST_FILE}::test_c_victim"].get("partner") == f"{TEST_FILE}::test_b_polluter", ledger
        # Every hang was cut at TEST_TIMEOUT, in the runs and in the probes.
        hangs = 0
        for path in record_files(project.evidence_dir() / "runs") + record_files(project.evidence_dir() / "localise"):
            for record in records(path):
                if record["event"] == "interrupted":
                    assert record["reason"].startswith(f"exceeded TEST_TIMEOUT ({TEST_TIMEOUT} s)"), (path.name, record)
                    hangs += 1
        assert hangs >= 3, "the hanging test ran in every seed"
        localise = step_output(project.build, f"{SUITE}.localise")
        probes = int(re.search(r"localised \d+ order-dependent test\(s\) in (\d+) pytest runs", localise).group(1))
        # The bound: each hang costs TEST_TIMEOUT, each process a little; no hang costs TIMEOUT.
        processes = hangs + probes + 12
        assert took < hangs * TEST_TIMEOUT + probes * TEST_TIMEOUT + processes * SLACK, (
            f"{took:.0f} s for {hangs} hangs in the runs and {probes} probes:\n{result.describe()}")
        assert took < 120, result.describe()
        nothing_left(project)


# ============================================================== a test against the server


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("how", ["SIGKILL", "SIGSTOP"])
def test_a_test_that_attacks_the_server_ends_only_its_own_fork(project, how, jobs):
    """A test kills (or stops) its parent, the fork server. Its own fork ends there (killed with
    the server, or left without an answer), within a bound; the rest of every order goes on in
    processes, which the run records say (with -j2 the other seed's fork may die with the server
    too, before it started a test: its order goes on in a process from its start); the gate is
    not green; nothing is left running."""
    project.write(TEST_FILE, f"""
        import os
        import signal
        import sys

        import pytest

        @pytest.mark.serial
        def test_a_attacks():
            if "--evidence-gate-run=seed.0" in sys.argv:
                os.kill(os.getppid(), signal.{how})

        @pytest.mark.serial
        def test_b_after():
            pass

        # Two tests free to move: seed.1's order is not seed.0's, so it runs.
        def test_c_free():
            pass

        def test_d_free():
            pass
    """)
    project.suite(f"{FAST} RERUNS 0 LOCALISE 0 TIMEOUT 60 TESTS tests")
    with project.checked():
        project.configured()
        start = time.monotonic()
        result = project.evidence(f"-j{jobs}")
        took = time.monotonic() - start
        expect_never_green(project, result, f"a test that sends {how} to the server")
        assert took < 60, f"{took:.0f} s:\n{result.describe()}"
        done = finished(project, "seed.0")
        assert done["isolation"] in ("fork", "fork, then process"), done
        assert "the fork server" in done.get("isolation_note", ""), done
        assert done["complete"], done
        later = finished(project, "seed.1")
        assert later["complete"], later
        if jobs == 1:  # after seed.0: the server is gone
            assert later["isolation"] == "process" and "the fork server" in later["isolation_note"], later
        nothing_left(project)


def test_a_server_that_never_starts_the_worker_is_given_up_and_killed(project):
    """The collected session hangs as it forks (a conftest's fork hook sleeps 120 s in the
    server): the run that asked waits 30 s for the worker's pid, kills the server (a worker it
    started later would run unwatched) and goes on in a process; so does every later run; the
    evidence holds, and nothing waits out the hang."""
    project.write(TEST_FILE, """
        def test_one():
            pass

        def test_two():
            pass
    """)
    project.write("conftest.py", HANGING_FORK_SERVER)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        start = time.monotonic()
        result = project.evidence("-j2")
        took = time.monotonic() - start
        assert took < 90, f"{took:.0f} s: the run waited out the server's hang:\n{result.describe()}"
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        for run in ("seed.0", "seed.1"):
            done = finished(project, run)
            assert done["complete"] and done["isolation"] == "process", done
            assert "the fork server" in done["isolation_note"], done
        assert any("did not answer in time" in finished(project, run)["isolation_note"] for run in ("seed.0", "seed.1"))
        nothing_left(project)


@pytest.mark.parametrize("waits_before", ["test_a_attacks", "test_b_after"])
def test_a_fork_lost_with_its_server_outside_a_test_goes_on_after_its_last_result(project, tmp_path, waits_before):
    """seed.1's fork waits outside any test (before its first test, or between its two) while
    seed.0's test kills the server: seed.1's fork dies with it. Its order goes on in a process
    after the last test it finished, no test of it is interrupted, and its run is complete; its
    records say that the server ended between tests (a test of this run or of one beside it may
    have ended it: nobody can tell which, so the run is never green on its own either)."""
    meet = tmp_path / "meet"
    meet.mkdir()
    project.write("conftest.py", f"""
        import pathlib
        import sys
        import time

        import pytest

        MEET = pathlib.Path({str(meet)!r})

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_protocol(item):
            # Outside any test: before the plugin's start record. Only seed.1's fork waits (its
            # process, later, finds the mark there).
            if "--evidence-gate-run=seed.1" in sys.argv and item.name == {waits_before!r}:
                if not (MEET / "waiting").exists():
                    (MEET / "waiting").touch()
                    time.sleep(60)
            yield
    """)
    project.write(TEST_FILE, f"""
        import os
        import pathlib
        import signal
        import sys
        import time

        MEET = pathlib.Path({str(meet)!r})

        def test_a_attacks():
            if "--evidence-gate-run=seed.0" in sys.argv:
                deadline = time.monotonic() + 60
                while not (MEET / "waiting").exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                os.kill(os.getppid(), signal.SIGKILL)

        def test_b_after():
            pass
    """)
    project.suite(f"{FAST} RERUNS 0 LOCALISE 0 ALONE OFF TIMEOUT 90 TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence("-j2")
        expect_never_green(project, result, "a test that kills the server")
        assert (meet / "waiting").exists(), "seed.1 never waited: the two seeds did not run together"
        lost = finished(project, "seed.1")
        assert lost["complete"], lost
        assert lost["isolation"] == "fork, then process", lost
        assert "the fork server" in lost.get("isolation_note", ""), lost
        kept = records(project.evidence_dir() / "runs" / "seed.1.jsonl")
        assert [r for r in kept if r["event"] == "interrupted"] == [], kept
        (status,) = [r for r in kept if r["event"] == "status"]
        assert "the fork server ended" in status["reason"] and "between tests" in status["reason"], status
        results = sorted(r["test"].split("::")[-1] for r in kept if r["event"] == "result")
        assert results == ["test_a_attacks", "test_b_after"], results
        assert len(sessions(project, "seed.1")) == 2
        nothing_left(project)


def test_code_between_tests_that_kills_the_server_is_never_green(project):
    """A conftest hook kills the fork server between two tests (outside any test, so no test is
    interrupted): the fork dies with it. The order goes on in a process and the run is complete,
    and the run's records say the server ended between tests: the gate is not green. (Without
    that record every test has a passing result and nothing else would block.)"""
    project.write("conftest.py", """
        import os
        import signal
        import sys
        import time

        import pytest

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_protocol(item):
            forked = open(f"/proc/{os.getppid()}/comm").read().strip() != "evgate"  # the server, not evgate
            if "--evidence-gate-run=seed.0" in sys.argv and item.name == "test_b" and forked:
                os.kill(os.getppid(), signal.SIGKILL)
                time.sleep(30)
            yield
    """)
    project.write(TEST_FILE, "def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    project.suite(f"{FAST} RERUNS 0 LOCALISE 0 ALONE OFF TIMEOUT 60 TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence("-j1")
        expect_never_green(project, result, "code between tests that kills the server")
        done = finished(project, "seed.0")
        assert done["complete"] and done["isolation"] == "fork, then process", done
        kept = records(project.evidence_dir() / "runs" / "seed.0.jsonl")
        assert [r for r in kept if r["event"] == "interrupted"] == [], kept
        assert any(r["event"] == "status" and "between tests" in r["reason"] for r in kept), kept
        assert "between tests" in step_output(project.build, f"{SUITE}.gate"), step_output(project.build, f"{SUITE}.gate")
        nothing_left(project)


# ============================================================== where forks are unsafe


def test_a_thread_alive_after_collection_makes_every_run_a_process_and_says_why(project):
    project.write("conftest.py", """
        import threading
        import time

        threading.Thread(target=time.sleep, args=(3600,), daemon=True, name="poller").start()
    """)
    project.write(TEST_FILE, "def test_one():\n    pass\n\ndef test_two():\n    pass\n")  # two orders: seed.1 runs
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        isolation = receipt(project)["isolation"]
        assert isolation["runs"] == "process", isolation
        assert "thread(s) besides the main one were alive after collection (poller)" in isolation["why"], isolation
        for run in ("seed.0", "seed.1"):
            done = finished(project, run)
            assert done["isolation"] == "process" and "poller" in done["isolation_note"], done
        assert "every run starts its own pytest processes" in step_output(project.build, f"{SUITE}.receipt")


def test_isolation_process_starts_a_process_for_every_run(project):
    project.write(TEST_FILE, "def test_one():\n    pass\n")
    project.suite(f"{FAST} ISOLATION process TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0, result.describe()
        assert receipt(project)["isolation"] == {"runs": "process", "why": "ISOLATION process"}
        assert finished(project)["isolation"] == "process"
        assert receipt(project)["hash_seed"]


# ============================================================== a stale session


def test_a_source_change_after_the_collection_is_never_served_from_it(project):
    """seed.0's test writes its own module again, unchanged but for its time stamps: the
    session collected before may no longer match the sources, so seed.1 is refused and runs in
    a process (the content is the same, so the gate passes)."""
    project.write(TEST_FILE, """
        import sys
        from pathlib import Path

        def test_touches_its_module():
            if "--evidence-gate-run=seed.0" in sys.argv:
                path = Path(__file__)
                path.write_text(path.read_text())

        def test_other():  # two orders: seed.1 runs
            pass
    """)
    project.suite(f"{FAST} RERUNS 0 TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence("-j1")
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        assert finished(project, "seed.0")["isolation"] == "fork"
        later = finished(project, "seed.1")
        assert later["isolation"] == "process", later
        assert re.search(r"test_suite\.py changed since the collection", later["isolation_note"]), later


# ============================================================== two build trees


def test_two_build_trees_never_share_a_server(project):
    project.write(TEST_FILE, "import time\n\ndef test_one():\n    time.sleep(1)\n")
    project.suite(f"{FAST} TESTS tests")
    other = project.tmp / "build2"
    with project.checked():
        project.configured()
        assert cmake_configure(project.root, other, f"EvidenceGate_DIR={project.product}", env=project.env()).returncode == 0
        threads = [threading.Thread(target=ctest, args=(binary, "-L", "evidence"), kwargs={"env": project.env()})
                   for binary in (project.build, other)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        servers = set()
        for binary in (project.build, other):
            taken = receipt(project, binary)
            assert taken["isolation"]["runs"] == "fork", taken["isolation"]
            servers.add((taken["isolation"]["server"]["pid"], taken["isolation"]["socket"]))
            assert finished(project, "seed.0", binary)["isolation"] == "fork"
        assert len({pid for pid, _ in servers}) == 2 and len({socket for _, socket in servers}) == 2, servers
        nothing_left(project)
