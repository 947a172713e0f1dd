"""Runs at once over the same fixture groups: two ctest invocations over the same sources (two
build trees), and the seed runs of one suite under ctest -j2. Runs that only read go side by
side; a run beside one that changed the groups is run again, alone, so nobody's verdicts
carry another run's pollution."""
import re
import subprocess

from harness import EXAMPLES, Ledger, child_env, configure_example, ctest, repeated_orders, source_tree_untouched

EXAMPLE = EXAMPLES / "polluter-victim"


def test_two_build_trees_at_once_give_the_verdicts_of_one(build_dir, tmp_path):
    trees = [tmp_path / "a", tmp_path / "b"]
    with source_tree_untouched(EXAMPLE):
        for binary in trees:
            configure_example(EXAMPLE, binary, build_dir)
        runs = [subprocess.Popen(["ctest", "--test-dir", str(binary), "-L", "evidence", "-j2"], env=child_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for binary in trees]
        for run in runs:
            run.wait(timeout=600)
    for binary in trees:
        assert Ledger(binary, "billing").blocking() == [
            "tests/test_billing.py::test_apply_discount", "tests/test_billing.py::test_invoice_totals"]


# Seed runs of one suite go side by side over its fixture groups (ctest -j2): each test
# writes when it ran into a file named after its run (SPANS_DIR), so the harness can see the runs overlap.
SLOW_TESTS = '''
import os
import pathlib
import sys
import time

import pytest

DATA = pathlib.Path(__file__).resolve().parent.parent / "data" / "a.txt"


@pytest.fixture(autouse=True)
def span():
    start = time.time()
    yield
    run = next(a.split("=", 1)[1] for a in sys.argv if a.startswith("--evidence-gate-run="))  # a fork's own
    with open(os.path.join(os.environ["SPANS_DIR"], run + ".txt"), "a") as f:
        f.write(f"{start} {time.time()}\\n")


def test_polluter():
    if POLLUTE:
        DATA.write_text("polluted\\n")  # never declared with writes("data")
    time.sleep(0.6)


def test_victim():
    time.sleep(0.6)
    assert DATA.read_text() == "pristine\\n"
'''

SIDE_BY_SIDE_CMAKE = """cmake_minimum_required(VERSION 3.21)
project(side_by_side NONE)
enable_testing()
find_package(EvidenceGate CONFIG REQUIRED)
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/spans)
evidence_gate_add_suite(slow TESTS tests SEEDS 3 PERTURB OFF PER_TEST OFF LOCALISE 0
  ENVIRONMENT SPANS_DIR=${CMAKE_CURRENT_BINARY_DIR}/spans)
"""


def side_by_side_project(root, pollute):
    (root / "tests").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "data" / "a.txt").write_text("pristine\n")
    (root / "fixtures.manifest").write_text("data: data/*.txt\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "tests" / "test_slow.py").write_text(f"POLLUTE = {pollute}\n" + SLOW_TESTS)
    (root / "CMakeLists.txt").write_text(SIDE_BY_SIDE_CMAKE)


def seed_spans(binary):
    """{seed run: (first test start, last test end)} from what each run's tests wrote."""
    spans = {}
    for written in (binary / "spans").glob("seed.*.txt"):
        if not re.fullmatch(r"seed\.\d+", written.stem):
            continue
        times = [float(t) for line in written.read_text().split("\n") if line for t in line.split()]
        spans[written.stem] = (min(times), max(times))
    return spans


def test_seed_runs_that_only_read_their_fixture_groups_go_side_by_side(build_dir, tmp_path):
    root, binary = tmp_path / "src", tmp_path / "build"
    side_by_side_project(root, pollute=False)
    with source_tree_untouched(root):
        configure_example(root, binary, build_dir)
        result = ctest(binary, "-L", "evidence", "-j2", "-V")
    assert result.returncode == 0, result.describe()
    spans = sorted(seed_spans(binary).values())
    # Two tests have two orders: of seeds 0 to 3, those that would repeat one do not run.
    repeats = repeated_orders(binary, "slow")
    assert len(spans) == 4 - len(repeats) == 2, (spans, repeats)
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), f"no two seed runs overlapped: {spans}"
    assert "running it again" not in result.stdout, result.describe()


def test_a_run_beside_one_that_polluted_is_run_again_alone_and_the_verdicts_are_those_of_one_at_a_time(
        build_dir, tmp_path):
    ledgers = {}
    for jobs in ("-j2", "-j1"):
        root, binary = tmp_path / jobs / "src", tmp_path / jobs / "build"
        side_by_side_project(root, pollute=True)
        with source_tree_untouched(root):
            configure_example(root, binary, build_dir)
            result = ctest(binary, "-L", "evidence", jobs, "-V")
        assert result.returncode != 0, result.describe()  # the polluter blocks
        if jobs == "-j2":
            assert re.search(r"seed\.\d ran beside a run that changed the fixture groups; running it again, alone",
                             result.stdout), result.describe()
        ledgers[jobs] = Ledger(binary, "slow")
    assert ledgers["-j2"].verdicts() == ledgers["-j1"].verdicts() == {
        "tests/test_slow.py::test_polluter": ("polluter", "block"),
        "tests/test_slow.py::test_victim": ("order-dependent", "block"),
    }, f"{ledgers['-j2']}\n{ledgers['-j1']}"
