"""Localisation end to end: every order-dependent test gets the partner it hangs on, a
nondeterministic one gets none, and each blocking row's reproduce command replays it."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from harness import Ledger, child_env, cmake_configure, ctest, source_tree_untouched, step_output

PROJECT = Path(__file__).parent / "projects" / "culprits"


@pytest.fixture(scope="module")
def ledger(build_dir, tmp_path_factory):
    binary = tmp_path_factory.mktemp("culprits") / "build"
    with source_tree_untouched(PROJECT):
        configured = cmake_configure(PROJECT, binary, f"EvidenceGate_DIR={build_dir}")
        assert configured.returncode == 0, configured.describe()
        result = ctest(binary, "-L", "evidence", "-j2")
    assert result.returncode != 0, result.describe()
    return Ledger(binary, "culprits")


def row(ledger, test):
    return ledger.tests[f"tests/{test}"]


def test_a_file_polluter_is_named_with_the_group_it_dirtied(ledger):
    victim = row(ledger, "test_store.py::test_store_starts_empty")
    assert victim["verdict"] == "order-dependent", victim
    assert victim["partner"] == "tests/test_store.py::test_add_item" and victim["partner_role"] == "polluter", victim
    assert "fails after tests/test_store.py::test_add_item (polluter, dirtied 'state')" in victim["reason"], victim
    assert row(ledger, "test_store.py::test_add_item")["verdict"] == "polluter"


def test_a_brittle_test_gets_its_state_setter(ledger):
    brittle = row(ledger, "test_registry.py::test_csv_plugin_is_registered")
    assert brittle["partner"] == "tests/test_registry.py::test_register_plugin", brittle
    assert brittle["partner_role"] == "state-setter", brittle


def test_a_victim_of_two_polluters_gets_both(ledger):
    victim = row(ledger, "test_flags.py::test_not_both_flags")
    assert sorted(victim["partner"]) == ["tests/test_flags.py::test_set_flag_one", "tests/test_flags.py::test_set_flag_two"]


def test_a_cleaner_is_found(ledger):
    victim = row(ledger, "test_mode.py::test_mode_is_good")
    assert victim["partner"] == "tests/test_mode.py::test_enter_bad_mode", victim
    assert victim["cleaners"] == ["tests/test_mode.py::test_reset_mode"], victim


def test_a_nondeterministic_test_gets_no_partner(ledger):
    coin = row(ledger, "test_coin.py::test_coin_flip")
    assert coin["verdict"] == "flaky" and "partner" not in coin, coin


def test_the_only_blocking_rows_are_the_known_ones(ledger):
    assert ledger.blocking() == sorted(f"tests/{t}" for t in (
        "test_coin.py::test_coin_flip", "test_flags.py::test_not_both_flags", "test_mode.py::test_mode_is_good",
        "test_registry.py::test_csv_plugin_is_registered", "test_store.py::test_add_item",
        "test_store.py::test_store_starts_empty"))


def test_the_reproduce_command_replays_the_failure_from_anywhere(ledger, tmp_path):
    command = row(ledger, "test_store.py::test_store_starts_empty")["reproduce"]
    with source_tree_untouched(PROJECT):
        result = subprocess.run(command, shell=True, cwd=tmp_path, env=child_env(), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert result.returncode != 0, result.stdout
    assert "reproduced: tests/test_store.py::test_store_starts_empty failed" in result.stdout, result.stdout
    assert "AssertionError" in result.stdout or "assert" in result.stdout


# ============================================================== more victims of a polluter found


def test_a_polluter_found_is_swept_for_its_other_victims(build_dir, tmp_path):
    """The collection order shows one victim of test_b; the sweep (test_b first, then every
    other test) shows the one before it in the collection, which no order ran after test_b.
    Both rows name test_b; the sweep and its reruns are runs of their own in the evidence."""
    project = Path(__file__).parent / "projects" / "sweep"
    binary = tmp_path / "build"
    with source_tree_untouched(project):
        configured = cmake_configure(project, binary, f"EvidenceGate_DIR={build_dir}")
        assert configured.returncode == 0, configured.describe()
        result = ctest(binary, "-L", "evidence", "-j2")
    assert result.returncode != 0, result.describe()
    ledger = Ledger(binary, "sweep")
    for victim in ("test_c_reads_the_real_clock_too", "test_a_reads_the_real_clock"):
        found = ledger.tests[f"tests/test_clock.py::{victim}"]
        assert found["verdict"] == "order-dependent", found
        assert found["partner"] == "tests/test_clock.py::test_b_freezes_and_forgets", found
    assert "fails in sweep.1" in ledger.tests["tests/test_clock.py::test_a_reads_the_real_clock"]["reason"]
    assert ledger.blocking() == sorted(f"tests/test_clock.py::{t}" for t in (
        "test_a_reads_the_real_clock", "test_c_reads_the_real_clock_too"))
    runs = binary / "evidence" / "sweep" / "runs"
    assert (runs / "sweep.1.plan.json").is_file() and (runs / "sweep.1.rerun.2.jsonl").is_file()
    assert "sweep.1: 1 more order-dependent test(s)" in (binary / "Testing" / "Temporary" / "LastTest.log").read_text()


def run_a_sweep_project(build_dir, tmp_path, change):
    """projects/sweep copied, changed by `change(project)`, run (the gate blocks): (binary, ledger)."""
    project = tmp_path / "src"
    shutil.copytree(Path(__file__).parent / "projects" / "sweep", project)
    change(project)
    binary = tmp_path / "build"
    configured = cmake_configure(project, binary, f"EvidenceGate_DIR={build_dir}")
    assert configured.returncode == 0, configured.describe()
    result = ctest(binary, "-L", "evidence", "-j2")
    assert result.returncode != 0, result.describe()
    return binary, Ledger(binary, "sweep")


def test_a_sweep_the_step_has_no_time_for_is_said_not_skipped_silently(build_dir, tmp_path):
    """With RERUNS 70 a sweep and its reruns may take 71 TIMEOUTs, and LOCALISE 7 gives the step
    71: the polluter is found, its sweep does not run, and the step says so and why."""
    def with_many_reruns(project):
        cmake_lists = project / "CMakeLists.txt"
        cmake_lists.write_text(cmake_lists.read_text().replace("PER_TEST OFF", "PER_TEST OFF LOCALISE 7 RERUNS 70"))

    binary, ledger = run_a_sweep_project(build_dir, tmp_path, with_many_reruns)
    found = ledger.tests["tests/test_clock.py::test_c_reads_the_real_clock_too"]
    assert found["partner"] == "tests/test_clock.py::test_b_freezes_and_forgets", found
    assert not (binary / "evidence" / "sweep" / "runs" / "sweep.1.plan.json").exists()
    said = step_output(binary, "sweep.localise")
    assert re.search(r"not swept for more victims: tests/test_clock.py::test_b_freezes_and_forgets \(a sweep and its 70 "
                     r"rerun\(s\) may take \d+ s \(a TIMEOUT each\), more than the step's \d+ s left\)", said), said


def test_a_test_that_fails_only_in_the_sweep_is_flaky_not_localised(build_dir, tmp_path):
    """A test that fails in the sweep and passes when the sweep's order runs again is `flaky`
    (the sweep's reruns share its order), gets no partner, and is never localised."""
    def with_a_test_failing_in_the_first_sweep(project):
        (project / "tests" / "test_only_in_the_sweep.py").write_text(
            "import sys\n\n\ndef test_z_fails_in_the_first_sweep():\n"
            "    assert '--evidence-gate-run=sweep.1' not in sys.argv\n")

    binary, ledger = run_a_sweep_project(build_dir, tmp_path, with_a_test_failing_in_the_first_sweep)
    coin = ledger.tests["tests/test_only_in_the_sweep.py::test_z_fails_in_the_first_sweep"]
    assert coin["verdict"] == "flaky" and "partner" not in coin, coin
    assert "sweep.1" in coin["reason"], coin
    assert coin["outcomes"]["sweep.1"] == "failed" and coin["outcomes"]["sweep.1.rerun.1"] == "passed", coin
    # No seed makes the sweep's order (its plan says "listed"): the reproduce command lists its tests.
    replayed = coin["reproduce"].split(" --test ")[1:]
    assert len(replayed) > 1 and replayed[-1].startswith("tests/test_only_in_the_sweep.py::test_z"), coin
    assert "--through" not in coin["reproduce"], coin
    localised = (binary / "evidence" / "sweep" / "localise.json").read_text()
    assert "test_z_fails_in_the_first_sweep" not in localised
