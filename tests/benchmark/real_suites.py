#!/usr/bin/env python3
"""The gate on public suites with known order-dependent tests (docs/real-suites.md).

Each project is a checkout at the commit docs/real-suites.md names (IDoFT's
py-data.csv lists its order-dependent tests there), in a directory of its own below
--checkouts: yamicache, json-storage-manager, pdir2, mccabe, freezegun. Their code is never
part of this repository. For each, in one run of this script:

* "plain": the median of 3 `python -m pytest -q -p no:cacheprovider` runs of its tests, after
  one that writes the bytecode, with PYTHONDONTWRITEBYTECODE unset and a fresh TMPDIR and HOME;
* a consumer project (`evidence_gate_add_suite(suite ROOT <checkout> TESTS ...)`, every other
  argument at its default) configured against --build, and `ctest -L evidence -j2`, timed; then
  the same `ctest` again on the unchanged tree (it keeps the first one's runs and adds SEEDS new
  orders: runs/evidence_reuse.hpp), timed, with its ledger checked the same way;
* from its ledger: every verdict, the known dependent tests found `order-dependent` with a
  partner named, and every blocking row (a reader decides which are false: each is listed).

With --healthy, the same for the suites of HEALTHY (no order-dependent test known: what the gate
costs where there is nothing to localise), checked out below --checkouts the same way.

Usage: real_suites.py --checkouts DIR --build BUILD [--python EXE] [--workdir DIR] [--only NAME] [--healthy]
Output: a Markdown table on stdout and a JSON file (<workdir>/real-suites.json).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECTS = {
    "yamicache": ("tests", ["tests/test_class.py::test_keyed_cached", "tests/test_class.py::test_utility",
                            "tests/test_noclass.py::test_main"]),
    "json-storage-manager": ("tests", [f"tests/test_main.py::test_{name}" for name in (
        "get_item", "get_no_item", "read_json", "set_item", "set_item_fail", "update_item", "write_json")]),
    "pdir2": ("tests", [f"tests/test_user_config.py::test_{name}" for name in (
        "invalid_config_1", "invalid_config_2", "read_config", "read_config_from_custom_location",
        "set_env_without_config", "uniform_color")]),
    "mccabe": ("test_mccabe.py", ["test_mccabe.py::RegressionTests::test_max_complexity_is_always_an_int"]),
    "freezegun": ("tests", [
        "tests/test_class_import.py::test_can_ignore_email_module", "tests/test_class_import.py::test_fake_uses_real_when_ignored",
        "tests/test_class_import.py::test_import_after_start", "tests/test_datetimes.py::test_context_manager",
        "tests/test_datetimes.py::test_min_and_max", "tests/test_datetimes.py::test_nested_context_manager",
        "tests/test_datetimes.py::test_nested_context_manager_with_tz_offsets", "tests/test_datetimes.py::test_simple_api",
        "tests/test_datetimes.py::test_time_localtime", "tests/test_datetimes.py::test_time_ns",
        "tests/test_errors.py::test_ignore_errors_in_start[ImportError]",
        "tests/test_errors.py::test_ignore_errors_in_start[TypeError]", "tests/test_uuid.py::test_uuid1_future",
        "tests/test_warnings.py::test_ignore_warnings_in_start", "tests/test_warnings.py::test_ignore_warnings_in_stop"]),
}
# Healthy suites (no order-dependent test known), measured for what the gate costs where there is
# nothing to localise: (tests, extra suite arguments); "{root}" is the checkout.
HEALTHY = {
    "jmespath.py": ("tests", ""),                                   # jmespath/jmespath.py 2ad18b0
    "tomli": ("tests", "ENVIRONMENT PYTHONPATH={root}/src"),       # hukkin/tomli 920e20b
    "python-tabulate": ("test", ""),                                # astanin/python-tabulate 268615a
    "colorama": ("colorama/tests", ""),                             # tartley/colorama 406153f
    "boltons": ("tests", ""),                                       # mahmoud/boltons 967864f
}
SEEDS = 8  # the default: (SEEDS + 1) plain runs is what the gate's runs replace


def plain_env(workdir):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    home = Path(tempfile.mkdtemp(prefix="home-", dir=workdir))
    env.update(HOME=str(home), TMPDIR=tempfile.mkdtemp(prefix="tmp-", dir=workdir), PYTHONHASHSEED="0")
    return env


def plain_runs(python, checkout, tests, workdir, extra=""):
    """The median wall time of 3 plain runs, after one that writes the bytecode."""
    times = []
    for _ in range(4):
        env = plain_env(workdir)
        if "PYTHONPATH=" in extra:  # the suite's ENVIRONMENT PYTHONPATH=..., for the plain runs too
            env["PYTHONPATH"] = extra.split("PYTHONPATH=", 1)[1].split()[0]
        start = time.monotonic()
        subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", tests], cwd=checkout, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
        times.append(time.monotonic() - start)
    for leftover in checkout.rglob("__pycache__"):  # the plain runs' own, not the gate's
        shutil.rmtree(leftover, ignore_errors=True)
    return statistics.median(times[1:])


def gate(name, python, checkout, tests, build, workdir, extra=""):
    source = workdir / f"gate-{name}"
    binary = workdir / f"build-{name}"
    shutil.rmtree(source, ignore_errors=True)
    shutil.rmtree(binary, ignore_errors=True)
    source.mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.21)\nproject(real NONE)\nenable_testing()\n"
        "find_package(EvidenceGate CONFIG REQUIRED)\n"
        f"evidence_gate_add_suite(suite ROOT {checkout} TESTS {tests} {extra})\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(["cmake", "-S", source, "-B", binary, f"-DEvidenceGate_DIR={build}", f"-DPython3_EXECUTABLE={python}"],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    walls, ledgers = [], []
    for _ in range(2):  # the first ctest, then the second on the unchanged tree
        start = time.monotonic()
        subprocess.run(["ctest", "--test-dir", binary, "-L", "evidence", "-j2"], env=env, capture_output=True, text=True,
                       timeout=7200)
        walls.append(time.monotonic() - start)
        ledgers.append([json.loads(line) for line in (binary / "evidence" / "suite" / "ledger.jsonl").read_text().splitlines()])
    return walls, ledgers


def summary(name, known, plain, walls, ledgers):
    first, second = (summary_of(name, known, plain, wall, ledger) for wall, ledger in zip(walls, ledgers))
    first["second"] = second
    first["second_ratio"] = round(walls[1] / walls[0], 2)
    first["reuse"] = next((row["reason"] for row in ledgers[1] if row["test"] == "reuse"), "(nothing kept)")
    return first


def summary_of(name, known, plain, wall, ledger):
    tests = [row for row in ledger if row.get("scope") != "suite"]
    verdicts = {}
    for row in tests:
        verdicts[row["verdict"]] = verdicts.get(row["verdict"], 0) + 1
    found = [row["test"] for row in tests if row["verdict"] == "order-dependent" and row.get("partner") and row["test"] in known]
    return {
        "project": name, "tests": len(tests), "verdicts": verdicts, "known": len(known), "found": found,
        "missed": sorted(set(known) - set(found)),
        "blocking": [f"{row['test']}: {row['verdict']}: {row['reason'][:240]}" for row in ledger if row["gate"] == "block"],
        "warnings": [f"{row['test']}: {row['reason'][:240]}" for row in ledger if row.get("warning")],
        "plain": round(plain, 3), "wall": round(wall, 1), "ratio": round(wall / ((SEEDS + 1) * plain), 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkouts", type=Path, required=True)
    parser.add_argument("--build", type=Path, required=True)
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--only", action="append")
    parser.add_argument("--healthy", action="store_true", help="the healthy set (HEALTHY) instead of the dependent one")
    args = parser.parse_args()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="real-suites-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    projects = ({name: (tests, [], extra) for name, (tests, extra) in HEALTHY.items()} if args.healthy
                else {name: (tests, known, "") for name, (tests, known) in PROJECTS.items()})
    for name, (tests, known, extra) in projects.items():
        if args.only and name not in args.only:
            continue
        checkout = (args.checkouts / name).resolve()
        extra = extra.format(root=checkout)
        print(f"{name}: plain runs", file=sys.stderr)
        plain = plain_runs(args.python, checkout, tests, workdir, extra)
        print(f"{name}: ctest -L evidence -j2", file=sys.stderr)
        walls, ledgers = gate(name, args.python, checkout, tests, args.build.resolve(), workdir, extra)
        results.append(summary(name, known, plain, walls, ledgers))
    (workdir / "real-suites.json").write_text(json.dumps(results, indent=2) + "\n")
    print("| project | tests | known dependent tests found, partner named (first / second ctest) | blocking rows | "
          "first ctest | plain run | first ÷ (SEEDS+1) plain runs | second ctest | second ÷ first |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s = r["second"]
        print(f"| {r['project']} | {r['tests']} | {len(r['found'])} / {len(s['found'])} of {r['known']} | "
              f"{len(r['blocking'])} / {len(s['blocking'])} | {r['wall']} s | {r['plain']} s | {r['ratio']} | {s['wall']} s | "
              f"{r['second_ratio']} |")
    for r in results:
        print(f"\n{r['project']}: {r['verdicts']}; second ctest: {r['second']['verdicts']}; {r['reuse']}")
        for line in r["second"]["missed"]:
            print(f"  missed in the second ctest: {line}")
        for line in r["missed"]:
            print(f"  missed: {line}")
        for line in r["blocking"]:
            print(f"  BLOCK {line}")
        for line in r["warnings"]:
            print(f"  WARN {line}")
    print(f"\n(JSON: {workdir / 'real-suites.json'})", file=sys.stderr)


if __name__ == "__main__":
    main()
