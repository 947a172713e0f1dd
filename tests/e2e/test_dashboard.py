"""The `ctest -S` dashboard template: measurements and attached files reach CTest's XML."""
import re

from harness import EXAMPLES, REPO, run, source_tree_untouched

TEMPLATE = REPO / "templates" / "dashboard" / "evidence_dashboard.cmake"


def test_dashboard_script_records_measurements_and_attachments(build_dir, tmp_path):
    with source_tree_untouched(EXAMPLES / "clean"):
        result = run(["ctest", "-S", TEMPLATE, f"-DSOURCE={EXAMPLES / 'clean'}", f"-DBUILD={tmp_path}",
                      f"-DCONFIGURE_OPTIONS=-DEvidenceGate_DIR={build_dir}"], timeout=600)
    assert result.returncode == 0, result.describe()
    [test_xml] = list(tmp_path.glob("Testing/*/Test.xml"))
    xml = test_xml.read_text(errors="replace")
    names = set(re.findall(r'<NamedMeasurement type="numeric/double" name="([a-z]+)">', xml))
    assert {"tests", "blocking", "deferred", "seeds", "runners"} <= names, names
    assert 'filename="ledger.jsonl"' in xml and 'filename="report.html"' in xml


def test_dashboard_script_fails_when_the_gate_blocks(build_dir, tmp_path):
    with source_tree_untouched(EXAMPLES / "polluter-victim"):
        result = run(["ctest", "-S", TEMPLATE, f"-DSOURCE={EXAMPLES / 'polluter-victim'}", f"-DBUILD={tmp_path}",
                      f"-DCONFIGURE_OPTIONS=-DEvidenceGate_DIR={build_dir}"], timeout=600)
    assert result.returncode != 0, result.describe()
    assert "the evidence gate did not pass" in result.output
    # It prints the BLOCK lines it points at, and says that nothing was submitted.
    assert re.search(r"^BLOCK tests/test_billing\.py::test_apply_discount: polluter, ", result.output, re.M), result.describe()
    assert re.search(r"^evidence-gate billing: .* -> BLOCKED$", result.output, re.M), result.describe()
    assert "nothing was submitted (no -DSUBMIT_URL given)" in result.output, result.describe()
