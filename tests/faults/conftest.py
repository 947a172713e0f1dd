"""Helpers of the fault matrix: consumer projects generated into tmp_path, run with real
CMake, CTest and pytest against the product's build tree.

The product under test is named by ``EVIDENCE_GATE_BUILD_DIR`` (CTest sets it; by hand:
``EVIDENCE_GATE_BUILD_DIR=/path/to/build /usr/bin/python3 -m pytest -p no:cacheprovider
tests/faults``). Every scenario goes through :class:`Project`, which checks what every
scenario promises besides its own assertions (:meth:`Project.checked`):

* the consumer's source tree (ROOT) is byte-identical afterwards: content digest, mode and
  link target of every entry, FIFOs and devices by kind and device number, never opened;
* a canary secret, set as ``DEPLOY_API_TOKEN`` in the environment of cmake and ctest,
  appears in no file of the build tree and in no output.
"""

import contextlib
import hashlib
import json
import mmap
import os
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

# Bounds on one cmake / ctest invocation, so that a hang fails a scenario instead of CI.
CONFIGURE_TIMEOUT = 120
CTEST_TIMEOUT = 300

CANARY_VARIABLE = "DEPLOY_API_TOKEN"
SUITE = "faults"

# Settings for scenarios where the number of orders does not matter: the collection order
# and one shuffled order, no perturbed run, no per-test CTest entries.
FAST = "SEEDS 1 PERTURB OFF PER_TEST OFF"

# Runs argv (after the first argument, a file for the result) and writes the peak resident
# set size in KiB of any process of its tree that was waited for (RUSAGE_CHILDREN).
_RSS_WRAPPER = ("import resource, subprocess, sys\n"
                "code = subprocess.call(sys.argv[2:])\n"
                "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
                "sys.exit(code)\n")


# ------------------------------------------------------------------ environment


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"'{name}' is not on PATH; the fault matrix needs CMake and CTest", pytrace=False)
    return path


@pytest.fixture(scope="session")
def build_dir():
    """The product's build tree, checked to hold a usable package and a built evgate."""
    value = os.environ.get("EVIDENCE_GATE_BUILD_DIR")
    if not value:
        pytest.fail("EVIDENCE_GATE_BUILD_DIR is not set: point it at a configured and built Evidence Gate "
                    "build tree (cmake -S . -B build -G Ninja && cmake --build build)", pytrace=False)
    path = Path(value).resolve()
    if not (path / "EvidenceGateConfig.cmake").is_file() or not (path / "tools" / "evgate").is_file():
        pytest.fail(f"EVIDENCE_GATE_BUILD_DIR={value} holds no EvidenceGateConfig.cmake and tools/evgate: "
                    f"configure and build it first", pytrace=False)
    return path


@pytest.fixture(scope="session")
def canary():
    return "canary-" + secrets.token_hex(16)


@pytest.fixture
def project(tmp_path, build_dir, canary):
    return Project(tmp_path, build_dir, canary)


def normalized(text):
    """Whitespace collapsed: CMake wraps long messages at any blank."""
    return re.sub(r"\s+", " ", text)


class Result:
    """A finished command: exit status and its output (stdout then stderr)."""

    def __init__(self, argv, returncode, stdout, stderr, elapsed, timed_out=False):
        self.argv = [str(a) for a in argv]
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed = elapsed
        self.timed_out = timed_out

    @property
    def output(self):
        return self.stdout + self.stderr

    def describe(self, limit=12000):
        text = self.output
        if len(text) > limit:
            text = "[... cut ...]\n" + text[-limit:]
        return f"$ {' '.join(self.argv)}\n(exit {self.returncode}, {self.elapsed:.1f} s)\n{text}"


def run(argv, *, env, timeout, cwd=None):
    """Runs argv in its own session; on timeout the whole process group is killed."""
    start = time.monotonic()
    process = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        timed_out = True
    result = Result(argv, process.returncode, stdout.decode("utf-8", "replace"),
                    stderr.decode("utf-8", "replace"), time.monotonic() - start, timed_out)
    if timed_out:
        pytest.fail(f"hang: killed after {timeout} s\n{result.describe()}", pytrace=False)
    return result


# ------------------------------------------------------------------ source tree digests


def tree_digest(root):
    """{relative path: what it is} for everything below root; never follows a link, never
    opens anything but regular files, so FIFOs and devices are safe to digest."""
    root = Path(root)
    digest = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                digest[rel] = ("link", os.readlink(path), mode)
            elif stat.S_ISDIR(st.st_mode):
                digest[rel] = ("dir", None, mode)
            elif stat.S_ISREG(st.st_mode):
                digest[rel] = ("file", file_sha256(path), mode, st.st_size)
            else:
                digest[rel] = ("special", stat.S_IFMT(st.st_mode), mode, st.st_rdev)
    return digest


def file_sha256(path):
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def digest_diff(before, after):
    lines = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            lines.append(f"  removed: {rel}")
        elif rel not in before:
            lines.append(f"  added:   {rel}")
        elif before[rel] != after[rel]:
            lines.append(f"  changed: {rel}: {before[rel]} -> {after[rel]}")
    return lines


def files_holding(root, needle):
    """Regular files below root (links not followed) whose bytes contain `needle`."""
    hits = []
    for dirpath, _, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data.find(needle) >= 0:
                    hits.append(str(path))
    return hits


# ------------------------------------------------------------------ processes


def process_alive(pid):
    """True unless `pid` is gone or a zombie (killed, waiting for a reaper that may never come)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != b"Z"


def processes_mentioning(text):
    """Live processes (not zombies) whose command line contains `text`, but for ourselves."""
    found = []
    needle = text.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if needle in cmdline and process_alive(int(entry)):
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return found


def wait_until_gone(text, seconds=10.0):
    """Processes that mention `text` after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while True:
        left = processes_mentioning(text)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


# ------------------------------------------------------------------ ledger and records


class Ledger:
    """build/evidence/<suite>/ledger.jsonl, parsed; every line must be a JSON object."""

    def __init__(self, binary, suite=SUITE):
        self.path = Path(binary) / "evidence" / suite / "ledger.jsonl"
        assert self.path.is_file(), f"the gate wrote no ledger at {self.path}"
        self.text = self.path.read_text(encoding="utf-8")
        self.rows = [json.loads(line) for line in self.text.splitlines()]
        self.test_rows = [row for row in self.rows if row.get("scope") != "suite"]
        self.suite_rows = [row for row in self.rows if row.get("scope") == "suite"]
        self.tests = {row["test"]: row for row in self.test_rows}

    def verdicts(self):
        return {row["test"]: (row["verdict"], row["gate"]) for row in self.test_rows}

    def blocking_suite_rows(self):
        return [row for row in self.suite_rows if row["gate"] == "block"]

    def __str__(self):
        return f"{self.path}:\n{self.text}"


def record_files(runs_dir):
    """runs/<run>.jsonl, without the order files (<run>.order.jsonl) evgate hands the plugin."""
    return [p for p in sorted(Path(runs_dir).glob("*.jsonl")) if not p.name.endswith(".order.jsonl")]


def record_damage(runs_dir):
    """(whole lines that are not JSON objects, torn tails) over every run record file."""
    corrupt, torn = [], []
    for path in record_files(runs_dir):
        data = path.read_bytes()
        lines = data.split(b"\n")
        if lines[-1]:
            torn.append(f"{path.name}: {lines[-1][:80]!r}")
        for number, line in enumerate(lines[:-1], 1):
            if not line.strip():
                continue
            try:
                ok = isinstance(json.loads(line), dict)
            except ValueError:
                ok = False
            if not ok:
                corrupt.append(f"{path.name}:{number}: {line[:80]!r}")
    return corrupt, torn


def results_by_run(runs_dir):
    """{run id: {test ids with a result record}} from whole records."""
    results = {}
    for path in record_files(runs_dir):
        ids = set()
        for line in path.read_bytes().split(b"\n")[:-1]:
            if line.strip():
                record = json.loads(line)
                if record.get("event") == "result":
                    ids.add(record["test"])
        results[path.name[:-len(".jsonl")]] = ids
    return results


# ------------------------------------------------------------------ consumer projects


class TreeChanged(AssertionError):
    """The source tree is not byte-identical after a run."""


class Project:
    """A consumer project: ROOT in tmp_path/src, its build tree in tmp_path/build."""

    def __init__(self, tmp_path, build_dir, canary):
        self.tmp = Path(tmp_path)
        self.root = self.tmp / "src"
        self.build = self.tmp / "build"
        self.product = build_dir
        self.canary = canary
        self.root.mkdir()
        self.results = []
        self.extra_cmake = ""
        self._digest = None

    # --- writing the project

    def write(self, rel, text="", mode=None):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        if mode is not None:
            path.chmod(mode)
        return path

    def suite(self, arguments=FAST, name=SUITE, before="", after=""):
        """CMakeLists.txt with one evidence_gate_add_suite(name ...) and a pytest.ini."""
        if not (self.root / "pytest.ini").exists():
            self.write("pytest.ini", "[pytest]\n")
        self.write("CMakeLists.txt", f"cmake_minimum_required(VERSION 3.21)\nproject(fault_{name} NONE)\n"
                                     f"enable_testing()\nfind_package(EvidenceGate CONFIG REQUIRED)\n{before}\n"
                                     f"evidence_gate_add_suite({name}\n  {arguments})\n{after}\n")

    # --- running it

    def env(self, **extra):
        env = dict(os.environ)
        # A user's environment normally has none of these; the product must keep bytecode
        # and caches out of the source tree by itself.
        for name in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "EVIDENCE_GATE_RUNNER_BUNDLES",
                     "CTEST_PARALLEL_LEVEL", "CTEST_OUTPUT_ON_FAILURE", "MAKEFLAGS", "EVIDENCE_GATE_BUILD_DIR"):
            env.pop(name, None)
        env[CANARY_VARIABLE] = self.canary
        env.update(extra)
        return env

    def configure(self, *definitions, wrapper=()):
        argv = [*wrapper, _tool("cmake"), "-S", self.root, "-B", self.build, f"-DEvidenceGate_DIR={self.product}",
                *[f"-D{d}" for d in definitions]]
        return self._record(run(argv, env=self.env(), timeout=CONFIGURE_TIMEOUT))

    def configured(self, *definitions):
        result = self.configure(*definitions)
        assert result.returncode == 0, f"configuring the consumer failed:\n{result.describe()}"
        return result

    def ctest(self, *args, timeout=CTEST_TIMEOUT, wrapper=(), jobs=2, binary=None):
        argv = [*wrapper, _tool("ctest"), "--test-dir", binary or self.build, "--output-on-failure",
                f"-j{jobs}", *args]
        return self._record(run(argv, env=self.env(), timeout=timeout))

    def ctest_measured(self, *args, jobs=2):
        """ctest with the peak RSS (KiB) of its whole process tree: (result, kib)."""
        out = self.tmp / "max-rss.txt"
        result = self.ctest(*args, jobs=jobs, wrapper=(sys.executable, "-c", _RSS_WRAPPER, out))
        return result, int(out.read_text())

    def evidence(self, *args):
        return self.ctest("-L", "evidence", *args)

    def _record(self, result):
        self.results.append(result)
        return result

    def ledger(self, suite=SUITE, binary=None):
        return Ledger(binary or self.build, suite)

    def evidence_dir(self, suite=SUITE):
        return self.build / "evidence" / suite

    # --- what every scenario promises

    def seal(self):
        """Takes the digest of ROOT that checked() compares against."""
        self._digest = tree_digest(self.root)

    @contextlib.contextmanager
    def checked(self):
        """Seals ROOT, runs the body, then asserts ROOT is unchanged and the canary leaked nowhere."""
        self.seal()
        yield self
        self.check_tree()
        self.check_canary()

    def check_tree(self):
        diff = digest_diff(self._digest, tree_digest(self.root))
        if diff:
            raise TreeChanged(f"the source tree {self.root} changed:\n" + "\n".join(diff))

    def check_canary(self):
        needle = self.canary.encode()
        for result in self.results:
            assert self.canary not in result.output, f"the canary secret is in the output of:\n{result.describe()}"
        if self.build.exists():
            hits = files_holding(self.build, needle)
            assert not hits, f"the canary secret (${CANARY_VARIABLE}) was written to the build tree: {hits}"


def expect_message(result, pattern, what):
    """`pattern` (a regex, matched on whitespace-collapsed output) names the fault."""
    assert re.search(pattern, normalized(result.output)), (
        f"{what}: expected a message matching {pattern!r}\n{result.describe()}")


def step_output(binary, name):
    """One CTest test's output from the last ctest run (passing tests too), or None."""
    log = Path(binary) / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        return None
    match = re.search(r"^\d+/\d+ Test: " + re.escape(name) + r"\n.*?^Output:\n-+\n(.*?)<end of output>",
                      log.read_text(errors="replace"), re.M | re.S)
    return match.group(1) if match else None


def gate_summary(binary, suite=SUITE):
    """PASSED or BLOCKED from the gate's summary line in the last ctest run, or None."""
    match = re.search(rf"^evidence-gate {re.escape(suite)}: .* -> (PASSED|BLOCKED)$",
                      step_output(binary, f"{suite}.gate") or "", re.M)
    return match.group(1) if match else None
