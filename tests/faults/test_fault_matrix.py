"""The fault matrix: Evidence Gate on its worst day.

Each scenario generates a consumer project into tmp_path, configures it with real CMake
against the product's build tree and runs real CTest, then asserts the exit status, a
message naming the file, line and value at fault (or the blocking ledger row), and, through
``Project.checked()``, that the source tree is byte-identical afterwards and that a canary
secret in the environment of cmake and ctest appears nowhere in the build tree or the output.

A scenario that exposes a product bug is marked ``xfail(strict=True)`` with the bug in its
reason, so the matrix documents it and turns red once the bug is fixed.
"""

import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import (FAST, SUITE, Ledger, expect_message, file_sha256, files_holding, gate_summary,
                     normalized, planned_by_run, record_damage, record_files, results_by_run, step_output,
                     wait_until_gone)

TEST_FILE = "tests/test_suite.py"
TWO_PASSING = """
    def test_one():
        pass

    def test_two():
        pass
"""


def expect_ok(project, result, what="the evidence run", suite=SUITE, binary=None):
    summary = gate_summary(binary or project.build, suite)
    assert result.returncode == 0 and summary == "PASSED", f"{what} must pass (gate: {summary}):\n{result.describe()}"


def expect_never_green(project, result, what, suite=SUITE, binary=None):
    assert result.returncode != 0, f"{what}: ctest must fail:\n{result.describe()}"
    summary = gate_summary(binary or project.build, suite)
    assert summary != "PASSED", f"{what}: the gate must not pass:\n{result.describe()}"


def expect_block_line(result, test, verdict):
    line = f"BLOCK {test}: {verdict}, "
    assert line in result.stdout, f"expected a line starting {line!r} in ctest's output:\n{result.describe()}"


# ============================================================== 1. bad input is refused

# (files, extra suite arguments, regex naming file:line and the value at fault)
BAD_INPUTS = [
    pytest.param({"fixtures.manifest": "# groups\nconfig fixtures/*.json\n"}, "",
                 r"fixtures\.manifest:2: expected 'name: glob': 'config fixtures/\*\.json'",
                 id="fixtures-malformed-line"),
    pytest.param({"fixtures.manifest": "data: data/*\n  : data/other/*\n"}, "",
                 r"fixtures\.manifest:2: empty group name: ': data/other/\*'", id="fixtures-empty-name"),
    pytest.param({"fixtures.manifest": "data: data/*\nother: other/*\ndata: more/*\n"}, "",
                 r"fixtures\.manifest:3: group 'data' is already defined on line 1", id="fixtures-duplicate-name"),
    pytest.param({"fixtures.manifest": "etc: ../../etc/*\n"}, "",
                 r"fixtures\.manifest:1: glob leaves ROOT: '\.\./\.\./etc/\*'", id="glob-dotdot-leaves-root"),
    pytest.param({"fixtures.manifest": "data: data/*\netc: /etc/*\n"}, "",
                 r"fixtures\.manifest:2: glob leaves ROOT: '/etc/\*'", id="glob-absolute-leaves-root"),
    pytest.param({"quarantine.jsonl": '{"test": "tests/test_suite.py::test_one", "until": "2099-01-01", "owner": "qa"}\n'
                                      "this is not json\n"},
                 "QUARANTINE quarantine.jsonl", r"quarantine\.jsonl:2: column \d+: not valid JSON",
                 id="quarantine-not-json"),
    pytest.param({"quarantine.jsonl": '{"test": "tests/test_suite.py::test_one", "owner": "qa"}\n'},
                 "QUARANTINE quarantine.jsonl", r"quarantine\.jsonl:1: missing 'until'", id="quarantine-no-until"),
    pytest.param({"quarantine.jsonl": '\n{"test": "tests/test_suite.py::test_one", "until": "2099-01-01"}\n'},
                 "QUARANTINE quarantine.jsonl", r"quarantine\.jsonl:2: missing 'owner'", id="quarantine-no-owner"),
    pytest.param({"quarantine.jsonl": '{"test": "tests/test_suite.py::test_one", "until": "2026-02-30", "owner": "qa"}\n'},
                 "QUARANTINE quarantine.jsonl", r"quarantine\.jsonl:1: 'until' is not a date: '2026-02-30'",
                 id="quarantine-impossible-date"),
    pytest.param({"baseline.json": "collected: 2\n"}, "BASELINE baseline.json",
                 r"baseline\.json:1: column 1: not valid JSON", id="baseline-not-json"),
    pytest.param({}, "SEEDZ 3", r'Unknown keywords given to evidence_gate_add_suite\(\): "SEEDZ;3"',
                 id="cmake-unknown-keyword"),
    pytest.param({}, "SEEDS many", r'SEEDS must be a whole number, not "many"', id="cmake-seeds-not-a-number"),
    pytest.param({}, "ENVIRONMENT NO_EQUALS_SIGN", r'ENVIRONMENT entries are VAR=value, not "NO_EQUALS_SIGN"',
                 id="cmake-environment-without-value"),
]


@pytest.mark.parametrize("files, arguments, message", BAD_INPUTS)
def test_bad_input_is_refused(project, files, arguments, message):
    """Refused at configure time (or, failing that, by the first CTest step) with a message
    naming file, line and value; never a green gate."""
    project.write(TEST_FILE, TWO_PASSING)
    for rel, text in files.items():
        project.write(rel, text)
    project.suite(f"TESTS tests {FAST} {arguments}")  # last: a repeated keyword wins
    with project.checked():
        result = project.configure()
        if result.returncode == 0:  # validation deferred to the first CTest step
            result = project.evidence()
            expect_never_green(project, result, "a bad input")
        expect_message(result, message, "the error must name the file, line and value at fault")


# ============================================================== 2. hostile fixture trees

OUTSIDE_TEXT = "outside ROOT: must never be read into, copied into or written by the build\n"
READER = """
    from pathlib import Path

    def test_reads_config():
        assert Path("data/config.txt").read_text() == "pristine\\n"
"""


# Each makes its hostile entries in data/ and returns {path: the identity the lease must give it}:
# links by their target (never hashed through), FIFOs and devices as "special" (never opened).
def _link_out_of_root(project, outside):
    os.symlink(outside, project.root / "data" / "outside-link")
    return {"data/outside-link": f"link:{outside}"}


def _symlink_loops(project, outside):
    os.symlink("self-loop", project.root / "data" / "self-loop")
    os.symlink("b-loop", project.root / "data" / "a-loop")
    os.symlink("a-loop", project.root / "data" / "b-loop")
    os.symlink(".", project.root / "data" / "dir-loop")  # a directory cycle for '**'
    return {"data/self-loop": "link:self-loop", "data/a-loop": "link:b-loop", "data/b-loop": "link:a-loop",
            "data/dir-loop": "link:."}


def _fifo(project, outside):
    os.mkfifo(project.root / "data" / "pipe")
    return {"data/pipe": "special"}


def _device(project, outside):
    try:
        os.mknod(project.root / "data" / "null-device", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs CAP_MKNOD")
    return {"data/null-device": "special"}


def _sparse_2gb(project, outside):
    with open(project.root / "data" / "big.bin", "wb") as f:
        f.truncate(2 << 30)
        f.seek(1 << 30)
        f.write(b"a few bytes in the middle of the hole\n")
    return {"data/big.bin": "sha256:" + file_sha256(project.root / "data" / "big.bin")}


HOSTILE_TREES = {
    "symlink-out-of-root": _link_out_of_root,
    "symlink-loops": _symlink_loops,
    "fifo": _fifo,
    "device": _device,
    "sparse-2gb-file": _sparse_2gb,
}

MAX_RSS_KIB = 256 * 1024  # every process of the run: pytest itself needs ~50 MB


@pytest.mark.parametrize("hostile", sorted(HOSTILE_TREES))
def test_hostile_fixture_tree(project, hostile):
    """A fixture group holding a link out of ROOT, link loops, a FIFO, a device or a 2 GB
    sparse file: the run neither hangs nor follows a link, hashes in bounded memory, and the
    gate passes for tests that only read."""
    outside = project.tmp / "outside" / "secret.txt"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE_TEXT)
    outside_before = (outside.read_bytes(), outside.stat().st_mtime_ns)
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/**\n")
    project.write(TEST_FILE, READER)
    project.suite(f"{FAST} TESTS tests")
    expected = HOSTILE_TREES[hostile](project, outside)
    with project.checked():
        project.configured()
        result, max_rss = project.ctest_measured("-L", "evidence")
        expect_ok(project, result)
        assert max_rss < MAX_RSS_KIB, f"a process of the run peaked at {max_rss} KiB (bound {MAX_RSS_KIB}):\n" \
                                      f"{result.describe()}"
        lease = json.loads((project.evidence_dir() / "fixtures" / "groups.json").read_text())
        identities = {f["path"]: f["identity"] for g in lease["groups"] for f in g["files"]}
        leased = {rel: identities.get(rel) for rel in expected}
        assert leased == expected, f"the lease must hold each hostile entry as itself: {leased}"
        copies = files_holding(project.build, OUTSIDE_TEXT.encode())
        assert not copies, f"the file outside ROOT was read into the build tree: {copies}"
    assert (outside.read_bytes(), outside.stat().st_mtime_ns) == outside_before, "the file outside ROOT changed"
    if hostile == "sparse-2gb-file":
        subprocess.run(["rm", "-rf", str(project.build)], check=True)  # its pristine copy may be 2 GB


# A test that owns the group swaps its file (or its directory) for a link out of ROOT; the
# restore must replace the link, never write the pristine content through it.
SWAPS = {
    "file-swapped-for-link": """
        import os
        import pytest

        @pytest.mark.writes("data")
        def test_swaps_file_for_link():
            os.remove("data/config.txt")
            os.symlink(os.environ["FAULTS_OUTSIDE"], "data/config.txt")
    """,
    "dir-swapped-for-link": """
        import os
        import shutil
        import pytest

        @pytest.mark.writes("data")
        def test_swaps_dir_for_link():
            shutil.rmtree("data/sub")
            os.symlink(os.path.dirname(os.environ["FAULTS_OUTSIDE"]), "data/sub")
    """,
}


@pytest.mark.parametrize("swap", [
    "file-swapped-for-link",
    "dir-swapped-for-link",
])
def test_restore_never_writes_through_a_link(project, swap):
    outside = project.tmp / "outside" / "config.txt"
    outside.parent.mkdir()
    outside.write_text(OUTSIDE_TEXT)
    outside_before = (outside.read_bytes(), outside.stat().st_mtime_ns, sorted(os.listdir(outside.parent)))
    project.write("data/config.txt", "pristine\n")
    project.write("data/sub/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/**\n")
    project.write(TEST_FILE, SWAPS[swap])
    project.suite(f"{FAST} TESTS tests ENVIRONMENT FAULTS_OUTSIDE={outside}")
    project.seal()
    project.configured()
    result = project.evidence()
    after = (outside.read_bytes(), outside.stat().st_mtime_ns, sorted(os.listdir(outside.parent)))
    assert after == outside_before, f"the restore wrote through a link out of ROOT:\n{result.describe()}"
    project.check_tree()
    expect_ok(project, result, "a test that owns the group may swap its files")
    project.check_canary()


# ============================================================== 3. undeclared writes


WRITES = {
    "deletes-a-fixture": 'os.remove("data/a.txt")',
    "creates-a-file-in-the-group": 'Path("data/new.txt").write_text("new\\n")',
    "chmods-a-fixture-read-only": 'os.chmod("data/a.txt", 0o444)',
    # No change notification until the mapping is closed, at exit: the restore catches it
    # and the order runs again with stat scans, which see it in this test.
    "writes-through-a-mapping-kept-open": 'KEPT.append(mmap.mmap(os.open("data/a.txt", os.O_RDWR), 0)); KEPT[-1][0:1] = b"A"',
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_undeclared_write_is_a_polluter(project, write):
    """The test that changes a group it did not declare is a blocking polluter; the group
    is restored, so its neighbour is unaffected and the tree is as committed."""
    project.write("data/a.txt", "alpha\n")
    project.write("data/b.txt", "beta\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, f"""
        import mmap
        import os
        from pathlib import Path

        KEPT = []

        def test_culprit():
            {WRITES[write]}

        def test_neighbour():
            assert Path("data/b.txt").read_text() == "beta\\n"
    """)
    project.suite(f"{FAST} TESTS tests")
    mapped = write == "writes-through-a-mapping-kept-open"
    with project.checked():
        project.configured()
        # The mapping's run alone: a run beside it would be notified when the mapping's
        # process exits, and the rerun step would take over (as it should).
        result = project.ctest("-L", "evidence", jobs=1) if mapped else project.evidence()
        expect_never_green(project, result, "a polluter")
        culprit = f"{TEST_FILE}::test_culprit"
        expect_block_line(result, culprit, "polluter")
        ledger = project.ledger()
        assert ledger.verdicts() == {culprit: ("polluter", "block"),
                                     f"{TEST_FILE}::test_neighbour": ("stable", "pass")}, str(ledger)
        assert ledger.tests[culprit].get("dirty") == ["data"], str(ledger)
        if mapped:
            seed = step_output(project.build, f"{SUITE}.seed.0") or ""
            assert "the change notifications missed a change to 'data'; the order ran again with stat scans" in seed, seed


# ============================================================== 4. hostile node ids

NASTY_IDS = ["]==]", "[==[", "a;b", "it's", 'say "hi"', "$HOME", "${CANARY}", "back\\slash", "#hash", "caf\u00e9",
             "\u6f22\u5b57"]
RAW_ONLY_IDS = ["two\nlines", "tab\there"]  # only with pytest's id escaping turned off


@pytest.mark.parametrize("escaping", ["pytest-escapes-ids", "raw-ids"])
def test_hostile_node_ids(project, escaping):
    """Node ids with CMake bracket quotes, ';', quotes, '$', unicode (and, raw, newlines):
    every id has exactly one ledger row and one CTest entry, and the one failing test blocks
    under its own name."""
    raw = escaping == "raw-ids"
    ids = NASTY_IDS + (RAW_ONLY_IDS if raw else [])
    if raw:
        project.write("pytest.ini", "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n")
    project.write(TEST_FILE, f"""
        import pytest

        IDS = {ids!r}

        @pytest.mark.parametrize("value", IDS, ids=IDS)
        def test_param(value):
            assert value

        @pytest.mark.parametrize("value", ["]==];$x"], ids=["]==];$x"])
        def test_fails(value):
            assert value == "expected"

        def test_caf\u00e9_unicode_name():
            pass
    """)
    project.suite("SEEDS 1 PERTURB OFF TESTS tests")
    expected = set(collected_ids(project))
    assert len(expected) == len(ids) + 2, expected
    failing = next(i for i in expected if i.startswith(f"{TEST_FILE}::test_fails"))
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a failing test")
        assert gate_summary(project.build) == "BLOCKED", f"the gate must run and block:\n{result.describe()}"
        ledger = project.ledger()
        rows = [row["test"] for row in ledger.test_rows]
        assert sorted(rows) == sorted(expected), f"each id exactly once:\n{sorted(rows)}\n{sorted(expected)}"
        assert {t for t, (_, gate) in ledger.verdicts().items() if gate == "block"} == {failing}, str(ledger)
        entries = [n for n in ctest_names(project) if n.startswith(f"{SUITE}/")]
        assert len(entries) == len(expected), f"one CTest entry per test: {entries}"


def collected_ids(project):
    """The node ids pytest itself collects, from a copy of the project (ROOT stays untouched)."""
    probe = project.tmp / "probe"
    subprocess.run(["cp", "-a", str(project.root), str(probe)], check=True)
    out = project.tmp / "ids.json"
    (probe / "conftest.py").write_text(
        "import json\n"
        "def pytest_collection_finish(session):\n"
        f"    json.dump([i.nodeid for i in session.items], open({str(out)!r}, 'w'))\n")
    env = project.env(PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"],
                   cwd=probe, env=env, stdout=subprocess.DEVNULL, check=True)
    return json.loads(out.read_text())


def ctest_names(project):
    result = project.ctest("-N", jobs=1)
    return re.findall(r"^\s*Test\s+#\d+: (.+)$", result.stdout, re.M)


# ============================================================== 5. pytest exit statuses


# status: (files, extra suite arguments, regex of the message that must say what went wrong)
EXIT_STATUSES = [
    # 2: a collection error next to good tests must block, never give a shorter green
    pytest.param({"tests/test_good.py": TWO_PASSING, "tests/test_broken.py": "import no_such_module_xyz\n"},
                 "", r"BLOCK collection: .*tests/test_broken\.py", id="2-collection-error"),
    # 3: pytest's internal error, from a conftest hook raising while collecting ...
    pytest.param({TEST_FILE: TWO_PASSING, "conftest.py": """
        def pytest_collection_modifyitems(items):
            raise RuntimeError("conftest hook exploded")
    """}, "", r"INTERNALERROR|internal error|exit (status )?3", id="3-internal-error-collecting"),
    # ... and while running (collection is fine)
    pytest.param({TEST_FILE: TWO_PASSING, "conftest.py": """
        def pytest_runtest_logreport(report):
            if report.when == "call" and report.nodeid.endswith("test_two"):
                raise RuntimeError("conftest hook exploded")
    """}, "", r"INTERNALERROR|internal error|exit (status )?3", id="3-internal-error-running"),
    # 4: a usage error from a bad PYTEST_ARGS
    pytest.param({TEST_FILE: TWO_PASSING}, "PYTEST_ARGS --no-such-option",
                 r"unrecognized arguments: --no-such-option", id="4-usage-error"),
    # 5: nothing collected
    pytest.param({TEST_FILE: "def helper():\n    pass\n"}, "", r"collected no tests", id="5-no-tests"),
]


@pytest.mark.parametrize("files, arguments, message", EXIT_STATUSES)
def test_pytest_exit_status_is_never_green(project, files, arguments, message):
    for rel, text in files.items():
        project.write(rel, text)
    project.suite(f"SEEDS 1 PERTURB OFF TESTS tests {arguments}")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a pytest that did not run the suite")
        expect_message(result, message, "the failure must say what went wrong")


# ============================================================== 6. processes


GRANDCHILD = """
    import os
    import subprocess
    import sys

    def test_leaves_a_grandchild():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{tag}"],
                                 start_new_session={new_session})
        with open(os.path.join(os.environ["FAULTS_PIDS"], str(child.pid)), "w") as f:
            f.write("{tag}")

    def test_after():
        pass
"""


@pytest.mark.parametrize("session", [
    "same-process-group",
    "new-session",
])
def test_grandchild_outliving_its_test_is_killed(project, session):
    tag = f"faults-grandchild-{os.getpid()}-{session}-{time.monotonic_ns()}"
    pids = project.tmp / "pids"
    pids.mkdir()
    project.write(TEST_FILE, GRANDCHILD.format(tag=tag, new_session=session == "new-session"))
    project.suite(f"{FAST} TESTS tests ENVIRONMENT FAULTS_PIDS={pids}")
    try:
        with project.checked():
            project.configured()
            result = project.evidence()
            expect_ok(project, result)
            started = sorted(int(p.name) for p in pids.iterdir())
            runs = sorted(run for run, tests in planned_by_run(project.evidence_dir() / "runs").items()
                          if f"{TEST_FILE}::test_leaves_a_grandchild" in tests)
            assert len(runs) >= 2 and len(started) == len(runs), f"one grandchild per run ({runs}): {started}"
            left = wait_until_gone(tag, seconds=5)
            assert not left, f"grandchildren outlived the run: {left}"
    finally:
        for pid, _ in wait_until_gone(tag, seconds=0):
            os.kill(pid, signal.SIGKILL)


def test_timeout_interrupts_the_test_and_the_order_goes_on(project):
    """TIMEOUT 8 and a test sleeping 60 s: that test is interrupted (blocking), every other
    test of the order still has a result in every run, and the whole run stays bounded.
    (8 s, not less: the receipt's collection shares the bound, and a loaded machine needs it.)"""
    project.write(TEST_FILE, """
        import time

        def test_a():
            pass

        def test_hangs():
            time.sleep(60)

        def test_c():
            pass

        def test_d():
            pass
    """)
    project.suite(f"{FAST} TESTS tests TIMEOUT 8")
    with project.checked():
        project.configured()
        start = time.monotonic()
        result = project.evidence()
        elapsed = time.monotonic() - start
        expect_never_green(project, result, "a hanging test")
        hang = f"{TEST_FILE}::test_hangs"
        expect_block_line(result, hang, "interrupted")
        ledger = project.ledger()
        assert ledger.verdicts() == {hang: ("interrupted", "block"), f"{TEST_FILE}::test_a": ("stable", "pass"),
                                     f"{TEST_FILE}::test_c": ("stable", "pass"),
                                     f"{TEST_FILE}::test_d": ("stable", "pass")}, str(ledger)
        for test in ("test_a", "test_c", "test_d"):
            outcomes = ledger.tests[f"{TEST_FILE}::{test}"]["outcomes"]
            assert {"seed.0", "seed.1"} <= set(outcomes) and set(outcomes.values()) == {"passed"}, str(ledger)
        assert elapsed < 150, f"an 8 s TIMEOUT must bound the run; it took {elapsed:.0f} s"


# ============================================================== 7. kill -9 mid-run


SLOW_WRITERS = """
    import time
    from pathlib import Path

    import pytest

    @pytest.mark.writes("state")
    @pytest.mark.parametrize("n", range({count}))
    def test_writes_slowly(n):
        Path("data/state.txt").write_text(f"written by test {{n}}\\n")
        Path(f"data/scratch-{{n}}.txt").write_text("scratch\\n")
        time.sleep(0.3)
        Path(f"data/scratch-{{n}}.txt").unlink()
"""


def a_test_started(project, since):
    """A run record file written after `since` (time.time()) holds a `start` record."""
    for path in record_files(project.evidence_dir() / "runs"):
        try:
            if path.stat().st_mtime > since and re.search(rb'"event":\s*"start"', path.read_bytes()):
                return True
        except FileNotFoundError:  # the receipt step clears runs/ of an earlier invocation
            pass
    return False


def test_kill_9_mid_run_then_rerun(project):
    """ctest's whole process group is killed with SIGKILL at random points while tests
    rewrite a declared group (the last kill surely while a test runs); the next
    `ctest -L evidence` completes the pending restore first, and its ledger is right. No
    record is ever corrupt, no process survives the kill, no result of the last run is lost."""
    count = 8
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "state: data/*\n")
    project.write(TEST_FILE, SLOW_WRITERS.format(count=count))
    project.suite("SEEDS 2 PERTURB OFF PER_TEST OFF TESTS tests")
    pending = project.evidence_dir() / "fixtures" / "pending"  # one marker per run in progress
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = []
    with project.checked():
        project.configured()
        torn_tails = 0
        for kill in range(5):
            process = subprocess.Popen(["ctest", "--test-dir", str(project.build), "-L", "evidence"],
                                       env=project.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)
            start, since = time.monotonic(), time.time()
            if kill == 4:  # at a random point while the first process runs its 8 x 0.3 s of tests
                while not a_test_started(project, since) and time.monotonic() - start < 60:
                    time.sleep(0.05)
                time.sleep(rng.uniform(0.0, 1.5))
            else:
                time.sleep(rng.uniform(0.5, 6.0))
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            where = f"kill {kill} (seed {seed}, after {time.monotonic() - start:.1f} s)"
            kills.append(where)
            left = wait_until_gone(str(project.root), seconds=5)
            assert not left, f"{where}: processes survived: {left}"
            corrupt, torn = record_damage(project.evidence_dir() / "runs")
            assert not corrupt, f"{where}: corrupt records: {corrupt}"
            torn_tails += len(torn)
        assert pending.is_dir() and any(pending.iterdir()), f"{kills[-1]} came while a test ran: a restore must be pending"
        result = project.evidence()
        expect_ok(project, result, f"the run after {kills} ({torn_tails} torn tails)")
        fixtures_step = step_output(project.build, f"{SUITE}.fixtures") or ""
        assert "restored fixture groups left dirty by an interrupted run" in fixtures_step, \
            f"the pending restore must be completed first and said so:\n{fixtures_step}"
        # The last kill came while a test had rewritten the group: what it left is kept, not lost.
        kept = re.search(r"what it left is kept in (\S+)\)", fixtures_step)
        assert kept, f"the fixtures step must say where the killed run's files are kept:\n{fixtures_step}"
        assert Path(kept.group(1)).is_relative_to(project.evidence_dir()), kept.group(1)
        assert (Path(kept.group(1)) / "data" / "state.txt").read_text().startswith("written by test"), kept.group(1)
        ledger = project.ledger()
        assert set(ledger.verdicts().values()) == {("stable", "pass")} and len(ledger.tests) == count, str(ledger)
        corrupt, torn = record_damage(project.evidence_dir() / "runs")
        assert not corrupt and not torn, f"records after the clean run: corrupt {corrupt}, torn {torn}"
        planned = planned_by_run(project.evidence_dir() / "runs")  # seeds: every test; the alone pass: one each
        assert set().union(*planned.values()) == set(ledger.tests), planned
        lost = {run: sorted(planned[run] - ids) for run, ids in results_by_run(project.evidence_dir() / "runs").items()
                if planned[run] - ids}
        assert not lost, f"lost records: {lost}"


# ============================================================== 8. read-only source tree


def read_only_wrapper(root):
    """Runs a command with ROOT bind-mounted read-only (a private mount namespace), when the
    system allows it; chmod a-w alone does not stop root."""
    probe = subprocess.run(["unshare", "-m", "true"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        return ()
    script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
    return ("unshare", "-m", "sh", "-c", script, str(root))


def test_read_only_source_tree(project):
    """With ROOT read-only (chmod -R a-w, and a read-only mount where possible) and tests
    that only read their fixtures, the evidence run works: everything goes to the build tree."""
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, READER)
    project.suite(f"{FAST} TESTS tests")
    modes = {p: p.lstat().st_mode for p in [project.root, *project.root.rglob("*")]}
    for path in modes:
        path.chmod(stat.S_IMODE(modes[path]) & ~0o222)
    wrapper = read_only_wrapper(project.root)
    try:
        with project.checked():
            result = project.configure(wrapper=wrapper)
            assert result.returncode == 0, result.describe()
            result = project.ctest("-L", "evidence", wrapper=wrapper)
            expect_ok(project, result, "an evidence run on a read-only source tree")
    finally:
        for path, mode in sorted(modes.items(), reverse=True):
            path.chmod(stat.S_IMODE(mode))


# ============================================================== 9. parallel suites


SHARED_READER = """
    from pathlib import Path

    def test_reads_shared_{n}():
        assert Path("shared/settings.txt").read_text() == "pristine\\n"
"""


def test_parallel_suites_sharing_fixtures_agree_with_serial(project):
    """Two suites of one ROOT whose manifests name the same file, one with a polluter:
    ctest -j4 gives the same verdicts as -j1, so the suites never race on the shared file."""
    project.write("shared/settings.txt", "pristine\n")
    project.write("fixtures.manifest", "shared: shared/*\n")
    project.write("tests_a/test_a.py", """
        from pathlib import Path

        def test_pollutes():
            Path("shared/settings.txt").write_text("polluted\\n")

        def test_reads_shared():
            assert Path("shared/settings.txt").read_text() == "pristine\\n"
    """)
    for n in range(4):
        project.write(f"tests_b/test_b{n}.py", SHARED_READER.format(n=n))
    project.write("pytest.ini", "[pytest]\n")
    project.write("CMakeLists.txt", """
        cmake_minimum_required(VERSION 3.21)
        project(fault_parallel NONE)
        enable_testing()
        find_package(EvidenceGate CONFIG REQUIRED)
        evidence_gate_add_suite(alpha TESTS tests_a SEEDS 2 PERTURB OFF PER_TEST OFF)
        evidence_gate_add_suite(beta TESTS tests_b SEEDS 2 PERTURB OFF PER_TEST OFF)
    """)
    verdicts = {}
    with project.checked():
        for jobs in (1, 4):
            binary = project.tmp / f"build-j{jobs}"
            project.build = binary
            project.configured()
            result = project.ctest("-L", "evidence", jobs=jobs)
            summaries = {suite: gate_summary(binary, suite) for suite in ("alpha", "beta")}
            assert result.returncode != 0 and summaries == {"alpha": "BLOCKED", "beta": "PASSED"}, \
                f"-j{jobs}: alpha has a polluter, beta none: {summaries}\n{result.describe()}"
            verdicts[jobs] = {suite: Ledger(binary, suite).verdicts() for suite in ("alpha", "beta")}
    assert verdicts[1] == verdicts[4], f"-j1 and -j4 disagree:\n{json.dumps(verdicts, indent=1, default=str)}"
    assert verdicts[1]["alpha"]["tests_a/test_a.py::test_pollutes"] == ("polluter", "block"), verdicts[1]
    assert set(verdicts[1]["beta"].values()) == {("stable", "pass")}, verdicts[1]


# ============================================================== 10. secrets


def test_canary_secret_reaches_the_tests_but_no_file(project):
    """Every step at its defaults (perturbed run, per-test entries, reruns, reports) over a
    polluter, a failing test and a passing one that checks the secret reached it: the
    canary's name may be recorded, its value nowhere (checked by Project.checked())."""
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, """
        import os
        from pathlib import Path

        def test_secret_reaches_the_tests():
            assert os.environ["DEPLOY_API_TOKEN"].startswith("canary-")

        def test_pollutes():
            Path("data/config.txt").write_text("polluted\\n")

        def test_fails():  # must not print the secret itself: that would be the test leaking it
            assert 1 == 2
    """)
    project.suite("SEEDS 1 TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a polluter and a failing test")
        ledger = project.ledger()
        assert ledger.tests[f"{TEST_FILE}::test_secret_reaches_the_tests"]["verdict"] == "stable", str(ledger)
        assert "perturbed" in ledger.tests[f"{TEST_FILE}::test_secret_reaches_the_tests"]["outcomes"], str(ledger)
        manifest = json.loads((project.evidence_dir() / "manifest.json").read_text())
        assert "DEPLOY_API_TOKEN" in manifest["env_names"], "the manifest records the names of variables"


# ============================================================== 11. corrupt evidence never passes


def _delete_records(runs):
    (runs / "seed.1.jsonl").unlink()


def _delete_run(runs):
    (runs / "seed.1.jsonl").unlink()
    (runs / "seed.1.plan.json").unlink()


def _tear_last_record(runs):
    path = runs / "seed.1.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))


def _garbage_line(runs):
    path = runs / "seed.1.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines.insert(2, b"{not json")
    path.write_bytes(b"\n".join(lines))


def _truncate_half(runs):
    path = runs / "seed.1.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[:data.rfind(b"\n", 0, len(data) // 2) + 1])


def _drop_a_result(runs):
    path = runs / "seed.1.jsonl"
    lines = path.read_bytes().split(b"\n")
    first_result = next(i for i, line in enumerate(lines) if re.search(rb'"event":\s*"result"', line))
    del lines[first_result]
    path.write_bytes(b"\n".join(lines))


CORRUPTIONS = {
    "records-deleted": _delete_records,
    "run-deleted": _delete_run,
    "last-record-torn": _tear_last_record,
    "garbage-line": _garbage_line,
    "records-truncated": _truncate_half,
    "a-result-dropped": _drop_a_result,
}


@pytest.fixture(scope="module")
def passing_run(tmp_path_factory, build_dir, canary):
    """A suite whose evidence run passed, and a copy of its runs/ to corrupt."""
    from harness import Project
    project = Project(tmp_path_factory.mktemp("corrupt"), build_dir, canary)
    project.write(TEST_FILE, TWO_PASSING)
    project.suite(f"{FAST} TESTS tests")
    project.configured()
    expect_ok(project, project.evidence())
    pristine = project.tmp / "runs.pristine"
    subprocess.run(["cp", "-a", str(project.evidence_dir() / "runs"), str(pristine)], check=True)
    return project, pristine


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_corrupt_evidence_blocks(passing_run, corruption):
    """A missing or corrupt run record blocks the gate, never shrinks the evidence quietly."""
    project, pristine = passing_run
    runs = project.evidence_dir() / "runs"
    subprocess.run(["rm", "-rf", str(runs)], check=True)
    subprocess.run(["cp", "-a", str(pristine), str(runs)], check=True)
    CORRUPTIONS[corruption](runs)
    with project.checked():
        # Only the ledger and the gate: -FA keeps ctest from rerunning the setup steps.
        result = project.ctest("-R", rf"^{SUITE}\.(ledger|gate)$", "-FA", ".*")
        expect_never_green(project, result, f"evidence with {corruption}")
        expect_message(result, r"BLOCK (run:seed\.1|tests/test_suite\.py::test_\w+): ", "a blocking row")
        assert "seed.1" in normalized(result.output), result.describe()
