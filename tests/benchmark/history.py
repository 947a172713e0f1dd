#!/usr/bin/env python3
"""What `evgate history` costs: 1,000 CI runs' evidence of a 10,000-test suite (issue 17).

    /usr/bin/python3 tests/benchmark/history.py --build <product build dir> [--runs N] [--tests N]

Generates, in a work directory outside the repository, one evidence directory per run as CI
artifacts hold them (receipt.json listing every test, ledger.jsonl with every attempt of 9
orders, and junit.xml up to its testcases: the run's time and what the ledger step copied from
the receipt, all that history reads of it), then times
`evgate history --out <dir> <runs dir>` over all of them: a warm-up, then `--repeats` samples
(wall time, CPU time, peak RSS), and checks what it wrote against what was generated (the run
count, and the flip count of every test that was generated to flip).

The generated history: 1 test in 50 flips between `stable` and `flaky` at random (30% of runs),
1 in 200 is `order-dependent` from run 300 on, 1 in 100 is renamed at run 500 (the old id is
gone after it), 1 in 100 is new from run 250, and the run order on disk is shuffled. Prints a
Markdown line on stdout (progress on stderr) and writes every sample to a JSON file.
Python 3.11 standard library only.
"""

import argparse
import datetime
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = 9  # the collection order and 8 shuffled ones
CHILD_ENV = dict(os.environ)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def test_ids(tests, run, runs):
    """(test number, node id) of the suite in run `run`: some renamed halfway, some added later."""
    ids = []
    for t in range(tests):
        module = f"tests/test_mod_{t // 100:03d}.py"
        name = f"test_case_{t % 100:02d}"
        if t % 100 == 7 and run >= runs // 2:
            name += "_renamed"
        if t % 100 == 9 and run < runs // 4:
            continue  # added at a quarter of the way
        ids.append((t, f"{module}::{name}"))
    return ids


def verdict_of(t, run, runs, rng):
    if t % 50 == 3 and rng.random() < 0.3:
        return "flaky"
    if t % 200 == 11 and run >= 3 * runs // 10:
        return "order-dependent"
    return "stable"


def outcomes(verdict):
    if verdict == "stable":
        return ",".join(f'"seed.{k}":"passed"' for k in range(SEEDS))
    return ",".join(f'"seed.{k}":"{"failed" if k % 3 == 1 else "passed"}"' for k in range(SEEDS))


STABLE_OUTCOMES = outcomes("stable")
BAD_OUTCOMES = outcomes("flaky")


def ledger_row(test, verdict):
    gate = "pass" if verdict == "stable" else "block"
    reason = f"passes in every run ({SEEDS})" if verdict == "stable" else "outcome differs between runs of the same order"
    body = STABLE_OUTCOMES if verdict == "stable" else BAD_OUTCOMES
    return f'{{"test":{json.dumps(test)},"verdict":"{verdict}","gate":"{gate}","reason":"{reason}","outcomes":{{{body}}}}}\n'


def generate(work, runs, tests, seed):
    """One evidence directory per run under work/runs, in shuffled names; returns the expected flips."""
    rng = random.Random(seed)
    root = work / "runs"
    root.mkdir(parents=True)
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    names = [f"artifact-{n:05d}" for n in rng.sample(range(10 * runs), runs)]  # any order on disk
    # test id -> [its last verdict, flips so far]: the generator stays small, so that the RSS of
    # the child it forks (counted before the exec) is not the generator's.
    flips = {}
    suite_rows = "".join(
        f'{{"test":"{name}","scope":"suite","verdict":"stable","gate":"pass","reason":"ok"}}\n'
        for name in ["receipt", "collection"] + [f"run:seed.{k}" for k in range(SEEDS)])
    for run in range(runs):
        d = root / names[run]
        d.mkdir()
        when = start + datetime.timedelta(hours=run)
        ids = test_ids(tests, run, runs)
        commit = f"{rng.getrandbits(160):040x}"
        receipt = {"tests": [{"env_sensitive": None, "id": i, "serial": False, "writes": []} for _, i in ids],
                   "suite": "bench", "receipt_id": f"{rng.getrandbits(64):016x}", "hostname": f"ci-{run % 4}",
                   "git": {"head": commit, "branch": "main", "dirty": []}, "collected": len(ids)}
        (d / "receipt.json").write_text(json.dumps(receipt, separators=(",", ":")) + "\n")
        rows = [suite_rows]
        for t, i in ids:
            verdict = verdict_of(t, run, runs, rng)
            last = flips.setdefault(i, [verdict, 0])
            last[1] += last[0] != verdict
            last[0] = verdict
            rows.append(ledger_row(i, verdict))
        (d / "ledger.jsonl").write_text("".join(rows))
        # history reads junit.xml only up to the <testsuite>'s properties (what the ledger step copied
        # from the receipt, and its clock): the head as the ledger step writes it, no testcases.
        runs_list = json.dumps([f"seed.{k}" for k in range(SEEDS)], separators=(",", ":"))
        (d / "junit.xml").write_text(
            '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n<testsuite name="bench" errors="0" failures="0" '
            f'skipped="0" tests="{len(ids)}" time="0.000" timestamp="{when.strftime("%Y-%m-%dT%H:%M:%S.000000Z")}" '
            f'hostname="{receipt["hostname"]}">\n<properties>\n<property name="suite" value="bench"/>\n'
            f'<property name="commit" value="{commit}"/>\n<property name="branch" value="main"/>\n'
            f'<property name="receipt" value="{receipt["receipt_id"]}"/>\n<property name="decision" value="BLOCKED"/>\n'
            f"<property name=\"local_runs\" value='{runs_list}'/>\n</properties>\n</testsuite>\n</testsuites>\n")
        if run % 100 == 99:
            log(f"  generated {run + 1}/{runs} runs")
    return root, {i: k for i, (_, k) in flips.items()}


def run_measured(argv):
    with open(os.devnull, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([str(a) for a in argv], env=CHILD_ENV, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    return {"s": seconds, "cpu_s": usage.ru_utime + usage.ru_stime, "maxrss_kb": usage.ru_maxrss,
            "exit": os.waitstatus_to_exitcode(status), "loadavg_1min": os.getloadavg()[0]}


def check(out, runs, flips):
    history = json.loads((out / "history.json").read_text())
    if history["runs"] != runs:
        raise SystemExit(f"benchmark: error: history.json counts {history['runs']} runs, {runs} were generated")
    got = {t["test"]: t["flips"] for t in history["tests"]}
    wrong = [t for t, k in flips.items() if got.get(t) != k]
    if wrong:
        raise SystemExit(f"benchmark: error: {len(wrong)} tests have other flip counts than generated, e.g. "
                         f"{wrong[0]}: {got.get(wrong[0])} != {flips[wrong[0]]}")
    first = history["tests"][0]
    if first["flips"] != max(flips.values()):
        raise SystemExit("benchmark: error: the first test in history.json is not one that flips most")
    return history


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True, type=Path, help="the product's build tree")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--tests", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="evgate history --threads (0: its default)")
    parser.add_argument("--workdir", type=Path, help="default: a new temp directory (removed unless --keep)")
    parser.add_argument("--json", type=Path, help="default: <workdir>/history-benchmark.json")
    parser.add_argument("--keep", action="store_true", help="keep the generated runs")
    args = parser.parse_args()
    evgate = args.build.resolve() / "tools" / "evgate"
    if not evgate.is_file():
        raise SystemExit(f"benchmark: error: no {evgate}: build the product first")
    work = (args.workdir or Path(tempfile.mkdtemp(prefix="evgate-history-bench-"))).resolve()
    if REPO in work.parents or work == REPO:
        raise SystemExit("benchmark: error: the work directory must be outside the repository")
    work.mkdir(parents=True, exist_ok=True)
    try:
        log(f"generating {args.runs} runs x {args.tests} tests in {work}")
        runs_dir, flips = generate(work, args.runs, args.tests, seed=17)
        size = sum(f.stat().st_size for f in runs_dir.rglob("*") if f.is_file())
        out = work / "out"
        argv = [evgate, "history", "--out", out, "--threads", args.threads, runs_dir]
        log("warm-up (reads every file once: the samples run from the page cache)")
        warmup = run_measured(argv)
        samples = []
        for r in range(args.repeats):
            log(f"  sample {r + 1}/{args.repeats}")
            samples.append(run_measured(argv))
        bad = [s for s in [warmup] + samples if s["exit"] != 0]
        if bad:
            raise SystemExit(f"benchmark: error: evgate history exited {bad[0]['exit']}")
        history = check(out, args.runs, flips)
        result = {
            "runs": args.runs, "tests": args.tests, "input_bytes": size, "threads": args.threads,
            "cores": os.cpu_count(), "warmup": warmup, "samples": samples,
            "median_s": statistics.median(s["s"] for s in samples),
            "median_cpu_s": statistics.median(s["cpu_s"] for s in samples),
            "median_maxrss_kb": statistics.median(s["maxrss_kb"] for s in samples),
            "distinct_tests": len(history["tests"]), "history_json_bytes": (out / "history.json").stat().st_size,
        }
        json_path = args.json or work / "history-benchmark.json"
        json_path.write_text(json.dumps(result, indent=2) + "\n")
        print(f"| evgate history | {args.runs} runs x {args.tests} tests ({size / 1e9:.2f} GB of evidence, "
              f"{len(history['tests'])} distinct tests) | {result['median_s']:.2f} s wall, {result['median_cpu_s']:.2f} s CPU, "
              f"{result['median_maxrss_kb'] / 1024:.0f} MB peak RSS (median of {args.repeats}, {os.cpu_count()} cores) |")
        log(f"every sample: {json_path}")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
