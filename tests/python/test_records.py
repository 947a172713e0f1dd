"""Tests of templates/pytest/evidence_gate_records.py: run mode's records, order and reseeding, the
record channel, the end of the session, changes outside any test."""

import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from conftest import TIMEOUT, data_groups, only, results, started, write_groups


# ---------------------------------------------------------------------- records


OUTCOMES = """
    import pytest

    @pytest.fixture
    def broken_setup():
        raise RuntimeError("setup broke")

    @pytest.fixture
    def broken_teardown():
        yield
        raise RuntimeError("teardown broke")

    def test_pass():
        pass

    def test_fail():
        raise ValueError("boom\\nsecond line")

    def test_setup_error(broken_setup):
        pass

    def test_teardown_error(broken_teardown):
        pass

    def test_fail_and_teardown_error(broken_teardown):
        assert 0, "call broke"

    def test_skip():
        pytest.skip("not here")

    @pytest.mark.skip(reason="marked skip")
    def test_skip_marker():
        pass

    @pytest.mark.xfail(reason="known bug")
    def test_xfail():
        assert 0

    @pytest.mark.xfail(reason="fixed already")
    def test_xpass():
        pass

    @pytest.mark.xfail(reason="strict", strict=True)
    def test_xpass_strict():
        pass
"""


def test_records_every_outcome_and_phase(gate):
    gate.pytester.makepyfile(test_outcomes=OUTCOMES)
    _, records = gate.run_records()
    got = {nodeid.split("::")[1]: (r["outcome"], r["phases"], r["message"]) for nodeid, r in results(records).items()}
    ok = "passed"
    assert got == {
        "test_pass": ("passed", {"setup": ok, "call": ok, "teardown": ok}, ""),
        "test_fail": ("failed", {"setup": ok, "call": "failed", "teardown": ok}, "ValueError: boom"),
        "test_setup_error": ("error", {"setup": "failed", "teardown": ok}, "RuntimeError: setup broke"),
        "test_teardown_error": ("error", {"setup": ok, "call": ok, "teardown": "failed"},
                                "RuntimeError: teardown broke"),
        "test_fail_and_teardown_error": ("failed", {"setup": ok, "call": "failed", "teardown": "failed"},
                                         "AssertionError: call broke"),
        "test_skip": ("skipped", {"setup": ok, "call": "skipped", "teardown": ok}, "not here"),
        "test_skip_marker": ("skipped", {"setup": "skipped", "teardown": ok}, "marked skip"),
        "test_xfail": ("xfailed", {"setup": ok, "call": "skipped", "teardown": ok}, "known bug"),
        "test_xpass": ("xpassed", {"setup": ok, "call": ok, "teardown": ok}, "fixed already"),
        "test_xpass_strict": ("failed", {"setup": ok, "call": "failed", "teardown": ok}, "[XPASS(strict)] strict"),
    }
    for r in results(records).values():
        assert isinstance(r["duration"], float) and r["duration"] >= 0
        assert r["dirty"] == []
    # Each result directly follows its start.
    events = [(r["event"], r.get("test")) for r in records]
    for i, (event, test) in enumerate(events):
        if event == "start":
            assert events[i + 1] == ("result", test)


# A conftest's pytest_runtest_protocol: how it leaves the call phase out.
UNCALLED = {
    "returns-at-once": ("""
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            return True
    """, r"no phase of the test ran \(no setup, call or teardown report\)"),
    "setup-and-teardown-only": ("""
        import pytest
        from _pytest.runner import call_and_report

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            call_and_report(item, "setup")
            call_and_report(item, "teardown", nextitem=nextitem)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            return True
    """, r"^setup passed and teardown passed, but no call: "),
    "forged-call-report": ("""
        import pytest
        from _pytest.reports import TestReport
        from _pytest.runner import call_and_report

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            call_and_report(item, "setup")
            item.ihook.pytest_runtest_logreport(report=TestReport(
                item.nodeid, item.location, {}, "passed", None, "call", [], 0.0))
            call_and_report(item, "teardown", nextitem=nextitem)
            return True
    """, r"a 'call' report said passed, but pytest_runtest_call never ran the test"),
}


@pytest.mark.parametrize("how", sorted(UNCALLED))
def test_a_test_whose_call_phase_never_ran_is_uncalled_not_passed(gate, how):
    conftest, message = UNCALLED[how]
    gate.pytester.makeconftest(conftest)
    gate.pytester.makepyfile(test_a="def test_fails():\n    assert 0\n")
    _, records = gate.run_records()
    [result] = results(records).values()
    assert result["outcome"] == "uncalled", result
    assert re.search(message, result["message"]), result["message"]


def test_a_failure_a_conftest_reports_as_a_pass_stands(gate):
    """A pytest_runtest_makereport wrapper turns the call's failure into a pass: pytest counts a
    pass, the record says failed, with what the test raised."""
    gate.pytester.makeconftest("""
        import pytest

        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(item, call):
            outcome = yield
            report = outcome.get_result()
            if report.when == "call" and report.failed:
                report.outcome, report.longrepr = "passed", None
    """)
    gate.pytester.makepyfile(test_a="""
        import pytest

        def test_fails():
            assert 1 == 2, "one is not two"

        def test_skips():
            pytest.skip("not here")

        @pytest.mark.xfail(reason="known")
        def test_xfails():
            assert 0
    """)
    result, records = gate.run_records()
    result.assert_outcomes(passed=1, skipped=1, xfailed=1)
    got = {nodeid.split("::")[1]: (r["outcome"], r["message"]) for nodeid, r in results(records).items()}
    assert got == {
        "test_fails": ("failed", "AssertionError: one is not two (raised by the test; a plugin or conftest reported "
                                 "its call as passed)"),
        "test_skips": ("skipped", "not here"),
        "test_xfails": ("xfailed", "known"),
    }


def test_a_skip_or_failure_before_the_call_is_not_uncalled(gate):
    """Setup skipped, xfail(run=False), setup failed: pytest itself calls nothing, as it should."""
    gate.pytester.makepyfile(test_a="""
        import pytest

        @pytest.fixture
        def broken():
            raise RuntimeError("no")

        @pytest.mark.skip(reason="later")
        def test_skipped():
            assert 0

        @pytest.mark.xfail(run=False, reason="hangs")
        def test_not_run():
            assert 0

        def test_setup_error(broken):
            pass
    """)
    _, records = gate.run_records()
    assert {nodeid.split("::")[1]: r["outcome"] for nodeid, r in results(records).items()} == {
        "test_skipped": "skipped", "test_not_run": "xfailed", "test_setup_error": "error"}


def test_session_and_end_records_append(gate):
    gate.pytester.makeconftest("")
    gate.pytester.makepyfile(test_two="def test_a(): pass\ndef test_b(): assert 0\n")
    gate.run_records("--evidence-gate-run=seed.3", "--evidence-gate-seed=3")
    _, records = gate.run_records("--evidence-gate-run=seed.4", "--evidence-gate-seed=4")
    assert [r["event"] for r in records] == ["session", "start", "result", "start", "result", "end"] * 2
    first, second = [r for r in records if r["event"] == "session"]
    assert first["run"] == "seed.3" and second["run"] == "seed.4"
    assert (first["seed"], second["seed"]) == (3, 4)
    assert isinstance(first["pid"], int) and first["pid"] != os.getpid()
    assert first["rootdir"] == str(gate.path)
    assert first["configfile"] is None
    assert first["conftests"] == [str(gate.path / "conftest.py")]
    assert (first["collected"], first["planned"], first["unlisted"], first["absent"]) == (2, 2, [], [])
    assert first["disabled"] == [] and first["active"] == []
    assert [r["exitstatus"] for r in records if r["event"] == "end"] == [1, 1]


def test_hard_exit_leaves_start_without_result_or_end(gate):
    gate.pytester.makepyfile(test_exit="""
        import os
        def test_a(): pass
        def test_b(): os._exit(3)
        def test_c(): pass
    """)
    result, records = gate.run_records()
    assert result.ret == 3
    assert [(r["event"], r.get("test")) for r in records] == [
        ("session", None), ("start", "test_exit.py::test_a"), ("result", "test_exit.py::test_a"),
        ("start", "test_exit.py::test_b")]


# ------------------------------------------------------------------------ order


ODD_IDS = """
    import pytest

    @pytest.mark.parametrize("v", [1, 2, 3, 4], ids=["a b", "x::y", "q\\"'; z", "n\\nl"])
    def test_p(v):
        pass

    class TestK:
        def test_m(self):
            pass

    def test_plain():
        pass
"""


def test_order_file_reorders_deselects_and_reports_absent(gate):
    gate.pytester.makepyfile(test_ids=ODD_IDS)
    gate.pytester.path.joinpath("test_ünï.py").write_text("def test_café():\n    pass\n", encoding="utf-8")
    order = [
        "test_ünï.py::test_café",
        "test_ids.py::test_p[n\\nl]",
        "test_ids.py::TestK::test_m",
        "test_ids.py::test_gone[1]",
        "test_ids.py::test_p[q\"'; z]",
        "test_ids.py::test_p[a b]",
    ]
    result, records = gate.run_records(order=order)
    expected = [i for i in order if "gone" not in i]
    assert started(records) == expected
    assert list(results(records)) == expected
    session = only(records, "session")
    assert session["absent"] == ["test_ids.py::test_gone[1]"]
    assert session["unlisted"] == ["test_ids.py::test_p[x::y]", "test_ids.py::test_plain"]
    assert (session["collected"], session["planned"]) == (7, 5)
    result.stdout.fnmatch_lines(["*5 passed, 2 deselected*"])


def test_without_order_file_collection_order_is_kept(gate):
    gate.pytester.makepyfile(test_ids=ODD_IDS)
    _, records = gate.run_records()
    assert started(records) == [
        "test_ids.py::test_p[a b]", "test_ids.py::test_p[x::y]", "test_ids.py::test_p[q\"'; z]",
        "test_ids.py::test_p[n\\nl]", "test_ids.py::TestK::test_m", "test_ids.py::test_plain"]


def test_other_reorderers_run_before_the_order_file(gate):
    gate.pytester.makeconftest("""
        def pytest_collection_modifyitems(items):
            items.reverse()
    """)
    gate.pytester.makepyfile(test_abc="def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n")
    order = ["test_abc.py::test_b", "test_abc.py::test_a", "test_abc.py::test_c"]
    _, records = gate.run_records(order=order)
    assert started(records) == order
    gate.records_path.unlink()
    _, records = gate.run_records()
    assert started(records) == ["test_abc.py::test_c", "test_abc.py::test_b", "test_abc.py::test_a"]


def test_disabled_reorderer_is_reported(gate, fake_randomly):
    result, records = gate.run_records("-p", "no:randomly", order=fake_randomly)
    session = only(records, "session")
    assert (session["disabled"], session["active"]) == (["randomly"], [])
    result.stdout.fnmatch_lines(["evidence-gate: disabled pytest-randomly (the order is evidence-gate's)"])
    assert started(records) == fake_randomly


def test_active_reorderer_does_not_override_the_order(gate, fake_randomly):
    result, records = gate.run_records(order=fake_randomly)
    session = only(records, "session")
    assert (session["disabled"], session["active"]) == ([], ["randomly"])
    result.stdout.fnmatch_lines(["evidence-gate: warning: pytest-randomly is active*"])
    assert started(records) == fake_randomly


def test_bad_order_file_is_a_usage_error(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records(order=["test_a.py::test_a", "test_a.py::test_a"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert records == []
    result.stderr.fnmatch_lines(["*listed twice*"])


# ----------------------------------------------------------------------- random


def test_random_is_reseeded_per_test_from_seed_and_node_id(gate):
    gate.pytester.makepyfile(test_rand="""
        import json, random

        def record(request):
            with open("values.jsonl", "a") as f:
                f.write(json.dumps([request.node.nodeid, random.random()]) + "\\n")

        def test_one(request):
            random.random()  # consumed state must not leak into the next test
            record(request)

        def test_two(request):
            record(request)
    """)
    values = gate.path / "values.jsonl"

    def draw(seed):
        gate.run_records(f"--evidence-gate-seed={seed}")
        drawn = dict(json.loads(line) for line in values.read_text().splitlines())
        values.unlink()
        return drawn

    first, again, other = draw(1), draw(1), draw(2)
    assert first == again
    assert all(first[k] != other[k] for k in first)
    assert first["test_rand.py::test_two"] == random.Random("evidence-gate:1:test_rand.py::test_two").random()
    assert first["test_rand.py::test_one"] != first["test_rand.py::test_two"]


def test_terminal_colour_codes_are_kept_out_of_messages(gate):
    gate.pytester.makepyfile(test_coloured='''
        def test_coloured():
            raise ValueError("\\x1b[31mred\\x1b[0m text")
    ''')
    _, records = gate.run_records()
    [result] = results(records).values()
    assert result["message"] == "ValueError: red text", result


# --------------------------------------------------------------- the record channel


UCRED = struct.Struct("iII")  # pid, uid, gid


def run_on_channel(gate, *args):
    """Run mode as evgate runs it: records on an inherited socket, read as they come and sorted
    by the pid the kernel stamps on each write. Returns (exit status, pytest's pid, {pid: bytes})."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    received = {}

    def read():
        while True:
            data, ancillary, _, _ = ours.recvmsg(1 << 16, socket.CMSG_SPACE(UCRED.size))
            if not data:
                return
            pid = next((UCRED.unpack(cdata[:UCRED.size])[0] for level, kind, cdata in ancillary
                        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS), 0)
            received[pid] = received.get(pid, b"") + data

    reader = threading.Thread(target=read)
    reader.start()
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "evidence_gate_pytest", "-p", "no:cacheprovider",
             f"--evidence-gate-channel={theirs.fileno()}", *args],
            cwd=gate.path, pass_fds=[theirs.fileno()], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.communicate(timeout=TIMEOUT)[0]
    reader.join(timeout=TIMEOUT)
    ours.close()
    return process.returncode, process.pid, received, output.decode(errors="replace")


def lines_of(data):
    return [json.loads(line) for line in data.decode().splitlines()]


def test_records_go_to_the_channel_and_the_channel_to_no_program_a_test_starts(gate):
    gate.pytester.makepyfile(test_two="""
        import subprocess, sys

        def test_a():
            pass

        def test_starts_a_program():
            # The channel is not inherited across exec: the program finds no such descriptor.
            fd = next(int(a.split("=")[1]) for a in sys.argv if a.startswith("--evidence-gate-channel="))
            code = f"import os\\ntry:\\n    os.fstat({fd})\\nexcept OSError:\\n    raise SystemExit(7)"
            assert subprocess.run([sys.executable, "-c", code], close_fds=False).returncode == 7
    """)
    status, pid, received, output = run_on_channel(gate)
    assert status == 0, output
    assert list(received) == [pid], received.keys()
    records = lines_of(received[pid])
    assert [r["event"] for r in records] == ["session", "start", "result", "start", "result", "end"]
    assert {r["outcome"] for r in results(records).values()} == {"passed"}
    assert not gate.records_path.exists()


def test_a_channel_that_is_not_a_socket_is_a_usage_error(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result = gate.run("--evidence-gate-channel=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evidence-gate-channel=0: descriptor 0 is not a socket*"])


def test_a_forked_child_that_goes_on_as_pytest_writes_under_its_own_pid(gate):
    gate.pytester.makepyfile(test_fork="""
        import os

        def test_forks():
            child = os.fork()
            if child == 0:
                return  # on with the session, as if it were pytest
            os.waitpid(child, 0)

        def test_after():
            pass
    """)
    status, pid, received, output = run_on_channel(gate)
    assert status == 0, output
    assert set(received) - {pid}, "the child's records come under another pid"
    [child] = set(received) - {pid}
    ours, theirs = lines_of(received[pid]), lines_of(received[child])
    assert [r["event"] for r in ours] == ["session", "start", "result", "start", "result", "end"]
    assert [(r["event"], r.get("test")) for r in theirs] == [
        ("result", "test_fork.py::test_forks"), ("start", "test_fork.py::test_after"),
        ("result", "test_fork.py::test_after"), ("end", None)]


# ------------------------------------------------------------ the end of the session


def test_the_end_record_says_pytests_count_and_what_it_exits_with(gate):
    gate.pytester.makeconftest("""
        def pytest_sessionfinish(session):
            session.exitstatus = 1
    """)
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert result.ret == 1
    end = only(records, "end")
    assert (end["exitstatus"], end["finish"], end["final"]) == (0, 1, 1)
    assert records[-1] == end


def test_the_end_record_tells_a_change_at_unconfigure_from_one_at_session_end(gate):
    gate.pytester.makeconftest("""
        SESSION = []

        def pytest_sessionstart(session):
            SESSION.append(session)

        def pytest_unconfigure(config):
            SESSION[0].exitstatus = 1
    """)
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert result.ret == 1
    end = only(records, "end")
    assert (end["exitstatus"], end["finish"], end["final"]) == (0, 0, 1)


def test_pytest_exit_at_session_end_is_what_the_end_record_says_it_exits_with(gate):
    gate.pytester.makeconftest("""
        import pytest

        def pytest_sessionfinish(session):
            pytest.exit("leaving", returncode=3)
    """)
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert result.ret == 3
    end = only(records, "end")
    assert (end["exitstatus"], end["finish"], end["final"]) == (0, 3, 3)


# ------------------------------------------------------- changes outside any test


OUTSIDE = {
    "conftest-import": ('open("data/config.txt", "w").write("at import\\n")\n', "collection"),
    "collection-hook": ('def pytest_collection_finish(session):\n    open("data/config.txt", "w").write("x\\n")\n',
                        "collection"),
    "session-start-hook": ('def pytest_sessionstart(session):\n    open("data/new.txt", "w").write("x\\n")\n',
                           "collection"),
    "sessionfinish": ('def pytest_sessionfinish(session):\n    open("data/config.txt", "w").write("x\\n")\n',
                      "session end"),
    "unconfigure": ('import os\ndef pytest_unconfigure(config):\n    os.remove("data/config.txt")\n', "session end"),
}


@pytest.mark.parametrize("mode", ["auto", "scan"])
@pytest.mark.parametrize("where", sorted(OUTSIDE))
def test_a_change_outside_any_test_is_an_outside_record_naming_the_phase(gate, where, mode):
    conftest, phase = OUTSIDE[where]
    groups = data_groups(gate)
    verified = time.time_ns()  # evgate's check before the process
    gate.pytester.makeconftest(conftest)
    gate.pytester.makepyfile(test_a="def test_a(): pass\ndef test_b(): pass\n")
    _, records = gate.run_records(f"--evidence-gate-lease={mode}", f"--evidence-gate-verified-ns={verified}",
                                  groups=groups)
    assert [r for r in records if r["event"] == "outside"] == [{"event": "outside", "phase": phase, "changed": ["data"]}]
    assert all(r["changed"] == [] and r["dirty"] == [] for r in results(records).values()), "no test is blamed"


def test_a_change_before_the_leases_start_needs_evgates_verified_time(gate):
    """What a conftest changes at import comes before the leases start: only the time evgate last
    verified the groups tells it from the state they were listed in."""
    groups = data_groups(gate)
    verified = time.time_ns()
    time.sleep(0.2)  # older than the racy window: only the verified time makes the plugin look
    gate.pytester.makeconftest('open("data/config.txt", "w").write("at import\\n")\n')
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    _, records = gate.run_records(groups=groups)
    assert [r for r in records if r["event"] == "outside"] == []  # unseen without it
    gate.records_path.unlink()
    (gate.path / "data/config.txt").write_text("pristine\n")
    _, records = gate.run_records(f"--evidence-gate-verified-ns={verified}", groups=groups)
    assert [r["phase"] for r in records if r["event"] == "outside"] == ["collection"]


@pytest.mark.parametrize("change", ["removed", "added"])
def test_a_file_removed_or_added_before_the_leases_start_is_a_change(gate, change):
    listed = write_groups(gate.path, data_groups(gate))  # as evgate listed the group
    verified = time.time_ns()
    time.sleep(0.2)
    if change == "removed":
        (gate.path / "data/config.txt").unlink()
    else:
        (gate.path / "data/new.txt").write_text("new\n")
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    _, records = gate.run_records(f"--evidence-gate-verified-ns={verified}", f"--evidence-gate-groups={listed}")
    assert [r["phase"] for r in records if r["event"] == "outside"] == ["collection"]
