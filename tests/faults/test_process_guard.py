"""The fault matrix, part two: the whole pytest process, guarded.

Every phase of a pytest process can lie to the gate, not only its tests: a process a test forks
can send records, a test can edit the records file, a conftest can re-order the tests after the
plugin or change pytest's exit status, anything can write a fixture group outside a test (at
import, collection, session end, exit), a thread a test left behind can write during a later
test, and a Ctrl-C or a CI cancel can stop everything half-way. Each scenario runs a consumer
project through real CMake and CTest (``Project.checked()``: the source tree byte-identical
afterwards, the canary secret nowhere) and asserts that the gate blocks with a suite row that
names the run and what happened, and that no innocent test is blamed.
"""

import os
import re
import signal
import subprocess
import textwrap
import time

import pytest

from harness import (FAST, HANGING_FORK_SERVER, SUITE, gate_summary, process_alive, processes_mentioning, step_output,
                     wait_until_gone)

TEST_FILE = "tests/test_suite.py"
CONFIG = "data/config.txt"
GROUPS = "data: data/*\n"


def expect_blocked(project, result, what):
    summary = gate_summary(project.build)
    assert result.returncode != 0 and summary == "BLOCKED", f"{what}: the gate must block (gate: {summary}):\n{result.describe()}"


def blocking_row(project, name, *patterns):
    """The ledger's blocking suite row `name`, its reason matching every regex in `patterns`."""
    ledger = project.ledger()
    rows = {row["test"]: row for row in ledger.blocking_suite_rows()}
    assert name in rows, f"expected a blocking suite row {name!r}:\n{ledger}"
    for pattern in patterns:
        assert re.search(pattern, rows[name]["reason"]), f"{name}: {pattern!r} not in {rows[name]['reason']!r}"
    return rows[name]


def rows_named(project, prefix):
    return [row for row in project.ledger().blocking_suite_rows() if row["test"].startswith(prefix)]


def no_test_blamed(project):
    ledger = project.ledger()
    blamed = {test: verdict for test, (verdict, _) in ledger.verdicts().items() if verdict == "polluter"}
    assert not blamed, f"no test may be blamed for a change made outside it: {blamed}\n{ledger}"


def data_project(project, tests, conftest=None, arguments=FAST):
    project.write(CONFIG, "pristine\n")
    project.write("fixtures.manifest", GROUPS)
    project.write(TEST_FILE, tests)
    if conftest is not None:
        project.write("conftest.py", conftest)
    project.suite(f"{arguments} TESTS tests")


# Only in run mode: the receipt's collection imports conftests and test modules too, and this
# file is about the runs. Asked when the hook or handler runs: a fork of the collected session
# (ISOLATION fork) has the run's command line from the moment it starts, but its start-up and
# collection were the receipt's.
IN_RUNS = 'any(a.startswith("--evidence-gate-run=") for a in __import__("sys").argv)'
# A run's own start-up and imports: only a process has them (a fork's were the receipt's
# collection, which the receipt step guards: test_tree_guard.py).
OWN_START_UP = "ISOLATION process"

PASSING = """
    def test_one():
        pass

    def test_two():
        pass
"""


# ============================================================== 1. records: who may speak for a run


def test_a_forked_child_that_goes_on_as_pytest_is_not_the_run(project):
    """A test forks; its child returns from the test and goes on running pytest's code (the rest
    of the session, result and end records); the parent waits for it. The child's records are
    not the run's: a blocking `foreign:<run>` row names the process and the test it forked in."""
    project.write(TEST_FILE, """
        import os

        def test_forks():
            pid = os.fork()
            if pid == 0:
                return  # the child: on with pytest's loop, as if it were the run
            os.waitpid(pid, 0)

        def test_after():
            pass
    """)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "a fork of pytest that ran the rest of the session")
        row = blocking_row(project, "foreign:seed.0", r"a process forked during tests/test_suite\.py::test_forks \(pid \d+\)",
                           r"end record", r"not evidence of this run")
        assert f"BLOCK foreign:seed.0: missing, {row['reason']}" in result.stdout, result.describe()


def test_a_forked_child_cannot_turn_a_failure_into_a_pass(project):
    """A test forks a child that sends a passing result for a failing test through the plugin's
    own writer (the last result used to win); the failure stands and the run is not evidence."""
    project.write(TEST_FILE, """
        import os
        import evidence_gate_pytest

        def test_fails():
            assert 1 == 2

        def test_forges(request):
            recorder = request.config.stash[evidence_gate_pytest.RUN_KEY]
            pid = os.fork()
            if pid == 0:
                recorder.emit({"event": "result", "test": "tests/test_suite.py::test_fails", "outcome": "passed",
                               "phases": {}, "duration": 0.0, "changed": [], "dirty": [], "message": ""})
                os._exit(0)
            os.waitpid(pid, 0)
    """)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "a forged result from a forked child")
        ledger = project.ledger()
        assert ledger.tests["tests/test_suite.py::test_fails"]["verdict"] == "failing", str(ledger)
        assert set(ledger.tests["tests/test_suite.py::test_fails"]["outcomes"].values()) == {"failed"}, str(ledger)
        assert rows_named(project, "foreign:"), str(ledger)
        blocking_row(project, rows_named(project, "foreign:")[0]["test"], r"forked during tests/test_suite\.py::test_forges",
                     r"naming tests/test_suite\.py::test_fails")


FORGER = """
    import json
    import os
    import sys
    from pathlib import Path

    def test_fails():
        assert 1 == 2

    def test_zz_forges():
        run = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--evidence-gate-run="))
        lines = [{"event": "result", "test": "tests/test_suite.py::test_fails", "outcome": "passed", "dirty": [], "changed": []},
                 {"event": "result", "test": "tests/test_suite.py::test_zz_forges", "outcome": "passed", "dirty": [], "changed": []},
                 {"event": "end", "exitstatus": 0}]
        with open(Path(os.environ["FAULTS_RUNS"]) / f"{run}.jsonl", "a") as f:
            f.write("".join(json.dumps(line) + "\\n" for line in lines))
        os._exit(0)
"""


def test_records_forged_through_the_records_path_block(project):
    """The last test appends a passing result for a failing test, one for itself and an end
    record to its run's records file, then leaves with os._exit(0): the file is not what evgate
    wrote, and the run row says so."""
    project.write(TEST_FILE, FORGER)  # seed 0 alone: the collection order, the forger last
    runs = project.evidence_dir() / "runs"
    project.suite(f"SEEDS 0 PERTURB OFF PER_TEST OFF TESTS tests ENVIRONMENT FAULTS_RUNS={runs}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "records forged through the records file")
        row = blocking_row(project, "run:seed.0", r"seed\.0\.jsonl", r"not what evgate wrote|after the 'finished' record")
        assert "seed.0" in row["reason"]


def test_records_rewritten_in_place_at_session_end_block(project):
    """A conftest's pytest_sessionfinish rewrites every records file in place, 'failed' to
    'passed' (same length); every run it touched is unreadable, naming its file."""
    project.write(TEST_FILE, """
        def test_fails():
            assert 1 == 2

        def test_passes():
            pass
    """)
    project.write("conftest.py", """
        import os
        from pathlib import Path

        def pytest_sessionfinish(session):
            for path in Path(os.environ["FAULTS_RUNS"]).glob("seed.*.jsonl"):  # nothing there while collecting
                if not path.name.endswith(".order.jsonl"):
                    path.write_bytes(path.read_bytes().replace(b'"outcome":"failed"', b'"outcome":"passed"'))
    """)
    runs = project.evidence_dir() / "runs"
    project.suite(f"SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests ENVIRONMENT FAULTS_RUNS={runs}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "records rewritten in place")
        for run in ("seed.0", "seed.1"):
            blocking_row(project, f"run:{run}", rf"{run}\.jsonl", r"not what evgate wrote")


# ============================================================== 2. changes outside any test


# where: (files that change data/config.txt outside any test, the phase's words in the row, extra
# suite arguments)
OUTSIDE = {
    "conftest-import": ({"conftest.py": f"""
        if {IN_RUNS}:
            open("data/config.txt", "w").write("written at conftest import\\n")
    """}, r"at start-up or collection", OWN_START_UP),
    "test-module-import": ({TEST_FILE: textwrap.dedent(f"""
        if {IN_RUNS}:
            open("data/config.txt", "w").write("written at import\\n")
    """) + textwrap.dedent(PASSING)}, r"at start-up or collection", OWN_START_UP),
    "collection-hook": ({"conftest.py": f"""
        def pytest_collection_finish(session):
            if {IN_RUNS}:
                open("data/config.txt", "w").write("written by a collection hook\\n")
    """}, r"at start-up or collection", ""),
    "sessionfinish": ({"conftest.py": f"""
        def pytest_sessionfinish(session):
            if {IN_RUNS}:
                open("data/config.txt", "w").write("written at session end\\n")
    """}, r"at session end", ""),
    "atexit": ({"conftest.py": f"""
        import atexit

        @atexit.register
        def write():
            if {IN_RUNS}:
                open("data/config.txt", "w").write("written at exit\\n")
    """}, r"after pytest's session ended", ""),
    "thread-after-the-session": ({TEST_FILE: """
        import threading
        import time

        import pytest

        def write_later():
            time.sleep(1.0)
            open("data/config.txt", "w").write("written by a thread after the session\\n")

        @pytest.mark.serial
        def test_one():
            pass

        @pytest.mark.serial
        def test_leaves_a_thread():
            threading.Thread(target=write_later).start()  # not a daemon: the interpreter waits for it
    """}, r"after pytest's session ended", ""),
}


@pytest.mark.parametrize("where", sorted(OUTSIDE))
def test_a_group_changed_outside_any_test_blocks_naming_the_phase(project, where):
    files, phase, arguments = OUTSIDE[where]
    project.write(CONFIG, "pristine\n")
    project.write("fixtures.manifest", GROUPS)
    project.write(TEST_FILE, PASSING)
    for rel, text in files.items():
        project.write(rel, text)
    project.suite(f"{FAST} TESTS tests {arguments}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, f"a change to a group {where}")
        blocking_row(project, "outside:seed.0", r"fixture group 'data' changed outside any test", phase, r"\(seed\.0\)")
        no_test_blamed(project)


# ============================================================== 3. the order that ran is the order planned


ORDERS = {
    "a-hookwrapper-re-sorts-after-the-plugin": ("""
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_collection_modifyitems(items):
            yield
            items.reverse()
    """, r"ran 1st, planned \d+(st|nd|rd|th): a plugin or conftest re-ordered the tests after evidence-gate"),
    "the-test-loop-is-replaced": ("""
        def pytest_runtestloop(session):
            for item in sorted(session.items, key=lambda item: item.name, reverse=True):
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=None)
            return True
    """, r"re-ordered the tests after evidence-gate"),
    "a-test-runs-twice": ("""
        def pytest_runtestloop(session):
            for item in session.items + session.items[:1]:
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=None)
            return True
    """, r"ran twice \(1st and 4th\)"),
}


@pytest.mark.parametrize("how", sorted(ORDERS))
def test_an_order_other_than_the_plan_blocks(project, how):
    conftest, message = ORDERS[how]
    project.write(TEST_FILE, """
        def test_a():
            pass

        def test_b():
            pass

        def test_c():
            pass
    """)
    project.write("conftest.py", conftest)
    project.suite("SEEDS 0 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, how)
        blocking_row(project, "order:seed.0", message, r"\(seed\.0\)")


# ============================================================== 4. pytest's own verdict counts


# how: (files, extra suite arguments, what the exit-status row must say)
EXITS = {
    "a-sessionfinish-hook-sets-1": ({"conftest.py": f"""
        def pytest_sessionfinish(session):
            if {IN_RUNS}:
                session.exitstatus = 1
    """}, "", r"a pytest_sessionfinish hook changed pytest's exit status from 0 to 1 while its records say every test it ran passed"),
    "a-sessionfinish-hook-hides-a-failure": ({"conftest.py": f"""
        def pytest_sessionfinish(session):
            if {IN_RUNS}:
                session.exitstatus = 0
    """, TEST_FILE: PASSING + "\n    def test_fails():\n        assert 0\n",
        "quarantine.jsonl": '{"test": "tests/test_suite.py::test_fails", "until": "2999-01-01", "owner": "qa", "reason": "known"}\n'},  # noqa: E128
        "QUARANTINE quarantine.jsonl", r"from 1 to 0 while its records say tests/test_suite\.py::test_fails failed"),  # noqa: E128
    "a-conftest-unconfigure-sets-1": ({"conftest.py": f"""
        SESSION = []

        def pytest_sessionstart(session):
            SESSION.append(session)

        def pytest_unconfigure(config):
            if SESSION and {IN_RUNS}:
                SESSION[0].exitstatus = 1
    """}, "", r"a pytest_unconfigure hook changed pytest's exit status from 0 to 1 while its records say every test it ran passed"),
    "pytest-exit-at-session-end": ({"conftest.py": f"""
        import pytest

        def pytest_sessionfinish(session):
            if {IN_RUNS}:
                pytest.exit("leaving early", returncode=3)
    """}, "", r"a pytest_sessionfinish hook changed pytest's exit status from 0 to 3"),
    "os-exit-in-an-atexit-handler": ({"conftest.py": f"""
        import atexit
        import os

        @atexit.register
        def leave():
            if {IN_RUNS}:
                os._exit(4)
    """}, "", r"pytest ended \(exit 4\) after its session ended with status 0"),
    "a-thread-keeps-pytest-alive-past-the-timeout": ({TEST_FILE: PASSING + """
    import threading, time

    def test_leaves_a_thread_forever():
        threading.Thread(target=time.sleep, args=(3600,)).start()
"""}, "TIMEOUT 6", r"timed out after \d+ s\) after its session ended with status 0"),
}


@pytest.mark.parametrize("how", sorted(EXITS))
def test_an_exit_status_the_results_do_not_explain_blocks(project, how):
    files, arguments, message = EXITS[how]
    project.write(TEST_FILE, PASSING)
    for rel, text in files.items():
        project.write(rel, text)
    project.suite(f"SEEDS 0 PERTURB OFF PER_TEST OFF TESTS tests {arguments}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, how)
        blocking_row(project, "exit-status:seed.0", message, r"\(seed\.0\)")


# ============================================================== 5. ordinary stops: Ctrl-C, a CI cancel, ctest killed


SLOW_WRITER = """
    import time
    from pathlib import Path

    import pytest

    @pytest.mark.writes("data")
    def test_writes_then_waits():
        Path("data/config.txt").write_text("written by the test\\n")
        Path("data/scratch.txt").write_text("scratch\\n")
        time.sleep(120)
"""


def start_ctest(project):
    """ctest -L evidence in a session of its own (its process group: what Ctrl-C reaches), once
    the slow test has written the group: (process, seconds it took)."""
    process = subprocess.Popen(["ctest", "--test-dir", str(project.build), "-L", "evidence"], env=project.env(),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    start = time.monotonic()
    while (project.root / "data" / "scratch.txt").exists() is False and time.monotonic() - start < 120:
        assert process.poll() is None, "ctest ended before the test wrote the group"
        time.sleep(0.05)
    assert (project.root / "data" / "scratch.txt").exists(), "the test never wrote the group"
    return process


def run_steps(project):
    """The project's `evgate run` steps running now: (pid, command line)."""
    return [(pid, cmdline) for pid, cmdline in processes_mentioning(str(project.build)) if " run " in f" {cmdline} "]


def leftovers(project):
    return processes_mentioning(str(project.tmp))


STOPS = {
    # Ctrl-C: the terminal sends SIGINT to ctest's whole foreground process group; ctest exits at
    # once without waiting (tests/e2e/test_interrupt.py), but evgate's restore of a test that
    # ends on SIGTERM is done within the second below.
    "ctrl-c": (lambda p: os.killpg(p.pid, signal.SIGINT), 0.0),
    # A CI cancel: SIGTERM to the group; ctest exits at once, evgate restores promptly after.
    "sigterm-to-the-group": (lambda p: os.killpg(p.pid, signal.SIGTERM), 10.0),
    # ctest alone killed: evgate notices its parent's death and does the same.
    "ctest-killed-alone": (lambda p: os.kill(p.pid, signal.SIGKILL), 10.0),
}


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_a_stop_mid_test_leaves_the_tree_whole_and_nothing_running(project, stop):
    send, grace = STOPS[stop]
    data_project(project, SLOW_WRITER)
    with project.checked():
        project.configured()
        process = start_ctest(project)
        sent = time.monotonic()
        send(process)
        process.wait(timeout=60)
        # Within `grace` of ctest's exit (none for Ctrl-C), every process of the project is gone
        # and the tree is as committed.
        left = wait_until_gone(str(project.tmp), seconds=grace) if grace else leftovers(project)
        if not grace and left:  # zombies being reaped at this instant: a moment, no more
            left = wait_until_gone(str(project.tmp), seconds=1.0)
        took = time.monotonic() - sent
        assert not left, f"{stop}: processes left {took:.1f} s after the stop: {left}"
        project.check_tree()
        assert took < 30, f"{stop}: stopping took {took:.1f} s"
        # Nothing was left pending: the next run has no restore to complete for this one.
        data_project(project, "def test_one():\n    pass\n")
        project.seal()
        result = project.evidence()
        assert gate_summary(project.build) == "PASSED", result.describe()
        assert "left dirty by an interrupted run" not in (step_output(project.build, f"{SUITE}.fixtures") or "")


# Writes and waits in the first seed run only: a stop sent to that step alone leaves ctest going
# on through the other steps, which write nothing.
FIRST_RUN_WRITER = """
    import sys
    import time
    from pathlib import Path

    import pytest

    @pytest.mark.writes("data")
    def test_writes_then_waits():
        if "--evidence-gate-run=seed.0" not in sys.argv:
            return
        Path("data/config.txt").write_text("written by the test\\n")
        Path("data/scratch.txt").write_text("scratch\\n")
        time.sleep(120)
"""


# A loaded machine, made certain: the fork server answers a reap late (its waitpid), so a stop
# request is already there when evgate waits for that answer.
SLOW_REAP = """
    import os
    import time

    _waitpid = os.waitpid

    def slow_waitpid(pid, options):
        time.sleep(0.3)
        return _waitpid(pid, options)

    os.waitpid = slow_waitpid
"""


@pytest.mark.parametrize("isolation", ["fork", "process"])
def test_a_stop_sent_to_the_run_step_alone_restores_before_the_step_ends(project, isolation):
    """SIGINT to the run step alone (a CI agent or a user signalling the process it sees busy),
    while its test holds the group changed: the step ends only after the restore, whichever way
    its pytest was started (a fork is reaped through its server first); the step fails, and
    with it the suite."""
    data_project(project, FIRST_RUN_WRITER, conftest=SLOW_REAP, arguments=f"{FAST} ISOLATION {isolation}")
    with project.checked():
        project.configured()
        process = start_ctest(project)
        steps = [pid for pid, cmdline in run_steps(project) if "--seed 0" in cmdline]
        assert len(steps) == 1, f"one run step for seed 0: {run_steps(project)}"
        os.kill(steps[0], signal.SIGINT)
        deadline = time.monotonic() + 30
        while process_alive(steps[0]) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not process_alive(steps[0]), "the step did not end within 30 s of the stop"
        # The step has ended: what its test wrote is already put back.
        assert (project.root / CONFIG).read_text() == "pristine\n", f"{isolation}: the step ended with the group changed"
        assert not (project.root / "data" / "scratch.txt").exists(), f"{isolation}: the step ended with a file it added"
        process.wait(timeout=120)
        # The stopped step fails, so the ledger and gate do not run: never green.
        assert process.returncode != 0 and gate_summary(project.build) != "PASSED"
        assert "stopped by SIGINT" in step_output(project.build, f"{SUITE}.seed.0")
        record = (project.build / "evidence" / SUITE / "runs" / "seed.0.jsonl").read_text()
        assert "stopped by SIGINT while pytest ran" in record, record


def test_a_stop_while_the_fork_server_hangs_ends_everything_within_seconds(project):
    """Ctrl-C while the run step waits for a hung fork server to start its worker: the step
    waits a grace period for the worker's pid, then gives up on the server and kills it (a
    worker it started later would run unwatched); every process is gone within seconds, not
    after the request's 30 s bound or the server's hang, and the tree is whole."""
    data_project(project, PASSING, conftest=HANGING_FORK_SERVER)
    with project.checked():
        project.configured()
        process = subprocess.Popen(["ctest", "--test-dir", str(project.build), "-L", "evidence", "-j2"], env=project.env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        start = time.monotonic()
        while not run_steps(project):
            assert process.poll() is None and time.monotonic() - start < 60, "no run step started"
            time.sleep(0.05)
        time.sleep(1.0)  # the step has asked the server for a worker by now
        sent = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=60)
        left = wait_until_gone(str(project.tmp), seconds=15)
        took = time.monotonic() - sent
        assert not left, f"processes left {took:.1f} s after the stop: {left}"
        assert took < 10, f"stopping took {took:.1f} s"
        project.check_tree()


def test_a_test_signalling_its_own_process_group_reaches_only_pytest(project):
    """A conftest sends SIGTERM to its own process group at import, in every pytest process
    (manifest, receipt, discovery, runs): only pytest and what it started are in that group, so
    evgate and ctest go on and say what happened."""
    project.write(TEST_FILE, PASSING)
    project.write("conftest.py", """
        import os
        import signal

        os.killpg(0, signal.SIGTERM)
    """)
    project.suite("SEEDS 0 PERTURB OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode != 0 and gate_summary(project.build) != "PASSED", result.describe()
        # ctest itself ran every step to its end: a signal reaching it would have cut it short.
        assert re.search(r"tests passed, \d+ tests failed out of \d+", result.stdout), result.describe()
        assert "killed by signal 15 (SIGTERM)" in result.output, result.describe()


# ============================================================== 10. honest blame


LEFT_BEHIND = {
    "a-thread": """
        import threading
        import time
        from pathlib import Path

        import pytest

        def write_later():
            time.sleep(0.5)
            Path("data/config.txt").write_text("written by a thread test_x left\\n")

        @pytest.mark.serial
        def test_x():
            threading.Thread(target=write_later, daemon=True).start()

        @pytest.mark.serial
        def test_y():
            time.sleep(1.5)
    """,
    "a-process": """
        import subprocess
        import sys
        import time

        import pytest

        @pytest.mark.serial
        def test_x():
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5); "
                              "open('data/config.txt', 'w').write('written by a process test_x left')"])

        @pytest.mark.serial
        def test_y():
            time.sleep(1.5)
    """,
}


@pytest.mark.parametrize("what", sorted(LEFT_BEHIND))
def test_a_change_made_by_what_an_earlier_test_left_is_blamed_on_nobody(project, what):
    """test_x leaves a thread (or a process) that writes the group while test_y runs: test_y is
    not a polluter; a blocking row says the change cannot be blamed, naming both."""
    data_project(project, LEFT_BEHIND[what])
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, f"{what} left by a test")
        no_test_blamed(project)
        kind = "thread" if what == "a-thread" else "process"
        blocking_row(project, "uncertain:seed.0",
                     rf"group 'data' changed during tests/test_suite\.py::test_y while a {kind} left by "
                     rf"tests/test_suite\.py::test_x .*was running: not blamed on either")


def test_side_by_side_a_change_another_run_made_blames_no_test(project):
    """Under -j2, a test of seed.1 creates a file in the group and removes it again while
    seed.0's tests run: seed.0's leases see it come and go, but no test of seed.0 made it. The
    run is done again, alone, and no test is a polluter."""
    project.write(CONFIG, "pristine\n")
    project.write("fixtures.manifest", GROUPS)
    project.write(TEST_FILE, """
        import os
        import sys
        import time
        from pathlib import Path

        import pytest

        @pytest.mark.serial
        def test_comes_and_goes():
            if "--evidence-gate-seed=1" in sys.argv:  # only in seed.1: seed.0 is the bystander
                scratch = Path(f"data/scratch-{os.getpid()}.txt")
                scratch.write_text("here for a while\\n")
                time.sleep(3)
                scratch.unlink()

        @pytest.mark.parametrize("n", range(10))
        def test_reads(n):
            time.sleep(0.4)
            assert Path("data/config.txt").read_text() == "pristine\\n"
    """)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert gate_summary(project.build) == "PASSED", result.describe()
        ledger = project.ledger()
        assert {verdict for verdict, _ in ledger.verdicts().values()} == {"stable"}, str(ledger)
        rerun = step_output(project.build, f"{SUITE}.rerun") or ""
        # seed.1 touched the group too (its file came and went), so either reason may be given.
        assert re.search(r"seed\.0 (changed the fixture groups while another run went beside it|ran beside a run that "
                         r"changed the fixture groups); running it again, alone", rerun), rerun


# ============================================================== 11. a test pytest never called


# how: the conftest whose pytest_runtest_protocol leaves the call phase out of test_fails
UNCALLED = {
    "returns-without-running-it": """
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            if "fails" in item.name:
                return True
    """,
    "runs-setup-and-teardown-only": """
        import pytest
        from _pytest.runner import call_and_report

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            call_and_report(item, "setup")
            call_and_report(item, "teardown", nextitem=nextitem)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            return True
    """,
    "reports-a-call-that-never-happened": """
        import pytest
        from _pytest.reports import TestReport
        from _pytest.runner import call_and_report

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            call_and_report(item, "setup")
            item.ihook.pytest_runtest_logreport(report=TestReport(
                item.nodeid, item.location, {}, "passed", None, "call", [], 0.0))
            call_and_report(item, "teardown", nextitem=nextitem)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            return True
    """,
}


@pytest.mark.parametrize("how", sorted(UNCALLED))
def test_a_test_whose_call_phase_never_ran_is_missing_not_passed(project, how):
    """A conftest's tryfirst pytest_runtest_protocol leaves a failing test's call phase out (pytest
    itself counts it as nothing, or as passed): the test is `missing` in every run, its row says
    its call phase never ran, and the gate blocks."""
    # Two tests, so that seed.1 (the reversed order) is an order of its own and runs.
    project.write(TEST_FILE, """
        def test_fails():
            assert 0

        def test_other():
            pass
    """)
    project.write("conftest.py", UNCALLED[how])
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, how)
        row = project.ledger().tests["tests/test_suite.py::test_fails"]
        assert (row["verdict"], row["gate"]) == ("missing", "block"), row
        assert set(row["outcomes"].values()) == {"uncalled"}, row
        assert re.search(r"its call phase never ran in seed\.0, seed\.1(, first\.1)?: ", row["reason"]), row  # first.1: the alone pass


def test_a_failure_a_conftest_reports_as_a_pass_still_fails(project):
    """A conftest's pytest_runtest_makereport wrapper turns a failing call into a pass (pytest then
    counts a pass and exits 0): what the test raised stands, the test is `failing`."""
    project.write(TEST_FILE, PASSING + "\n    def test_fails():\n        assert 1 == 2, 'one is not two'\n")
    project.write("conftest.py", """
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            report = outcome.get_result()
            if report.when == "call" and report.failed:
                report.outcome, report.longrepr = "passed", None
    """)
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "a failure reported as a pass")
        row = project.ledger().tests["tests/test_suite.py::test_fails"]
        assert (row["verdict"], set(row["outcomes"].values())) == ("failing", {"failed"}), row
        assert "AssertionError: one is not two (raised by the test; a plugin or conftest reported its call as passed)" in \
            row["reason"], row


# ============================================================== 12. fixtures wider than a test


def test_a_session_fixture_writing_a_group_at_teardown_is_named_and_no_test_is_blamed(project):
    """A session-scoped conftest fixture writes the group at its teardown, inside whichever test
    runs last: the gate blocks with an `outside:<run>` row naming the fixture, its scope and file,
    no test is a polluter, and the tree is restored."""
    data_project(project, PASSING, conftest="""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="session", autouse=True)
        def server():
            yield
            Path("data/config.txt").write_text("written at session-fixture teardown\\n")
    """, arguments="SEEDS 1 PERTURB OFF PER_TEST OFF")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_blocked(project, result, "a session fixture's teardown writing a group")
        for run in ("seed.0", "seed.1"):
            blocking_row(project, f"outside:{run}", r"fixture group 'data' changed outside any test, at the teardown of "
                         r"session-scoped fixture 'server' \(conftest\.py:\d+\), in tests/test_suite\.py::test_\w+ "
                         r"\(not blamed on it\)")
        no_test_blamed(project)


# ============================================================== 13. hooks that thin the collection


def test_tests_a_conftest_or_a_pytest_plugins_plugin_deselects_warn_naming_them(project, monkeypatch, tmp_path):
    """A committed conftest deselects a test when SMOKE=1 is in ctest's environment, and a plugin
    PYTEST_PLUGINS loads from there deselects another: the gate passes what ran, and one WARN
    thinning row lists both tests, who deselected each, and PYTEST_PLUGINS."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "thinplug.py").write_text(textwrap.dedent("""
        def pytest_collection_modifyitems(config, items):
            drop = [i for i in items if i.name == "test_two"]
            config.hook.pytest_deselected(items=drop)
            items[:] = [i for i in items if i not in drop]
    """))
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.setenv("PYTEST_PLUGINS", "thinplug")
    monkeypatch.setenv("PYTHONPATH", str(plugins))
    project.write(TEST_FILE, PASSING + "\n    def test_three():\n        pass\n")
    project.write("conftest.py", """
        import os

        def pytest_collection_modifyitems(config, items):
            if os.environ.get("SMOKE") == "1":
                drop = [i for i in items if i.name == "test_one"]
                config.hook.pytest_deselected(items=drop)
                items[:] = [i for i in items if i not in drop]
    """)
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        ledger = project.ledger()
        assert list(ledger.tests) == ["tests/test_suite.py::test_three"], str(ledger)
        [row] = [row for row in ledger.suite_rows if row["test"] == "thinning"]
        assert row["gate"] == "pass" and row.get("warning"), row
        assert re.search(r"2 test\(s\) deselected in the receipt's collection: tests/test_suite\.py::test_one by "
                         r"conftest\.py:\d+ \(pytest_collection_modifyitems\); tests/test_suite\.py::test_two by "
                         r"thinplug \(pytest_collection_modifyitems\), a plugin PYTEST_PLUGINS loads; "
                         r"PYTEST_PLUGINS in the environment loads thinplug", row["reason"]), row
        gate = step_output(project.build, f"{SUITE}.gate") or ""
        assert "WARN thinning: " in gate and "thinplug" in gate, gate
