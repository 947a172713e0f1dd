"""Shared helpers of the end-to-end tests: real CMake, real CTest, real pytest.

The product under test is a configured and built Evidence Gate tree named by the
environment variable ``EVIDENCE_GATE_BUILD_DIR`` (CTest sets it; by hand:
``EVIDENCE_GATE_BUILD_DIR=/path/to/build /usr/bin/python3 -m pytest -p no:cacheprovider
tests/e2e``). ``EVIDENCE_GATE_SOURCE_DIR`` names the repository (default: the one this
file is in). Every consumer build goes below ``tmp_path``; nothing is written to the
repository.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

# Bounds on one cmake / ctest invocation, so that a hang fails the test instead of CI.
CONFIGURE_TIMEOUT = 120
CTEST_TIMEOUT = 300
BUILD_TIMEOUT = 600

# Files that must never appear in a source tree after a run.
FORBIDDEN_NAMES = ("__pycache__", ".pytest_cache")


# ------------------------------------------------------------------ environment


def _required_tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"'{name}' is not on PATH; the end-to-end tests need CMake and CTest", pytrace=False)
    return path


@pytest.fixture(scope="session")
def build_dir():
    """The product's build tree (EVIDENCE_GATE_BUILD_DIR), checked to hold a usable package."""
    value = os.environ.get("EVIDENCE_GATE_BUILD_DIR")
    if not value:
        pytest.fail(
            "EVIDENCE_GATE_BUILD_DIR is not set. Point it at a configured and built Evidence Gate "
            "build tree, e.g. cmake -S . -B build -G Ninja && cmake --build build && "
            "EVIDENCE_GATE_BUILD_DIR=$PWD/build /usr/bin/python3 -m pytest -p no:cacheprovider tests/e2e",
            pytrace=False)
    path = Path(value).resolve()
    config = path / "EvidenceGateConfig.cmake"
    if not config.is_file():
        pytest.fail(f"EVIDENCE_GATE_BUILD_DIR={value} holds no EvidenceGateConfig.cmake: "
                    "is it a configured Evidence Gate build tree?", pytrace=False)
    if not (path / "tools" / "evgate").is_file():
        pytest.fail(f"EVIDENCE_GATE_BUILD_DIR={value} has no tools/evgate: build it first "
                    f"(cmake --build {value})", pytrace=False)
    return path


@pytest.fixture(scope="session")
def source_dir():
    """The Evidence Gate source tree (EVIDENCE_GATE_SOURCE_DIR, default: this repository)."""
    path = Path(os.environ.get("EVIDENCE_GATE_SOURCE_DIR") or REPO).resolve()
    if not (path / "modules" / "EvidenceGate.cmake").is_file():
        pytest.fail(f"EVIDENCE_GATE_SOURCE_DIR={path} is not an Evidence Gate source tree", pytrace=False)
    return path


def child_env(**extra):
    """The environment of cmake/ctest: ours, minus what would change what is measured.

    PYTHONDONTWRITEBYTECODE is dropped on purpose: a user's environment normally lacks it,
    so bytecode is written, and the product must keep it out of the source tree itself.
    """
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "EVIDENCE_GATE_RUNNER_BUNDLES",
                 "CTEST_PARALLEL_LEVEL", "CTEST_OUTPUT_ON_FAILURE", "MAKEFLAGS"):
        env.pop(name, None)
    env.update(extra)
    return env


class Result:
    """A finished command: exit status, stdout, stderr and both together for messages."""

    def __init__(self, argv, completed):
        self.argv = [str(a) for a in argv]
        self.returncode = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    @property
    def output(self):
        return self.stdout + self.stderr

    def describe(self, limit=12000):
        text = self.output
        if len(text) > limit:
            text = "[... cut ...]\n" + text[-limit:]
        return f"$ {' '.join(self.argv)}\n(exit {self.returncode})\n{text}"


def run(argv, *, cwd=None, timeout, env=None):
    try:
        completed = subprocess.run([str(a) for a in argv], cwd=cwd, env=env or child_env(), text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                                   errors="replace")
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"timed out after {timeout} s: {' '.join(map(str, argv))}\n"
                    f"{(e.stdout or b'')[-4000:]!r}\n{(e.stderr or b'')[-4000:]!r}", pytrace=False)
    return Result(argv, completed)


# ------------------------------------------------------------------ CMake / CTest


def cmake_configure(source, binary, *definitions, generator=None):
    argv = [_required_tool("cmake"), "-S", source, "-B", binary]
    if generator:
        argv += ["-G", generator]
    argv += [f"-D{d}" for d in definitions]
    return run(argv, timeout=CONFIGURE_TIMEOUT)


def configure_example(source, binary, build_dir):
    result = cmake_configure(source, binary, f"EvidenceGate_DIR={build_dir}")
    assert result.returncode == 0, f"configuring {source} failed:\n{result.describe()}"
    return result


def ninja_or_default():
    return "Ninja" if shutil.which("ninja") else None


_TEST_LINE = re.compile(r"^\s*\d+/\d+ Test\s+#\d+: (.+?) \.*\s*(?:\*\*\*)?"
                        r"(Passed|Failed|Skipped|Not Run|Timeout|Exception)", re.M)
_SUMMARY_ENTRY = re.compile(r"^\s+\d+ - (.+) \((.+?)\)\s*$")


def _summary_section(stdout, header):
    """[(name, status)] listed under `header` ("The following tests FAILED:") at the end of ctest's output."""
    entries = []
    lines = stdout.split(header, 1)[1].splitlines()[1:] if header in stdout else []
    for line in lines:
        match = _SUMMARY_ENTRY.match(line)
        if not match:
            break
        entries.append(match.groups())
    return entries


class CTestRun(Result):
    """A ctest invocation: what it ran (name -> status), which tests failed, which did not run."""

    def __init__(self, argv, completed, binary):
        super().__init__(argv, completed)
        self.binary = Path(binary)
        self.order = [name for name, _ in _TEST_LINE.findall(self.stdout)]
        self.ran = dict(_TEST_LINE.findall(self.stdout))
        self.failed = sorted(_summary_section(self.stdout, "The following tests FAILED:"))
        self.failed_names = sorted(name for name, _ in self.failed)
        self.not_run = sorted(_summary_section(self.stdout, "The following tests did not run:"))

    def test_output(self, name):
        """One CTest test's output, from Testing/Temporary/LastTest.log (passing tests too)."""
        log = (self.binary / "Testing" / "Temporary" / "LastTest.log").read_text(errors="replace")
        match = re.search(r"^\d+/\d+ Test: " + re.escape(name) + r"\n.*?^Output:\n-+\n(.*?)<end of output>",
                          log, re.M | re.S)
        assert match, f"no output of {name} in {self.binary}/Testing/Temporary/LastTest.log"
        return match.group(1)


def ctest(binary, *args, timeout=CTEST_TIMEOUT, env=None):
    argv = [_required_tool("ctest"), "--test-dir", binary, "--output-on-failure", *args]
    try:
        completed = subprocess.run([str(a) for a in argv], env=env or child_env(), text=True, errors="replace",
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"ctest timed out after {timeout} s: {' '.join(map(str, argv))}\n{e.stdout!r}", pytrace=False)
    return CTestRun(argv, completed, binary)


def ctest_names(binary, *args):
    """The names of the tests ctest would run with `args` (ctest -N)."""
    result = run([_required_tool("ctest"), "--test-dir", binary, "-N", *args], timeout=CONFIGURE_TIMEOUT)
    assert result.returncode == 0, result.describe()
    return re.findall(r"^\s*Test\s+#\d+: (.+?)\s*$", result.stdout, re.M)


# ------------------------------------------------------------------ ledger


_GATE_LINE = re.compile(r"^(BLOCK|DEFER) (.+?): ([a-z-]+), (.*)$", re.M)
_SUMMARY_LINE = re.compile(r"^evidence-gate (\S+): (\d+) tests over (\d+) runs: (\d+) block, (\d+) defer, (\d+) pass"
                           r"(?:; (\d+) suite check\(s\) block)? -> (PASSED|BLOCKED)$", re.M)


def gate_lines(text):
    """[(BLOCK|DEFER, test, verdict)] as the gate printed them."""
    return [(kind, test, verdict) for kind, test, verdict, _ in _GATE_LINE.findall(text)]


def gate_summary(text, suite):
    for match in _SUMMARY_LINE.finditer(text):
        if match.group(1) == suite:
            return match
    raise AssertionError(f"no 'evidence-gate {suite}: ...' summary line in:\n{text}")


class Ledger:
    """build/evidence/<suite>/ledger.jsonl, parsed; every line must be a JSON object."""

    REQUIRED = ("test", "verdict", "gate", "reason")
    VERDICTS = {"polluter", "interrupted", "missing", "order-dependent", "flaky", "runner-only-pass",
                "failing", "portability-gap", "skipped", "stable"}

    def __init__(self, binary, suite):
        self.suite = suite
        self.path = Path(binary) / "evidence" / suite / "ledger.jsonl"
        assert self.path.is_file(), f"the gate wrote no ledger at {self.path}"
        self.text = self.path.read_text(encoding="utf-8")
        self.rows = []
        for number, line in enumerate(self.text.splitlines(), 1):
            row = json.loads(line)
            assert isinstance(row, dict), f"{self.path}:{number}: not a JSON object: {line}"
            missing = [key for key in self.REQUIRED if key not in row]
            assert not missing, f"{self.path}:{number}: lacks {missing}: {line}"
            assert row["verdict"] in self.VERDICTS, f"{self.path}:{number}: unknown verdict: {line}"
            assert row["gate"] in ("pass", "defer", "block"), f"{self.path}:{number}: bad gate: {line}"
            self.rows.append(row)
        self.tests = {row["test"]: row for row in self.rows if row.get("scope") != "suite"}
        self.suite_rows = [row for row in self.rows if row.get("scope") == "suite"]
        assert len(self.tests) == len([r for r in self.rows if r.get("scope") != "suite"]), \
            f"a test has two rows in {self.path}:\n{self.text}"

    def blocking(self):
        return sorted(row["test"] for row in self.rows if row["gate"] == "block")

    def deferred(self):
        return sorted(row["test"] for row in self.rows if row["gate"] == "defer")

    def verdicts(self):
        """{test id: (verdict, gate)} of the per-test rows."""
        return {test: (row["verdict"], row["gate"]) for test, row in self.tests.items()}

    def __str__(self):
        return f"{self.path}:\n{self.text}"


def expect_verdicts(ledger, expected):
    """The per-test rows are exactly `expected` ({id: (verdict, gate)})."""
    actual = ledger.verdicts()
    wrong = {test: {"expected": expected.get(test), "actual": actual.get(test)}
             for test in sorted(set(actual) | set(expected)) if actual.get(test) != expected.get(test)}
    assert not wrong, f"verdicts differ from the expected ones: {json.dumps(wrong, indent=1)}\n{ledger}"


# ------------------------------------------------------------------ source tree snapshots


def tree_snapshot(root):
    """{relative path: (kind, content digest, mode)} of everything below root, names included."""
    root = Path(root)
    snapshot = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                snapshot[rel] = ("link", os.readlink(path), mode)
            elif stat.S_ISDIR(st.st_mode):
                snapshot[rel] = ("dir", None, mode)
            elif stat.S_ISREG(st.st_mode):
                snapshot[rel] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), mode)
            else:
                snapshot[rel] = ("special", None, mode)
    return snapshot


def snapshot_diff(before, after):
    lines = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            lines.append(f"  removed: {rel}")
        elif rel not in before:
            lines.append(f"  added:   {rel}")
        elif before[rel] != after[rel]:
            lines.append(f"  changed: {rel} {before[rel]} -> {after[rel]}")
    return lines


@contextlib.contextmanager
def source_tree_untouched(root):
    """Asserts that the body leaves `root` byte-identical and without caches."""
    before = tree_snapshot(root)
    yield before
    after = tree_snapshot(root)
    diff = snapshot_diff(before, after)
    assert not diff, f"the source tree {root} changed:\n" + "\n".join(diff)
    caches = sorted(rel for rel in after if Path(rel).name in FORBIDDEN_NAMES)
    assert not caches, f"caches in the source tree {root}: {caches}"
