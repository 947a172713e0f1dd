"""Consumer projects generated into tmp_path, as the fault matrix builds them.

Every scenario goes through :class:`Project`, which checks what every scenario promises
besides its own assertions (:meth:`Project.checked`):

* the consumer's source tree (ROOT) is byte-identical afterwards: content digest, mode and
  link target of every entry, FIFOs and devices by kind and device number, never opened;
* a canary secret, set as ``DEPLOY_API_TOKEN`` in the environment of cmake and ctest,
  appears in no file of the build tree and in no output.
"""

import contextlib
import re
import sys
import textwrap
from pathlib import Path

from harness.commands import BUILD_TIMEOUT, CTEST_TIMEOUT, child_env, run
from harness.ctest import cmake_configure, ctest, step_output
from harness.evidence import Ledger
from harness.gate import decision
from harness.tree import expect_unchanged, files_holding, tree_digest

CANARY_VARIABLE = "DEPLOY_API_TOKEN"
# The suite a generated project defines unless told otherwise.
SUITE = "faults"

# Settings for scenarios where the number of orders does not matter: the collection order
# and one shuffled order, no perturbed run, no per-test CTest entries.
FAST = "SEEDS 1 PERTURB OFF PER_TEST OFF"

# A conftest.py whose fork server hangs 120 s as it forks a worker (a fork hook, as a loaded
# machine or a hostile plugin might): a run that asked for a fork waits for the worker's pid.
HANGING_FORK_SERVER = """
import os
import time

COLLECTING = os.getpid()

def hang():
    if os.getpid() != COLLECTING:  # in the fork server, which the collecting process forked
        time.sleep(120)

os.register_at_fork(before=hang)
"""

# Runs argv (after the first argument, a file for the result) and writes the peak resident
# set size in KiB of any process of its tree that was waited for (RUSAGE_CHILDREN).
_RSS_WRAPPER = ("import resource, subprocess, sys\n"
                "code = subprocess.call(sys.argv[2:])\n"
                "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
                "sys.exit(code)\n")


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
        """child_env() with the canary secret in it."""
        return child_env(**{CANARY_VARIABLE: self.canary, **extra})

    def configure(self, *definitions, wrapper=()):
        return self._record(cmake_configure(self.root, self.build, f"EvidenceGate_DIR={self.product}", *definitions,
                                            env=self.env(), wrapper=wrapper))

    def configured(self, *definitions):
        result = self.configure(*definitions)
        assert result.returncode == 0, f"configuring the consumer failed:\n{result.describe()}"
        return result

    def ctest(self, *args, timeout=CTEST_TIMEOUT, wrapper=(), jobs=2, binary=None, env_extra=None):
        return self._record(ctest(binary or self.build, f"-j{jobs}", *args, timeout=timeout, env=self.env(**(env_extra or {})),
                                  wrapper=wrapper))

    def build_target(self, target):
        """cmake --build for one target of the consumer (a library its tests load)."""
        return self._record(run(["cmake", "--build", str(self.build), "--target", target], timeout=BUILD_TIMEOUT, env=self.env()))

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
        expect_unchanged(self.root, self._digest, tree_digest(self.root))

    def check_canary(self):
        needle = self.canary.encode()
        for result in self.results:
            assert self.canary not in result.output, f"the canary secret is in the output of:\n{result.describe()}"
        if self.build.exists():
            hits = files_holding(self.build, needle)
            assert not hits, f"the canary secret (${CANARY_VARIABLE}) was written to the build tree: {hits}"


def normalized(text):
    """Whitespace collapsed: CMake wraps long messages at any blank."""
    return re.sub(r"\s+", " ", text)


def expect_message(result, pattern, what):
    """`pattern` (a regex, matched on whitespace-collapsed output) names the fault."""
    assert re.search(pattern, normalized(result.output)), (
        f"{what}: expected a message matching {pattern!r}\n{result.describe()}")


def gate_summary(binary, suite=SUITE):
    """PASSED or BLOCKED from the gate's summary line in the last ctest run in binary, or None."""
    return decision(step_output(binary, f"{suite}.gate") or "", suite)
