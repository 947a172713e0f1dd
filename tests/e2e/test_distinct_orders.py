"""Orders that cannot differ are not run twice (issue 25, item 8): a suite of one test has one
order, so its seeds 1..SEEDS and its alone pass would only run seed 0's order again. They are
skipped, reruns still run where the evidence needs them, and the ledger's `orders` row says
how many distinct orders ran and why.
"""

import json

from harness import FAST, Ledger, gate_summary, step_output
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

SUITE = "faults"
ONE = "tests/test_one.py::test_one"


def plans(project):
    return sorted(p.name[:-len(".plan.json")] for p in (project.evidence_dir() / "runs").glob("*.plan.json"))


def orders_row(project):
    [row] = [r for r in Ledger(project.build, SUITE).suite_rows if r["test"] == "orders"]
    return row


def test_a_one_test_suite_runs_one_seed_order_and_the_ledger_says_why(project):
    project.write("tests/test_one.py", "def test_one():\n    pass\n")
    project.suite("TESTS tests")  # the defaults: SEEDS 8, PERTURB ON, ALONE AUTO
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0 and gate_summary(project.build) == "PASSED", result.describe()
        assert result.ran[f"{SUITE}.seed.0"] == "Passed", result.describe()
        repeated = [f"{SUITE}.seed.{k}" for k in range(1, 9)] + [f"{SUITE}.alone"]
        assert sorted(result.not_run) == sorted((name, "Skipped") for name in repeated), result.describe()
        assert "would run the order seed.0 runs (1 test collected): not run again" in step_output(project.build, f"{SUITE}.seed.3")
        # One seed order, and the perturbed run (another environment, not another order).
        assert plans(project) == ["perturbed", "seed.0"], plans(project)
        row = orders_row(project)
        assert row["gate"] == "pass" and row["reason"].startswith("1 distinct order from 9 seeds: "), row
        assert "seed.1, seed.2, seed.3, seed.4 and 5 more would run seed.0's order, so they did not run again" in row["reason"], row
        assert row["reason"].endswith("(1 test has one order)"), row
        assert Ledger(project.build, SUITE).tests[ONE]["outcomes"] == {"seed.0": "passed", "perturbed": "passed"}


def test_a_failing_one_test_suite_still_gets_the_rerun_its_verdict_needs(project):
    project.write("tests/test_one.py", "def test_one():\n    assert False, 'broken'\n")
    project.suite("TESTS tests PERTURB OFF")
    with project.checked():
        project.configured()
        project.evidence()
        row = Ledger(project.build, SUITE).tests[ONE]
        # alone.1: the rerun that tells a failing test from one that needs another first.
        assert row["verdict"] == "failing" and row["outcomes"] == {"seed.0": "failed", "alone.1": "failed"}, row


def test_a_two_test_suite_runs_its_two_orders_once_each(project):
    project.write("tests/test_two.py", "def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    project.suite(f"{FAST.replace('SEEDS 1', 'SEEDS 6')} TESTS tests ORDERS global")
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode == 0, result.describe()
        receipt = json.loads((project.evidence_dir() / "receipt.json").read_text())
        assert receipt["orders"]["seeds"] == 7 and receipt["orders"]["distinct"] == 2, receipt["orders"]
        seeds = [p for p in plans(project) if p.startswith("seed.")]
        orders = {tuple(json.loads((project.evidence_dir() / "runs" / f"{p}.plan.json").read_text())["tests"]) for p in seeds}
        assert len(seeds) == 2 and len(orders) == 2, seeds  # every run a different order
        row = orders_row(project)
        assert row["reason"].startswith("2 distinct orders from 7 seeds: ") and "(2 tests have at most 2 orders)" in row["reason"], row


def test_distinct_orders_each_run_once_and_the_row_says_so(project):
    project.write("tests/test_many.py", "".join(f"def test_{n}():\n    pass\n\n" for n in range(8)))
    project.suite(f"{FAST.replace('SEEDS 1', 'SEEDS 4')} TESTS tests")
    with project.checked():
        project.configured()
        project.evidence()
        assert orders_row(project)["reason"] == "5 distinct orders from 5 seeds, each run once"
        assert [p for p in plans(project) if p.startswith("seed.")] == [f"seed.{k}" for k in range(5)]
