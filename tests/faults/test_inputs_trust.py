"""The fault matrix, inputs: options, work trees, CMake steps and the gate's policy must not
let bad evidence through silently.

Each scenario is a consumer project run with real CMake and CTest (``Project``); each
asserts what the product promises and, through ``project.checked()``, that the source tree
is byte-identical afterwards and the canary secret is nowhere. Every scenario here failed
before the change it tests (issue 14, "never a false green").
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import (CONFIGURE_TIMEOUT, CTEST_TIMEOUT, FAST, SUITE, Ledger, Project, gate_summary, normalized, run,
                     step_output, wait_until_gone)

TEST_FILE = "tests/test_suite.py"


def ctest_with(project, *args, env=None, binary=None, timeout=CTEST_TIMEOUT, jobs=2):
    """project.ctest with variables added to ctest's environment."""
    argv = [shutil.which("ctest"), "--test-dir", binary or project.build, "--output-on-failure", f"-j{jobs}", *args]
    return project._record(run(argv, env=project.env(**(env or {})), timeout=timeout))


def configure_into(project, binary):
    """Configures the project into another build tree."""
    argv = [shutil.which("cmake"), "-S", project.root, "-B", binary, f"-DEvidenceGate_DIR={project.product}"]
    result = project._record(run(argv, env=project.env(), timeout=CONFIGURE_TIMEOUT))
    assert result.returncode == 0, f"configuring {binary} failed:\n{result.describe()}"


def suite_row(binary, name, suite=SUITE):
    rows = {row["test"]: row for row in Ledger(binary, suite).suite_rows}
    assert name in rows, f"no suite row {name!r} in the ledger: {sorted(rows)}"
    return rows[name]


def expect_gate(project, result, expected, what, binary=None):
    summary = gate_summary(binary or project.build)
    assert summary == expected, f"{what}: the gate must say {expected} (it said {summary}):\n{result.describe()}"
    assert (result.returncode == 0) == (expected == "PASSED"), f"{what}: ctest's exit status:\n{result.describe()}"


# ============================================================== options that thin or void a run

# Six tests: three in tests/test_suite.py, one in tests/sub/test_nested.py, and two items of
# tests/sub/data.checks, collected by tests/conftest.py. Each option drops some of them.
THINNABLE = """
    def test_ok():
        pass

    def test_other():
        pass

    class TestGroup:
        def test_in_class(self):
            pass
"""
NESTED = """
    def test_nested():
        pass
"""
# A conftest that collects *.checks files: --noconftest and a --confcutdir below it drop them.
CHECKS_CONFTEST = """
    import pytest

    class Check(pytest.Item):
        def runtest(self):
            pass

    class Checks(pytest.File):
        def collect(self):
            for line in self.path.read_text().split():
                yield Check.from_parent(self, name=line)

    def pytest_collect_file(parent, file_path):
        if file_path.suffix == ".checks":
            return Checks.from_parent(parent, path=file_path)
"""

# (where the option comes from, how it is given, what the thinning row must say)
THINNING = [
    pytest.param("env", "-o python_functions=test_ok", "-o python_functions=test_ok (PYTEST_ADDOPTS)",
                 id="addopts-env-o-separate"),
    pytest.param("env", "--override-ini=python_classes=Nothing -k 'not test_other'",
                 "--override-ini python_classes=Nothing (PYTEST_ADDOPTS)", id="addopts-env-override-ini-joined"),
    pytest.param("args", "-onorecursedirs=sub", "-o norecursedirs=sub (PYTEST_ARGS)", id="pytest-args-o-joined"),
    pytest.param("args", "--override-ini;testpaths=tests/sub", "--override-ini testpaths=tests/sub (PYTEST_ARGS)",
                 id="pytest-args-override-ini-separate"),
    pytest.param("environment", "--noconftest", "--noconftest (PYTEST_ADDOPTS)", id="suite-environment-noconftest"),
    pytest.param("ini", "--confcutdir=tests/sub -qk 'not test_other'", "--confcutdir tests/sub (addopts)",
                 id="ini-addopts-confcutdir-and-combined-short-flags"),
]


@pytest.mark.parametrize("source, option, expected", THINNING)
def test_an_option_that_thins_the_run_warns_wherever_it_comes_from(project, source, option, expected):
    """-o/--override-ini of the collection keys, --noconftest, --confcutdir (and the known
    -k, -m, --deselect ...) in PYTEST_ADDOPTS, the suite's ENVIRONMENT, PYTEST_ARGS or the ini
    file's addopts: the gate passes what ran, and a WARN row names the option and its source."""
    project.write(TEST_FILE, THINNABLE)
    project.write("tests/sub/test_nested.py", NESTED)
    project.write("tests/conftest.py", CHECKS_CONFTEST)
    project.write("tests/sub/data.checks", "alpha beta\n")
    if source == "ini":
        project.write("pytest.ini", f"[pytest]\naddopts = {option}\n")
    arguments = {"args": f"PYTEST_ARGS {option}", "environment": f'ENVIRONMENT "PYTEST_ADDOPTS={option}"'}.get(source, "")
    project.suite(f"{FAST} {arguments}")
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env={"PYTEST_ADDOPTS": option} if source == "env" else {})
        expect_gate(project, result, "PASSED", f"a run thinned by {option}")
        ledger = project.ledger()
        assert len(ledger.tests) < 6, f"the option must thin the run (6 tests without it):\n{ledger}"
        row = suite_row(project.build, "thinning")
        assert row.get("warning") and row["gate"] == "pass", row
        assert expected in row["reason"], f"the row must name {expected!r}: {row}"
        gate = step_output(project.build, f"{SUITE}.gate") or ""
        assert "WARN thinning: warning: options thin the run: " in gate and expected in gate, gate


@pytest.mark.parametrize("option", ["--setup-only", "--setup-plan"])
def test_a_run_that_calls_no_test_is_never_green(project, option):
    """Under --setup-only (or --setup-plan) pytest calls no test, yet reports setup and
    teardown passed: a failing test would pass every run. A suite row blocks, naming it."""
    project.write(TEST_FILE, """
        def test_fails():
            assert False
    """)
    project.suite(FAST)
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env={"PYTEST_ADDOPTS": option})
        expect_gate(project, result, "BLOCKED", f"a run under {option}")
        row = suite_row(project.build, "options")
        assert row["gate"] == "block" and f"{option} (PYTEST_ADDOPTS)" in row["reason"], row
        assert f"BLOCK options: missing, pytest reports the tests without running them under {option}" in result.stdout


# ============================================================== shards over a changed work tree


def git(project, *args):
    subprocess.run(["git", "-C", str(project.root), *args], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                                                "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def shard_and_merge(project, between):
    """Shards 1/2 and 2/2 in two build trees, `between()`, then a merge in a third: its result."""
    trees = {name: project.tmp / name for name in ("s1", "s2", "merge")}
    for binary in trees.values():
        configure_into(project, binary)
    for k, name in ((1, "s1"), (2, "s2")):
        ran = ctest_with(project, "-L", "evidence", binary=trees[name], env={"EVIDENCE_GATE_SHARD": f"{k}/2"})
        expect_gate(project, ran, "PASSED", f"shard {k}/2", binary=trees[name])
    between()
    shards = ";".join(str(trees[name] / "evidence" / SUITE) for name in ("s1", "s2"))
    return trees, ctest_with(project, "-L", "evidence", binary=trees["merge"], env={"EVIDENCE_GATE_SHARDS": shards})


STALE = {
    # Shards on a clean tree, then an uncommitted edit that breaks a test.
    "edit-after-clean-shards": ("", "assert 1 == 2", "changed since: 'tests/test_suite.py'"),
    # Shards over an uncommitted edit, then another edit of the same file: the same dirty
    # list, other content.
    "edit-of-a-dirty-file": ("assert 2 == 2", "assert 3 == 4", "changed since: 'tests/test_suite.py'"),
}


def stale_shard_rows(trees, message):
    """Both shards' rows block, naming what changed."""
    stale = [row for row in Ledger(trees["merge"], SUITE).suite_rows if row["test"].startswith("shard:")]
    assert len(stale) == 2 and all(row["gate"] == "block" and message in row["reason"] for row in stale), stale
    assert str(trees["s1"] / "evidence" / SUITE) in {row["test"][len("shard:"):] for row in stale}, stale


@pytest.mark.parametrize("case", sorted(STALE))
def test_a_merge_blocks_shards_that_ran_over_other_uncommitted_changes(project, case):
    """Same commit is not same sources: a shard whose receipt's digest of the sources differs
    from the merging tree's is a blocking shard: row naming the files, so an edit made after
    the shards ran is never merged into a green gate."""
    before, after, message = STALE[case]
    committed = "def test_value():\n    assert 1 == 1\n"
    project.write(TEST_FILE, committed)
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "suite")
    test_file = project.root / TEST_FILE
    if before:
        test_file.write_text(f"def test_value():\n    {before}\n")
    with project.checked():
        try:
            trees, merged = shard_and_merge(project, lambda: test_file.write_text(f"def test_value():\n    {after}\n"))
        finally:
            test_file.write_text(f"def test_value():\n    {before}\n" if before else committed)
        expect_gate(project, merged, "BLOCKED", f"a merge after {case}", binary=trees["merge"])
        stale_shard_rows(trees, message)


def test_a_merge_outside_git_blocks_shards_that_ran_before_an_edit(project):
    """Outside a git work tree there is no commit to compare: the receipt's digest of every
    guarded file is what tells the shards' sources from the merging tree's. A merge over the
    same tree passes, even with the shards' evidence downloaded into ROOT (handed over, not
    sources); a test edited after the shards ran blocks the merge, naming the file."""
    project.write(TEST_FILE, "def test_value():\n    assert 1 == 1\n\ndef test_other():\n    pass\n")
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")  # not the downloaded evidence's pristine copies
    test_file = project.root / TEST_FILE
    with project.checked():
        trees, _ = shard_and_merge(project, lambda: None)
        # The merge job of a CI: the shards' evidence directories downloaded into the checkout.
        downloaded = [project.root / "shards" / name for name in ("s1", "s2")]
        for name, target in zip(("s1", "s2"), downloaded):
            shutil.copytree(trees[name] / "evidence" / SUITE, target)
        try:
            clean = ctest_with(project, "-L", "evidence", binary=trees["merge"],
                               env={"EVIDENCE_GATE_SHARDS": ";".join(map(str, downloaded))})
            expect_gate(project, clean, "PASSED", "a merge over the tree the shards ran over", binary=trees["merge"])
        finally:
            shutil.rmtree(project.root / "shards")
        original = test_file.read_text()
        try:
            test_file.write_text(original.replace("assert 1 == 1", "assert 1 == 2"))
            shards = ";".join(str(trees[name] / "evidence" / SUITE) for name in ("s1", "s2"))
            merged = ctest_with(project, "-L", "evidence", binary=trees["merge"], env={"EVIDENCE_GATE_SHARDS": shards})
        finally:
            test_file.write_text(original)
        expect_gate(project, merged, "BLOCKED", "a merge after an edit outside git", binary=trees["merge"])
        stale_shard_rows(trees, "the shard ran over other sources than this tree: changed since: 'tests/test_suite.py'")
        receipt = json.loads((trees["s1"] / "evidence" / SUITE / "receipt.json").read_text())
        assert receipt["git"] is None and receipt["sources"]["digest"].startswith("sha256:"), receipt
        listing = json.loads((trees["s1"] / "evidence" / SUITE / "sources.json").read_text())
        assert TEST_FILE in [path for path, _ in listing["files"]], listing


def test_a_merge_blocks_shards_that_ran_before_an_edit_beside_root(project):
    """A monorepo: ROOT is python/, a conftest puts ../lib on sys.path and the tests import
    lib/helper.py. The receipt digests the files pytest imported from outside ROOT (named
    relative to ROOT), so an uncommitted edit there after the shards ran blocks the merge."""
    project.write("lib/helper.py", "def answer():\n    return 42\n")
    project.write("python/pytest.ini", "[pytest]\n")
    project.write("python/conftest.py", """
        import pathlib
        import sys

        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "lib"))
    """)
    project.write("python/tests/test_answer.py", """
        import helper

        def test_answer():
            assert helper.answer() == 42

        def test_other():
            pass
    """)
    project.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.21)\nproject(monorepo NONE)\nenable_testing()\n"
                                    "find_package(EvidenceGate CONFIG REQUIRED)\n"
                                    f"evidence_gate_add_suite({SUITE}\n  ROOT python TESTS tests SEEDS 1 PERTURB OFF PER_TEST OFF)\n")
    git(project, "init", "-q")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "monorepo")
    helper = project.root / "lib" / "helper.py"
    with project.checked():
        try:
            trees, merged = shard_and_merge(project, lambda: helper.write_text("def answer():\n    return 41\n"))
        finally:
            helper.write_text("def answer():\n    return 42\n")
        expect_gate(project, merged, "BLOCKED", "a merge after an edit beside ROOT", binary=trees["merge"])
        stale_shard_rows(trees, "changed since: '../lib/helper.py'")
        sources = json.loads((trees["s1"] / "evidence" / SUITE / "receipt.json").read_text())["sources"]
        assert sources["outside"] == ["../lib/helper.py"], sources


# ============================================================== a step that is stuck itself

STOPPER = """
    import os
    import signal
    import sys

    import pytest

    @pytest.mark.writes("data")
    def test_stops_evgate():
        with open("data/state.txt", "w") as f:
            f.write("written by the test\\n")
        if "--evidence-gate-run=seed.0" in sys.argv:  # its parent is the evgate of step seed.0
            os.kill(os.getppid(), signal.SIGSTOP)

    def test_ok():
        pass
"""


def test_a_test_that_stops_evgate_ends_in_bounded_time_and_the_tree_is_restored(project):
    """A test SIGSTOPs its parent evgate mid-run: the step's CTest TIMEOUT (3 x TIMEOUT + 30 s)
    ends it, the steps after it do not run (the gate is not PASS), and the killed run's restore
    is completed and said: by <name>.restore, which CTest runs after every step that touches the
    groups, or by a step that took the tree first.
    (With ISOLATION fork the test's parent is the fork server: test_forks.py.)"""
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, STOPPER)
    project.suite(f"{FAST} TIMEOUT 8 ISOLATION process")  # the receipt collects within it, even on a loaded machine
    with project.checked():
        project.configured()
        start = time.monotonic()
        result = ctest_with(project, "-L", "evidence", timeout=180)
        elapsed = time.monotonic() - start
        assert result.returncode != 0 and gate_summary(project.build) != "PASSED", result.describe()
        assert re.search(rf"{SUITE}\.seed\.0 \.+\*\*\*Timeout", result.stdout), result.describe()
        assert re.search(rf"{SUITE}\.gate \.+\*\*\*Not Run", result.stdout), result.describe()
        assert elapsed < 3 * 8 + 30 + 60, f"ctest took {elapsed:.0f} s:\n{result.describe()}"
        # <name>.restore, or a step that took the tree before it (the alone pass needs only the receipt).
        steps = {step: step_output(project.build, f"{SUITE}.{step}") or "" for step in ("alone", "restore")}
        restored = [step for step, out in steps.items() if "restored fixture groups left dirty by an interrupted run" in out]
        assert len(restored) == 1, steps
        assert not wait_until_gone(str(project.build), seconds=5), "a stopped evgate survived"
    # checked(): data/state.txt is pristine again


def test_every_step_has_a_ctest_timeout_derived_from_timeout(project):
    """Every step, and every per-test entry, carries a CTest TIMEOUT: the formula of the
    module's documentation for TIMEOUT 7, SEEDS 2, RERUNS 1, LOCALISE 3."""
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, "def test_one():\n    pass\n")
    project.suite("TIMEOUT 7 SEEDS 2 RERUNS 1 LOCALISE 3 TESTS tests")
    with project.checked():
        project.configured()
        # baseline-update is registered only when asked for (tests/e2e/test_cpp_projects.py)
        listing = ctest_with(project, "--show-only=json-v1", env={"EVIDENCE_GATE_UPDATE_BASELINE": "0"})
    tests = json.loads(listing.stdout)["tests"]
    timeouts = {t["name"]: next((p["value"] for p in t.get("properties", []) if p["name"] == "TIMEOUT"), None)
                for t in tests}
    one, run_step = 2 * 7 + 30, 3 * 7 + 30
    expected = {f"{SUITE}.{step}": one for step in ("fixtures", "restore", "manifest", "receipt", "ledger", "gate",
                                                    "baseline-update", "release")}
    expected.update({f"{SUITE}.seed.{k}": run_step for k in range(3)})
    expected[f"{SUITE}.alone"] = run_step
    expected.update({f"{SUITE}.perturbed": run_step, f"{SUITE}.rerun": (2 + 2) * (2 * 1 + 2) * 7 + 30,
                     f"{SUITE}.localise": (10 * 3 + 2) * 7 + 30, f"{SUITE}/{TEST_FILE}::test_one": 60})
    assert timeouts == expected, timeouts


# ============================================================== one ctest at a time

SLOW = """
    import os
    import time
    from pathlib import Path

    def test_slow():
        Path(os.environ["FAULTS_STARTED"]).touch()
        time.sleep(float(os.environ.get("FAULTS_SLEEP", "6")))
"""


def test_a_second_ctest_in_one_build_tree_is_refused_at_once(project):
    """While one ctest runs, a second in the same build tree fails its steps at once with
    "another ctest is running in this build tree (pid N)"; the first is undisturbed and
    passes. Then a new ctest takes over (the first is gone), `-R gate` after a full run
    works, and after a ctest killed mid-run the next one takes its claim over."""
    started = project.tmp / "started"
    project.write(TEST_FILE, SLOW)
    project.suite(f"SEEDS 1 PERTURB OFF TESTS tests ENVIRONMENT FAULTS_STARTED={started}")
    with project.checked():
        project.configured()
        first = subprocess.Popen([shutil.which("ctest"), "--test-dir", str(project.build), "-L", "evidence", "-j2",
                                  "--output-on-failure"], env=project.env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.monotonic() + 60
            while not started.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert started.exists(), "the first ctest never started its test"
            second = ctest_with(project, "-L", "evidence")
            output, _ = first.communicate(timeout=CTEST_TIMEOUT)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
                first.wait()
        assert second.returncode != 0, second.describe()
        assert f"another ctest is running in this build tree (pid {first.pid})" in second.output, second.describe()
        assert second.elapsed < 30, f"the second ctest must fail at once:\n{second.describe()}"
        # (Both ctests wrote Testing/Temporary/LastTest.log, CTest's own file: the exit status and
        # the ledger say how the first went.)
        assert first.returncode == 0, output.decode(errors="replace")
        assert project.ledger().verdicts() == {f"{TEST_FILE}::test_slow": ("stable", "pass")}, str(project.ledger())

        again = ctest_with(project, "-R", rf"{SUITE}\.gate", env={"FAULTS_SLEEP": "0"})
        expect_gate(project, again, "PASSED", "ctest -R gate after a full run")

        started.unlink()
        killed = subprocess.Popen([shutil.which("ctest"), "--test-dir", str(project.build), "-L", "evidence"],
                                  env=project.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        assert not wait_until_gone(str(project.build), seconds=10), "a step of the killed ctest survived"
        after = ctest_with(project, "-L", "evidence", env={"FAULTS_SLEEP": "0"})
        expect_gate(project, after, "PASSED", "the ctest after a killed one")


# ============================================================== ';' in paths


def test_a_semicolon_in_root_and_the_build_directory_works(tmp_path, build_dir, canary):
    """ROOT and the build directory below a directory named 'se;mi': CMake lists would split
    the paths (TEST_INCLUDE_FILES, step arguments, ATTACHED_FILES, configure dependencies);
    the module escapes them, and the suite runs as anywhere else."""
    base = tmp_path / "se;mi"
    base.mkdir()
    project = Project(base, build_dir, canary)
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write("quarantine.jsonl", "")
    project.write(TEST_FILE, "def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    project.suite("SEEDS 1 PERTURB OFF TESTS tests QUARANTINE quarantine.jsonl")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_gate(project, result, "PASSED", "a suite below 'se;mi'")
        assert len(project.ledger().tests) == 2
        assert f"{SUITE}/{TEST_FILE}::test_one" in result.stdout, result.describe()  # the per-test entries


# ============================================================== duplicate node ids


def test_duplicate_node_ids_are_named_not_a_usage_error(project):
    """A custom collector that gives two items one name: the receipt step fails naming the
    ids collected more than once, the ledger's collection row says the same, and no seed
    ever runs into pytest's "exit 4 (usage error)"."""
    project.write("tests/conftest.py", CHECKS_CONFTEST)
    project.write("tests/data.checks", "alpha alpha beta gamma gamma gamma\n")
    project.write(TEST_FILE, "def test_one():\n    pass\n")
    project.suite(FAST)
    with project.checked():
        project.configured()
        result = project.evidence()
        assert result.returncode != 0 and gate_summary(project.build) != "PASSED", result.describe()
        text = normalized(result.output)
        assert "2 node id(s) more than once" in text, result.describe()
        assert "'tests/data.checks::alpha' (2 times), 'tests/data.checks::gamma' (3 times)" in text, result.describe()
        assert "usage error" not in text, result.describe()
        row = suite_row(project.build, "collection")
        assert row["gate"] == "block" and "'tests/data.checks::gamma' (3 times)" in row["reason"], row


# ============================================================== the sandbox


def test_a_skip_that_depends_on_the_sandboxed_home_warns(project):
    """Every run has its own empty HOME and TMPDIR: a test that skips when ~/.myapp.ini is
    absent is skipped in every run, where plain pytest with the user's home runs it. The
    receipt records the sandbox and a WARN row names every test skipped in every run, saying
    which skip for a reason that points at the home."""
    project.write(TEST_FILE, """
        import sys
        from pathlib import Path

        import pytest

        def test_reads_the_user_config():
            config = Path("~/.myapp.ini").expanduser()
            if not config.exists():
                pytest.skip(f"{config} is absent")
            assert config.read_text() == "[app]\\n"

        @pytest.mark.skipif(sys.platform != "nonexistent", reason="only on another platform")
        def test_platform():
            pass
    """)
    project.suite(FAST)
    home = project.tmp / "home"
    home.mkdir()
    (home / ".myapp.ini").write_text("[app]\n")
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env={"HOME": str(home)})
        expect_gate(project, result, "PASSED", "skips pass")
        row = suite_row(project.build, "sandbox")
        assert row.get("warning") and row["gate"] == "pass", row
        assert row["tests"] == [f"{TEST_FILE}::test_reads_the_user_config", f"{TEST_FILE}::test_platform"], row
        assert f"1 of them for a reason that points at the home or temp dir ({TEST_FILE}::test_reads_the_user_config)" \
            in row["reason"], row
        assert f"your own HOME ('{home}')" in row["reason"], row
        sandbox = json.loads((project.evidence_dir() / "receipt.json").read_text())["sandbox"]
        assert sandbox["fresh"] == ["HOME", "TMPDIR", *XDG], sandbox
        assert sandbox["HOME"].startswith(sandbox["dir"]) and not sandbox["HOME"].startswith(str(home)), sandbox
        # What plain pytest does with that home: the test runs.
        plain = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", TEST_FILE],
                    env=project.env(HOME=str(home), PYTHONDONTWRITEBYTECODE="1"), timeout=120, cwd=project.root)
        assert "1 passed, 1 skipped" in plain.output, plain.describe()
    assert (home / ".myapp.ini").read_text() == "[app]\n"


def test_a_test_skipped_in_every_run_is_named_whatever_its_reason(project):
    """A skip reason need not say why: a test that skips when ~/.aws/credentials is absent,
    "AWS credentials not configured", is skipped in every sandboxed run, and plain pytest with
    the user's home runs it and fails it. The sandbox row names it all the same (issue 14: a
    test skipped in every run is named)."""
    project.write(TEST_FILE, """
        from pathlib import Path

        import pytest

        def test_s3_upload():
            if not (Path.home() / ".aws" / "credentials").exists():
                pytest.skip("AWS credentials not configured")
            assert False, "the upload is broken"

        def test_ok():
            pass
    """)
    project.suite("SEEDS 1 PER_TEST OFF")  # the perturbed run skips it too
    home = project.tmp / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("[default]\n")
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env={"HOME": str(home)})
        expect_gate(project, result, "PASSED", "a skip passes")
        row = suite_row(project.build, "sandbox")
        assert row.get("warning") and row["tests"] == [f"{TEST_FILE}::test_s3_upload"], row
        assert f"{TEST_FILE}::test_s3_upload ('AWS credentials not configured')" in row["reason"], row
        assert "points at" not in row["reason"], row
        gate = step_output(project.build, f"{SUITE}.gate") or ""
        assert "WARN sandbox: warning: 1 test(s) skipped in every run on this machine" in gate, gate
        plain = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", TEST_FILE],
                    env=project.env(HOME=str(home), PYTHONDONTWRITEBYTECODE="1"), timeout=120, cwd=project.root)
        assert "1 failed, 1 passed" in plain.output, plain.describe()


XDG = ["XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"]


def test_the_users_xdg_and_tool_directories_are_never_written(project):
    """A desktop session sets XDG_CONFIG_HOME and its kin to the user's own directories, and
    MPLCONFIGDIR or GNUPGHOME may point a tool there too: a test that saves its settings
    through them would write the user's real configuration. Every pytest process gets the XDG
    base directories below its sandboxed HOME, and the tool variables are dropped."""
    project.write(TEST_FILE, """
        import os
        from pathlib import Path

        PLACES = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_DATA_HOME": ".local/share",
                  "XDG_STATE_HOME": ".local/state", "MPLCONFIGDIR": ".config/matplotlib", "GNUPGHOME": ".gnupg"}

        def test_saves_settings():
            for variable, default in PLACES.items():
                base = Path(os.environ.get(variable) or Path.home() / default)
                assert base.is_relative_to(Path.home()), (variable, base)  # the run's sandboxed home
                (base / "myapp").mkdir(parents=True, exist_ok=True)
                (base / "myapp" / "settings.toml").write_text("theme = 'test'\\n")
    """)
    project.suite("SEEDS 1 PER_TEST OFF")
    home = project.tmp / "home"
    places = {"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache", "XDG_DATA_HOME": ".local/share",
              "XDG_STATE_HOME": ".local/state", "MPLCONFIGDIR": ".mpl", "GNUPGHOME": ".gnupg"}
    env = {"HOME": str(home), **{variable: str(home / place) for variable, place in places.items()}}
    for place in places.values():
        (home / place).mkdir(parents=True)
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env=env)
        expect_gate(project, result, "PASSED", "a test that saves its settings")
        written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
        assert written == [], f"the user's home was written: {written}"
        sandbox = json.loads((project.evidence_dir() / "receipt.json").read_text())["sandbox"]
        assert not list(Path(sandbox["dir"]).glob("*/home/.config/myapp")), "every run's sandbox is gone after it"
        assert sandbox["fresh"] == ["HOME", "TMPDIR", *XDG] and sandbox["dropped"] == ["MPLCONFIGDIR", "GNUPGHOME"], sandbox
        assert str(home) not in json.dumps(sandbox), sandbox  # names, never the user's values


def test_a_suite_that_pins_home_is_not_warned_about_home(project):
    """ENVIRONMENT HOME=... pins the home directory: the receipt says so, the XDG directories
    follow it, and a skip about it is the suite's own doing: the test is named (skipped in
    every run), not blamed on the sandbox."""
    home = project.tmp / "pinned-home"
    home.mkdir()
    project.write(TEST_FILE, """
        from pathlib import Path
        import pytest

        def test_reads_the_user_config():
            if not Path("~/.myapp.ini").expanduser().exists():
                pytest.skip("~/.myapp.ini is absent")
    """)
    project.suite(f"{FAST} ENVIRONMENT HOME={home}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_gate(project, result, "PASSED", "a pinned HOME")
        row = suite_row(project.build, "sandbox")
        assert row["tests"] == [f"{TEST_FILE}::test_reads_the_user_config"] and "points at" not in row["reason"], row
        sandbox = json.loads((project.evidence_dir() / "receipt.json").read_text())["sandbox"]
        assert sandbox["pinned"] == ["HOME"] and sandbox["fresh"] == ["TMPDIR"], sandbox


# ============================================================== PYTHONPATH in ENVIRONMENT


def test_a_pythonpath_in_environment_is_appended_after_the_plugin(project):
    """Contract: a PYTHONPATH given in ENVIRONMENT is appended, never replaces what evgate
    needs. A company plugin found through it (-p corpplug) loads beside evidence_gate_pytest,
    and ctest's own PYTHONPATH still follows."""
    plugins, inherited = project.tmp / "plugins", project.tmp / "inherited"
    plugins.mkdir()
    inherited.mkdir()
    (plugins / "corpplug.py").write_text("def pytest_configure(config):\n    config.corp_loaded = True\n")
    (inherited / "ctestlib.py").write_text("VALUE = 1\n")
    project.write(TEST_FILE, f"""
        import sys

        def test_plugins_and_paths(pytestconfig):
            import ctestlib
            assert pytestconfig.corp_loaded and "evidence_gate_pytest" in sys.modules
            assert sys.path.index({str(plugins)!r}) < sys.path.index({str(inherited)!r})
    """)
    project.suite(f"{FAST} PYTEST_ARGS -p corpplug ENVIRONMENT PYTHONPATH={plugins}")
    with project.checked():
        project.configured()
        result = ctest_with(project, "-L", "evidence", env={"PYTHONPATH": str(inherited)})
        expect_gate(project, result, "PASSED", "a suite whose ENVIRONMENT sets PYTHONPATH")
        assert "No module named" not in result.output, result.describe()
        assert project.ledger().tests[f"{TEST_FILE}::test_plugins_and_paths"]["verdict"] == "stable"


# ============================================================== quarantine


def test_an_env_sensitive_marker_dated_too_far_warns(project):
    """env_sensitive(until="9999-12-31") defers a portability gap "forever": it still defers,
    and a WARN row says the date is more than a year ahead, as for a quarantine entry."""
    project.write(TEST_FILE, """
        import os
        import pytest

        @pytest.mark.env_sensitive(until="9999-12-31", owner="qa", reason="TZ")
        def test_local_time():
            assert not os.environ.get("TZ", "").startswith("EGT")  # the perturbed run's far timezone

        @pytest.mark.env_sensitive(until="2020-01-01", owner="qa", reason="long expired")
        def test_ok():
            pass
    """)
    project.suite("SEEDS 1 PER_TEST OFF")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_gate(project, result, "PASSED", "a deferred portability gap")
        row = project.ledger().tests[f"{TEST_FILE}::test_local_time"]
        assert row["verdict"] == "portability-gap" and row["gate"] == "defer" and row["until"] == "9999-12-31", row
        far = suite_row(project.build, f"env_sensitive:{TEST_FILE}::test_local_time")
        assert far.get("warning") and far["gate"] == "pass", far
        assert "(until 9999-12-31, owner qa) is dated more than a year after today" in far["reason"], far
        assert f"env_sensitive:{TEST_FILE}::test_ok" not in {r["test"] for r in project.ledger().suite_rows}
        gate = step_output(project.build, f"{SUITE}.gate") or ""
        assert f"WARN env_sensitive:{TEST_FILE}::test_local_time: " in gate, gate


def test_quarantine_entries_for_no_test_or_dated_too_far_warn(project):
    """An entry whose test is not collected (renamed, removed, a typo) defers nothing; an entry
    dated more than a year ahead is no dated promise. Each gives a WARN row naming file, line,
    test and date; the gate still judges the tests."""
    project.write(TEST_FILE, "def test_one():\n    pass\n")
    far = f"{time.gmtime().tm_year + 2}-01-01"
    project.write("evidence/quarantine.jsonl",
                  '{"test": "tests/test_suite.py::test_renamed", "until": "2099-12-31", "owner": "qa"}\n'
                  f'{{"test": "tests/test_suite.py::test_one", "until": "{far}", "owner": "qa"}}\n')
    project.suite(f"{FAST} QUARANTINE evidence/quarantine.jsonl")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_gate(project, result, "PASSED", "a stale quarantine warns, it does not block")
        gone = suite_row(project.build, "quarantine:evidence/quarantine.jsonl:1")
        assert gone.get("warning") and "'tests/test_suite.py::test_renamed'" in gone["reason"], gone
        assert "matches no collected test" in gone["reason"] and "2099-12-31" in gone["reason"], gone
        assert "more than a year" in gone["reason"], gone
        ahead = suite_row(project.build, "quarantine:evidence/quarantine.jsonl:2")
        assert far in ahead["reason"] and "more than a year after today" in ahead["reason"], ahead
        assert "matches no collected test" not in ahead["reason"], ahead
        gate = step_output(project.build, f"{SUITE}.gate") or ""
        assert "WARN quarantine:evidence/quarantine.jsonl:1: " in gate, gate
