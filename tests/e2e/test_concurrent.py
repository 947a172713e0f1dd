"""Two ctest invocations over the same sources at once (two build trees): runs that touch the
same fixture groups take turns (a lock per ROOT), so neither sees the other's pollution."""
import subprocess

from conftest import EXAMPLES, Ledger, child_env, configure_example, source_tree_untouched

EXAMPLE = EXAMPLES / "polluter-victim"


def test_two_build_trees_at_once_give_the_verdicts_of_one(build_dir, tmp_path):
    trees = [tmp_path / "a", tmp_path / "b"]
    with source_tree_untouched(EXAMPLE):
        for binary in trees:
            configure_example(EXAMPLE, binary, build_dir)
        runs = [subprocess.Popen(["ctest", "--test-dir", str(binary), "-L", "evidence", "-j2"], env=child_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for binary in trees]
        for run in runs:
            run.wait(timeout=600)
    for binary in trees:
        assert Ledger(binary, "billing").blocking() == [
            "tests/test_billing.py::test_apply_discount", "tests/test_billing.py::test_invoice_totals"]
