"""Workspace receipts and the collection baseline, on seed 002's lab tree (copied to a temp
dir for each case, so each case can break it its own way)."""
import shutil
from pathlib import Path

import pytest

from harness import Ledger, cmake_configure, ctest, step_output

LAB = Path(__file__).parent / "projects" / "lab-tree"
IDS = ["tests/test_settings.py::test_env_is_set_by_conftest", "tests/test_settings.py::test_fast_path",
       "tests/test_settings.py::test_slow_path"]


def lab_copy(tmp_path):
    tree = tmp_path / "lab"
    shutil.copytree(LAB, tree)
    return tree


def run_lab(tree, build_dir, *definitions):
    binary = tree.parent / "build"
    configured = cmake_configure(tree, binary, f"EvidenceGate_DIR={build_dir}", *definitions)
    assert configured.returncode == 0, configured.describe()
    return binary, ctest(binary, "-L", "evidence")


def rows(binary):
    return {row["test"]: row for row in Ledger(binary, "lab").rows}


def test_rooted_at_the_project_the_receipt_holds_and_names_the_stray_ini_it_ignores(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    binary, result = run_lab(tree, build_dir)
    assert result.returncode == 0, result.describe()
    receipt = (binary / "evidence" / "lab" / "receipt.json").read_text()
    assert '"configfile":"' + str(tree / "pyproject.toml") + '"' in receipt
    assert str(tree / "tests" / "conftest.py") in receipt
    # src/ holds no test of the suite: its pytest.ini cannot re-root the collection.
    assert '"stray_configs":[]' in receipt and '"stray_configs_ignored":["src/pytest.ini"]' in receipt
    assert '"digest":"sha256:' in receipt
    row = rows(binary)["stray-configs-ignored"]
    assert row["gate"] == "pass" and not row.get("warning") and "src/pytest.ini" in row["reason"], row


def test_a_pyproject_without_a_pytest_table_is_the_config_where_pytest_takes_it(tmp_path, build_dir):
    """A project whose only pyproject.toml has no [tool.pytest.ini_options], as many have: pytest
    8.1 and later take it as the config file, 7.2 takes none. Either way the receipt holds and
    the suite passes (this runs on every leg of the pytest matrix: pytestN.e2e.receipt)."""
    tree = lab_copy(tmp_path)
    (tree / "pyproject.toml").write_text('[project]\nname = "lab-tree"\nversion = "0"\n')
    (tree / "src" / "pytest.ini").unlink()
    binary, result = run_lab(tree, build_dir, "LAB_TESTS=tests")
    receipt = rows(binary)["receipt"]
    assert receipt["gate"] == "pass", f"{receipt}\n{step_output(binary, 'lab.receipt')}"
    assert result.returncode == 0, result.describe()


def test_only_configs_that_could_re_root_the_suite_warn_and_one_row_says_what_was_ignored(tmp_path, build_dir):
    """A vendored library in a git submodule and a docs folder, each with its own pytest
    config, beside a stray pytest.ini among the suite's own tests."""
    tree = lab_copy(tmp_path)
    (tree / "third_party" / "lib" / "tests").mkdir(parents=True)
    (tree / "third_party" / "lib" / ".git").write_text("gitdir: ../../.git/modules/lib\n")
    (tree / "third_party" / "lib" / "setup.cfg").write_text("[tool:pytest]\ntestpaths = tests\n")
    (tree / "third_party" / "lib" / "tests" / "pytest.ini").write_text("[pytest]\n")
    (tree / "docs").mkdir()
    (tree / "docs" / "tox.ini").write_text("[pytest]\naddopts = --doctest-glob=*.rst\n")
    (tree / "tests" / "pytest.ini").write_text("")
    binary, result = run_lab(tree, build_dir)
    got = rows(binary)
    warned = sorted(test for test, row in got.items() if row.get("warning") and test.startswith("stray-config"))
    assert warned == ["stray-config:tests/pytest.ini"], got
    ignored = [row for test, row in got.items() if test.startswith("stray-config") and not row.get("warning")]
    assert [row["test"] for row in ignored] == ["stray-configs-ignored"], got
    reason = ignored[0]["reason"]
    for name in ("docs/tox.ini", "src/pytest.ini", "third_party/lib/setup.cfg", "third_party/lib/tests/pytest.ini"):
        assert name in reason, reason
    assert reason.startswith("4 config files below ROOT could not re-root") and "2 in git submodules" in reason, reason
    gate = step_output(binary, "lab.gate")
    assert "WARN stray-config:tests/pytest.ini" in gate and "third_party" not in gate and "docs/" not in gate, gate


def test_rooted_at_src_by_mistake_blocks_explaining_the_shrunken_collection(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    binary, result = run_lab(tree, build_dir, "LAB_ROOT=src")
    assert result.returncode != 0
    assert "src/pytest.ini" in result.output, result.describe()  # which config won
    baseline = rows(binary)["baseline"]
    assert baseline["gate"] == "block" and "expects 3" in baseline["reason"], baseline
    assert all(test in baseline["reason"] for test in IDS[:2]), baseline


def test_addopts_that_deselect_block_against_the_baseline_naming_the_ids(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    pyproject = tree / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + 'addopts = "-m \'not slow\'"\n')
    binary, result = run_lab(tree, build_dir)
    assert result.returncode != 0
    got = rows(binary)
    assert got["baseline"]["gate"] == "block" and "tests/test_settings.py::test_slow_path" in got["baseline"]["reason"]
    assert got["thinning"]["warning"] is True and "-m not slow" in got["thinning"]["reason"], got["thinning"]


def test_a_module_renamed_out_of_the_pattern_blocks(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    (tree / "tests" / "test_settings.py").rename(tree / "tests" / "settings_check.py")
    binary, result = run_lab(tree, build_dir)
    assert result.returncode != 0
    assert all(test in rows(binary)["baseline"]["reason"] for test in IDS[:2])


def test_an_empty_pytest_ini_in_the_tests_is_reported(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    (tree / "tests" / "pytest.ini").write_text("")
    binary, result = run_lab(tree, build_dir)
    assert rows(binary)["stray-config:tests/pytest.ini"]["warning"] is True


def test_an_empty_pytest_ini_that_pytest_picks_up_blocks(tmp_path, build_dir):
    # With TESTS tests, pytest looks for its config from tests/ upward: the stray file wins.
    tree = lab_copy(tmp_path)
    (tree / "tests" / "pytest.ini").write_text("")
    binary, result = run_lab(tree, build_dir, "LAB_TESTS=tests")
    assert result.returncode != 0
    receipt_row = rows(binary)["receipt"]
    assert receipt_row["gate"] == "block" and "tests/pytest.ini" in receipt_row["reason"], receipt_row


def test_a_module_that_fails_to_import_blocks_with_the_error(tmp_path, build_dir):
    tree = lab_copy(tmp_path)
    (tree / "tests" / "test_broken.py").write_text("import no_such_module_anywhere\n")
    binary, result = run_lab(tree, build_dir)
    assert result.returncode != 0
    collection = rows(binary)["collection"]
    assert collection["gate"] == "block" and "no_such_module_anywhere" in collection["reason"], collection


@pytest.mark.parametrize("text, message", [
    ("not json", "baseline.json:1: column 2: not valid JSON"),
    ('{"collected": -1}', "'collected' is not a non-negative integer"),
    ('{"collected": 2.5}', "'collected' is not a non-negative integer"),
])
def test_a_bad_baseline_stops_configuration_naming_the_file(tmp_path, build_dir, text, message):
    tree = lab_copy(tmp_path)
    (tree / "baseline.json").write_text(text)
    configured = cmake_configure(tree, tmp_path / "build", f"EvidenceGate_DIR={build_dir}")
    assert configured.returncode != 0
    assert message in " ".join(configured.output.split()), configured.describe()
