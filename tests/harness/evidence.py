"""What the product writes in build/evidence/<suite>: the ledger, and the run records it came from."""

import functools
import json
from pathlib import Path


@functools.lru_cache(maxsize=None)
def known_verdicts():
    """The verdicts a ledger row may name, the one place the harness lists them: written out, not
    read from `evgate verdicts`, so that a row naming a verdict nobody added here fails its test."""
    return frozenset({"polluter", "interrupted", "missing", "order-dependent", "flaky", "runner-only-pass",
                      "failing", "portability-gap", "skipped", "stable"})


class Ledger:
    """build/evidence/<suite>/ledger.jsonl, parsed; every line must be a JSON object with a
    known verdict and gate, and no test may have two rows."""

    REQUIRED = ("test", "verdict", "gate", "reason")

    def __init__(self, binary, suite):
        self.suite = suite
        self.path = Path(binary) / "evidence" / suite / "ledger.jsonl"
        assert self.path.is_file(), f"the gate wrote no ledger at {self.path}"
        self.text = self.path.read_text(encoding="utf-8")
        self.rows = []
        for number, line in enumerate(self.text.splitlines(), 1):
            row = json.loads(line)
            assert isinstance(row, dict), f"{self.path}:{number}: not a JSON object: {line}"
            missing = [key for key in self.REQUIRED if key not in row]
            assert not missing, f"{self.path}:{number}: lacks {missing}: {line}"
            assert row["verdict"] in known_verdicts(), f"{self.path}:{number}: unknown verdict: {line}"
            assert row["gate"] in ("pass", "defer", "block"), f"{self.path}:{number}: bad gate: {line}"
            self.rows.append(row)
        self.test_rows = [row for row in self.rows if row.get("scope") != "suite"]
        self.suite_rows = [row for row in self.rows if row.get("scope") == "suite"]
        self.tests = {row["test"]: row for row in self.test_rows}
        assert len(self.tests) == len(self.test_rows), f"a test has two rows in {self.path}:\n{self.text}"

    def blocking(self):
        return sorted(row["test"] for row in self.rows if row["gate"] == "block")

    def deferred(self):
        return sorted(row["test"] for row in self.rows if row["gate"] == "defer")

    def verdicts(self):
        """{test id: (verdict, gate)} of the per-test rows."""
        return {test: (row["verdict"], row["gate"]) for test, row in self.tests.items()}

    def blocking_suite_rows(self):
        return [row for row in self.suite_rows if row["gate"] == "block"]

    def __str__(self):
        return f"{self.path}:\n{self.text}"


def repeated_orders(binary, suite):
    """{run id: earlier seed run} of the runs the receipt found would repeat an order (not run)."""
    receipt = json.loads((Path(binary) / "evidence" / suite / "receipt.json").read_text())
    return receipt["orders"]["repeats"]


def repeated_steps(binary, suite):
    """The CTest steps skipped because their order repeats one already run: `<suite>.seed.<k>`,
    and `<suite>.alone` for the alone pass of a one-test suite."""
    return sorted({f"{suite}.{'alone' if run.startswith('first.') else run}" for run in repeated_orders(binary, suite)})


def expect_verdicts(ledger, expected):
    """The per-test rows are exactly `expected` ({id: (verdict, gate)})."""
    actual = ledger.verdicts()
    wrong = {test: {"expected": expected.get(test), "actual": actual.get(test)}
             for test in sorted(set(actual) | set(expected)) if actual.get(test) != expected.get(test)}
    assert not wrong, f"verdicts differ from the expected ones: {json.dumps(wrong, indent=1)}\n{ledger}"


def record_files(runs_dir):
    """runs/<run>.jsonl, without the order files (<run>.order.jsonl) evgate hands the plugin."""
    return [p for p in sorted(Path(runs_dir).glob("*.jsonl")) if not p.name.endswith(".order.jsonl")]


def record_damage(runs_dir):
    """(whole lines that are not JSON objects, torn tails) over every run record file."""
    corrupt, torn = [], []
    for path in record_files(runs_dir):
        data = path.read_bytes()
        lines = data.split(b"\n")
        if lines[-1]:
            torn.append(f"{path.name}: {lines[-1][:80]!r}")
        for number, line in enumerate(lines[:-1], 1):
            if not line.strip():
                continue
            try:
                ok = isinstance(json.loads(line), dict)
            except ValueError:
                ok = False
            if not ok:
                corrupt.append(f"{path.name}:{number}: {line[:80]!r}")
    return corrupt, torn


def planned_by_run(runs_dir):
    """{run id: {test ids its plan lists}} from the plan files (<id>.plan.json)."""
    return {path.name[:-len(".plan.json")]: set(json.loads(path.read_text())["tests"])
            for path in Path(runs_dir).glob("*.plan.json")}


def results_by_run(runs_dir):
    """{run id: {test ids with a result record}} from whole records."""
    results = {}
    for path in record_files(runs_dir):
        ids = set()
        for line in path.read_bytes().split(b"\n")[:-1]:
            if line.strip():
                record = json.loads(line)
                if record.get("event") == "result":
                    ids.add(record["test"])
        results[path.name[:-len(".jsonl")]] = ids
    return results
