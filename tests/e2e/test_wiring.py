"""What configuration checks of a suite's wiring into the project (issue 25, items 1 and 2):
whether ctest will see the suite at all (enable_testing(), and where to run ctest for a suite
declared in a subdirectory), which interpreter runs pytest and why, and whether it can import
the extension modules the suite DEPENDS on. Configuring is enough: no consumer is built or run,
but for one ctest -N that shows where the steps are registered.
"""

import json
import re
import stat
import sys
import sysconfig

import pytest

from harness import FAST, cmake_configure, ctest_names, normalized
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

TEST_FILE = "def test_a():\n    pass\n"


def consumer(project, top, sub=None):
    """ROOT's CMakeLists.txt is `top`; with `sub`, the suite is declared in sub/CMakeLists.txt."""
    project.write("pytest.ini", "[pytest]\n")
    project.write("tests/test_a.py", TEST_FILE)
    project.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.21)\nproject(wiring NONE)\n"
                                    "find_package(EvidenceGate CONFIG REQUIRED)\n" + top)
    if sub is not None:
        project.write("sub/pytest.ini", "[pytest]\n")
        project.write("sub/tests/test_a.py", TEST_FILE)
        project.write("sub/CMakeLists.txt", sub)


SUITE_CALL = f"evidence_gate_add_suite(faults TESTS tests {FAST})\n"


def warnings_of(result):
    return [normalized(w) for w in result.stderr.split("CMake Warning")[1:]]


def test_a_suite_in_a_subdirectory_that_enables_testing_names_the_directory_to_run_ctest_in(project):
    consumer(project, "add_subdirectory(sub)\n", sub="enable_testing()\n" + SUITE_CALL)
    with project.checked():
        result = project.configured()
        [warning] = [w for w in warnings_of(result) if "EvidenceGate" in w]
        assert f"ctest in '{project.build}' does not reach suite 'faults'" in warning, result.describe()
        assert f"testing is not enabled in '{project.root}'" in warning, result.describe()
        assert f"ctest --test-dir '{project.build / 'sub'}'" in warning, result.describe()
        assert f"Path: '{project.root / 'CMakeLists.txt'}'" in warning, result.describe()
        # What the warning says is so: the top build directory has no test, the named one has the suite.
        assert not (project.build / "CTestTestfile.cmake").exists()
        assert "faults.gate" in ctest_names(project.build / "sub")


@pytest.mark.parametrize("top", ["add_subdirectory(sub)\n", "add_subdirectory(sub)\nenable_testing()\n"],
                         ids=["nowhere", "after add_subdirectory"])
def test_a_suite_where_testing_is_not_enabled_gets_a_warning_naming_the_fix(project, top):
    consumer(project, top, sub=SUITE_CALL)
    with project.checked():
        result = project.configured()
        [warning] = [w for w in warnings_of(result) if "EvidenceGate" in w]
        assert "ctest runs no step of suite 'faults' (\"Total Tests: 0\")" in warning, result.describe()
        assert f"Path: '{project.root / 'sub' / 'CMakeLists.txt'}'" in warning, result.describe()
        assert ("call enable_testing() (or include(CTest)) in the top-level CMakeLists.txt, before any "
                f"add_subdirectory(): Path: '{project.root / 'CMakeLists.txt'}'") in warning, result.describe()


@pytest.mark.parametrize("top, sub", [
    ("enable_testing()\n" + SUITE_CALL, None),
    (SUITE_CALL + "enable_testing()\n", None),  # enable_testing() may come after the call
    ("enable_testing()\nadd_subdirectory(sub)\n", SUITE_CALL),
    ("include(CTest)\nadd_subdirectory(sub)\n", SUITE_CALL),
], ids=["top", "top, after the call", "subdirectory", "include(CTest)"])
def test_a_suite_ctest_reaches_gets_no_warning(project, top, sub):
    consumer(project, top, sub=sub)
    with project.checked():
        result = project.configured()
        assert "CMake Warning" not in result.stderr, result.describe()
        assert "faults.gate" in ctest_names(project.build)


def test_build_testing_off_is_said_not_warned(project):
    consumer(project, "include(CTest)\n" + SUITE_CALL)
    with project.checked():
        result = project.configured("BUILD_TESTING=OFF")
        assert "CMake Warning" not in result.stderr, result.describe()
        assert "suite 'faults' is not registered with ctest: BUILD_TESTING is OFF" in result.stdout, result.describe()


def interpreter(project, path):
    """An interpreter of its own path that runs this one (which has pytest)."""
    script = project.tmp / path
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def chosen(project):
    return json.loads((project.evidence_dir() / "suite.json").read_text())["python"]


@pytest.mark.parametrize("variable", ["Python3_EXECUTABLE", "Python_EXECUTABLE", "PYTHON_EXECUTABLE"])
def test_the_interpreter_the_project_found_runs_the_suite_and_configure_says_why(project, variable):
    found = interpreter(project, "found/python")
    consumer(project, "enable_testing()\n" + SUITE_CALL)
    with project.checked():
        result = project.configured(f"{variable}={found}")
        assert chosen(project) == str(found), result.describe()
        assert re.search(rf"EvidenceGate: suite 'faults' runs pytest with '{re.escape(str(found))}' "
                         rf"\(Python [0-9.]+, pytest [0-9.]+\w*\): {variable}, the interpreter this project found",
                         normalized(result.stdout)), result.describe()


def test_python_wins_over_the_interpreter_the_project_found(project):
    found = interpreter(project, "found/python")
    named = interpreter(project, "named/python")
    consumer(project, "enable_testing()\n" + SUITE_CALL.replace(")\n", f" PYTHON {named})\n"))
    with project.checked():
        result = project.configured(f"Python3_EXECUTABLE={found}")
        assert chosen(project) == str(named), result.describe()
        assert f"runs pytest with '{named}'" in result.stdout and "PYTHON names it" in result.stdout, result.describe()


def test_with_two_interpreters_on_the_search_configure_says_which_was_taken_and_why(project):
    first = interpreter(project, "bin/python3")
    consumer(project, "enable_testing()\n" + SUITE_CALL)
    with project.checked():
        result = project._record(cmake_configure(project.root, project.build, f"EvidenceGate_DIR={project.product}",
                                                 env=project.env(PATH=f"{first.parent}:/usr/bin:/bin")))
        assert result.returncode == 0, result.describe()
        assert chosen(project) == str(first), result.describe()
        line = normalized(result.stdout)
        assert f"runs pytest with '{first}'" in line and f"the first of '{first}', '/usr/bin/python3'" in line, (
            result.describe())
        if "can too" in line:
            assert "choose one with PYTHON or Python3_EXECUTABLE" in line, result.describe()


def imported_module(file_name):
    """A DEPENDS target standing for an extension module the build makes, by its file name."""
    return ("add_library(geo_module MODULE IMPORTED)\n"
            f"set_target_properties(geo_module PROPERTIES IMPORTED_LOCATION \"${{CMAKE_CURRENT_BINARY_DIR}}/{file_name}\")\n")


def test_a_depends_module_built_for_another_interpreter_is_said_at_configure(project):
    ours = sysconfig.get_config_var("EXT_SUFFIX")
    other = ".cpython-27-x86_64-linux-gnu.so" if "cpython-27" not in ours else ".cpython-313-x86_64-linux-gnu.so"
    consumer(project, "enable_testing()\n" + imported_module(f"geo_module{other}") +
             SUITE_CALL.replace(")\n", f" PYTHON {sys.executable} DEPENDS geo_module)\n"))
    with project.checked():
        result = project.configured()
        [warning] = [w for w in warnings_of(result) if "EvidenceGate" in w]
        assert "cannot import DEPENDS target 'geo_module': it is built for another one" in warning, result.describe()
        assert f"Module: 'geo_module{other}' (built for '{other}')" in warning, result.describe()
        assert f"Interpreter: '{sys.executable}' (imports '{ours}')" in warning, result.describe()


@pytest.mark.parametrize("suffix", [sysconfig.get_config_var("EXT_SUFFIX"), ".abi3.so", ".so"])
def test_a_depends_module_the_interpreter_can_import_gets_no_warning(project, suffix):
    consumer(project, "enable_testing()\n" + imported_module(f"geo_module{suffix}") +
             SUITE_CALL.replace(")\n", f" PYTHON {sys.executable} DEPENDS geo_module)\n"))
    with project.checked():
        result = project.configured()
        assert "CMake Warning" not in result.stderr, result.describe()
