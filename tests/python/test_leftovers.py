"""Tests of templates/pytest/evidence_gate_leftovers.py: a change made while an earlier test's
thread or process still runs is blamed on nobody."""

import textwrap

import pytest

from conftest import data_groups, results, status_server_conftest


# ------------------------------------------------------------------ honest blame


LEFT_BEHIND = {
    "thread": """
        import threading, time

        def write_later():
            time.sleep(0.3)
            open("data/config.txt", "w").write("late\\n")

        def test_x():
            threading.Thread(target=write_later, name="late-writer", daemon=True).start()
    """,
    "process": """
        import subprocess, sys

        def test_x():
            subprocess.Popen([sys.executable, "-c",
                              "import time; time.sleep(0.3); open('data/config.txt', 'w').write('late')"])
    """,
}


@pytest.mark.parametrize("what", sorted(LEFT_BEHIND))
def test_a_change_while_an_earlier_tests_leftovers_run_is_blamed_on_nobody(gate, what):
    groups = data_groups(gate)
    gate.pytester.makepyfile(test_left=textwrap.dedent(LEFT_BEHIND[what]) + textwrap.dedent("""
        import time

        def test_y():
            time.sleep(1.0)

        def test_z():
            pass
    """))
    _, records = gate.run_records(groups=groups)
    got = results(records)
    y = got["test_left.py::test_y"]
    assert (y["changed"], y["dirty"], y["unblamed"]) == (["data"], [], ["data"]), y
    kind = "a thread left by test_left.py::test_x ('late-writer')" if what == "thread" else \
        "a process left by test_left.py::test_x (pid "
    assert y["leftover"].startswith(kind), y
    assert "unblamed" not in got["test_left.py::test_z"]  # what was left is gone: blame is certain again
    assert "unblamed" not in got["test_left.py::test_x"]


def test_a_thread_a_test_joins_is_no_leftover(gate):
    groups = data_groups(gate)
    gate.pytester.makepyfile(test_joined="""
        import threading

        def test_x():
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()

        def test_y():
            open("data/config.txt", "w").write("polluted\\n")
    """)
    _, records = gate.run_records(groups=groups)
    y = results(records)["test_joined.py::test_y"]
    assert (y["dirty"], "unblamed" in y) == (["data"], False), y


@pytest.mark.parametrize("target", ["self.run_server", "threading.Event().wait"])
def test_only_pytest_rerunfailures_idle_server_thread_is_known(gate, target):
    # Its server thread runs nothing a test could see: a change is the test's. Any other thread
    # alive since start-up may have made it.
    groups = data_groups(gate)
    gate.pytester.makeconftest(status_server_conftest(target))
    gate.pytester.makepyfile(test_write='def test_y():\n    open("data/config.txt", "w").write("polluted\\n")\n')
    _, records = gate.run_records(groups=groups)
    y = results(records)["test_write.py::test_y"]
    if target == "self.run_server":
        assert (y["dirty"], "unblamed" in y) == (["data"], False), y
    else:
        assert (y["dirty"], y["unblamed"]) == ([], ["data"]), y
        assert y["leftover"].startswith("a thread started at start-up or collection"), y
