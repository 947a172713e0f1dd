"""Ctrl-C in the middle of a ctest (issue 25, item 7), as docs/pytest-process.md describes it:
the terminal sends SIGINT to ctest's foreground process group, ctest and the step it runs
alike; ctest exits at once, without waiting for the step, and evgate ends its pytest processes
(SIGTERM, then SIGKILL 2 s later), restores the fixture groups and exits on its own, within
seconds. What an earlier ctest left is no verdict of the interrupted one: `evgate verdict` and
the per-test entries say there is none, never the earlier run's block as current.
"""

import os
import signal
import subprocess
import time

from harness import processes_mentioning, run, step_output, wait_until_gone
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

SUITE = "faults"
POLLUTER = "tests/test_a.py::test_pollutes"

# The polluter blocks in the first ctest. In the second, SLOW=1 makes a test wait in the first
# seed run with the group changed, having said so in a file, and ignore SIGTERM: evgate then
# needs its 2 s to SIGKILL, which shows whether ctest waits for it.
TESTS = """
    import os
    import signal
    import sys
    import time
    from pathlib import Path

    def test_pollutes():
        Path("data/config.txt").write_text("polluted\\n")

    def test_waits_with_the_group_changed():
        if os.environ.get("SLOW") != "1" or "--evidence-gate-run=seed.0" not in sys.argv:
            return
        Path("data/config.txt").write_text("changed while the run was stopped\\n")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        Path(os.environ["MARKER"]).write_text("waiting\\n")
        time.sleep(120)
"""


def evgate_verdict(project, test):
    suite = project.evidence_dir() / "suite.json"
    return run([project.product / "tools" / "evgate", "verdict", "--suite", suite, "--test", test], timeout=60,
               env=project.env())


def test_ctrl_c_leaves_nothing_running_the_tree_whole_and_no_earlier_verdict_as_current(project):
    project.write("fixtures.manifest", "data: data/*.txt\n")
    project.write("data/config.txt", "pristine\n")
    project.write("tests/test_a.py", TESTS)
    project.suite("SEEDS 1 PERTURB OFF ISOLATION process TESTS tests")
    marker = project.tmp / "waiting"
    with project.checked():
        project.configured()
        first = project.evidence()
        assert first.ran.get(f"{SUITE}/{POLLUTER}") == "Failed", first.describe()
        before = evgate_verdict(project, POLLUTER)
        assert before.returncode == 1 and before.stdout.startswith("polluter: "), before.describe()

        ctest = subprocess.Popen(["ctest", "--test-dir", str(project.build), "-L", "evidence"],
                                 env=project.env(SLOW="1", MARKER=str(marker)), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while not marker.exists() and time.monotonic() < deadline:
            assert ctest.poll() is None, "ctest ended before the test changed the group"
            time.sleep(0.05)
        assert marker.exists(), "the slow test never started"
        steps = [pid for pid, cmdline in processes_mentioning(str(project.build)) if "--seed 0" in cmdline]
        assert steps, "no run step of seed 0 is running"
        os.killpg(ctest.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        sent = time.monotonic()
        ctest.wait(timeout=60)
        ctest_took = time.monotonic() - sent
        step_alive_after_ctest = any(os.path.exists(f"/proc/{pid}") for pid in steps)
        left = wait_until_gone(str(project.tmp), seconds=20)
        all_took = time.monotonic() - sent
        assert not left, f"processes left {all_took:.1f} s after Ctrl-C: {left}"
        # ctest does not wait for its step: the step outlives it, then ends by itself.
        assert ctest_took < 1.5 and step_alive_after_ctest, (
            f"ctest took {ctest_took:.1f} s to exit after Ctrl-C (step alive after it: {step_alive_after_ctest})")
        assert all_took < 15, f"the step took {all_took:.1f} s to end after Ctrl-C"
        project.check_tree()  # the group is restored (the check also runs when the block ends)

        # The first ctest's verdicts are no verdicts of this one.
        after = evgate_verdict(project, POLLUTER)
        assert after.returncode == 1 and after.stdout.startswith("no verdict: "), after.describe()
        assert "polluter" not in after.stdout, after.describe()
        for stale in ("ledger.jsonl", "report.html", "junit.xml", "verdicts.store"):
            assert not (project.evidence_dir() / stale).exists(), f"{stale} of the first ctest is still there"

        # The next ctest finds nothing to complete and judges as the first did.
        again = project.evidence()
        assert again.ran.get(f"{SUITE}/{POLLUTER}") == "Failed", again.describe()
        assert "left dirty by an interrupted run" not in (step_output(project.build, f"{SUITE}.fixtures") or "")
