"""One count, one wording (issue 25, item 5): the number of runs a row's reason gives is the
number of outcomes the row lists, the gate's summary line counts the runs those outcomes name,
and the ledger, the gate line, report.md, report.html and the test's own CTest entry all say
it the same way, singular or plural ("1 test over 2 runs", never "1 tests").
"""

import html
import re

from harness import Ledger, step_output
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

SUITE = "faults"
ONE = "tests/test_one.py::test_fails"


def test_a_failing_one_test_suite_is_counted_alike_everywhere(project):
    project.write("tests/test_one.py", "def test_fails():\n    assert 1 == 2\n")
    project.suite("TESTS tests")  # with the perturbed run: another column of the same outcomes
    with project.checked():
        project.configured()
        project.evidence()
        ledger = Ledger(project.build, SUITE)
        row = ledger.tests[ONE]
        runs = len(row["outcomes"])
        assert runs >= 2 and "perturbed" in row["outcomes"], row
        assert row["reason"].startswith(f"fails in every run ({runs} runs, alone too)"), row
        [collection] = [r for r in ledger.suite_rows if r["test"] == "collection"]
        assert collection["reason"] == "1 test collected", collection

        line = f"evidence-gate {SUITE}: 1 test over {runs} runs: 1 block, 0 defer, 0 pass -> BLOCKED"
        gate = step_output(project.build, f"{SUITE}.gate")
        assert line in gate.splitlines(), gate
        assert f"BLOCK {ONE}: failing, {row['reason']}" in gate.splitlines(), gate
        assert f"1 test over {runs} runs: 1 block, 0 defer, 0 pass" in step_output(project.build, f"{SUITE}.ledger")

        entry = step_output(project.build, f"{SUITE}/{ONE}").splitlines()
        assert entry[0] == f"failing: {row['reason']}", entry
        listed = [line for line in entry if re.match(r"^\s+\S+: (passed|failed)", line)]
        assert len(listed) == runs, entry  # every run the reason counts, and no other

        evidence = project.evidence_dir()
        assert f"1 test over {runs} runs: 1 block, 0 defer, 0 pass\n" in (evidence / "report.md").read_text()
        page = html.unescape((evidence / "report.html").read_text())
        assert f"1 test over {runs} runs: 1 block, 0 defer, 0 pass" in page
        assert "1 tests" not in page and "1 tests" not in gate, gate
