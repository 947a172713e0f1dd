"""The fault matrix, part four: evidence that accumulates, and never hides a change.

A second ``ctest`` on a tree where nothing changed keeps the first one's runs and adds new
orders (runs/evidence_reuse.hpp). Each scenario here changes one thing the runs depend on
between two ``ctest`` runs — a test file, a conftest, a variable the manifest records, a
module the build makes — in a way that turns a passing test into a failing one, and asserts
that nothing was kept and the change shows: a reuse that ignored it would keep the first run's
passes (its ledger would say so in a ``reuse`` row, and the gate would not see the failure in
the kept orders). Each goes through real CMake and CTest (``Project.checked()``: the source tree
byte-identical afterwards).
"""

import json

from harness import SUITE, gate_summary, step_output

SUITE_ARGS = "SEEDS 2 PERTURB OFF PER_TEST OFF TESTS tests"


def suite_rows(project):
    return {row["test"]: row for row in project.ledger().suite_rows}


def receipt(project):
    return json.loads((project.evidence_dir() / "receipt.json").read_text())


def run_receipts(project):
    """Run id -> the receipt its records were finished under."""
    out = {}
    for path in (project.evidence_dir() / "runs").glob("*.jsonl"):
        out[path.name[:-len(".jsonl")]] = json.loads(path.read_text().splitlines()[-1]).get("receipt")
    return out


def first_ctest(project):
    project.configured()
    result = project.evidence()
    assert gate_summary(project.build) == "PASSED", f"the first ctest must pass:\n{result.describe()}\n{project.ledger()}"
    assert (project.evidence_dir() / "reuse.json").is_file(), "the ledger step must leave what the next ctest may keep"


def nothing_kept(project, result, failing_test, what):
    rows = suite_rows(project)
    assert "reuse" not in rows, f"{what}: no run may be kept:\n{project.ledger()}"
    current = receipt(project)["receipt_id"]
    stale = {run: r for run, r in run_receipts(project).items() if r != current}
    assert not stale, f"{what}: runs of the earlier receipt are still there: {stale}"
    assert receipt(project)["reuse"]["kept"] == [] and receipt(project)["orders"]["first"] == 0, receipt(project)["reuse"]
    row = project.ledger().tests[failing_test]
    assert row["verdict"] == "failing" and row["gate"] == "block", f"{what}: the change must show:\n{project.ledger()}"
    assert result.returncode != 0


def test_an_unchanged_tree_keeps_the_runs_and_adds_new_orders(project):
    """The positive case, so that the scenarios below cannot pass for want of any reuse: the
    second ctest keeps every run of the first, runs seeds 3..5, says so in a `reuse` row, and
    each test's row counts the orders of both."""
    project.write("tests/test_a.py", """
        def test_one():
            pass

        def test_two():
            pass

        def test_three():
            pass

        def test_four():
            pass
    """)
    project.suite(SUITE_ARGS)
    with project.checked():
        first_ctest(project)
        first_id = receipt(project)["receipt_id"]
        first_orders = project.ledger().tests["tests/test_a.py::test_one"]["orders"]
        result = project.evidence()
        assert gate_summary(project.build) == "PASSED", result.describe()
        rows = suite_rows(project)
        assert "reuse" in rows and "seeds 3..5" in rows["reuse"]["reason"], project.ledger()
        assert receipt(project)["orders"]["first"] == 3, receipt(project)["orders"]
        receipts = run_receipts(project)
        assert receipts["seed.0"] == first_id and receipts["seed.3"] == receipt(project)["receipt_id"], receipts
        assert project.ledger().tests["tests/test_a.py::test_one"]["orders"] > first_orders, project.ledger()
        said = step_output(project.build, f"{SUITE}.receipt")
        assert "nothing the runs depend on changed" in said and "are kept" in said, said


def test_an_edited_test_file_runs_everything_again(project):
    project.write("tests/test_a.py", """
        LIMIT = 10

        def test_limit():
            assert LIMIT >= 10

        def test_other():
            pass
    """)
    project.suite(SUITE_ARGS)
    with project.checked():
        first_ctest(project)
        project.write("tests/test_a.py", """
            LIMIT = 9

            def test_limit():
                assert LIMIT >= 10

            def test_other():
                pass
        """)
        project.seal()
        result = project.evidence()
        nothing_kept(project, result, "tests/test_a.py::test_limit", "an edited test file")


def test_an_edited_conftest_runs_everything_again(project):
    project.write("tests/conftest.py", """
        import pytest

        @pytest.fixture
        def budget():
            return 100
    """)
    project.write("tests/test_a.py", """
        def test_budget(budget):
            assert budget >= 100

        def test_other():
            pass
    """)
    project.suite(SUITE_ARGS)
    with project.checked():
        first_ctest(project)
        project.write("tests/conftest.py", """
            import pytest

            @pytest.fixture
            def budget():
                return 99
        """)
        project.seal()
        result = project.evidence()
        nothing_kept(project, result, "tests/test_a.py::test_budget", "an edited conftest")


def test_a_changed_variable_the_manifest_records_runs_everything_again(project):
    """TZ: the manifest records its value. The test passes in UTC and fails in Tokyo."""
    project.write("tests/test_a.py", """
        import time

        def test_utc_offset():
            assert time.localtime(0).tm_hour == 0

        def test_other():
            pass
    """)
    project.suite(SUITE_ARGS)
    with project.checked():
        project.configured()
        result = project.ctest("-L", "evidence", env_extra={"TZ": "UTC"})
        assert gate_summary(project.build) == "PASSED", result.describe()
        result = project.ctest("-L", "evidence", env_extra={"TZ": "Asia/Tokyo"})
        nothing_kept(project, result, "tests/test_a.py::test_utc_offset", "TZ changed")
        said = step_output(project.build, f"{SUITE}.receipt")
        assert "the environment manifest" in said and "every run starts over" in said, said


def rebuilt_library(project, depends, what):
    """A C library the build makes, loaded with ctypes when the test module is imported (as a
    binding loads the library it wraps); `depends`: named in DEPENDS. Rebuilt with another
    constant, its test fails, and nothing of the first run may be kept."""
    project.write("native/limit.c", "int limit(void) { return 10; }\n")
    project.write("tests/test_native.py", """
        import ctypes
        import os

        LIB = ctypes.CDLL(os.environ["LIMIT_LIBRARY"])

        def test_limit():
            assert LIB.limit() >= 10

        def test_other():
            pass
    """)
    project.suite(SUITE_ARGS + " ENVIRONMENT LIMIT_LIBRARY=$<TARGET_FILE:limit>" + (" DEPENDS limit" if depends else ""),
                  before="enable_language(C)\nadd_library(limit SHARED native/limit.c)")
    with project.checked():
        project.configured()
        build = project.build_target("limit")
        assert build.returncode == 0, build.describe()
        result = project.evidence()
        assert gate_summary(project.build) == "PASSED", result.describe()
        built = [entry["path"] for entry in receipt(project)["built"]]
        assert any(path.endswith("liblimit.so") for path in built), built
        project.write("native/limit.c", "int limit(void) { return 9; }\n")
        project.seal()
        build = project.build_target("limit")
        assert build.returncode == 0, build.describe()
        result = project.evidence()
        nothing_kept(project, result, "tests/test_native.py::test_limit", what)


def test_a_rebuilt_module_runs_everything_again(project):
    """The library is a DEPENDS target: the receipt digests its file."""
    rebuilt_library(project, depends=True, what="a rebuilt DEPENDS library")


def test_a_rebuilt_library_a_module_loads_at_import_runs_everything_again(project):
    """The library is not in DEPENDS: the collection's process has it mapped, so the receipt
    lists it among the binaries under test all the same."""
    rebuilt_library(project, depends=False, what="a rebuilt library loaded at import")


def alone_counts(project):
    """(tests run alone so far, tests) from the ledger's `alone-pass` row; None once all have."""
    row = suite_rows(project).get("alone-pass")
    if row is None:
        return None
    ran, _, tests = row["reason"].split(" tests have run alone")[0].partition(" of ")
    return int(ran), int(tests)


def test_the_alone_pass_stops_at_its_budget_and_the_next_ctest_goes_on_where_it_stopped(project):
    """ALONE AUTO spends at most a quarter of the seed runs' time or 5 s a ctest (runs/alone_budget.hpp).
    Every test here sits in a module whose fixture takes 0.6 s: the seeds pay it once a run, the
    alone pass once a test (28 forks, over 8 s on 2 workers), so the first ctest cannot finish
    the pass. It must stop, say how far it got in an `alone-pass` row, and each later ctest on
    the unchanged tree must keep the tests already run alone and run only new ones, until all
    have run alone and the row is gone."""
    tests = 28
    fixture = "import time\n\nimport pytest\n\n\n@pytest.fixture(scope='module')\ndef warm():\n    time.sleep(0.6)\n\n"
    project.write("tests/test_slow_module.py", fixture + "".join(f"\ndef test_{i:02d}(warm):\n    pass\n" for i in range(tests)))
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        first_ctest(project)
        counts = alone_counts(project)
        assert counts is not None and counts[1] == tests and 0 < counts[0] < tests, (
            f"the first ctest must stop the pass at its budget:\n{project.ledger()}\n"
            f"{step_output(project.build, f'{SUITE}.alone')}")
        said = step_output(project.build, f"{SUITE}.alone")
        assert f"{tests - counts[0]} left for the next ctest on this tree" in said, said
        for _ in range(tests):  # each ctest runs at least one more test alone
            before = counts[0]
            result = project.evidence()
            assert gate_summary(project.build) == "PASSED", result.describe()
            said = step_output(project.build, f"{SUITE}.alone")
            assert f"{before} kept from an earlier ctest" in said, said
            counts = alone_counts(project)
            if counts is None:
                break
            assert counts[0] > before, f"a later ctest must go on with the pass:\n{said}\n{project.ledger()}"
        assert counts is None, f"the pass never finished:\n{project.ledger()}"
        alone_runs = [p for p in (project.evidence_dir() / "runs").glob("first.*.plan.json") if p.name.count(".") == 3]
        assert len(alone_runs) == tests, sorted(p.name for p in alone_runs)
