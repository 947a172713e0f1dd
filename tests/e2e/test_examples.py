"""The examples under examples/, configured with real CMake and run with real CTest.

Each test configures one example against the product's build tree
(EVIDENCE_GATE_BUILD_DIR) into tmp_path, runs ``ctest -L evidence`` and checks ctest's
exit status, the ledger rows, the gate's BLOCK/DEFER lines, and that the example's source
directory is byte-identical afterwards, without __pycache__ or .pytest_cache.
"""

import json
import re

import pytest

from harness import (EXAMPLES, Ledger, configure_example, ctest, ctest_names, expect_verdicts, gate_lines,
                     repeated_steps, source_tree_untouched, summary_line)

PASS = ("stable", "pass")


def expect_ctest_mirrors(run, *ledgers):
    """ctest's own result mirrors the ledgers.

    Each suite has one per-test entry `<suite>/<node id>` per ledger row: it fails when the
    row blocks and is skipped when the test was skipped. `<suite>.gate` fails iff a row
    blocks. Nothing else fails: a failing or crashing seed run is data, not an error.
    """
    failed, skipped = set(), set()
    for ledger in ledgers:
        suite = ledger.suite
        # A seed (or the alone pass) whose order an earlier seed runs is skipped: no new evidence.
        skipped |= set(repeated_steps(run.binary, suite))
        entries = {name for name in run.ran if name.startswith(suite + "/")}
        assert entries == {f"{suite}/{test}" for test in ledger.tests}, (
            f"{suite} must have one per-test CTest entry per ledger row; ran {sorted(entries)}\n{ledger}")
        if ledger.blocking():
            failed.add(f"{suite}.gate")
        failed |= {f"{suite}/{test}" for test, row in ledger.tests.items() if row["gate"] == "block"}
        skipped |= {f"{suite}/{test}" for test, row in ledger.tests.items() if row["verdict"] == "skipped"}
    assert run.failed_names == sorted(failed), (
        f"expected exactly {sorted(failed)} to fail, ctest reported {run.failed}:\n{run.describe()}")
    assert run.not_run == sorted((name, "Skipped") for name in skipped), (
        f"expected exactly {sorted(skipped)} to be skipped, ctest reported {run.not_run}:\n{run.describe()}")
    assert (run.returncode != 0) == bool(failed), f"ctest's exit status is wrong:\n{run.describe()}"


def expect_gate_lines(run, suite, expected, ledger):
    """The gate printed exactly `expected` BLOCK/DEFER lines, and they match the ledger."""
    text = run.test_output(f"{suite}.gate")
    printed = gate_lines(text)
    assert sorted(printed) == sorted(expected), f"gate lines of {suite}: {printed}, expected {expected}:\n{text}"
    from_ledger = sorted(("BLOCK" if row["gate"] == "block" else "DEFER", row["test"], row["verdict"])
                         for row in ledger.rows if row["gate"] != "pass")
    assert sorted(printed) == from_ledger, f"the gate's lines disagree with the ledger:\n{text}\n{ledger}"
    summary = summary_line(text, suite)
    blocked = any(kind == "BLOCK" for kind, _, _ in expected)
    assert summary.group(8) == ("BLOCKED" if blocked else "PASSED"), f"gate summary of {suite}: {summary.group(0)}"
    if blocked:  # with --output-on-failure the user sees them in ctest's own output
        for kind, test, verdict in expected:
            assert f"{kind} {test}: {verdict}, " in run.stdout, f"'{kind} {test}' not in ctest's output:\n{run.describe()}"
    return text


def no_suite_row_blocks(ledger):
    blocking = [row for row in ledger.suite_rows if row["gate"] != "pass"]
    assert not blocking, f"suite-level rows do not pass: {blocking}\n{ledger}"


# ------------------------------------------------------------------ polluter-victim

BILLING = "tests/test_billing.py::"


def test_polluter_victim_blocks_the_polluter_and_its_victim(tmp_path, build_dir):
    example = EXAMPLES / "polluter-victim"
    fixture = example / "fixtures" / "config" / "billing.json"
    pristine = fixture.read_bytes()
    with source_tree_untouched(example):
        configure_example(example, tmp_path / "build", build_dir)
        # -j2 on the example with fixture groups: the lease lock must keep runs apart.
        run = ctest(tmp_path / "build", "-j2", "-L", "evidence")
        ledger = Ledger(tmp_path / "build", "billing")

        assert run.returncode != 0, f"the gate must block:\n{run.describe()}"
        expect_verdicts(ledger, {
            BILLING + "test_apply_discount": ("polluter", "block"),
            BILLING + "test_invoice_totals": ("order-dependent", "block"),
            BILLING + "test_rounding": PASS,
            BILLING + "test_health": PASS,
        })
        assert ledger.blocking() == [BILLING + "test_apply_discount", BILLING + "test_invoice_totals"], str(ledger)
        polluter = ledger.tests[BILLING + "test_apply_discount"]
        assert polluter.get("dirty") == ["config"], f"the polluter row must name the group it dirtied: {polluter}"
        victim = ledger.tests[BILLING + "test_invoice_totals"]
        assert "dirty" not in victim or victim["dirty"] == [], f"the victim dirtied nothing: {victim}"
        outcomes = set(victim["outcomes"].values())
        assert {"passed", "failed"} <= outcomes, f"the victim must pass in some orders and fail in others: {victim}"
        no_suite_row_blocks(ledger)
        expect_ctest_mirrors(run, ledger)
        expect_gate_lines(run, "billing", [("BLOCK", BILLING + "test_apply_discount", "polluter"),
                                           ("BLOCK", BILLING + "test_invoice_totals", "order-dependent")], ledger)
    assert fixture.read_bytes() == pristine, "fixtures/config/billing.json must be restored after ctest"


# ------------------------------------------------------------------ clean

STOCK = "tests/test_stock.py::"
CLEAN = {
    "tests/test_export.py::test_export_rewrites_its_own_file": PASS,
    "tests/test_export.py::test_legacy_export": ("skipped", "pass"),
    "tests/test_math.py::test_total": PASS,
    "tests/test_math.py::test_total_of_nothing": PASS,
    STOCK + "test_reference_is_read_only": PASS,
    STOCK + "test_in_stock[widget-True]": PASS,
    STOCK + "test_in_stock[gadget-False]": PASS,
    STOCK + "test_in_stock[gizmo-True]": PASS,
    STOCK + "test_odd_ids[a[1]]": PASS,
    STOCK + "test_odd_ids[b::2]": PASS,
    STOCK + "test_odd_ids[c d]": PASS,
}


def expect_clean_ledger(run, binary):
    ledger = Ledger(binary, "inventory")
    expect_verdicts(ledger, CLEAN)
    assert ledger.blocking() == [] and ledger.deferred() == [], str(ledger)
    no_suite_row_blocks(ledger)
    seeds = {f"seed.{k}" for k in range(5)}  # SEEDS 4 and the collection order
    for test, row in ledger.tests.items():
        expected = "skipped" if CLEAN[test][0] == "skipped" else "passed"
        assert set(row["outcomes"]) >= seeds and set(row["outcomes"].values()) == {expected}, (
            f"{test} must be {expected} in every seed run: {row}")
    text = expect_gate_lines(run, "inventory", [], ledger)
    summary = summary_line(text, "inventory")
    assert summary.group(2, 4, 5, 6) == ("11", "0", "0", "11"), summary.group(0)
    return ledger


def test_clean_suite_passes(tmp_path, build_dir):
    example = EXAMPLES / "clean"
    export = example / "fixtures" / "data" / "export.csv"
    pristine = export.read_bytes()
    with source_tree_untouched(example):
        configured = configure_example(example, tmp_path / "build", build_dir)
        assert re.search(r"EvidenceGate: suite 'inventory' runs pytest with '\S+' \(Python [0-9.]+, pytest [0-9][^)]*\): ",
                         configured.output), (
            f"configuring must say which interpreter was picked:\n{configured.describe()}")
        run = ctest(tmp_path / "build", "-j2", "-L", "evidence")
        assert run.returncode == 0, f"a clean suite must pass the gate:\n{run.describe()}"
        expect_ctest_mirrors(run, expect_clean_ledger(run, tmp_path / "build"))
    assert export.read_bytes() == pristine, "the declared writer's file must be restored after ctest"
    # Bytecode is cached in the build tree, pytest's rewritten test modules too: later runs
    # do not recompile the suite.
    cache = tmp_path / "build" / "evidence" / "inventory" / "pycache"
    rewritten = [p.name for p in cache.rglob("*.pyc") if "-pytest-" in p.name and p.name.startswith("test_")]
    assert rewritten, f"no rewritten test module cached in {cache}"


def test_gate_alone_pulls_in_every_step(tmp_path, build_dir):
    """`ctest -R '<name>\\.gate'` in a fresh build dir runs every setup step through CTest fixtures."""
    example = EXAMPLES / "clean"
    binary = tmp_path / "build"
    with source_tree_untouched(example):
        configure_example(example, binary, build_dir)
        # The suite's steps; the per-test entries `inventory/<id>` follow the gate, not precede it.
        registered = [name for name in ctest_names(binary, "-L", "evidence") if not name.startswith("inventory/")]
        steps = {"inventory.fixtures", "inventory.manifest", "inventory.receipt", "inventory.rerun",
                 "inventory.gate"} | {f"inventory.seed.{k}" for k in range(5)}
        assert steps <= set(registered), f"registered: {registered}"

        run = ctest(binary, "-R", r"inventory\.gate")
        assert run.returncode == 0, run.describe()
        assert set(run.ran) == set(registered), (
            f"ctest -R gate must pull in every step; ran {sorted(run.ran)}:\n{run.describe()}")
        assert set(run.ran.values()) == {"Passed"}, run.describe()
        position = {name: i for i, name in enumerate(run.order)}
        seeds = [f"inventory.seed.{k}" for k in range(5)]
        for earlier, later in [("inventory.fixtures", "inventory.receipt"), ("inventory.manifest", "inventory.gate"),
                               ("inventory.rerun", "inventory.gate")] + \
                              [("inventory.receipt", s) for s in seeds] + [(s, "inventory.rerun") for s in seeds]:
            assert position[earlier] < position[later], f"{earlier} must run before {later}: {run.order}"
        expect_clean_ledger(run, binary)


# ------------------------------------------------------------------ in-memory order dependence

LOOKUP = "tests/test_lookup.py::"
REGISTER = "tests/test_register.py::"


def test_in_memory_order_dependence_blocks_one_row(tmp_path, build_dir):
    example = EXAMPLES / "in-memory-order"
    with source_tree_untouched(example):
        configure_example(example, tmp_path / "build", build_dir)
        run = ctest(tmp_path / "build", "-j2", "-L", "evidence")
        ledger = Ledger(tmp_path / "build", "plugins")

        assert run.returncode != 0, f"the gate must block:\n{run.describe()}"
        victim = LOOKUP + "test_csv_plugin_is_available"
        expect_verdicts(ledger, {
            victim: ("order-dependent", "block"),
            LOOKUP + "test_unknown_plugin_raises": PASS,
            REGISTER + "test_register_csv_plugin": PASS,
            REGISTER + "test_register_rejects_nothing": PASS,
        })
        assert ledger.blocking() == [victim], str(ledger)
        row = ledger.tests[victim]
        # Collection order runs test_lookup.py before test_register.py: the lookup fails there.
        assert row["outcomes"].get("seed.0") == "failed", row
        assert "passed" in row["outcomes"].values(), row
        assert "LookupError" in row["reason"], f"the reason should carry the failure: {row}"
        no_suite_row_blocks(ledger)
        expect_ctest_mirrors(run, ledger)
        expect_gate_lines(run, "plugins", [("BLOCK", victim, "order-dependent")], ledger)


# ------------------------------------------------------------------ nondeterminism and quarantine

RETRY = "tests/test_retry.py::test_retry_budget"
NONDETERMINISTIC_STABLE = [
    "tests/test_retry.py::test_backoff_doubles",
    "tests/test_retry.py::test_backoff_is_capped",
    "tests/test_parse.py::test_parse_whole",
    "tests/test_parse.py::test_parse_cents",
]


def flipped_within_an_order(outcomes):
    """Did some order (a seed and its reruns) both pass and fail? Then the evidence says flaky."""
    by_order = {}
    for run_id, outcome in outcomes.items():
        by_order.setdefault(re.sub(r"\.rerun\.\d+$", "", run_id), set()).add(outcome)
    return any({"passed", "failed"} <= seen for seen in by_order.values())


def test_nondeterministic_test_is_flaky_deferred_only_when_quarantined(tmp_path, build_dir):
    example = EXAMPLES / "nondeterministic"
    binary = tmp_path / "build"
    attempts = 3
    with source_tree_untouched(example):
        configure_example(example, binary, build_dir)
        # A coin that never flips within one order over 9 seeds and their reruns is possible
        # (well under 1%); then the evidence does not show flakiness and we run again.
        for attempt in range(1, attempts + 1):
            run = ctest(binary, "-j2", "-L", "evidence")
            quarantined = Ledger(binary, "flaky_quarantined")
            unquarantined = Ledger(binary, "flaky_unquarantined")
            evidence = [ledger.tests.get(RETRY, {}).get("outcomes", {}) for ledger in (quarantined, unquarantined)]
            if all(flipped_within_an_order(outcomes) for outcomes in evidence):
                break
        else:
            pytest.fail(f"in {attempts} runs {RETRY} never both passed and failed within one order: "
                        f"{json.dumps(evidence)}")

        assert run.returncode != 0, f"the unquarantined suite must block:\n{run.describe()}"
        stable = {test: PASS for test in NONDETERMINISTIC_STABLE}
        expect_verdicts(quarantined, {RETRY: ("flaky", "defer"), **stable})
        expect_verdicts(unquarantined, {RETRY: ("flaky", "block"), **stable})
        row = quarantined.tests[RETRY]
        assert (row.get("until"), row.get("owner")) == ("2099-12-31", "payments-team"), (
            f"a deferred row names its quarantine entry: {row}")
        assert quarantined.blocking() == [] and quarantined.deferred() == [RETRY], str(quarantined)
        assert unquarantined.blocking() == [RETRY] and unquarantined.deferred() == [], str(unquarantined)
        for ledger in (quarantined, unquarantined):
            no_suite_row_blocks(ledger)
        # The deferred row's per-test entry passes; only the unquarantined gate and entry fail.
        expect_ctest_mirrors(run, quarantined, unquarantined)
        expect_gate_lines(run, "flaky_quarantined", [("DEFER", RETRY, "flaky")], quarantined)
        expect_gate_lines(run, "flaky_unquarantined", [("BLOCK", RETRY, "flaky")], unquarantined)


# ------------------------------------------------------------------ crash

CRASH_ORDER = [  # collection order
    "tests/test_a_before.py::test_load_library",
    "tests/test_a_before.py::test_version_string",
    "tests/test_b_binding.py::test_checksum",
    "tests/test_b_binding.py::test_native_call_crashes",
    "tests/test_b_binding.py::test_after_crash_same_module",
    "tests/test_c_after.py::test_shutdown",
    "tests/test_c_after.py::test_cleanup_order",
]
CRASHER = "tests/test_b_binding.py::test_native_call_crashes"


def test_crash_is_interrupted_and_the_rest_still_runs(tmp_path, build_dir):
    example = EXAMPLES / "crash"
    with source_tree_untouched(example):
        configure_example(example, tmp_path / "build", build_dir)
        run = ctest(tmp_path / "build", "-L", "evidence")  # serially: the default
        ledger = Ledger(tmp_path / "build", "native")

        assert run.returncode != 0, f"a suite whose interpreter died is never green:\n{run.describe()}"
        expect_verdicts(ledger, {test: ("interrupted", "block") if test == CRASHER else PASS for test in CRASH_ORDER})
        assert ledger.blocking() == [CRASHER], str(ledger)
        crashed = ledger.tests[CRASHER]
        seeds = [f"seed.{k}" for k in range(4)]  # SEEDS 3 and the collection order
        assert all(crashed["outcomes"].get(s) == "interrupted" for s in seeds), crashed
        after = CRASH_ORDER[CRASH_ORDER.index(CRASHER) + 1:]
        without_result = {test: ledger.tests[test]["outcomes"].get("seed.0") for test in after
                          if ledger.tests[test]["outcomes"].get("seed.0") != "passed"}
        assert not without_result, (
            f"tests after the crash in collection order must still run in seed.0: {without_result}\n{ledger}")
        # The seed runs survived the crash: their results are data; the gate and the entry fail.
        expect_ctest_mirrors(run, ledger)
        expect_gate_lines(run, "native", [("BLOCK", CRASHER, "interrupted")], ledger)
