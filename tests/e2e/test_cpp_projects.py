"""What a C++ project's suite needs from the CMake API, on small generated projects (no
compiler: an IMPORTED target stands for what the build makes).

Generator expressions in PYTHON, PYTEST_ARGS, ENVIRONMENT and both search paths, per
configuration; DEPENDS and the first ctest after the build; a collection that failed is
never kept; the C++ loop (``ctest -LE evidence``) starts no Python; baseline-update only when
asked; no interpreter with pytest is one failing test, not a failed configure.
"""

import stat
import sys

import pytest

from harness import (FAST, ctest, ctest_names, expect_message, gate_summary, ninja_or_default, repeated_steps, run,
                     tool)
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

# A target the "build" makes: an IMPORTED library whose file is in the build tree, its
# directory holding a Python module once "built".
BUILT_TARGET = """
add_library(geo_module SHARED IMPORTED)
set_target_properties(geo_module PROPERTIES IMPORTED_LOCATION "${CMAKE_CURRENT_BINARY_DIR}/out/libgeo_module.so")
"""
# The interpreter as an IMPORTED executable: $<TARGET_FILE:py> names it only at generation.
INTERPRETER_TARGET = """
add_executable(py IMPORTED)
set_target_properties(py PROPERTIES IMPORTED_LOCATION "${CMAKE_CURRENT_SOURCE_DIR}/bin/python")
"""


def build(project):
    """What `cmake --build` would do for BUILT_TARGET: the library and the module beside it."""
    out = project.build / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "libgeo_module.so").write_text("not really a library\n")
    (out / "geo_module.py").write_text("def area():\n    return 1.0\n")


def python_wrapper(project, log=None):
    """bin/python in ROOT: runs this interpreter (it has pytest), marking its children, and
    logging every start to `log` when given."""
    line = f'echo "$@" >> "{log}"\n' if log else ""
    path = project.write("bin/python", f"#!/bin/sh\n{line}EVIDENCE_TEST_WRAPPER=1 exec {sys.executable} \"$@\"\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


# keyword: (arguments, test file) -- the test passes only when the expression was expanded.
GENERATOR_EXPRESSIONS = {
    "ENVIRONMENT": ('ENVIRONMENT "GEO_DIR=$<TARGET_FILE_DIR:geo_module>"', """
        import os

        def test_expanded():
            assert os.environ["GEO_DIR"] == os.path.join(os.environ["BUILD_DIR"], "out")
    """),
    "PYTEST_ARGS": ('PYTEST_ARGS -o "pythonpath=$<TARGET_FILE_DIR:geo_module>"', """
        import geo_module

        def test_expanded():
            assert geo_module.area() == 1.0
    """),
    "PYTHON": ("PYTHON $<TARGET_FILE:py>", """
        import os

        def test_expanded():
            assert os.environ.get("EVIDENCE_TEST_WRAPPER") == "1"
    """),
    "PYTHON_PATH_PREPEND": ("PYTHON_PATH_PREPEND $<TARGET_FILE_DIR:geo_module>", """
        import os
        import sys

        import geo_module

        def test_expanded():
            assert geo_module.area() == 1.0
            # After the plugin's directory, never in place of it.
            assert "evidence_gate_pytest" in sys.modules
    """),
    "LIBRARY_PATH_PREPEND": ("LIBRARY_PATH_PREPEND $<TARGET_FILE_DIR:geo_module> /opt/geo/lib", """
        import os

        def test_expanded():
            paths = os.environ["LD_LIBRARY_PATH"].split(":")
            assert paths[:2] == [os.path.join(os.environ["BUILD_DIR"], "out"), "/opt/geo/lib"]
    """),
}


@pytest.mark.parametrize("keyword", sorted(GENERATOR_EXPRESSIONS))
def test_generator_expressions_are_evaluated(project, keyword):
    arguments, test = GENERATOR_EXPRESSIONS[keyword]
    project.write("tests/test_expanded.py", test)
    python_wrapper(project)
    project.suite(f"{FAST} TESTS tests {arguments}", before=BUILT_TARGET + INTERPRETER_TARGET)
    build(project)
    with project.checked():
        project.configured()
        result = project_ctest(project)
        assert result.returncode == 0, result.describe()
        assert gate_summary(project.build) == "PASSED", result.describe()


def project_ctest(project, *args, **env):
    """ctest -L evidence with BUILD_DIR (and `env`) in its environment, which pytest inherits."""
    return project._record(ctest(project.build, "-j2", "-L", "evidence", *args,
                                 env=project.env(BUILD_DIR=str(project.build), **env)))


def test_generator_expressions_are_evaluated_per_configuration(project):
    """A multi-config generator: one suite.json per configuration, the one of ctest's -C used."""
    if ninja_or_default() is None:
        pytest.skip("needs Ninja Multi-Config")
    project.write("tests/test_config.py", """
        import os

        def test_built_for_the_configuration_ctest_runs():
            assert os.environ["BUILD_KIND"] == os.environ["EXPECTED_KIND"]
    """)
    project.suite(f"{FAST} TESTS tests ENVIRONMENT BUILD_KIND=$<CONFIG>")
    with project.checked():
        configured = project._record(run([tool("cmake"), "-S", project.root, "-B", project.build, "-G",
                                          "Ninja Multi-Config", f"-DEvidenceGate_DIR={project.product}"],
                                         env=project.env(), timeout=120))
        assert configured.returncode == 0, configured.describe()
        for config in ("Debug", "Release"):
            result = project_ctest(project, "-C", config, EXPECTED_KIND=config)
            assert result.returncode == 0, result.describe()
            assert gate_summary(project.build) == "PASSED", result.describe()


def test_depends_not_built_is_one_failing_entry_and_the_next_ctest_has_every_entry(project):
    project.write("tests/test_geo.py", """
        import geo_module

        def test_area():
            assert geo_module.area() == 1.0

        def test_more():
            pass
    """)
    project.suite("SEEDS 1 PERTURB OFF TESTS tests PYTHON_PATH_PREPEND $<TARGET_FILE_DIR:geo_module> DEPENDS geo_module",
                  before=BUILT_TARGET)
    with project.checked():
        project.configured()
        before = project_ctest(project)
        assert before.ran["faults_NOT_BUILT"] == "Failed", before.describe()
        expect_message(before, r"geo_module: '.*/out/libgeo_module\.so' does not exist", "the entry names the target")
        assert "Passed" not in before.ran.values(), before.describe()
        build(project)
        after = project_ctest(project)
        assert after.returncode == 0, after.describe()
        assert sorted(n for n in after.ran if n.startswith("faults/")) == [
            "faults/tests/test_geo.py::test_area", "faults/tests/test_geo.py::test_more"], after.describe()


def test_a_collection_that_failed_is_not_kept_for_the_next_ctest(project):
    """Without DEPENDS: the ctest before the build collects with an import error (its receipt
    step fails, nothing runs); the very next ctest after the build has every entry."""
    project.write("tests/test_geo.py", """
        import geo_module

        def test_area():
            assert geo_module.area() == 1.0
    """)
    project.write("tests/test_plain.py", "def test_plain():\n    pass\n")
    project.suite("SEEDS 1 PERTURB OFF TESTS tests PYTEST_ARGS -o pythonpath=$<TARGET_FILE_DIR:geo_module>",
                  before=BUILT_TARGET)
    with project.checked():
        project.configured()
        before = project_ctest(project)
        assert before.ran.get("faults.receipt") == "Failed", before.describe()
        expect_message(before, r"collection error.*test_geo\.py", "the receipt names the collection error")
        runs = [name for name in before.ran if name.startswith("faults.seed.")]
        assert runs and all(before.ran[name] == "Not Run" for name in runs), before.describe()
        build(project)  # outside ROOT and outside every search path the fingerprint sees
        after = project_ctest(project)
        assert after.returncode == 0, after.describe()
        assert sorted(n for n in after.ran if n.startswith("faults/")) == [
            "faults/tests/test_geo.py::test_area", "faults/tests/test_plain.py::test_plain"], after.describe()


def test_the_cpp_loop_starts_no_python(project):
    log = project.tmp / "python-starts.log"
    python_wrapper(project, log)
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.suite("SEEDS 1 PERTURB OFF TESTS tests PYTHON ${CMAKE_CURRENT_SOURCE_DIR}/bin/python",
                  after="add_test(NAME cpp_unit COMMAND ${CMAKE_COMMAND} -E true)")
    with project.checked():
        project.configured()
        log.unlink(missing_ok=True)  # configure asked it for pytest's version
        result = project.ctest("-LE", "evidence")
        assert result.returncode == 0 and list(result.ran) == ["cpp_unit"], result.describe()
        assert not log.exists(), f"ctest -LE evidence started Python:\n{log.read_text()}"
        evidence = project.ctest("-L", "evidence")
        assert evidence.returncode == 0, evidence.describe()
        assert log.exists(), "the evidence run must have used the wrapper"


def test_baseline_update_is_there_only_when_asked(project):
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        names = ctest_names(project.build)
        assert "faults.baseline-update" not in names, names
        plain = project.ctest()
        # Nothing is skipped but what the receipt says would repeat the one test's one order.
        repeats = [(step, "Skipped") for step in repeated_steps(project.build, "faults")]
        assert plain.returncode == 0 and plain.not_run == repeats, plain.describe()
        asked = run([tool("ctest"), "--test-dir", project.build, "-N"], timeout=60,
                    env=project.env(EVIDENCE_GATE_UPDATE_BASELINE="0"))
        assert "faults.baseline-update" in asked.stdout, asked.describe()


def test_no_interpreter_with_pytest_is_one_failing_test_not_a_failed_configure(project):
    project.write("tests/test_a.py", "def test_a():\n    pass\n")
    project.suite(f"{FAST} TESTS tests PYTHON /bin/false", after="add_test(NAME cpp_unit COMMAND ${CMAKE_COMMAND} -E true)")
    with project.checked():
        configured = project.configured()
        expect_message(configured, r"CMake Warning .*no Python interpreter that can import pytest\. Tried: '/bin/false'",
                       "configure warns, naming what it tried")
        expect_message(configured, r"EVIDENCE_GATE_REQUIRE_PYTEST=ON", "the warning names the option")
        result = project.ctest()
        assert result.ran == {"faults_NO_PYTEST": "Failed", "cpp_unit": "Passed"}, result.describe()
        expect_message(result, r"no Python interpreter that can import pytest\. Tried: '/bin/false'", "the test says why")
        required = project.configure("EVIDENCE_GATE_REQUIRE_PYTEST=ON")
        assert required.returncode != 0, required.describe()
        expect_message(required, r"CMake Error .*no Python interpreter that can import pytest", "an error when required")
