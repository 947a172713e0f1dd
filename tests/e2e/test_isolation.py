"""ISOLATION fork and ISOLATION process give the same ledger on the examples.

Each example is copied twice below tmp_path, one copy configured with ``ISOLATION process``
added to its suites (both with ``ALONE ON``: the alone pass's time budget would let the slower
processes reach fewer tests), and both run with ``ctest -L evidence`` under one PYTHONHASHSEED (what
the receipt step would otherwise choose at random for each invocation). Every row must agree:
verdict, gate, every run's outcome, the partner (the fresh processes that confirm what forks
showed, `<run>.fresh.<j>`, and redos alone aside: they exist only where forks ran, or runs
overlapped). The nondeterministic example is left out: its
coin flips on os.urandom, whatever isolates it.
"""

import json
import re
import shutil

import pytest

from harness import EXAMPLES, Ledger, child_env, configure_example, ctest

EXAMPLES_COMPARED = ["clean", "crash", "in-memory-order", "polluter-victim", "timezone"]


def copy_with_isolation(example, destination, isolation):
    shutil.copytree(example, destination)
    lists = destination / "CMakeLists.txt"
    text = lists.read_text()
    # ALONE ON: ALONE AUTO's budget is time (runs/alone_budget.hpp), and processes, slower than
    # forks, may reach fewer tests alone in it; what is compared is what each test's runs showed.
    text, count = re.subn(r"evidence_gate_add_suite\((\w+)", rf"evidence_gate_add_suite(\1 ISOLATION {isolation} ALONE ON", text)
    assert count >= 1, text
    lists.write_text(text)
    return destination


def rows(binary):
    """Per suite and test: what must not depend on how the runs were isolated."""
    found = {}
    for suite_file in sorted((binary / "evidence").glob("*/ledger.jsonl")):
        ledger = Ledger(binary, suite_file.parent.name)
        for row in ledger.rows:
            if row["test"].endswith(".apart") or ".fresh." in row["test"]:  # the suite row of a redo or a fresh run
                continue
            kept = {key: row.get(key) for key in ("verdict", "gate", "outcomes", "partner", "partner_role")}
            # A run done again alone exists only where runs happened to overlap (-j2); a fresh
            # process that confirms what forks showed, only where runs were forks.
            if kept["outcomes"]:
                kept["outcomes"] = {run: o for run, o in kept["outcomes"].items()
                                    if not run.endswith(".apart") and ".fresh." not in run}
            found[f"{suite_file.parent.name}: {row['test']}"] = kept
    return found


def isolations(binary):
    runs = {}
    for records in sorted((binary / "evidence").glob("*/runs/*.jsonl")):
        if records.name.endswith(".order.jsonl"):
            continue
        last = json.loads(records.read_text().splitlines()[-1])
        runs[f"{records.parent.parent.name}/{records.stem}"] = last.get("isolation")
    return runs


@pytest.mark.parametrize("name", EXAMPLES_COMPARED)
def test_fork_and_process_give_the_same_ledger(tmp_path, build_dir, name):
    env = child_env(PYTHONHASHSEED="4242")
    ledgers = {}
    for isolation in ("fork", "process"):
        source = copy_with_isolation(EXAMPLES / name, tmp_path / f"src-{isolation}", isolation)
        binary = tmp_path / f"build-{isolation}"
        configure_example(source, binary, build_dir)
        ctest(binary, "-j2", "-L", "evidence", env=env)
        ledgers[isolation] = rows(binary)
        # Seeds, reruns and alone runs are forks with ISOLATION fork, even after a crash (a new
        # fork goes on); the perturbed run never is, nor its redo alone (perturbed.apart, when it
        # went beside other runs and disagreed with them): both need the perturbed environment.
        # A fresh run (<run>.fresh.<j>) never is a fork either: it confirms what forks showed.
        expected = {run: ("process" if isolation == "process" or run.split("/")[-1].startswith("perturbed")
                          or ".fresh." in run else "fork")
                    for run in isolations(binary)}
        assert isolations(binary) == expected, isolations(binary)
    assert ledgers["fork"], f"{name}: no ledger rows"
    differ = {key: {"fork": ledgers["fork"].get(key), "process": ledgers["process"].get(key)}
              for key in sorted(set(ledgers["fork"]) | set(ledgers["process"]))
              if ledgers["fork"].get(key) != ledgers["process"].get(key)}
    assert not differ, f"{name}: fork and process ledgers differ:\n{json.dumps(differ, indent=1, default=str)}"
