"""The three ways to consume Evidence Gate, each with a tiny consumer project in tmp_path:
the installed package, add_subdirectory() of the source tree, and FetchContent.

The last two compile the product (about a minute each on two cores).
"""

import os
import shutil
import textwrap
from pathlib import Path

from harness import (BUILD_TIMEOUT, FORBIDDEN_NAMES, Ledger, cmake_configure, ctest, ctest_names,
                     expect_verdicts, ninja_or_default, run)

SUITE = "smoke"
SMOKE_TESTS = {
    "tests/test_smoke.py::test_adds": ("stable", "pass"),
    "tests/test_smoke.py::test_joins[a-b]": ("stable", "pass"),
    "tests/test_smoke.py::test_joins[c-d]": ("stable", "pass"),
}


def write_consumer(directory, preamble, language="NONE"):
    """A consumer project with a trivially clean pytest suite; `preamble` brings in Evidence Gate."""
    directory.mkdir(parents=True)
    (directory / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\n"
        f"project(consumer {language})\n"
        "enable_testing()\n"
        f"{textwrap.dedent(preamble).strip()}\n"
        f"evidence_gate_add_suite({SUITE} TESTS tests SEEDS 2 PERTURB OFF)\n")
    (directory / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (directory / "tests").mkdir()
    (directory / "tests" / "test_smoke.py").write_text(textwrap.dedent("""\
        import pytest


        def test_adds():
            assert 1 + 1 == 2


        @pytest.mark.parametrize("left, right", [("a", "b"), ("c", "d")])
        def test_joins(left, right):
            assert len(left + right) == 2
        """))
    return directory


def run_consumer_suite(binary, consumer):
    """ctest -L evidence in the consumer's build: the clean suite passes the gate."""
    names = ctest_names(binary)
    # <suite>.<step> and the per-test entries <suite>/<node id>; none of Evidence Gate's own tests.
    assert names and all(name.startswith((SUITE + ".", SUITE + "/")) for name in names), (
        f"the consumer's build must register only its own suite's tests, not Evidence Gate's: {names}")
    result = ctest(binary, "-j2", "-L", "evidence")
    assert result.returncode == 0, f"the consumer's clean suite must pass:\n{result.describe()}"
    expect_verdicts(Ledger(binary, SUITE), SMOKE_TESTS)
    caches = sorted(str(p) for name in FORBIDDEN_NAMES for p in consumer.rglob(name))
    assert not caches, f"caches in the consumer's source tree: {caches}"
    return result


def assert_source_tree_clean(source_dir):
    """Configuring and building a consumer writes nothing into Evidence Gate's source tree."""
    assert not (source_dir / "CMakeCache.txt").exists(), f"a CMakeCache.txt appeared in {source_dir}"
    caches = sorted(str(p) for sub in ("modules", "templates") for name in FORBIDDEN_NAMES
                    for p in (source_dir / sub).rglob(name))
    assert not caches, f"caches in Evidence Gate's source tree: {caches}"


def compiler_cache():
    """A build of the whole product per test: through ccache where the machine has it."""
    return ["CMAKE_CXX_COMPILER_LAUNCHER=ccache"] if shutil.which("ccache") else []


def build(binary):
    result = run(["cmake", "--build", binary, "--parallel", str(os.cpu_count() or 2)], timeout=BUILD_TIMEOUT)
    assert result.returncode == 0, f"building the consumer failed:\n{result.describe()}"


def test_installed_package(tmp_path, build_dir, source_dir):
    prefix = tmp_path / "prefix"
    installed = run(["cmake", "--install", build_dir, "--prefix", prefix], timeout=BUILD_TIMEOUT)
    assert installed.returncode == 0, f"cmake --install failed:\n{installed.describe()}"
    share = prefix / "share" / "EvidenceGate"
    for sub in ("cmake", "modules", "templates"):
        assert (share / sub).is_dir(), f"{share / sub} was not installed (was {build_dir} configured with " \
                                       f"EVIDENCE_GATE_INSTALL ON?):\n{installed.describe()}"
    evgate = prefix / "bin" / "evgate"
    assert evgate.is_file() and os.access(evgate, os.X_OK), f"{evgate} was not installed as an executable"
    assert (share / "cmake" / "EvidenceGateConfig.cmake").is_file()
    assert (share / "templates" / "pytest" / "evidence_gate_pytest.py").is_file()
    assert not [p for name in FORBIDDEN_NAMES for p in prefix.rglob(name)], "caches were installed"
    # Relocatable: no installed text file points back into the build or source tree.
    for path in share.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            for tree in (build_dir, source_dir):
                assert str(tree) not in text, f"{path} names {tree}"

    consumer = write_consumer(tmp_path / "consumer", "find_package(EvidenceGate CONFIG REQUIRED)")
    binary = tmp_path / "build"
    configured = cmake_configure(consumer, binary, f"CMAKE_PREFIX_PATH={prefix}",
                                 "CMAKE_FIND_USE_PACKAGE_REGISTRY=OFF")
    assert configured.returncode == 0, configured.describe()
    cache = (binary / "CMakeCache.txt").read_text()
    assert f"EvidenceGate_DIR:PATH={share / 'cmake'}" in cache, (
        f"find_package must find the installed package in {share / 'cmake'}:\n"
        + "\n".join(line for line in cache.splitlines() if line.startswith("EvidenceGate_DIR")))
    testfile = (binary / "CTestTestfile.cmake").read_text()
    assert str(evgate) in testfile and str(build_dir) not in testfile, (
        f"the suite must run the installed {evgate}:\n{testfile}")
    suite = (binary / "evidence" / SUITE / "suite.json").read_text()
    assert str(share / "templates" / "pytest") in suite, f"the suite must load the installed plugin:\n{suite}"
    run_consumer_suite(binary, consumer)


def test_add_subdirectory(tmp_path, source_dir):
    consumer = write_consumer(tmp_path / "consumer", f"""
        add_subdirectory("{source_dir}" evidence-gate)
        """, language="CXX")
    binary = tmp_path / "build"
    configured = cmake_configure(consumer, binary, *compiler_cache(), generator=ninja_or_default())
    assert configured.returncode == 0, configured.describe()
    build(binary)
    assert (binary / "evidence-gate" / "tools" / "evgate").is_file(), "evgate was not built in the consumer's tree"
    run_consumer_suite(binary, consumer)
    assert_source_tree_clean(source_dir)


def test_fetchcontent(tmp_path, source_dir):
    # SOURCE_DIR: no network, and the working tree as it is (not only what is committed).
    consumer = write_consumer(tmp_path / "consumer", f"""
        include(FetchContent)
        FetchContent_Declare(EvidenceGate SOURCE_DIR "{source_dir}")
        FetchContent_MakeAvailable(EvidenceGate)
        """, language="CXX")
    binary = tmp_path / "build"
    configured = cmake_configure(consumer, binary, *compiler_cache(), generator=ninja_or_default())
    assert configured.returncode == 0, configured.describe()
    build(binary)
    built = list(Path(binary, "_deps").glob("*-build/tools/evgate"))
    assert built, f"evgate was not built below {binary}/_deps"
    run_consumer_suite(binary, consumer)
    assert_source_tree_clean(source_dir)
