"""examples/cpp-extension, as its README runs it: a C++ library with Catch2 tests, a pybind11
module built from it, and a pytest suite of that module wired with three lines of CMake.

One build tree, in the order a user meets it: ctest before the build (one failing entry
names the module that is not built, no step passes with zero results), ``ctest -LE
evidence`` (the C++ loop: no collection at all), the build, ``ctest -LE evidence`` again,
then the first full ``ctest`` after the build (every per-test entry is there), with
``--output-junit`` and ``-T Test`` to read what CI pages and CDash show.
"""

import hashlib
import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from harness import (BUILD_TIMEOUT, EXAMPLES, Ledger, cmake_configure, ctest, ninja_or_default, repeated_steps, run,
                     source_tree_untouched, tool)

EXAMPLE = EXAMPLES / "cpp-extension"
VICTIM = "tests/python/test_area.py::test_unit_square_has_area_one"
POLLUTER = "tests/python/test_units.py::test_distance_in_millimetres"
PYTHON_TESTS = [VICTIM, "tests/python/test_area.py::test_degenerate_polygon_has_no_area", POLLUTER,
                "tests/python/test_units.py::test_unit_must_be_positive"]
CATCH2_TESTS = ["geo_tests.distance is Euclidean",
                "geo_tests.the area of a polygon does not depend on the corners' direction",
                "geo_tests.a unit must be a positive length"]


def step_outputs(binary):
    """{test: output} of the last ctest run in binary; `-T Test` names its log LastTest_<time>.log."""
    [log] = sorted((binary / "Testing" / "Temporary").glob("LastTest*.log"), key=lambda p: p.stat().st_mtime)[-1:]
    pattern = re.compile(r"^\d+/\d+ Test: (.+?)\n.*?^Output:\n-+\n(.*?)<end of output>", re.M | re.S)
    return dict(pattern.findall(log.read_text(errors="replace")))


def sha256_of(path):
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def example(build_dir, tmp_path_factory):
    """Every phase's ctest run, in order, over one build tree of the example."""
    binary = tmp_path_factory.mktemp("cpp-extension") / "build"
    evidence = binary / "evidence" / "geo"
    phases = {}
    with source_tree_untouched(EXAMPLE):
        # The interpreter the module is built for runs its tests: this one has pytest.
        configured = cmake_configure(EXAMPLE, binary, f"EvidenceGate_DIR={build_dir}",
                                     f"Python3_EXECUTABLE={sys.executable}", generator=ninja_or_default())
        assert configured.returncode == 0, configured.describe()
        phases["configured"] = configured
        phases["before build"] = ctest(binary, "-j2")
        phases["-LE evidence, before build"] = ctest(binary, "-LE", "evidence")
        built = run([tool("cmake"), "--build", binary, "-j2"], timeout=BUILD_TIMEOUT)
        assert built.returncode == 0, built.describe()
        phases["-LE evidence"] = ctest(binary, "-LE", "evidence")
        phases["collected under -LE evidence"] = sorted(p.name for p in evidence.iterdir()) if evidence.is_dir() else []
        junit = binary / "ctest-junit.xml"
        phases["after build"] = ctest(binary, "-j2", "-T", "Test", "--output-junit", junit)
        phases["outputs"] = step_outputs(binary)
        phases["junit"] = ET.parse(junit).getroot()
        [phases["Test.xml"]] = [ET.parse(x).getroot() for x in binary.glob("Testing/*/Test.xml")]
        phases["ledger"] = Ledger(binary, "geo")
        phases["receipt"] = json.loads((evidence / "receipt.json").read_text())
        phases["module"] = module = next(binary.glob("pygeo*.so"))
        phases["module as built"] = (module.stat().st_size, sha256_of(module))
        # The module rebuilt from the same sources with other flags: another binary under test.
        rebuilt = run([tool("cmake"), "-DCMAKE_CXX_FLAGS=-O1", binary], timeout=BUILD_TIMEOUT)
        assert rebuilt.returncode == 0, rebuilt.describe()
        rebuilt = run([tool("cmake"), "--build", binary, "-j2", "--target", "pygeo"], timeout=BUILD_TIMEOUT)
        assert rebuilt.returncode == 0, rebuilt.describe()
        receipt_again = ctest(binary, "-R", r"^geo\.receipt$")
        assert receipt_again.ran.get("geo.receipt") == "Passed", receipt_again.describe()
        phases["receipt after a rebuild"] = json.loads((evidence / "receipt.json").read_text())
    return phases


def test_before_the_build_one_entry_says_the_module_is_not_built(example):
    run = example["before build"]
    assert run.ran.get("geo_NOT_BUILT") == "Failed", run.describe()
    output = run.stdout.split("geo_NOT_BUILT ", 1)[1]
    assert re.search(r"pygeo: '.*pygeo[^']*\.so' does not exist", output), output
    assert "cmake --build" in output, output
    # No step ran, so none passed with zero results; no collection, so no per-test entry.
    steps = [name for name in run.ran if name.startswith("geo.")]
    assert steps and all(run.ran[name] == "Not Run" for name in steps), run.describe()
    assert "Failed test dependencies: " in run.stdout and "geo_NOT_BUILT" in run.stdout
    assert not [name for name in run.ran if name.startswith("geo/")], run.describe()
    assert "Passed" not in run.ran.values(), run.describe()


def test_the_cpp_loop_runs_no_evidence_step_and_collects_nothing(example):
    before = example["-LE evidence, before build"]
    assert not [name for name in before.ran if name.startswith(("geo.", "geo/", "geo_NOT"))], before.describe()
    run = example["-LE evidence"]
    assert run.returncode == 0, run.describe()
    assert sorted(run.ran) == sorted(CATCH2_TESTS) and set(run.ran.values()) == {"Passed"}, run.describe()
    # ctest includes the file that runs discovery whatever it runs; with the evidence label
    # left out it collects nothing (no entries written, no pytest log, no fingerprint).
    assert not {"ctest-entries.cmake", "discover.fingerprint", "logs"} & set(example["collected under -LE evidence"]), (
        example["collected under -LE evidence"])


def test_the_first_ctest_after_the_build_has_every_per_test_entry(example):
    run = example["after build"]
    entries = sorted(name[len("geo/"):] for name in run.ran if name.startswith("geo/"))
    assert entries == sorted(PYTHON_TESTS), run.describe()
    assert all(run.ran[name] == "Passed" for name in CATCH2_TESTS), run.describe()
    assert run.failed_names == sorted(["geo.gate", f"geo/{VICTIM}"]), run.describe()
    # A plain ctest: no step skipped for nothing (baseline-update is registered only when asked);
    # a seed whose order an earlier seed ran is skipped, as the receipt says.
    assert run.not_run == [(step, "Skipped") for step in repeated_steps(run.binary, "geo")], run.describe()


def test_the_order_dependent_pair_through_module_state_blocks_with_its_partner(example):
    ledger = example["ledger"]
    assert ledger.blocking() == [VICTIM], str(ledger)
    row = ledger.tests[VICTIM]
    assert row["verdict"] == "order-dependent" and row["partner"] == POLLUTER, row
    assert all(ledger.tests[t]["verdict"] == "stable" for t in PYTHON_TESTS if t != VICTIM), str(ledger)


def test_a_failing_entry_says_why_first(example):
    run = example["after build"]
    reason = f"order-dependent: {example['ledger'].tests[VICTIM]['reason']}"
    output = example["outputs"][f"geo/{VICTIM}"]
    assert output.splitlines()[0] == reason, output
    # In the console: the status line carries no regex, the next line is the reason.
    console = run.stdout.split(f"geo/{VICTIM} ", 1)[1].splitlines()
    assert console[0].rstrip().endswith("sec") and "Regex" not in console[0], console[:2]
    assert console[1] == reason, console[:2]
    assert "Regex=" not in run.output and "<CTestDetails>" not in run.output, run.describe()
    # CDash's measurements go to the ledger step, which passes: --output-on-failure shows none.
    assert "CTestMeasurement" not in run.output, run.describe()


def test_ci_pages_and_cdash_find_the_reason(example):
    reason = f"order-dependent: {example['ledger'].tests[VICTIM]['reason']}"
    [case] = [c for c in example["junit"].iter("testcase") if c.get("name") == f"geo/{VICTIM}"]
    assert case.find("failure") is not None, ET.tostring(case)
    assert "Regex" not in (case.find("failure").get("message") or ""), ET.tostring(case)
    assert case.findtext("system-out").splitlines()[0] == reason, ET.tostring(case)
    [test] = [t for t in example["Test.xml"].iter("Test") if t.findtext("Name") == f"geo/{VICTIM}"]
    status = [m.findtext("Value") for m in test.iter("NamedMeasurement") if m.get("name") == "Completion Status"]
    assert status == [reason], ET.tostring(test)[:2000]
    ledger_step = [t for t in example["Test.xml"].iter("Test") if t.findtext("Name") == "geo.ledger"]
    names = {m.get("name") for t in ledger_step for m in t.iter("NamedMeasurement")}
    assert {"tests", "blocking", "deferred", "seeds", "runners"} <= names, names


def test_long_steps_say_what_they_do(example):
    rerun = example["outputs"]["geo.rerun"]
    planned = re.search(r"^evgate: geo: (\d+) rerun\(s\) to run: ", rerun, re.M)
    assert planned, rerun
    finished = re.findall(r"^evgate: geo: \S+: \d+ of \d+ tests ran", rerun[planned.end():], re.M)
    assert len(finished) >= int(planned.group(1)) > 0, rerun
    localise = example["outputs"]["geo.localise"]
    assert f"evgate: geo: localising {VICTIM} (at most" in localise, localise
    assert localise.index("localising") < localise.index(f"{VICTIM}: victim"), localise


def test_configure_says_which_interpreter_runs_the_suite_and_it_can_import_the_module(example):
    stdout = " ".join(example["configured"].stdout.split())
    assert (f"EvidenceGate: suite 'geo' runs pytest with '{sys.executable}'" in stdout
            and "Python3_EXECUTABLE, the interpreter this project found" in stdout), example["configured"].describe()
    assert "CMake Warning" not in example["configured"].stderr, example["configured"].describe()


def test_the_receipt_names_the_built_module_and_a_rebuild_changes_the_sources_digest(example):
    module = example["module"]
    size, digest = example["module as built"]
    before, after = example["receipt"], example["receipt after a rebuild"]
    assert before["built"] == [{"path": f"<build>/{module.name}", "target": "pygeo", "size": size, "digest": digest}], before
    [rebuilt] = after["built"]
    assert rebuilt["path"] == f"<build>/{module.name}" and rebuilt["digest"] == sha256_of(module), rebuilt
    assert rebuilt["digest"] != digest, "the rebuild with other flags made the same binary"
    assert after["sources"]["digest"] != before["sources"]["digest"], (before["sources"], after["sources"])
