"""The plugins teams run beside pytest, installed where the suite's pytest runs, each with the
behaviour docs/plugin.md documents (templates/pytest/evidence_gate_aside.py).

CTest runs this file once per leg of the pytest version matrix (pytestN.e2e.plugins), with the
leg's plugins venv (tests/pytest-matrix/pytestN-plugins.txt) first on PATH, so the consumer
projects find its python3: never with the default interpreter, which has none of the plugins.
Every scenario checks that the consumer's source tree is byte-identical afterwards: no
.pytest_cache, no .coverage, no coverage.xml.
"""

import importlib.util
import json

import pytest

from harness import Ledger, gate_summary

PLUGIN_MODULES = ("xdist", "pytest_randomly", "random_order", "pytest_rerunfailures", "pytest_timeout", "pytest_cov")
SUITE = "plugins"
# The collection order, one shuffled order, nothing else: what each scenario shows needs no more.
ARGUMENTS = "TESTS tests SEEDS 1 PERTURB OFF PER_TEST OFF"
# The same and the perturbed run, which is never a fork: a process that must not start xdist's workers.
WITH_A_PROCESS = "TESTS tests SEEDS 1 PER_TEST OFF"


@pytest.fixture(autouse=True)
def plugins_installed():
    missing = [name for name in PLUGIN_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        pytest.fail(f"this interpreter lacks {missing}: run this file with a plugins venv of the pytest matrix "
                    "(scripts/pytest-matrix; ctest -L pytest-matrix)", pytrace=False)


def evidence(project):
    """(the ledger, the receipt, {run: isolation}) of the suite."""
    ledger = Ledger(project.build, SUITE)
    receipt = json.loads((project.evidence_dir(SUITE) / "receipt.json").read_text())
    isolations = {path.stem: json.loads(path.read_text().splitlines()[-1]).get("isolation")
                  for path in (project.evidence_dir(SUITE) / "runs").glob("*.jsonl")
                  if not path.name.endswith(".order.jsonl")}
    return ledger, receipt, isolations


def set_aside_row(ledger):
    rows = [row for row in ledger.suite_rows if row["test"] == "set-aside"]
    assert len(rows) == 1 and rows[0]["gate"] == "pass", ledger
    return rows[0]["reason"]


def expect_this_pytest(receipt):
    """The consumer's pytest is this leg's, with the plugins that stay loaded: what the matrix means
    to test. The reorderers are blocked, pytest-rerunfailures is unregistered once configured."""
    assert receipt["pytest_version"] == pytest.__version__, receipt["pytest_version"]
    loaded = {plugin["dist"] for plugin in receipt["plugins"]}
    assert {"pytest-xdist", "pytest-timeout", "pytest-cov"} <= loaded, receipt["plugins"]
    assert not loaded & {"pytest-randomly", "pytest-random-order", "pytest-rerunfailures"}, receipt["plugins"]


def test_a_healthy_suite_passes_with_xdist_reorderers_and_coverage_set_aside(project):
    # Options teams commit: workers, a reorderer's seed, coverage with a report beside the sources.
    project.write("pytest.ini", """\
        [pytest]
        addopts = -n 2 --dist loadscope -p randomly --randomly-seed=12345 --random-order --cov=mylib --cov-report=xml
                  --strict-markers
        """)
    project.write("mylib.py", "def double(x):\n    return 2 * x\n")
    project.write("tests/test_suite.py", """\
        import random

        import pytest

        import mylib


        def test_worker_id_is_xdists_without_workers(worker_id):
            assert worker_id == "master"


        @pytest.mark.xdist_group("one")
        def test_random_is_reseeded_by_evidence_gate_alone(request):
            # pytest-randomly, were it on, would reseed random with its own seed at setup.
            seed = request.config.getoption("evidence_gate_seed")
            assert random.random() == random.Random(f"evidence-gate:{seed}:{request.node.nodeid}").random()


        def test_uses_the_library():
            assert mylib.double(2) == 4
        """)
    # A suite's own -p randomly, in addopts or PYTEST_ARGS, cannot undo evgate's -p no:randomly.
    project.suite(f"{WITH_A_PROCESS} PYTEST_ARGS -p randomly", name=SUITE)
    project.configured()
    with project.checked():
        result = project.evidence()
    ledger, receipt, isolations = evidence(project)
    assert result.returncode == 0 and gate_summary(project.build, SUITE) == "PASSED", result.describe()
    assert {row["verdict"] for row in ledger.test_rows} == {"stable"} and len(ledger.test_rows) == 3, ledger
    assert any("perturbed" in row["outcomes"] for row in ledger.test_rows), ledger
    expect_this_pytest(receipt)
    reason = set_aside_row(ledger)
    for phrase in ("pytest-xdist's -n 2, --dist loadscope: every run is one order in one process",
                   "pytest-randomly's --randomly-seed=12345: off in evidence runs",
                   "pytest-random-order's --random-order: off in evidence runs",
                   "pytest-cov's --cov=mylib: no coverage in evidence runs"):
        assert phrase in reason, reason
    # pytest-rerunfailures, with pytest-xdist installed, leaves a thread of its own alive: forks
    # go on all the same.
    assert {run: isolation for run, isolation in isolations.items() if not run.startswith("perturbed")} and \
        {isolation for run, isolation in isolations.items() if not run.startswith("perturbed")} == {"fork"}, isolations


def test_a_rerun_never_hides_a_failure_and_timeouts_fail_the_test(project):
    # --sw would stop every run at the first failure, --ff would move failures first.
    project.write("pytest.ini", """\
        [pytest]
        addopts = --reruns 2 --timeout 1 --sw --ff --strict-markers
        """)
    project.write("tests/test_suite.py", """\
        import time

        import pytest

        attempts = []
        marked_attempts = []


        def test_passes_on_a_rerun():
            attempts.append(1)
            assert len(attempts) > 1, "fails at its first attempt in a process"


        @pytest.mark.flaky(reruns=3)
        def test_marked_flaky_passes_on_a_rerun():
            marked_attempts.append(1)
            assert len(marked_attempts) > 1, "fails at its first attempt in a process"


        def test_sleeps_past_the_timeout():
            time.sleep(30)


        @pytest.mark.timeout(1, method="thread")
        def test_sleeps_past_a_thread_timeout():
            time.sleep(30)


        def test_after_them():
            pass
        """)
    project.suite(ARGUMENTS, name=SUITE)
    project.configured()
    with project.checked():
        result = project.evidence()
    ledger, receipt, _ = evidence(project)
    assert result.returncode != 0 and gate_summary(project.build, SUITE) == "BLOCKED", result.describe()
    rows = {test.split("::")[-1]: row for test, row in ledger.tests.items()}
    verdicts = {test: row["verdict"] for test, row in rows.items()}
    assert verdicts == {"test_passes_on_a_rerun": "failing", "test_marked_flaky_passes_on_a_rerun": "failing",
                        "test_sleeps_past_the_timeout": "failing", "test_sleeps_past_a_thread_timeout": "interrupted",
                        "test_after_them": "stable"}, ledger
    # pytest-timeout's own timeout (signal method): the test fails, and says why.
    assert "Timeout" in rows["test_sleeps_past_the_timeout"]["reason"], rows["test_sleeps_past_the_timeout"]
    reason = set_aside_row(ledger)
    for phrase in ("pytest's cache's --sw, --ff: off in evidence runs",
                   "pytest-rerunfailures's --reruns 2, @pytest.mark.flaky on 1 test(s): no test is rerun inside a run"):
        assert phrase in reason, reason
    assert not ledger.blocking_suite_rows(), ledger
    expect_this_pytest(receipt)
