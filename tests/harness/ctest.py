"""CMake and CTest as a consumer runs them, and what ctest printed.

``ctest()`` returns a ``CTestRun``: which tests ran with which status, which failed, which
did not run; ``step_output()`` is one CTest test's output from the last run's log (passing
tests too).
"""

import re
import shutil
from pathlib import Path

from harness.commands import CONFIGURE_TIMEOUT, CTEST_TIMEOUT, Result, run
from harness.product import tool


def cmake_configure(source, binary, *definitions, generator=None, env=None, wrapper=()):
    """cmake -S source -B binary -D<definition>...; `wrapper` is put before cmake (a measuring program)."""
    argv = [*wrapper, tool("cmake"), "-S", source, "-B", binary]
    if generator:
        argv += ["-G", generator]
    argv += [f"-D{d}" for d in definitions]
    return run(argv, env=env, timeout=CONFIGURE_TIMEOUT)


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

    def __init__(self, result, binary):
        super().__init__(result.argv, result.returncode, result.stdout, result.stderr, result.elapsed,
                         result.timed_out)
        self.binary = Path(binary)
        self.order = [name for name, _ in _TEST_LINE.findall(self.stdout)]
        self.ran = dict(_TEST_LINE.findall(self.stdout))
        self.failed = sorted(_summary_section(self.stdout, "The following tests FAILED:"))
        self.failed_names = sorted(name for name, _ in self.failed)
        self.not_run = sorted(_summary_section(self.stdout, "The following tests did not run:"))

    def test_output(self, name):
        """One CTest test's output, from Testing/Temporary/LastTest.log (passing tests too)."""
        output = step_output(self.binary, name)
        assert output is not None, f"no output of {name} in {self.binary}/Testing/Temporary/LastTest.log"
        return output


def ctest(binary, *args, timeout=CTEST_TIMEOUT, env=None, wrapper=()):
    """ctest --test-dir binary --output-on-failure args...; `wrapper` is put before ctest."""
    argv = [*wrapper, tool("ctest"), "--test-dir", binary, "--output-on-failure", *args]
    return CTestRun(run(argv, env=env, timeout=timeout), binary)


def ctest_names(binary, *args):
    """The names of the tests ctest would run with `args` (ctest -N)."""
    result = run([tool("ctest"), "--test-dir", binary, "-N", *args], timeout=CONFIGURE_TIMEOUT)
    assert result.returncode == 0, result.describe()
    return re.findall(r"^\s*Test\s+#\d+: (.+?)\s*$", result.stdout, re.M)


def step_output(binary, name):
    """One CTest test's output from the last ctest run in binary (passing tests too), or None."""
    log = Path(binary) / "Testing" / "Temporary" / "LastTest.log"
    if not log.is_file():
        return None
    match = re.search(r"^\d+/\d+ Test: " + re.escape(name) + r"\n.*?^Output:\n-+\n(.*?)<end of output>",
                      log.read_text(errors="replace"), re.M | re.S)
    return match.group(1) if match else None
