"""junit.xml's times (issue 25, item 6): each <testcase> has its measured duration, the median
over its attempts, the <testsuite> the sum of its cases', and every attempt its own time (the
`times` property beside `outcomes`, and the time in each rerun/flaky element's stack trace).
"""

import json
import re
import shutil
import statistics
import xml.etree.ElementTree as ET

from harness import REPO, run
from harness.fixtures import canary, project  # noqa: F401 (fixtures)

SUITE = "faults"
TESTS = """
    import time

    def test_slow():
        time.sleep(0.3)

    def test_fails():
        time.sleep(0.1)
        assert False, "broken"

    def test_quick():
        pass
"""


def properties(case):
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_each_case_has_its_median_time_and_each_attempt_its_own(project):
    project.write("tests/test_times.py", TESTS)
    project.suite("SEEDS 2 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        project.evidence()
        junit = project.evidence_dir() / "junit.xml"
        suite = ET.parse(junit).getroot().find("testsuite")
        cases = {case.get("name"): case for case in suite.iter("testcase")}
        total = 0.0
        for name in ("test_slow", "test_fails", "test_quick"):
            case = cases[name]
            props = properties(case)
            times, outcomes = json.loads(props["times"]), json.loads(props["outcomes"])
            assert set(times) == set(outcomes), props  # every attempt has its own time
            # (the times are written to the millisecond, the median taken before)
            assert abs(float(case.get("time")) - statistics.median(times.values())) <= 0.0011, (name, case.get("time"), times)
            total += float(case.get("time"))
        assert min(json.loads(properties(cases["test_slow"])["times"]).values()) >= 0.3
        assert float(cases["test_slow"].get("time")) >= 0.3
        assert abs(float(suite.get("time")) - total) < 0.01, (suite.get("time"), total)
        failed = json.loads(properties(cases["test_fails"])["times"])
        traces = [e.findtext("stackTrace") for e in cases["test_fails"] if e.tag in ("rerunFailure", "flakyFailure")]
        assert traces, ET.tostring(cases["test_fails"])
        for trace in traces:
            run_id, seconds = re.search(r"run (\S+), order .*, (\d+\.\d{3}) s$", trace, re.S).groups()
            assert f"{failed[run_id]:.3f}" == seconds, (trace, failed)
        if shutil.which("xmllint"):
            checked = run(["xmllint", "--noout", "--schema", REPO / "tests" / "junit" / "evidence-gate-junit.xsd", junit],
                          timeout=60)
            assert checked.returncode == 0, checked.describe()
