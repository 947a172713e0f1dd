"""Sharding: two build trees run shards 1/2 and 2/2, a third merges them; its ledger equals a
single full run's, and a missing, duplicated or malformed shard is never a smaller matrix."""
import pytest

from harness import EXAMPLES, Ledger, child_env, cmake_configure, configure_example, ctest, source_tree_untouched

EXAMPLE = EXAMPLES / "polluter-victim"
SUITE = "billing"


def evidence(binary):
    return binary / "evidence" / SUITE


def normalised_ledger(binary):
    """The ledger with this build tree's path replaced: reproduce commands name their suite file."""
    return Ledger(binary, SUITE).text.replace(str(binary), "<build>")


@pytest.fixture(scope="module")
def shards(build_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    trees = {name: base / name for name in ("s1", "s2", "merge", "single")}
    with source_tree_untouched(EXAMPLE):
        for binary in trees.values():
            configure_example(EXAMPLE, binary, build_dir)
        # -j1: runs side by side are done again alone where they happened to overlap (the
        # `.apart` runs), which load decides; the ledgers compared here must not depend on it.
        runs = {
            "s1": ctest(trees["s1"], "-L", "evidence", "-j1", env=child_env(EVIDENCE_GATE_SHARD="1/2")),
            "s2": ctest(trees["s2"], "-L", "evidence", "-j1", env=child_env(EVIDENCE_GATE_SHARD="2/2")),
        }
        shard_dirs = f"{evidence(trees['s1'])};{evidence(trees['s2'])}"
        runs["merge"] = ctest(trees["merge"], "-L", "evidence", "-j1", env=child_env(EVIDENCE_GATE_SHARDS=shard_dirs))
        runs["single"] = ctest(trees["single"], "-L", "evidence", "-j1")
    yield trees, runs


def test_each_shard_runs_its_slice_of_the_seeds(shards):
    trees, runs = shards
    for name, mine in (("s1", {0, 2, 4, 6, 8}), ("s2", {1, 3, 5, 7})):
        ran = {int(p.name.split(".")[1]) for p in (evidence(trees[name]) / "runs").glob("seed.*.plan.json")
               if ".rerun." not in p.name}
        assert ran == mine, (name, ran, runs[name].describe())
        assert f'"shard":"{name[1]}/2"' in (evidence(trees[name]) / "receipt.json").read_text()


def test_the_merged_ledger_equals_a_single_full_run(shards):
    trees, runs = shards
    assert runs["merge"].returncode != 0 and runs["single"].returncode != 0
    assert normalised_ledger(trees["merge"]) == normalised_ledger(trees["single"])
    assert Ledger(trees["merge"], SUITE).blocking() == [
        "tests/test_billing.py::test_apply_discount", "tests/test_billing.py::test_invoice_totals"]


def test_a_missing_shard_blocks(shards):
    trees, _ = shards
    result = ctest(trees["merge"], "-R", r"billing\.gate", env=child_env(EVIDENCE_GATE_SHARDS=str(evidence(trees["s1"]))))
    assert result.returncode != 0
    rows = {r["test"]: r for r in Ledger(trees["merge"], SUITE).suite_rows}
    assert rows["shard:shard 2/2"]["gate"] == "block", rows
    assert rows["run:seed.1"]["gate"] == "block", rows


def test_a_duplicated_shard_blocks(shards):
    trees, _ = shards
    twice = f"{evidence(trees['s1'])};{evidence(trees['s2'])};{evidence(trees['s2'])}"
    result = ctest(trees["merge"], "-R", r"billing\.gate", env=child_env(EVIDENCE_GATE_SHARDS=twice))
    assert result.returncode != 0
    assert any("is also" in r["reason"] and r["gate"] == "block" for r in Ledger(trees["merge"], SUITE).suite_rows)


@pytest.mark.parametrize("spec", ["0/2", "3/2", "a/b", "1"])
def test_a_malformed_shard_spec_is_a_clear_error(shards, spec):
    trees, _ = shards
    result = ctest(trees["s1"], "-R", r"billing\.seed\.0$", env=child_env(EVIDENCE_GATE_SHARD=spec))
    assert result.returncode != 0
    assert f"EVIDENCE_GATE_SHARD must be k/n with 1 <= k <= n, not '{spec}'" in result.output, result.describe()


def test_a_shard_from_another_environment_becomes_a_runner_column(build_dir, tmp_path):
    example = EXAMPLES / "timezone"
    trees = {name: tmp_path / name for name in ("s1", "s2", "merge")}
    with source_tree_untouched(example):
        for binary in trees.values():
            configured = cmake_configure(example, binary, f"EvidenceGate_DIR={build_dir}", "CLOCK_PERTURB=OFF")
            assert configured.returncode == 0, configured.describe()
        ctest(trees["s1"], "-L", "evidence", env=child_env(TZ="UTC", EVIDENCE_GATE_SHARD="1/2"))
        ctest(trees["s2"], "-L", "evidence", env=child_env(TZ="Asia/Tokyo", EVIDENCE_GATE_SHARD="2/2"))
        shard_dirs = f"{trees['s1'] / 'evidence' / 'clock'};{trees['s2'] / 'evidence' / 'clock'}"
        result = ctest(trees["merge"], "-L", "evidence", env=child_env(TZ="UTC", EVIDENCE_GATE_SHARDS=shard_dirs))
    assert result.returncode != 0, result.describe()
    ledger = Ledger(trees["merge"], "clock")
    gap = ledger.tests["tests/test_clock.py::test_epoch_is_midnight"]
    assert gap["verdict"] == "portability-gap" and "TZ" in gap["reason"], gap
    notes = [r for r in ledger.suite_rows if r["test"].startswith("shard:") and r.get("warning")]
    assert len(notes) == 1 and "2/2 ran in another environment" in notes[0]["reason"] and "TZ" in notes[0]["reason"], notes
    assert not [r for r in ledger.suite_rows if r["gate"] == "block"], ledger  # its seeds are not "missing"
