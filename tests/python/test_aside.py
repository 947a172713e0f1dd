"""Tests of templates/pytest/evidence_gate_aside.py: what an evidence run sets aside of the suite's
own pytest setup, accepted unedited and named. The real pytest-xdist, pytest-cov, pytest-randomly
and pytest-rerunfailures are tested in tests/e2e/test_plugins.py, on every pytest of the matrix.
"""

import json

from conftest import only, results, started


def collect_document(gate, *args):
    out = gate.path / "collect.json"
    result = gate.run("--collect-only", f"--evidence-gate-collect={out}", *args)
    return result, json.loads(out.read_text(encoding="utf-8"))


CACHE_WHY = "off in evidence runs: nothing is written beside the sources, every run starts as on a fresh checkout"


def test_the_caches_options_in_addopts_parse_and_are_set_aside(gate):
    # --sw would end the run at its first failure, --lf with --lfnf none would run no test where
    # nothing failed last time, --ff would put a failure first.
    gate.pytester.makeini("[pytest]\naddopts = --sw --lf --ff --lfnf none --cache-clear\n")
    gate.pytester.makepyfile(test_abc="def test_a(): assert 0\ndef test_b(): pass\ndef test_c(): pass\n")
    order = ["test_abc.py::test_c", "test_abc.py::test_a", "test_abc.py::test_b"]
    result, records = gate.run_records(order=order)
    assert started(records) == order
    assert {test: r["outcome"] for test, r in results(records).items()} == {
        "test_abc.py::test_a": "failed", "test_abc.py::test_b": "passed", "test_abc.py::test_c": "passed"}
    result.stdout.fnmatch_lines(
        [f"evidence-gate: set aside pytest's cache's --sw, --lf, --ff, --lfnf=none, --cache-clear: {CACHE_WHY}"])
    assert not (gate.path / ".pytest_cache").exists()
    _, document = collect_document(gate)
    assert document["set_aside"] == [f"pytest's cache's --sw, --lf, --ff, --lfnf=none, --cache-clear: {CACHE_WHY}"]


def test_nothing_is_set_aside_where_the_suite_gives_nothing(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert only(records, "end")["exitstatus"] == 0
    assert "set aside" not in result.stdout.str()
    assert collect_document(gate)[1]["set_aside"] == []


def test_with_the_cache_on_its_options_are_pytests_own(gate):
    # By hand, without -p no:cacheprovider: no stand-in for --lf, which pytest defines itself.
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result = gate.pytester.runpytest_subprocess("-p", "evidence_gate_pytest", "--lf",
                                                f"--evidence-gate-records={gate.records_path}")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["run-last-failure: *"])
    assert "set aside" not in result.stdout.str()


def test_an_installed_reorderers_options_are_set_aside_with_it(gate, fake_randomly):
    gate.pytester.makeini("[pytest]\naddopts = --randomly-seed 1234 --randomly-dont-reorganize\n")
    result, records = gate.run_records("-p", "no:randomly", order=fake_randomly)
    assert started(records) == fake_randomly
    result.stdout.fnmatch_lines(["evidence-gate: set aside pytest-randomly's --randomly-seed=1234, "
                                 "--randomly-dont-reorganize: off in evidence runs: the order is evidence-gate's"])


def test_a_reorderers_options_stay_unknown_where_it_is_not_installed(gate):
    # As wrong as in a plain pytest: nothing to set aside, so nothing is made to parse.
    gate.pytester.makeini("[pytest]\naddopts = --randomly-seed 1234\n")
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records("-p", "no:randomly")
    assert result.ret == 4 and records == []
    result.stderr.fnmatch_lines(["*unrecognized arguments: --randomly-seed*"])


# A stand-in for pytest-rerunfailures, registered under its name: its option, ini key and marker,
# and a protocol that takes every test over (its reruns) and here runs none of them.
RERUNFAILURES = """
def pytest_addoption(parser):
    parser.addoption("--reruns", type=int)
    parser.addini("reruns", "reruns")

def pytest_configure(config):
    config.addinivalue_line("markers", "flaky: rerun")

def pytest_runtest_protocol(item, nextitem):
    return True
"""


def test_rerunfailures_is_unregistered_once_configured_so_no_test_is_rerun(gate):
    gate.pytester.makepyfile(rerunfailures=RERUNFAILURES)
    gate.pytester.makeini("[pytest]\naddopts = -p rerunfailures --reruns 2 --strict-markers\n")
    gate.pytester.makepyfile(test_a="import pytest\n\n@pytest.mark.flaky\ndef test_a(): assert 0\n"
                                    "def test_b(): pass\n")
    result, records = gate.run_records()
    assert {test: r["outcome"] for test, r in results(records).items()} == {
        "test_a.py::test_a": "failed", "test_a.py::test_b": "passed"}
    why = ("no test is rerun inside a run, so a failure shows; evidence-gate reruns whole orders "
           "to tell flaky from order-dependent")
    _, document = collect_document(gate)
    assert document["set_aside"] == [f"pytest-rerunfailures's --reruns 2, @pytest.mark.flaky on 1 test(s): {why}"]
    # Unregistered only in evidence runs: by hand it takes the tests over as it would.
    by_hand = gate.pytester.runpytest_subprocess("-p", "evidence_gate_pytest", "-p", "no:cacheprovider")
    outcomes = by_hand.parseoutcomes()  # its protocol ran no test
    assert by_hand.ret == 0 and "failed" not in outcomes and "passed" not in outcomes, by_hand.stdout.str()
    assert "warning" not in by_hand.stdout.str()
