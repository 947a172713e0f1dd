#!/usr/bin/env python3
"""What evidence costs: Evidence Gate against plain pytest runs and the seed articles.

    /usr/bin/python3 tests/benchmark/run.py --build <product build dir> [--quick]

Generates a synthetic consumer project in a work directory outside the repository and
measures, in one run on one machine (issue 7):

  (a) `ctest -L evidence -j1` (SEEDS 4, PERTURB OFF: 5 runs) against 5 plain pytest runs, with
      every run a fork of the collected session and with a fresh interpreter each;
  (b) the same with `ctest -j2`;
  (c) the per-test lease cost when nothing changed, against fixture size, and the seed
      article's hash-everything conftest on the same files;
  (d) `evgate gate` on generated run records (runs x 100,000 tests): time and peak memory,
      against the seed articles' triage.py and gate.py on the same data.

The seed articles' code is never part of the project: it is cut out of the article text at
run time into the work directory and run from there. Prints a Markdown table on stdout
(progress goes to stderr) and writes every figure to a JSON file. Python 3.11 stdlib only.
"""

import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import pstats
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The consumer of issue 7: 1,000 quick tests in 50 modules over 1,000 fixture files in 10
# leased groups. The file count stays fixed across sizes so that (c) varies bytes only.
TESTS, MODULES, FILES, GROUPS = 1000, 50, 1000, 10
PER_MODULE, PER_GROUP = TESTS // MODULES, FILES // GROUPS
SEEDS = 4                                   # + the collection order: 5 runs
MAIN_SIZE = 100 * 10**6                     # (a), (b) and the breakdown use the 100 MB tree
SIZES = [10**6, 10**7, 10**8, 10**9]        # (c); 1 GB only without --quick
THEIRS_BUDGET_S = 15                        # rough seconds of one measured seed-conftest run
LEASE_REPEATS = 5                           # (c): ours is a difference of two ~1 s runs, so more samples
GATE_TESTS, GATE_RUNS = 100_000, 8          # (d)
MEMORY_RUNS = [4, 8, 16]                    # (d): memory against runs at 100k tests
MEMORY_TESTS = [50_000, 200_000]            # (d): memory against tests at 8 runs (not --quick)

# Issue 15's goals: -j1 within 1.10x five plain runs with the per-test entries, 0.80x without,
# and -j2 within 0.70x; issue 26's: -j2 without the entries within 0.60x, a second ctest on the
# unchanged tree within 0.3x the first, and a per-test entry within 1.2x one of /bin/true.
GOALS = {"a": 1.10, "a_no_entries": 0.80, "b": 0.70, "b_no_entries": 0.60, "d": 10.0, "second": 0.30, "entries": 1.20}

# Every process runs with Python's default bytecode caching, whatever this shell says: with
# PYTHONDONTWRITEBYTECODE set, pytest re-rewrites every test module's asserts in every run,
# in the plain runs and ours alike, which is not what a user's machine does.
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# (a) and (b) measure a first `ctest` on the tree: without this, every sample after the first
# would keep the runs of the one before (docs/reuse.md) and only add orders. A second `ctest`,
# which keeps them, is measured as a figure of its own.
FIRST_ENV = {**CHILD_ENV, "EVIDENCE_GATE_REUSE": "0"}


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------ measuring

def become_subreaper():
    """Processes that outlive their parent in what we measure are reparented to us, not to init:
    the fork server the receipt step leaves (and, through it, every fork it served)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


PR_SET_CHILD_SUBREAPER = 36


def reap_orphans(quiet_s=0.5, limit_s=15.0):
    """Waits for the processes reparented to us (see become_subreaper) until none is left, so that
    their CPU time joins RUSAGE_CHILDREN."""
    deadline, quiet_since = time.monotonic() + limit_s, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - quiet_since < quiet_s:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            quiet_since = time.monotonic()
        else:
            time.sleep(0.02)


def run_measured(argv, cwd=None, env=None, output=None):
    """Wall time, CPU time, peak RSS and exit status of one process.

    os.wait4 gives the rusage of exactly this child (with the children it reaped), where
    getrusage(RUSAGE_CHILDREN) would report the largest child of the whole benchmark. Its CPU
    time also counts what it left running and we reaped after it (a fork server and its forks,
    which are nobody's children but ours once their ctest step ended): as a difference of
    RUSAGE_CHILDREN around it.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(output or os.devnull, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen([str(a) for a in argv], cwd=cwd, env=env or CHILD_ENV, stdout=out,
                                stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc.returncode = os.waitstatus_to_exitcode(status)
    # CPU time (user + system, the process and the children it reaped) barely moves with the
    # load other work puts on the machine, where wall time does: a cross-check for ratios.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"s": seconds, "cpu_s": max(cpu, usage.ru_utime + usage.ru_stime), "maxrss_kb": usage.ru_maxrss,
            "exit": proc.returncode}


def run_checked(argv, cwd=None, env=None):
    result = subprocess.run([str(a) for a in argv], cwd=cwd, env=env or CHILD_ENV, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"benchmark: error: {' '.join(map(str, argv))} exited {result.returncode}:\n"
                         f"{result.stdout}{result.stderr}")
    return result.stdout


def bench(cases, repeats):
    """Warm every case up once, then run the cases in turns so that drift hits all alike.

    Returns {case: {"warmup": sample, "samples": [...]}}; nothing is dropped.
    """
    results = {}
    for name, case in cases.items():
        log(f"  warm-up {name}")
        results[name] = {"warmup": loaded(case()), "samples": []}
    for r in range(repeats):
        for name, case in cases.items():
            log(f"  repeat {r + 1}/{repeats} {name}")
            results[name]["samples"].append(loaded(case()))
    for entry in results.values():
        entry["median_s"] = statistics.median(s["s"] for s in entry["samples"])
        entry["median_cpu_s"] = statistics.median(s["cpu_s"] for s in entry["samples"])
        entry["median_maxrss_kb"] = statistics.median(s["maxrss_kb"] for s in entry["samples"])
    return results


def loaded(sample):
    """Note the 1-minute load average with each sample: other work on the machine shows."""
    sample["loadavg_1min"] = os.getloadavg()[0]
    return sample


def median_steps(samples):
    """Median seconds per CTest step over samples that carry ctest's step times."""
    names = samples[0]["steps"].keys()
    return {n: statistics.median(s["steps"].get(n, float("nan")) for s in samples) for n in names}


# ------------------------------------------------------------- the seed articles' code

def between(text, start, end):
    a = text.index(start)
    return text[a:text.index(end, a)]


# The article text of seed 000 lost the indentation of gate.py; these are its indent levels,
# one per line of the block (numbers only, no code), checked against the text and compiled.
GATE_PY_INDENT = [0, 0, 0, 0, 0, 1, 1, 2, 1, 2, 2, 1, 2, 0, 1, 0, 1, 0]


def extract_seed_code(seeds_dir, into):
    """Cut conftest.py, triage.py and gate.py out of the seed articles into `into`."""
    leases = (seeds_dir / "001_23ab53b4da62c47c.txt").read_text()
    ledger = (seeds_dir / "000_8d207dbaee4f3a91.txt").read_text()
    code = {
        "conftest.py": between(leases, "# conftest.py — fixture lease instrumentation", "A test that legitimately rewrites"),
        "triage.py": between(leases, "# triage.py", "Illustrative output"),
    }
    gate_lines = between(ledger, "# gate.py — non-zero exit", "Wire it into CI").strip().splitlines()
    if len(gate_lines) != len(GATE_PY_INDENT):
        raise SystemExit(f"benchmark: error: gate.py in the seed article has {len(gate_lines)} lines, "
                         f"the indent table {len(GATE_PY_INDENT)}: update GATE_PY_INDENT")
    code["gate.py"] = "\n".join("    " * n + line.strip() for n, line in zip(GATE_PY_INDENT, gate_lines)) + "\n"
    into.mkdir(parents=True, exist_ok=True)
    for name, text in code.items():
        compile(text, name, "exec")  # a bad cut fails here, not as a mysterious timing
        (into / name).write_text(text)
    return {name: into / name for name in code}


# ------------------------------------------------------------------ the consumer project

TEST_MODULE_HEADER = '''"""Generated by tests/benchmark/run.py: quick tests that read fixture files."""
import pathlib

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures"


def head(group, index):
    with open(FIXTURES / f"g{group}" / f"f{index:04d}.bin", "rb") as f:
        return f.readline()
'''

CONSUMER_CMAKE = """cmake_minimum_required(VERSION 3.21)
project(evidence_gate_benchmark NONE)
enable_testing()
find_package(EvidenceGate CONFIG REQUIRED)
# The lease-free baseline of (c): the same tests and files with a manifest of no groups.
option(BENCH_NO_GROUPS "lease no fixture groups" OFF)
# (a) and (b) without the one-CTest-entry-per-test mirror, to show what it costs.
option(BENCH_PER_TEST "one CTest entry per pytest test (the default)" ON)
# (a) and (b) with a fresh interpreter for every run, as before forks of one collected session.
set(BENCH_ISOLATION fork CACHE STRING "fork (the default) or process")
if(BENCH_NO_GROUPS)
  evidence_gate_add_suite(bench TESTS tests SEEDS 4 PERTURB OFF PER_TEST ${BENCH_PER_TEST} FIXTURES no-groups.manifest
                          ISOLATION ${BENCH_ISOLATION})
else()
  evidence_gate_add_suite(bench TESTS tests SEEDS 4 PERTURB OFF PER_TEST ${BENCH_PER_TEST} ISOLATION ${BENCH_ISOLATION})
endif()
"""


def test_id(i):
    return f"tests/test_m{i // PER_MODULE:02d}.py::test_{i:04d}"


def write_fixtures(root, total_bytes):
    """FILES files of total_bytes together: a header naming the file, then one random
    block repeated (real data on disk, not sparse; hashing cost does not depend on entropy)."""
    size = total_bytes // FILES
    block = random.Random(7).randbytes(min(size, 1 << 20))
    body = block * (size // len(block) + 1)
    for i in range(FILES):
        path = root / "fixtures" / f"g{i // PER_GROUP}" / f"f{i:04d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        header = f"fixture {i:04d}\n".encode()
        path.write_bytes(header + body[: size - len(header)])


def write_tests(root):
    (root / "tests").mkdir(parents=True, exist_ok=True)
    for m in range(MODULES):
        functions = [TEST_MODULE_HEADER]
        for i in range(m * PER_MODULE, (m + 1) * PER_MODULE):
            functions.append(f"def test_{i:04d}():\n    assert head({i // PER_GROUP}, {i}) == b'fixture {i:04d}\\n'\n")
        (root / "tests" / f"test_m{m:02d}.py").write_text("\n\n".join(functions))


def write_project_files(root):
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (root / "fixtures.manifest").write_text(
        "# fixture groups: name: glob\n" + "".join(f"g{g}: fixtures/g{g}/*.bin\n" for g in range(GROUPS)))
    (root / "no-groups.manifest").write_text("# no groups: the lease-free baseline of the benchmark\n")


def make_theirs(ours, theirs, conftest):
    """The seed conftest's project: the same tests, and the very same fixture files
    (hard links: same inodes on the same disk), with the extracted conftest.py at its root."""
    theirs.mkdir(parents=True)
    shutil.copytree(ours / "tests", theirs / "tests")
    for name in ("pytest.ini", "fixtures.manifest"):
        shutil.copy(ours / name, theirs / name)
    shutil.copy(conftest, theirs / "conftest.py")
    for src in sorted((ours / "fixtures").rglob("*.bin")):
        dst = theirs / src.relative_to(ours)
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.link(src, dst)


def make_tree(base, total_bytes, conftest):
    ours, theirs = base / "consumer", base / "theirs"
    log(f"generating the consumer with {human_bytes(total_bytes)} of fixtures in {base}")
    write_fixtures(ours, total_bytes)
    write_tests(ours)
    write_project_files(ours)
    (ours / "CMakeLists.txt").write_text(CONSUMER_CMAKE)
    make_theirs(ours, theirs, conftest)
    return ours, theirs


# ---------------------------------------------------------------------- CMake and CTest

class Build:
    """A configured build directory of the consumer and the commands CTest would run."""

    def __init__(self, source, build, product, python, options=()):
        run_checked(["cmake", "-S", source, "-B", build, f"-DEvidenceGate_DIR={product}",
                     f"-DPython3_EXECUTABLE={python}", *options])
        self.dir = build
        shown = json.loads(run_checked(["ctest", "--show-only=json-v1"], cwd=build))
        self.tests = {t["name"]: t for t in shown["tests"]}

    def command(self, name):
        return self.tests[name]["command"]

    def property(self, name, key):
        return next((p["value"] for p in self.tests[name].get("properties", []) if p["name"] == key), None)

    def suite_file(self):
        return next(a.split("=", 1)[1] for a in self.command("bench.gate") if a.startswith("--suite="))

    def setup(self):
        """Run the steps a seed run needs (fixtures snapshot, manifest, receipt)."""
        run_checked(["ctest", "-R", r"^bench\.(fixtures|manifest|receipt)$"], cwd=self.dir)

    def run_step(self, name, output=None):
        return run_measured(self.command(name), cwd=self.property(name, "WORKING_DIRECTORY"), output=output)

    def ctest(self, args, output, env=FIRST_ENV):
        sample = run_measured(["ctest", *args], cwd=self.dir, env=env, output=output)
        sample["steps"], sample["not_passed"] = parse_ctest_steps(Path(output).read_text(errors="replace"))
        return sample


CTEST_LINE = re.compile(r"Test\s+#\d+: (\S+) \.*\s*(\S.*?)\s+([\d.]+) sec\s*$")


PER_TEST_ENTRIES = "(one CTest entry per pytest test, summed)"


def parse_ctest_steps(text):
    """{step: seconds} from ctest's progress lines, and the steps that did not pass.

    CTest entries named for single pytest tests (node ids hold '::') are summed into one
    step, so a thousand of them stay one line of the breakdown."""
    steps, failed = {}, []
    for line in text.splitlines():
        if m := CTEST_LINE.search(line):
            name = PER_TEST_ENTRIES if "::" in m.group(1) else m.group(1)
            steps[name] = steps.get(name, 0.0) + float(m.group(3))
            if m.group(2) != "Passed":
                failed.append(f"{m.group(1)}: {m.group(2)}")
    if failed:
        log("  WARNING: ctest steps did not pass: " + "; ".join(failed))
    return steps, failed


# ------------------------------------------------------------ (a), (b): whole suite cost

def plain_runs(python, root, n, output):
    """n plain pytest runs in a row, as a user would type them."""
    start = time.perf_counter()
    runs = [run_measured([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root, output=output)
            for _ in range(n)]
    return {"s": time.perf_counter() - start, "cpu_s": sum(r["cpu_s"] for r in runs),
            "maxrss_kb": max(r["maxrss_kb"] for r in runs), "exit": [r["exit"] for r in runs]}


def second_ctest(build, jobs, log_file):
    """A `ctest` on a tree whose evidence an earlier `ctest` left (reuse on, as by default): the
    one before it, unmeasured, leaves that evidence under the default environment's key."""
    args = ["-L", "evidence", f"-j{jobs}"]
    build.ctest(args, log_file.with_suffix(".before.log"), env=CHILD_ENV)
    return build.ctest(args, log_file, env=CHILD_ENV)


def true_floor_project(work):
    """CTest's own price of an entry: a project of TESTS entries that run /bin/true."""
    source, build = work / "true-floor", work / "true-floor" / "build"
    source.mkdir(parents=True)
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(true_floor NONE)\nenable_testing()\n"
        f"foreach(i RANGE 1 {TESTS})\n  add_test(NAME true_${{i}} COMMAND /bin/true)\nendforeach()\n")
    run_checked(["cmake", "-S", source, "-B", build])
    return build


def measure_suite(builds, python, root, logs, repeats, work):
    """(a) and (b): `builds` maps "", "_no_entries", "_process", "_no_entries_process" to the
    consumer's build with that configuration; besides them a second `ctest` of the first two
    (reuse) at -j2, and TESTS entries of /bin/true at -j1 and -j2 (the per-test entries' floor)."""
    runs = SEEDS + 1
    cases = {"plain": lambda: plain_runs(python, root, runs, logs / "plain.log")}
    for suffix, build in builds.items():
        for jobs in (1, 2):
            log_file = logs / f"ctest-j{jobs}{suffix.replace('_', '-')}.log"
            cases[f"ctest_j{jobs}{suffix}"] = lambda b=build, j=jobs, f=log_file: b.ctest(["-L", "evidence", f"-j{j}"], f)
    for suffix in ("", "_no_entries"):
        log_file = logs / f"ctest-j2-second{suffix.replace('_', '-')}.log"
        cases[f"second_j2{suffix}"] = lambda b=builds[suffix], f=log_file: second_ctest(b, 2, f)
    floor = true_floor_project(work)
    for jobs in (1, 2):
        cases[f"true_j{jobs}"] = lambda j=jobs: run_measured(["ctest", f"-j{j}"], cwd=floor)
    results = bench(cases, repeats)
    plain = results["plain"]["median_s"]
    figures = {"runs": runs, "plain": results["plain"]}
    for suffix in builds:
        for key, jobs in ((f"a{suffix}", 1), (f"b{suffix}", 2)):
            case = f"ctest_j{jobs}{suffix}"
            goal = GOALS[key.replace("_process", "")]
            entry = results[case]
            samples = entry["samples"]
            steps = median_steps(samples)
            figures[key] = {
                "jobs": jobs, "ctest": entry, "ratio": entry["median_s"] / plain, "goal": goal,
                "ratio_cpu": entry["median_cpu_s"] / results["plain"]["median_cpu_s"],
                "met": entry["median_s"] / plain <= goal,
                "steps_median_s": steps,
                "sum_of_steps_s": sum(steps.values()),
                "ctest_exits": [s["exit"] for s in samples],
                "all_steps_passed": all(s["exit"] == 0 for s in samples),
                "not_passed": sorted({step for s in samples for step in s["not_passed"]}),
            }
    for suffix in ("", "_no_entries"):
        second, first = results[f"second_j2{suffix}"], results[f"ctest_j2{suffix}"]
        figures[f"second{suffix}"] = {"ctest": second, "ratio_to_first": second["median_s"] / first["median_s"],
                                      "goal": GOALS["second"], "met": second["median_s"] / first["median_s"] <= GOALS["second"]}
    # One per-test entry against one /bin/true entry, both in CTest's -j1 loop.
    entry_s = (results["ctest_j1"]["median_s"] - results["ctest_j1_no_entries"]["median_s"]) / TESTS
    floor_s = results["true_j1"]["median_s"] / TESTS
    figures["entries"] = {"per_entry_s": entry_s, "true_per_entry_s": floor_s, "true_j1": results["true_j1"],
                          "true_j2": results["true_j2"], "ratio": entry_s / floor_s, "goal": GOALS["entries"],
                          "met": entry_s / floor_s <= GOALS["entries"]}
    build = builds[""]
    seed_tests = [n for n in build.tests if ".seed." in n]
    # A lock shared by the seed runs serialises them whatever -j says: it explains (b).
    figures["seed_resource_locks"] = sorted({lock for n in seed_tests for lock in build.property(n, "RESOURCE_LOCK") or []})
    return figures


# ------------------------------------------------------------------- (c): lease cost

def theirs_subset(total_bytes):
    """How many tests the seed conftest runs at this size. It reads and hashes every group
    twice per test (a full run at 1 GB would hash 2 TB), so its per-test cost is measured on
    an evenly spread subset, the same with and without the conftest, sized by a rough
    estimate (50 us per file, 1 GB/s) to take about THEIRS_BUDGET_S; the output says how many."""
    estimate = 2 * (FILES * 50e-6 + total_bytes / 1e9)
    return min(TESTS, max(10, int(THEIRS_BUDGET_S / estimate)))


def theirs_run(python, theirs, ids, work, with_conftest, output):
    env = dict(CHILD_ENV, LEASE_SEED="1", LEASE_REPORT=str(work / "lease-report.jsonl"),
               LEASE_RESULTS=str(work / "results.jsonl"))
    for name in ("lease-report.jsonl", "results.jsonl"):
        (work / name).unlink(missing_ok=True)
    argv = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *([] if with_conftest else ["--noconftest"]), *ids]
    sample = run_measured(argv, cwd=theirs, env=env, output=output)
    if with_conftest:  # the conftest really leased every test it ran
        report = work / "lease-report.jsonl"
        sample["leased_tests"] = sum(1 for _ in report.open()) if report.exists() else 0
    return sample


def measure_lease_cost(total_bytes, trees, product, python, work, repeats, main_build=None):
    ours, theirs = trees
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    groups = main_build or Build(ours, work / "build-groups", product, python)
    nogroups = Build(ours, work / "build-nogroups", product, python, ["-DBENCH_NO_GROUPS=ON"])
    groups.setup()
    nogroups.setup()
    n = theirs_subset(total_bytes)
    ids = [test_id(i * TESTS // n) for i in range(n)]
    suite = groups.suite_file()
    evgate = groups.command("bench.gate")[0]
    cases = {
        "plain": lambda: run_measured([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=ours,
                                      output=logs / "plain.log"),
        "ours_groups": lambda: groups.run_step("bench.seed.1", logs / "seed-groups.log"),
        "ours_nogroups": lambda: nogroups.run_step("bench.seed.1", logs / "seed-nogroups.log"),
        # The collection order: what a shuffled order itself costs pytest (modules set up and torn down again).
        "ours_nogroups_seed0": lambda: nogroups.run_step("bench.seed.0", logs / "seed0-nogroups.log"),
        "ours_restore": lambda: run_measured([evgate, "restore", f"--suite={suite}"], cwd=ours, output=logs / "restore.log"),
        "theirs_with": lambda: theirs_run(python, theirs, ids, work, True, logs / "theirs-with.log"),
        "theirs_without": lambda: theirs_run(python, theirs, ids, work, False, logs / "theirs-without.log"),
    }
    r = bench(cases, max(repeats, LEASE_REPEATS))
    ours_per_test = (r["ours_groups"]["median_s"] - r["ours_nogroups"]["median_s"]) / TESTS
    theirs_per_test = (r["theirs_with"]["median_s"] - r["theirs_without"]["median_s"]) / n
    cpu = {k: v["median_cpu_s"] for k, v in r.items()}
    return {
        "size_bytes": total_bytes, "tests": TESTS, "theirs_tests": n, "runs": r,
        "ours_per_test_s": ours_per_test,
        "ours_restore_per_test_s": r["ours_restore"]["median_s"] / TESTS,
        "theirs_per_test_s": theirs_per_test,
        "ours_per_test_cpu_s": (cpu["ours_groups"] - cpu["ours_nogroups"]) / TESTS,
        "theirs_per_test_cpu_s": (cpu["theirs_with"] - cpu["theirs_without"]) / n,
        "ratio_ours_theirs": ours_per_test / theirs_per_test if theirs_per_test > 0 else None,
        "theirs_leased_tests": [s.get("leased_tests") for s in r["theirs_with"]["samples"]],
    }


# ----------------------------------------------------------------- (d): gate at scale

def outcome_model(tests):
    """Per test: how it behaves in run k. Mostly stable, a realistic sprinkle of the rest."""
    rng = random.Random(42)
    kinds = []
    for _ in range(tests):
        x = rng.random()
        kinds.append("failing" if x < 0.005 else "order" if x < 0.008 else "skipped" if x < 0.010
                     else "polluter" if x < 0.011 else "stable")
    return kinds


def behaviour(kind, run):
    """(outcome, dirty groups, message) of a test of this kind in run `run`."""
    if kind == "failing" or (kind == "order" and run % 2 == 1):
        return "failed", [], "AssertionError: assert 2 == 3"
    if kind == "skipped":
        return "skipped", [], "not on this platform"
    return "passed", (["g3"] if kind == "polluter" else []), ""


class Templates:
    """Record shapes taken from a real evidence directory of the product, so the generated
    data keeps whatever keys the product writes today."""

    def __init__(self, evidence):
        self.suite = json.loads((evidence / "suite.json").read_text())
        self.receipt = json.loads((evidence / "receipt.json").read_text())
        plan = sorted((evidence / "runs").glob("seed.*.plan.json"))[0]
        self.plan = json.loads(plan.read_text())
        run = plan.with_name(plan.name.replace(".plan.json", ".jsonl"))
        records = [json.loads(line) for line in run.read_text().splitlines()]
        self.records = {r["event"]: r for r in records}
        self.manifest = (evidence / "manifest.json").read_text()


def receipt_digest(doc):
    """The product's digest: sha256 of the compact JSON of everything before it (checked
    against the real receipt in write_receipt)."""
    return "sha256:" + hashlib.sha256(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def write_receipt(t, path, root, ids, receipt_id):
    real = dict(t.receipt)
    real_digest = real.pop("digest", None)
    doc = dict(real)
    test_shape = t.receipt["tests"][0]
    doc.update(tests=[dict(test_shape, id=i) for i in ids], collected=len(ids), receipt_id=receipt_id,
               rootdir=str(root), root=str(root), cwd=str(root), configfile=str(root / "pytest.ini"), conftests=[])
    if real_digest is not None:
        doc["digest"] = receipt_digest(doc)
    path.write_text(json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n")
    return real_digest == receipt_digest(real) if real_digest else None


def compact(record):
    """One record as the product writes it: compact JSON (the plugin sorts keys; evgate's writer keeps its order)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write_run(t, evidence, root, run, order, kinds, index, receipt_id):
    run_id = f"seed.{run}"
    (evidence / "runs" / f"{run_id}.plan.json").write_text(
        compact(dict(t.plan, id=run_id, order=run_id, seed=run, tests=order)) + "\n")
    session = dict(t.records["session"], run=run_id, seed=run, rootdir=str(root), configfile=str(root / "pytest.ini"),
                   conftests=[], collected=len(order), planned=len(order), unlisted=[], absent=[])
    lines = [compact(session)]
    result_shape = t.records["result"]
    for test in order:
        outcome, dirty, message = behaviour(kinds[index[test]], run)
        lines.append(compact({"event": "start", "test": test}))
        phases = {"setup": "passed", "call": outcome, "teardown": "passed"}
        result = dict(result_shape, test=test, outcome=outcome, dirty=dirty, message=message, phases=phases,
                      duration=0.0004)
        if "changed" in result_shape:  # every group the test changed, declared or not
            result["changed"] = dirty
        lines.append(compact(result))
    lines.append(compact(t.records["end"]))
    # evgate seals a run's records: the finished record carries the length and digest of the rest.
    body = ("\n".join(lines) + "\n").encode()
    lines.append(compact(dict(t.records["finished"], receipt=receipt_id, complete=True, processes=1, note="",
                              bytes=len(body), digest=xxh3_hex(body))))
    (evidence / "runs" / f"{run_id}.jsonl").write_text("\n".join(lines) + "\n")


def xxh3_hex(data):
    """XXH3-64 of data as evgate writes it (16 hex digits), through the system's libxxhash."""
    import ctypes
    library = ctypes.CDLL("libxxhash.so.0")
    library.XXH3_64bits.restype = ctypes.c_uint64
    library.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return format(library.XXH3_64bits(data, len(data)), "016x")


def write_theirs(theirs, orders, kinds, index):
    """The same outcomes in the seed articles' formats: results.jsonl and lease-report.jsonl
    for triage.py (one line per test per run), the three-column ledger for gate.py."""
    theirs.mkdir(parents=True, exist_ok=True)
    with open(theirs / "results.jsonl", "w") as res, open(theirs / "lease-report.jsonl", "w") as lease:
        for run, order in enumerate(orders):
            for test in order:
                outcome, dirty, _ = behaviour(kinds[index[test]], run)
                res.write(json.dumps({"nodeid": test, "seed": run, "outcome": outcome}) + "\n")
                lease.write(json.dumps({"nodeid": test, "seed": run, "dirty": dirty}) + "\n")
    word = {"passed": "pass", "failed": "fail", "skipped": "skip"}
    with open(theirs / "ledger.jsonl", "w") as ledger:
        for test in orders[0]:
            cols = [word[behaviour(kinds[index[test]], run)[0]] for run in range(3)]
            ledger.write(json.dumps({"test": test, "local_r1": cols[0], "local_r2": cols[1], "runner": cols[2],
                                     "env_sensitive": False}) + "\n")


def write_gate_data(t, base, tests, runs):
    """An evidence directory in our format and the same data in the articles' formats."""
    log(f"generating gate data: {runs} runs x {tests} tests in {base}")
    root, evidence = base / "root", base / "evidence"
    (evidence / "runs").mkdir(parents=True)
    root.mkdir()
    (root / "pytest.ini").write_text("[pytest]\n")
    ids = [f"tests/test_g{i // 100:04d}.py::test_{i:06d}" for i in range(tests)]
    index = {test: i for i, test in enumerate(ids)}
    kinds = outcome_model(tests)
    receipt_id = f"bench{tests}x{runs}"
    suite = dict(t.suite, name="gatebench", root=str(root), evidence_dir=str(evidence), seeds=runs - 1,
                 fixtures="", baseline="", quarantine="", runner_bundles=[], perturb=False)
    (evidence / "suite.json").write_text(json.dumps(suite, indent=2) + "\n")
    digest_method_ok = write_receipt(t, evidence / "receipt.json", root, ids, receipt_id)
    (evidence / "manifest.json").write_text(t.manifest)
    orders = []
    for run in range(runs):
        order = list(ids)
        if run:
            random.Random(run).shuffle(order)
        orders.append(order)
        write_run(t, evidence, root, run, order, kinds, index, receipt_id)
    write_theirs(base / "theirs", orders, kinds, index)
    counts = {k: kinds.count(k) for k in sorted(set(kinds))}
    return {"suite": evidence / "suite.json", "ledger": evidence / "ledger.jsonl", "theirs": base / "theirs",
            "kinds": counts, "receipt_digest_method_verified": digest_method_ok}


def checked_gate(evgate, data, output):
    """evgate gate blocks on this data (exit 1: it holds failing tests); anything else is an error."""
    sample = run_measured([evgate, "gate", f"--suite={data['suite']}"], output=output)
    rows = sum(1 for _ in data["ledger"].open()) if data["ledger"].exists() else 0
    sample["ledger_rows"] = rows
    # What the command leaves beside the ledger (the verdict store, the reports): output
    # volume that costs I/O rather than CPU, visible as wall time well above CPU time.
    evidence = data["ledger"].parent
    store = evidence / "verdicts.store"
    sample["verdict_store_bytes"] = store.stat().st_size if store.exists() else 0
    sample["reports_bytes"] = sum(f.stat().st_size for f in evidence.glob("report.*"))
    if sample["exit"] not in (0, 1) or rows == 0:
        log(f"  WARNING: evgate gate exited {sample['exit']} with {rows} ledger rows; see {output}")
    return sample


def measure_gate(evgate, python, seed_code, templates, work, repeats, quick):
    logs = work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    points = [(GATE_TESTS, r) for r in MEMORY_RUNS] + ([] if quick else [(t, GATE_RUNS) for t in MEMORY_TESTS])
    figures = {"points": []}
    for tests, runs in points:
        data = write_gate_data(templates, work / f"{tests}x{runs}", tests, runs)
        theirs = data["theirs"]
        cases = {
            "ours": lambda: checked_gate(evgate, data, logs / f"gate-{tests}x{runs}.log"),
            "triage": lambda: run_measured([python, seed_code["triage.py"]], cwd=theirs, output=logs / f"triage-{tests}x{runs}.log"),
        }
        if (tests, runs) == (GATE_TESTS, GATE_RUNS):
            # The gate step alone (read a ledger, print what blocks) against gate.py doing the same with its ledger.
            cases["ours_from_ledger"] = lambda: run_measured([evgate, "gate", f"--suite={data['suite']}", "--from-ledger"],
                                                             output=logs / f"gate-from-ledger-{tests}.log")
            cases["gate_py"] = lambda: run_measured([python, seed_code["gate.py"], "ledger.jsonl"], cwd=theirs,
                                                    output=logs / f"gate_py-{tests}.log")
        r = bench(cases, repeats)
        point = {"tests": tests, "runs": runs, "kinds": data["kinds"],
                 "receipt_digest_method_verified": data["receipt_digest_method_verified"], **r}
        figures["points"].append(point)
        if (tests, runs) == (GATE_TESTS, GATE_RUNS):
            figures["perf_profile"] = perf_profile([evgate, "gate", f"--suite={data['suite']}"], work / "perf.data")
        shutil.rmtree(work / f"{tests}x{runs}")  # 100s of MB each; the figures are kept
    main = next(p for p in figures["points"] if (p["tests"], p["runs"]) == (GATE_TESTS, GATE_RUNS))
    for name, ours in (("triage", "ours"), ("gate_py", "ours_from_ledger")):
        figures[f"speedup_vs_{name}"] = main[name]["median_s"] / main[ours]["median_s"]
        figures[f"memory_ratio_vs_{name}"] = main[name]["median_maxrss_kb"] / main[ours]["median_maxrss_kb"]
    figures["goal"] = GOALS["d"]
    figures["met"] = min(figures["speedup_vs_triage"], figures["speedup_vs_gate_py"]) >= GOALS["d"]
    return figures


# ----------------------------------------------------------- breakdown and profile

def measure_breakdown(python, root, logs, repeats):
    """Costs a seed run cannot avoid, for the breakdown: interpreter + pytest start-up
    (one test), and a plain collection (what the receipt step does besides recording)."""
    cases = {
        "pytest_one_test": lambda: run_measured([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_id(0)],
                                                cwd=root, output=logs / "one-test.log"),
        "pytest_collect_only": lambda: run_measured([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only"],
                                                    cwd=root, output=logs / "collect.log"),
        "python_start": lambda: run_measured([python, "-c", "pass"]),
    }
    return bench(cases, repeats)


PROFILE_WRAPPER = """#!/bin/sh
# Profiles every `python -m ...` the product starts (the pytest runs); anything else passes through.
if [ "$1" = "-m" ]; then exec {python} -m cProfile -o "{out}/$$.prof" "$@"; fi
exec {python} "$@"
"""


def profile_seed_run(root, product, python, work):
    """One seed run with every pytest process under cProfile: where the in-process time goes."""
    prof = work / "profiles"
    prof.mkdir(parents=True)
    wrapper = work / "python-profiled"
    wrapper.write_text(PROFILE_WRAPPER.format(python=python, out=prof))
    wrapper.chmod(0o755)
    build = Build(root, work / "build-profile", product, wrapper)
    build.setup()
    for f in prof.glob("*.prof"):
        f.unlink()
    sample = build.run_step("bench.seed.1", work / "profile-seed.log")
    files = sorted(prof.glob("*.prof"))
    if not files:
        return {"error": "no profile written", "sample": sample}
    stats = pstats.Stats(*map(str, files))
    rows = []
    for (path, line, func), (cc, nc, tt, ct, _) in stats.stats.items():
        rows.append({"function": f"{Path(path).name}:{line}({func})", "calls": nc, "tottime_s": tt, "cumtime_s": ct})
    rows.sort(key=lambda r: r["tottime_s"], reverse=True)
    return {"processes": len(files), "total_s": stats.total_tt, "wall_s": sample["s"], "top_tottime": rows[:12]}


# Instructions, not seconds: callgrind counts the same for the same run whatever else the
# machine does, where wall and CPU time on a shared VM move by a fifth between identical runs.
CALLGRIND_WRAPPER = """#!/bin/sh
# Counts the instructions of the seed runs' pytest processes; every other python call passes through.
case " $* " in
  *" --evidence-gate-run="*)
    exec valgrind --tool=callgrind --callgrind-out-file="{out}/$$.{label}.out" {python} "$@" {extra} ;;
esac
exec {python} "$@"
"""


def callgrind_total(out_file):
    text = Path(out_file).read_text(errors="replace")
    m = re.search(r"^(?:summary|totals):\s*(\d+)", text, re.M)
    return int(m.group(1)) if m else None


def counted_seed_run(tree, product, python, work, label, options=(), extra="", step="bench.seed.1"):
    """Instructions of one seed run's pytest process, through a PYTHON wrapper (the product
    runs exactly as configured)."""
    out = work / "callgrind"
    out.mkdir(parents=True, exist_ok=True)
    wrapper = work / f"python-counted-{label}"
    wrapper.write_text(CALLGRIND_WRAPPER.format(python=python, out=out, label=label, extra=extra))
    wrapper.chmod(0o755)
    build = Build(tree, work / f"build-counted-{label}", product, wrapper, options)
    build.setup()
    build.run_step(step, work / f"counted-{label}.log")
    files = sorted(out.glob(f"*.{label}.out"))
    return callgrind_total(files[-1]) if files else None


def measure_instructions(trees, product, python, work, sizes):
    """Instructions of a plain run, of a seed run without groups, with the 10 groups (at each
    size) and with the 10 groups by stat scan: the plugin's and the lease's cost, noise-free."""
    if shutil.which("valgrind") is None:
        return {"error": "valgrind is not installed"}
    main = trees[MAIN_SIZE][0]
    plain_out = work / "callgrind" / "plain.out"
    plain_out.parent.mkdir(parents=True, exist_ok=True)
    log("  plain pytest under callgrind")
    run_checked([python, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=main)  # its bytecode cached, as ours is
    run_checked(["valgrind", "--tool=callgrind", f"--callgrind-out-file={plain_out}", python, "-m", "pytest", "-q",
                 "-p", "no:cacheprovider"], cwd=main)
    figures = {"plain": callgrind_total(plain_out), "groups": {}}
    log("  seed runs without groups under callgrind: the collection order and a shuffled one")
    figures["no_groups_seed0"] = counted_seed_run(main, product, python, work, "nogroups0", ["-DBENCH_NO_GROUPS=ON"],
                                                  step="bench.seed.0")
    figures["no_groups"] = counted_seed_run(main, product, python, work, "nogroups", ["-DBENCH_NO_GROUPS=ON"])
    for size in sizes:
        log(f"  seed run with the 10 groups at {human_bytes(size)} under callgrind")
        figures["groups"][size] = counted_seed_run(trees[size][0], product, python, work, f"groups{size}")
    log("  seed run with the 10 groups by stat scan under callgrind")
    figures["scan"] = counted_seed_run(main, product, python, work, "scan", extra="--evidence-gate-lease=scan")
    return figures


PERF_LINE = re.compile(r"^\s*([\d.]+)%\s+\[(.)\]\s+(.*?)\s*$")


def perf_profile(argv, data_file):
    """Where a native tool spends its time: the top symbols of `perf record`, where perf exists."""
    if shutil.which("perf") is None:
        return {"error": "perf is not installed"}
    record = subprocess.run(["perf", "record", "-o", data_file, "--", *map(str, argv)], capture_output=True, text=True)
    report = subprocess.run(["perf", "report", "-i", data_file, "--stdio", "--no-children", "--sort", "symbol"],
                            capture_output=True, text=True)
    # perf pads the symbol column and may append empty columns ("-  -"): cut them off.
    rows = [{"percent": float(m.group(1)), "where": "kernel" if m.group(2) == "k" else "user",
             "symbol": re.sub(r"(\s+-)*\s*$", "", m.group(3))[:160]}
            for line in report.stdout.splitlines() if (m := PERF_LINE.match(line))]
    Path(data_file).unlink(missing_ok=True)
    if not rows:
        return {"error": f"perf gave no samples: {record.stderr.strip()[-300:]} {report.stderr.strip()[-300:]}"}
    return {"top": rows[:15]}


# --------------------------------------------------------------- machine and versions

def machine():
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    meminfo = Path("/proc/meminfo").read_text() if Path("/proc/meminfo").exists() else ""
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    mem = re.search(r"^MemTotal:\s*(\d+) kB", meminfo, re.M)
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "cpu_model": model.group(1) if model else platform.processor(),
        "memory_gb": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "kernel": platform.release(),
        "loadavg_at_start": os.getloadavg(),
    }


def versions(python, product):
    py = run_checked([python, "-c", "import sys, pytest; print(sys.version.split()[0], pytest.__version__)"]).split()
    cache = (Path(product) / "CMakeCache.txt").read_text()
    source = re.search(r"^EvidenceGate_SOURCE_DIR:STATIC=(.*)$", cache, re.M).group(1)
    commit = run_checked(["git", "-C", source, "rev-parse", "HEAD"]).strip()
    # Uncommitted product files make the commit alone an incomplete description of the build.
    dirty = run_checked(["git", "-C", source, "status", "--porcelain", "--", "tools", "modules", "templates",
                         "cmake", "CMakeLists.txt"]).splitlines()
    return {
        "python": py[0], "pytest": py[1], "python_executable": python,
        "cmake": run_checked(["cmake", "--version"]).splitlines()[0],
        "evgate_source": source, "evgate_commit": commit, "evgate_uncommitted_files": [line[3:] for line in dirty],
    }


# ------------------------------------------------------------------------ reporting

def human_bytes(n):
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} B"


def size_dir(total_bytes):
    return "c-" + human_bytes(total_bytes).replace(" ", "")


def ms(seconds):
    return f"{seconds * 1000:.3f} ms" if abs(seconds) < 0.01 else f"{seconds * 1000:.1f} ms"


def yes_no(flag):
    return "yes" if flag else "**no**"


FLAT_TOLERANCE_S = 0.0005  # per test: the run-to-run noise of a one-second run of 1,000 tests


def flatness(curve):
    """(c) is flat when the per-test cost at the largest size is within FLAT_TOLERANCE_S of the
    smallest's: a lease that read bytes would grow by orders of magnitude (the seed conftest's does)."""
    first, last = curve[0]["ours_per_test_s"], curve[-1]["ours_per_test_s"]
    return last <= max(first, 0) + FLAT_TOLERANCE_S


def markdown(result):
    a, b, c, d = result["a"], result["b"], result["c"], result["d"]
    m = result["machine"]
    plain = result["suite"]["plain"]["median_s"]
    lines = [f"Measured {result['date']} on {m['cpu_model']}, {m['nproc']} cores, {m['memory_gb']} GB; "
             f"Python {result['versions']['python']}, pytest {result['versions']['pytest']}, "
             f"evgate {result['versions']['evgate_commit'][:10]}"
             + (" + uncommitted changes" if result["versions"]["evgate_uncommitted_files"] else "")
             + f"; median of {result['settings']['repeats']} after a warm-up.", ""]
    main_c = next(p for p in c if p["size_bytes"] == MAIN_SIZE)
    dm = next(p for p in d["points"] if (p["tests"], p["runs"]) == (GATE_TESTS, GATE_RUNS))
    lines += [
        "| figure | Evidence Gate | baseline | ratio | goal | met |",
        "|---|---|---|---|---|---|",
        f"| (a) `ctest -L evidence -j1`, {SEEDS} seeds + collection order, vs {result['suite']['runs']} plain pytest runs "
        f"| {a['ctest']['median_s']:.1f} s | {plain:.1f} s | {a['ratio']:.2f} | ≤ {a['goal']} | {yes_no(a['met'])} |",
        f"| (b) the same with `-j2` | {b['ctest']['median_s']:.1f} s | {plain:.1f} s | {b['ratio']:.2f} | ≤ {b['goal']} | {yes_no(b['met'])} |",
        *[f"| ({k[0]}) as ({k[0]}), `PER_TEST OFF` (no CTest entry per pytest test) | {result[k]['ctest']['median_s']:.1f} s "
          f"| {plain:.1f} s | {result[k]['ratio']:.2f} | ≤ {result[k]['goal']} | {yes_no(result[k]['met'])} |"
          for k in ("a_no_entries", "b_no_entries") if k in result],
        *second_and_entry_rows(result),
        f"| (c) lease cost per test, nothing changed, {human_bytes(MAIN_SIZE)} (seed conftest as baseline) "
        f"| {ms(main_c['ours_per_test_s'])} | {ms(main_c['theirs_per_test_s'])} | {main_c['ratio_ours_theirs']:.4f} "
        f"| flat in size | {yes_no(result['c_flat'])} |",
        f"| (d) `evgate gate`, {GATE_RUNS} runs × {GATE_TESTS:,} tests, vs triage.py | {dm['ours']['median_s']:.2f} s, "
        f"{dm['ours']['median_maxrss_kb'] / 1024:.0f} MB | {dm['triage']['median_s']:.2f} s, {dm['triage']['median_maxrss_kb'] / 1024:.0f} MB "
        f"| {d['speedup_vs_triage']:.2g}× as fast | ≥ 10× | {yes_no(d['speedup_vs_triage'] >= GOALS['d'])} |",
        f"| (d) the gate step, `evgate gate --from-ledger` ({GATE_RUNS} columns), vs gate.py (its 3-column ledger), "
        f"{GATE_TESTS:,} rows | {dm['ours_from_ledger']['median_s']:.2f} s, {dm['ours_from_ledger']['median_maxrss_kb'] / 1024:.0f} MB | "
        f"{dm['gate_py']['median_s']:.2f} s, {dm['gate_py']['median_maxrss_kb'] / 1024:.0f} MB | {d['speedup_vs_gate_py']:.2g}× as fast "
        f"| ≥ 10× | {yes_no(d['speedup_vs_gate_py'] >= GOALS['d'])} |",
        "", f"CPU-time ratios (user + system of every process, the fork server and its forks included; "
        f"insensitive to the machine's load, which was "
        f"{m['loadavg_at_start'][0]:.1f} at the start and {m['loadavg_at_end'][0]:.1f} at the end): "
        f"(a) {a['ratio_cpu']:.2f}, (b) {b['ratio_cpu']:.2f}"
        + "".join(f", ({k[0]}, `PER_TEST OFF`) {result[k]['ratio_cpu']:.2f}" for k in ("a_no_entries", "b_no_entries") if k in result)
        + ".",
        *isolation_lines(result, plain),
        "", "(c) lease cost per test against fixture size (1,000 files in 10 groups; only the file size changes):", "",
        "| fixtures | ours per test, wall (CPU) | of it: restore after the run | seed conftest per test, wall (CPU; tests timed) | ours / theirs |",
        "|---|---|---|---|---|",
    ]
    for p in c:
        lines.append(f"| {human_bytes(p['size_bytes'])} | {ms(p['ours_per_test_s'])} ({ms(p['ours_per_test_cpu_s'])}) "
                     f"| {ms(p['ours_restore_per_test_s'])} | {ms(p['theirs_per_test_s'])} ({ms(p['theirs_per_test_cpu_s'])}; "
                     f"{p['theirs_tests']}) | {p['ratio_ours_theirs']:.4f} |")
    lines += instruction_lines(result.get("instructions", {}))
    lines += ["", "(d) gate time and peak memory against runs and tests:", "",
              "| runs × tests | evgate gate (CPU) | peak RSS | triage.py (CPU) | peak RSS | time, theirs ÷ ours | memory, theirs ÷ ours |",
              "|---|---|---|---|---|---|---|"]
    for p in d["points"]:
        o, t = p["ours"], p["triage"]
        lines.append(f"| {p['runs']} × {p['tests']:,} | {o['median_s']:.2f} s ({o['median_cpu_s']:.1f} s) "
                     f"| {o['median_maxrss_kb'] / 1024:.0f} MB | {t['median_s']:.2f} s ({t['median_cpu_s']:.1f} s) "
                     f"| {t['median_maxrss_kb'] / 1024:.0f} MB | {t['median_s'] / o['median_s']:.2g}× "
                     f"| {t['median_maxrss_kb'] / o['median_maxrss_kb']:.2g}× |")
    for key in ("a", "b"):
        if result[key]["not_passed"]:
            lines += ["", f"Note ({key}): ctest reported steps that did not pass: {', '.join(result[key]['not_passed'])}."]
    lines += ["", *breakdown_lines(result)]
    return "\n".join(lines)


def suite_lines(result):
    """(a), (b), the second `ctest` and the per-test entries against /bin/true: the issue-26 table."""
    plain = result["suite"]["plain"]["median_s"]
    m = result["machine"]
    lines = [f"Measured {result['date']} on {m['cpu_model']}, {m['nproc']} cores; load {m['loadavg_at_start'][0]:.1f} "
             f"at the start, {m['loadavg_at_end'][0]:.1f} at the end; evgate {result['versions']['evgate_commit'][:10]}; "
             f"median of {len(result['a']['ctest']['samples'])} after a warm-up; {result['suite']['runs']} plain runs "
             f"{plain:.2f} s.", "", "| figure | Evidence Gate | against | ratio | goal | met |", "|---|---|---|---|---|---|"]
    names = {"a": "(a) `ctest -L evidence -j1`, first", "b": "(b) the same, `-j2`",
             "a_no_entries": "(a) `-j1`, `PER_TEST OFF`", "b_no_entries": "(b) `-j2`, `PER_TEST OFF`"}
    for key, name in names.items():
        if key in result:
            r = result[key]
            lines.append(f"| {name} | {r['ctest']['median_s']:.2f} s | {plain:.2f} s | {r['ratio']:.2f} | ≤ {r['goal']} | {yes_no(r['met'])} |")
    return lines + second_and_entry_rows(result)


def second_and_entry_rows(result):
    """Rows of the figure table: a second `ctest` against the first, and a per-test entry
    against CTest's floor (absent from the JSON of runs before they were measured)."""
    rows = []
    for suffix, name in (("", "a second `ctest -j2` on the unchanged tree"), ("_no_entries", "the same, `PER_TEST OFF`")):
        if f"second{suffix}" in result["suite"]:
            r, first = result["suite"][f"second{suffix}"], result[f"b{suffix}"]
            rows.append(f"| {name} | {r['ctest']['median_s']:.2f} s | first {first['ctest']['median_s']:.2f} s "
                        f"| {r['ratio_to_first']:.2f} | ≤ {r['goal']} | {yes_no(r['met'])} |")
    if e := result["suite"].get("entries"):
        rows.append(f"| a per-test CTest entry (`-j1` with − without them, ÷ {TESTS}) | {e['per_entry_s'] * 1000:.2f} ms "
                    f"| `/bin/true` entry {e['true_per_entry_s'] * 1000:.2f} ms | {e['ratio']:.2f} | ≤ {e['goal']} | {yes_no(e['met'])} |")
    return rows


def isolation_lines(result, plain):
    """(a) and (b) with every run a fork of the collected session (ISOLATION fork, the default)
    against a fresh interpreter per run (ISOLATION process, as before forks), from the same run."""
    pairs = [(k, f"{k}_process") for k in ("a", "b", "a_no_entries", "b_no_entries") if f"{k}_process" in result]
    if not pairs:
        return []
    lines = ["", "`ISOLATION fork` (every run a fork of the receipt's collected session) against `ISOLATION process` "
             "(a fresh interpreter per run, as before), measured in turns in this run:", "",
             "| figure | fork | process | fork ÷ plain | process ÷ plain | fork ÷ process |", "|---|---|---|---|---|---|"]
    names = {"a": "(a) `-j1`", "b": "(b) `-j2`", "a_no_entries": "(a) `-j1`, `PER_TEST OFF`",
             "b_no_entries": "(b) `-j2`, `PER_TEST OFF`"}
    for fork, process in pairs:
        f, p = result[fork]["ctest"]["median_s"], result[process]["ctest"]["median_s"]
        lines.append(f"| {names[fork]} | {f:.1f} s | {p:.1f} s | {f / plain:.2f} | {p / plain:.2f} | {f / p:.2f} |")
    return lines


def instruction_lines(ins):
    """(a) and (c) in instructions (callgrind): what the plugin and the leases add to a plain run."""
    if not ins or ins.get("error") or not ins.get("plain") or not ins.get("no_groups"):
        return ["", f"Instruction counts: not measured ({ins.get('error', 'no data') if ins else 'no data'})."]
    plain, bare = ins["plain"], ins["no_groups"]
    lines = ["", "The same in instructions (callgrind; the same count for the same run, whatever the machine's load), "
             "one seed run's pytest process:", "",
             "| run | instructions | over plain pytest | lease per test |", "|---|---|---|---|",
             f"| plain pytest, 1,000 tests | {plain / 1e9:.3f} G | | |"]
    if ins.get("no_groups_seed0"):
        lines.append(f"| seed 0 (the collection order), no fixture groups: the plugin, records, reseeding "
                     f"| {ins['no_groups_seed0'] / 1e9:.3f} G | {ins['no_groups_seed0'] / plain - 1:+.1%} | |")
    lines += [f"| seed 1 (a shuffled order), no fixture groups | {bare / 1e9:.3f} G | {bare / plain - 1:+.1%} | |"]
    for size, count in sorted(ins["groups"].items(), key=lambda kv: int(kv[0])):
        if count:
            lines.append(f"| seed run, 10 groups of {human_bytes(int(size))}, change notifications | {count / 1e9:.3f} G "
                         f"| {count / plain - 1:+.1%} | {(count - bare) / TESTS / 1e3:.0f} k instructions |")
    if ins.get("scan"):
        lines.append(f"| seed run, 10 groups of {human_bytes(MAIN_SIZE)}, stat scan (`--evidence-gate-lease=scan`) "
                     f"| {ins['scan'] / 1e9:.3f} G | {ins['scan'] / plain - 1:+.1%} | {(ins['scan'] - bare) / TESTS / 1e3:.0f} k instructions |")
    return lines


def breakdown_lines(result):
    """Where the time of (a) goes: one seed run taken apart, the CTest steps, and profiles."""
    a, b, bd = result["a"], result["b"], result["breakdown"]
    runs = next(p for p in result["c"] if p["size_bytes"] == MAIN_SIZE)["runs"]

    def row(label, entry):
        return f"| {label} | {entry['median_s']:.3f} | {entry['median_cpu_s']:.3f} |"

    def diff(label, x, y):
        return (f"| → {label} | {runs[x]['median_s'] - runs[y]['median_s']:.3f} "
                f"| {runs[x]['median_cpu_s'] - runs[y]['median_cpu_s']:.3f} |")

    lines = [f"Where the time goes ({human_bytes(MAIN_SIZE)} consumer, medians; the seed-run rows were measured in turns):", "",
             "| cost | wall s | CPU s |", "|---|---|---|",
             row("python start-up (`python3 -c pass`)", bd["python_start"]),
             row("pytest start-up + 1 test", bd["pytest_one_test"]),
             row("plain pytest `--collect-only` (the receipt step's collection)", bd["pytest_collect_only"]),
             row("plain pytest run, 1,000 tests", runs["plain"]),
             *([row("`evgate run` of seed 0 (the collection order), no fixture groups", runs["ours_nogroups_seed0"]),
                diff("plugin + runner overhead per run (seed 0, no groups − plain)", "ours_nogroups_seed0", "plain")]
               if "ours_nogroups_seed0" in runs else []),
             row("`evgate run` of seed 1 (a shuffled order), no fixture groups", runs["ours_nogroups"]),
             *([diff("what the shuffled order costs pytest (seed 1 − seed 0): modules set up and torn down again",
                     "ours_nogroups", "ours_nogroups_seed0")] if "ours_nogroups_seed0" in runs else []),
             row("`evgate run` of seed 1, 10 groups", runs["ours_groups"]),
             diff("lease cost per run (10 groups − no groups)", "ours_groups", "ours_nogroups"),
             row("→ of it: `evgate restore` alone (what follows every seed run)", runs["ours_restore"]),
             *([f"| one CTest entry per pytest test (`-j1` with − without them, per test) "
                f"| {(a['ctest']['median_s'] - result['a_no_entries']['ctest']['median_s']) / TESTS * 1000:.2f} ms "
                f"| {(a['ctest']['median_cpu_s'] - result['a_no_entries']['ctest']['median_cpu_s']) / TESTS * 1000:.2f} ms |"]
               if "a_no_entries" in result else []),
             "", f"CTest steps (medians): `-j1` wall {a['ctest']['median_s']:.1f} s, sum of steps {a['sum_of_steps_s']:.1f} s; "
             f"`-j2` wall {b['ctest']['median_s']:.1f} s, sum of steps {b['sum_of_steps_s']:.1f} s "
             f"(parallelism {b['sum_of_steps_s'] / b['ctest']['median_s']:.2f}):", "",
             "| step | `-j1` s | `-j2` s |", "|---|---|---|"]
    # ctest rounds each per-test entry to 0.00 s: their cost is the row above, not a sum here.
    lines += [f"| {name} | {sec:.2f} | {b['steps_median_s'].get(name, float('nan')):.2f} |"
              for name, sec in a["steps_median_s"].items() if name != PER_TEST_ENTRIES]
    prof = result.get("profile", {})
    if prof.get("top_tottime"):
        lines += ["", f"cProfile of one seed run's pytest process ({prof['total_s']:.1f} s profiled), top self time:", "",
                  "| function | calls | self s | cumulative s |", "|---|---|---|---|"]
        lines += [f"| `{r['function']}` | {r['calls']} | {r['tottime_s']:.2f} | {r['cumtime_s']:.2f} |" for r in prof["top_tottime"][:8]]
    lines += gate_cost_lines(result["d"])
    return lines


def gate_cost_lines(d):
    main = next(p for p in d["points"] if (p["tests"], p["runs"]) == (GATE_TESTS, GATE_RUNS))
    ours = main["ours"]
    last = ours["samples"][-1]
    lines = ["", f"`evgate gate` at {GATE_RUNS} runs × {GATE_TESTS:,} tests: wall {ours['median_s']:.1f} s, "
             f"CPU {ours['median_cpu_s']:.1f} s (first run into an empty directory: wall {ours['warmup']['s']:.1f} s, "
             f"CPU {ours['warmup']['cpu_s']:.1f} s); besides the ledger it writes the verdict store "
             f"({last.get('verdict_store_bytes', 0) / 1e6:.0f} MB) and {last.get('reports_bytes', 0) / 1e6:.0f} MB of reports."]
    perf = d.get("perf_profile", {})
    if perf.get("top"):
        lines += ["", "perf profile of that command, top self time (CPU samples only):", "",
                  "| % | where | symbol |", "|---|---|---|"]
        lines += [f"| {r['percent']:.1f} | {r['where']} | `{r['symbol'][:90]}` |" for r in perf["top"][:10]]
    return lines


# ----------------------------------------------------------------------------- main

def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, help="the product's build directory (EvidenceGate_DIR); required to measure")
    parser.add_argument("--quick", action="store_true", help="1 repeat, no 1 GB tree, fewer gate points")
    parser.add_argument("--python", default="/usr/bin/python3", help="interpreter with pytest, for every run")
    parser.add_argument("--workdir", type=Path, help="where to generate everything (default: a new temp dir)")
    parser.add_argument("--json", type=Path, help="JSON output (default: <workdir>/benchmark.json)")
    parser.add_argument("--seeds", type=Path, default=REPO.parent / "shared" / "seeds", help="the seed articles")
    parser.add_argument("--cost-only", action="store_true",
                        help="only (a), (b), the second ctest and the /bin/true floor (5 samples each)")
    parser.add_argument("--keep", action="store_true", help="keep the generated trees (GBs) after the run")
    parser.add_argument("--from-json", type=Path, help="measure nothing: print the tables of an earlier run's JSON")
    args = parser.parse_args()
    if args.build is None and args.from_json is None:
        parser.error("--build is required (or --from-json to print an earlier run)")
    return args


def prepare_workdir(requested):
    work = (requested or Path(tempfile.mkdtemp(prefix="evidence-gate-bench-"))).resolve()
    if work == REPO or REPO in work.parents:
        raise SystemExit(f"benchmark: error: the work directory must be outside the repository: {work}")
    work.mkdir(parents=True, exist_ok=True)
    if any(work.iterdir()) and requested:
        raise SystemExit(f"benchmark: error: the work directory is not empty: {work}")
    return work


def main():
    args = parse_args()
    if args.from_json:
        print(markdown(json.loads(args.from_json.read_text())))
        return
    product = args.build.resolve()
    work = prepare_workdir(args.workdir)
    repeats = 1 if args.quick else 3
    suite_repeats = 1 if args.quick else 5  # issue 26: the median of 5 full samples
    log(f"work directory {work}")
    (work / "logs").mkdir()
    result = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "machine": machine(), "versions": versions(args.python, product),
              "settings": {"repeats": repeats, "warmup": 1, "quick": args.quick, "workdir": str(work),
                           "tests": TESTS, "modules": MODULES, "files": FILES, "groups": GROUPS, "seeds": SEEDS,
                           "bytecode_cache": "on for every process (PYTHONDONTWRITEBYTECODE removed; set in the "
                                             f"calling shell: {'PYTHONDONTWRITEBYTECODE' in os.environ})"}}
    seed_code = extract_seed_code(args.seeds, work / "seed-code")
    sizes = [s for s in SIZES if not ((args.quick or args.cost_only) and s > MAIN_SIZE)]
    if args.cost_only:
        sizes = [MAIN_SIZE]
    trees = {s: make_tree(work / "trees" / size_dir(s), s, seed_code["conftest.py"]) for s in sizes}
    main_root = trees[MAIN_SIZE][0]
    main_build = Build(main_root, work / size_dir(MAIN_SIZE) / "build-groups", product, args.python)
    here = work / size_dir(MAIN_SIZE)
    builds = {"": main_build,
              "_no_entries": Build(main_root, here / "build-no-entries", product, args.python, ["-DBENCH_PER_TEST=OFF"]),
              "_process": Build(main_root, here / "build-process", product, args.python, ["-DBENCH_ISOLATION=process"]),
              "_no_entries_process": Build(main_root, here / "build-no-entries-process", product, args.python,
                                           ["-DBENCH_PER_TEST=OFF", "-DBENCH_ISOLATION=process"])}
    result["settings"]["subreaper"] = become_subreaper()

    log("(a), (b): ctest -L evidence against plain pytest runs, forks and processes")
    result["suite"] = measure_suite(builds, args.python, main_root, work / "logs", suite_repeats, work)
    for key in [k for k in result["suite"] if k[0] in "ab" and k[1:2] in ("", "_")]:
        result[key] = result["suite"].pop(key)
    if args.cost_only:
        result["machine"]["loadavg_at_end"] = os.getloadavg()
        out = args.json or work / "benchmark.json"
        out.write_text(json.dumps(result, indent=1, default=str) + "\n")
        shutil.rmtree(work / "trees", ignore_errors=True)
        print("\n".join(suite_lines(result)))
        log(f"figures: {out}")
        return
    templates = Templates(Path(main_build.suite_file()).parent)  # before (c) replaces the runs
    log("breakdown: start-up and collection")
    result["breakdown"] = measure_breakdown(args.python, main_root, work / "logs", repeats)
    result["c"] = []
    for size in sizes:
        log(f"(c): lease cost at {human_bytes(size)}")
        here = work / size_dir(size)
        result["c"].append(measure_lease_cost(size, trees[size], product, args.python, here, repeats,
                                              main_build if size == MAIN_SIZE else None))
    result["c_flat"] = flatness(result["c"])
    log("(d): the gate on generated run records")
    result["d"] = measure_gate(main_build.command("bench.gate")[0], args.python, seed_code, templates, work / "gate", repeats, args.quick)
    log("instructions: plain, plugin and leases under callgrind")
    result["instructions"] = measure_instructions(trees, product, args.python, work / "instructions",
                                                  [MAIN_SIZE] + ([] if args.quick else [max(sizes)]))
    log("profile: one seed run under cProfile")
    result["profile"] = profile_seed_run(main_root, product, args.python, work / "profile")
    result["machine"]["loadavg_at_end"] = os.getloadavg()

    out = args.json or work / "benchmark.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    if not args.keep:
        shutil.rmtree(work / "trees", ignore_errors=True)
        for build in work.rglob("build-*"):
            shutil.rmtree(build / "evidence", ignore_errors=True)  # pristine copies: as big as the trees
    print(markdown(result))
    log(f"figures: {out}")


if __name__ == "__main__":
    main()
