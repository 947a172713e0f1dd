"""Running a command for a test: in the environment a user would have, within a bound.

``run()`` starts the command in its own session; when the bound passes, the whole process
group is killed and the test fails as a hang, so that a hang fails the test instead of CI.
"""

import os
import signal
import subprocess
import time

import pytest

# Bounds on one cmake / ctest invocation, and on building or installing the product.
CONFIGURE_TIMEOUT = 120
CTEST_TIMEOUT = 300
BUILD_TIMEOUT = 600

# A user's environment normally has none of these. PYTHONDONTWRITEBYTECODE above all: the
# product must keep bytecode and caches out of the source tree by itself. The consumer finds
# the product through EvidenceGate_DIR only. PYTEST_DISABLE_PLUGIN_AUTOLOAD keeps the installed
# plugins out of the harness's own pytest (the version matrix); the consumers' pytest loads them.
NOT_INHERITED = ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "EVIDENCE_GATE_RUNNER_BUNDLES", "CTEST_PARALLEL_LEVEL",
                 "CTEST_OUTPUT_ON_FAILURE", "MAKEFLAGS", "EVIDENCE_GATE_BUILD_DIR", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")


def child_env(**extra):
    """The environment of cmake, ctest and the tools: ours, minus what would change what is measured."""
    env = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
    env.update(extra)
    return env


class Result:
    """A finished command: exit status, its output (stdout then stderr) and how long it took."""

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


def run(argv, *, timeout, env=None, cwd=None):
    """Runs argv (in child_env() unless told otherwise) in its own session; on timeout the
    whole process group is killed and the test fails."""
    start = time.monotonic()
    process = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=env or child_env(), stdout=subprocess.PIPE,
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
