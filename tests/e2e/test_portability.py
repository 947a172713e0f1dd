"""The portability ledger end to end: the perturbed run, runner bundles from a second build
tree under another TZ (both directions), a JUnit runner, and no secret value anywhere."""
import subprocess
from pathlib import Path

import pytest

from harness import EXAMPLES, Ledger, child_env, cmake_configure, ctest, expect_verdicts, source_tree_untouched

EXAMPLE = EXAMPLES / "timezone"
GAP = "tests/test_clock.py::test_epoch_is_midnight"
PORTABLE = "tests/test_clock.py::test_epoch_roundtrip"
CANARY = "canary-7c1e0b59d2"


def env(**variables):
    """Every ctest here runs with the canary secret set, so every file it writes is checked."""
    return child_env(DEPLOY_API_TOKEN=CANARY, **variables)


def run_suite(binary, build_dir, tz, perturb, bundles=""):
    configured = cmake_configure(EXAMPLE, binary, f"EvidenceGate_DIR={build_dir}", f"CLOCK_PERTURB={'ON' if perturb else 'OFF'}")
    assert configured.returncode == 0, configured.describe()
    return ctest(binary, "-L", "evidence", env=env(TZ=tz, EVIDENCE_GATE_RUNNER_BUNDLES=bundles))


def assert_no_canary(*trees):
    for tree in trees:
        for path in Path(tree).rglob("*"):
            if path.is_file() and not path.is_symlink():
                assert CANARY.encode() not in path.read_bytes(), f"the secret value leaked into {path}"


@pytest.fixture(scope="module")
def trees(build_dir, tmp_path_factory):
    with source_tree_untouched(EXAMPLE):
        base = tmp_path_factory.mktemp("portability")
        utc, tokyo = base / "utc", base / "tokyo"
        tokyo_run = run_suite(tokyo, build_dir, "Asia/Tokyo", perturb=False)
        utc_run = run_suite(utc, build_dir, "UTC", perturb=False, bundles=str(tokyo / "evidence" / "clock"))
        yield {"utc": utc, "tokyo": tokyo, "utc_run": utc_run, "tokyo_run": tokyo_run, "base": base}


def test_perturbed_run_finds_the_timezone_gap(build_dir, tmp_path):
    with source_tree_untouched(EXAMPLE):
        result = run_suite(tmp_path / "b", build_dir, "UTC", perturb=True)
    assert result.returncode != 0, result.describe()
    ledger = Ledger(tmp_path / "b", "clock")
    expect_verdicts(ledger, {GAP: ("portability-gap", "block"), PORTABLE: ("stable", "pass")})
    row = ledger.tests[GAP]
    assert "perturbed" in row["outcomes"] and row["outcomes"]["perturbed"] == "failed", row
    assert "TZ" in row["reason"], row["reason"]
    assert "--env TZ=" in row.get("reproduce", ""), row


def test_runner_bundle_from_tokyo_is_a_portability_gap_on_utc(trees):
    ledger = Ledger(trees["utc"], "clock")
    expect_verdicts(ledger, {GAP: ("portability-gap", "block"), PORTABLE: ("stable", "pass")})
    assert "TZ" in ledger.tests[GAP]["reason"], ledger.tests[GAP]
    runner_rows = [r for r in ledger.suite_rows if r["test"].startswith("runner:")]
    assert runner_rows and all(r["gate"] == "pass" for r in runner_rows), ledger


def test_utc_bundle_on_tokyo_is_a_runner_only_pass(trees, build_dir):
    result = ctest(trees["tokyo"], "-R", r"clock\.gate",
                   env=env(TZ="Asia/Tokyo", EVIDENCE_GATE_RUNNER_BUNDLES=str(trees["utc"] / "evidence" / "clock")))
    assert result.returncode != 0, result.describe()
    expect_verdicts(Ledger(trees["tokyo"], "clock"),
                    {GAP: ("runner-only-pass", "block"), PORTABLE: ("stable", "pass")})


def test_junit_from_a_plain_pytest_run_is_a_runner(trees):
    junit = trees["base"] / "tokyo.xml"
    subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                    "tests"], cwd=EXAMPLE, env=child_env(TZ="Asia/Tokyo", PYTHONDONTWRITEBYTECODE="1"),
                   stdout=subprocess.DEVNULL, check=False)
    result = ctest(trees["utc"], "-R", r"clock\.gate", env=env(TZ="UTC", EVIDENCE_GATE_RUNNER_BUNDLES=str(junit)))
    assert result.returncode != 0, result.describe()
    expect_verdicts(Ledger(trees["utc"], "clock"), {GAP: ("portability-gap", "block"), PORTABLE: ("stable", "pass")})


def test_bad_bundles_are_left_out_with_a_blocking_row(trees, tmp_path):
    empty = tmp_path / "no-manifest"
    empty.mkdir()
    broken = tmp_path / "broken.xml"
    broken.write_text("<testsuite><testcase")
    result = ctest(trees["utc"], "-R", r"clock\.gate", env=env(TZ="UTC", EVIDENCE_GATE_RUNNER_BUNDLES=f"{empty};{broken}"))
    assert result.returncode != 0, result.describe()
    rows = {r["test"]: r for r in Ledger(trees["utc"], "clock").suite_rows}
    assert rows[f"runner:{empty}"]["gate"] == "block" and "manifest" in rows[f"runner:{empty}"]["reason"], rows
    assert rows[f"runner:{broken}"]["gate"] == "block" and "broken.xml" in rows[f"runner:{broken}"]["reason"], rows


def test_secret_values_are_recorded_by_name_only(trees):
    manifest = (trees["utc"] / "evidence" / "clock" / "manifest.json").read_text()
    assert "DEPLOY_API_TOKEN" in manifest
    assert_no_canary(trees["utc"], trees["tokyo"])
    assert CANARY not in trees["utc_run"].output + trees["tokyo_run"].output


def test_bundles_in_any_order_give_a_byte_identical_ledger(trees, build_dir, tmp_path):
    junit = tmp_path / "other.xml"
    junit.write_text('<testsuite hostname="ci-box"><testcase classname="tests.test_clock" name="test_epoch_roundtrip"/></testsuite>')
    bundles = [str(trees["tokyo"] / "evidence" / "clock"), str(junit), str(tmp_path / "missing")]
    suite = trees["utc"] / "evidence" / "clock" / "suite.json"
    ledgers = []
    for order in (bundles, bundles[::-1]):
        subprocess.run([build_dir / "tools" / "evgate", "ledger", f"--suite={suite}"], check=True, stdout=subprocess.DEVNULL,
                       env=env(TZ="UTC", EVIDENCE_GATE_RUNNER_BUNDLES=";".join(order)))
        ledgers.append((suite.parent / "ledger.jsonl").read_bytes())
    assert ledgers[0] == ledgers[1]
