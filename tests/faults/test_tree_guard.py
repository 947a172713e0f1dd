"""The fault matrix, part two: never a false green, never a changed tree.

What a pytest process can change in the source tree outside any test's lease, and what other
users and other build trees can make evgate write into it. Each scenario goes through real
CMake + CTest and ``Project.checked()`` (the source tree byte-identical afterwards: content,
mode and link target of every entry, directory modes included; the canary secret nowhere).

Classes (issue 14): a collection before the snapshot (discovery at ctest start, the receipt);
directory modes; the source tree outside the groups (tracked files, new files); state another
user could plant (the lock, the registry, the state directory itself); the build tree inside
ROOT under a broad glob; file names that are not UTF-8; a missing TMPDIR; scratch files written
by runs side by side (inside ROOT, hidden or not, and at a hard-coded path outside it); a failure
seen once beside another run, never taken back by a redo alone; hidden
directories outside git; owners; the pristine copy itself rewritten by a test; ROOT reached through
a symbolic link.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import (FAST, SUITE, Project, TreeChanged, cmake_configure, digest_diff, expect_message, gate_summary,
                     step_output, tree_digest)

TEST_FILE = "tests/test_suite.py"
NOBODY = 65534


def expect_ok(project, result, what="the evidence run", binary=None):
    summary = gate_summary(binary or project.build)
    assert result.returncode == 0 and summary == "PASSED", f"{what} must pass (gate: {summary}):\n{result.describe()}"


def expect_never_green(project, result, what, binary=None):
    assert result.returncode != 0, f"{what}: ctest must fail:\n{result.describe()}"
    summary = gate_summary(binary or project.build)
    assert summary != "PASSED", f"{what}: the gate must not pass:\n{result.describe()}"


def ledger_of(project, result):
    path = project.evidence_dir() / "ledger.jsonl"
    assert path.is_file(), f"the gate wrote no ledger at {path}:\n{result.describe()}"
    return project.ledger()


def suite_rows(project):
    return {row["test"]: row for row in project.ledger().suite_rows}


def git_repository(root):
    """ROOT as a git work tree, everything committed: "tracked" means what git says."""
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.com")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the project"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, stdout=subprocess.DEVNULL)


# ============================================================== 1. collections before the snapshot

IMPORT_WRITER = """
    from pathlib import Path

    Path("data/state.txt").write_text("written at import\\n")  # at collection, outside any test

    def test_reads_state():
        assert Path("data/state.txt").exists()
"""


@pytest.mark.parametrize("per_test", ["ON", "OFF"])
def test_a_collection_that_writes_a_fixture_at_import_blocks_and_the_file_never_becomes_pristine(project, per_test):
    """With PER_TEST ON, ctest's discovery is the first pytest process of the invocation (from
    TEST_INCLUDE_FILES, before the fixtures step): it must find the tree snapshotted before it
    collects, and what it changed put back and blocking; with PER_TEST OFF the receipt's
    collection is the first. The module's import-time write never becomes "pristine"."""
    project.write("data/state.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, IMPORT_WRITER)
    project.suite(f"SEEDS 1 PERTURB OFF PER_TEST {per_test} TESTS tests")
    with project.checked():
        project.configured()
        for attempt in (1, 2):  # the second invocation discovers nothing new: its record still stands
            result = project.evidence()
            expect_never_green(project, result, f"an import-time write (invocation {attempt})")
            rows = suite_rows(project)
            phases = {"ON": ("tree:discovery", "collection at ctest start (discovery)"),
                      "OFF": ("tree:receipt", "collection (receipt)")}
            check, phase = phases[per_test]
            assert check in rows and rows[check]["gate"] == "block", project.ledger()
            assert rows[check]["reason"].startswith(f"{phase} changed fixture group 'data' (restored data/state.txt)"), \
                rows[check]
            assert rows[check]["dirty"] == ["data"], rows[check]
            assert "tree:receipt" in rows, project.ledger()  # the receipt's collection writes as well
            assert (project.root / "data/state.txt").read_text() == "pristine\n"
            pristine = project.evidence_dir() / "fixtures" / "pristine" / "data" / "state.txt"
            assert pristine.read_text() == "pristine\n", "the import-time write was taken for pristine"


@pytest.mark.parametrize("isolation", ["fork", "process"])
def test_a_conftest_that_edits_a_tracked_file_at_import_blocks_naming_it(project, isolation):
    """Beyond the fixture groups: a conftest rewrites the project's README when pytest loads it."""
    project.write("README.txt", "the project\n")
    project.write("tests/conftest.py", """
        from pathlib import Path

        Path("README.txt").write_text("rewritten by a conftest\\n")
    """)
    project.write(TEST_FILE, "def test_one():\n    pass\n")
    project.suite(f"SEEDS 1 PERTURB OFF ISOLATION {isolation} TESTS tests")
    git_repository(project.root)
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a conftest that edits README.txt")
        rows = suite_rows(project)
        for check, phase in (("tree:discovery", "collection at ctest start (discovery)"),
                             ("tree:receipt", "collection (receipt)")):
            assert rows[check]["reason"].startswith(
                f"{phase} changed README.txt in the source tree, outside every fixture group, outside any test"), rows
            assert rows[check]["dirty"] == ["(source tree)"], rows[check]
        # Every run's processes load the conftest too: each is named, the tree put back each time.
        # Forks of the receipt's collection load nothing: its import was the receipt's.
        seeds = [name for name in rows if name.startswith("tree:seed.")]
        assert bool(seeds) == (isolation == "process"), project.ledger()


# ============================================================== 2. directory modes

MODE_CHANGER = """
    import os
    from pathlib import Path

    def test_chmods_the_group_directory():
        os.chmod("data", {mode:#o})

    def test_reads_data():
        assert Path("data/config.txt").read_text() == "pristine\\n"
"""


@pytest.mark.parametrize("mode", [0o000, 0o555, 0o700], ids=["000", "555", "700"])
def test_a_test_that_chmods_a_group_directory_is_its_polluter_and_the_mode_comes_back(project, mode):
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, MODE_CHANGER.format(mode=mode))
    project.suite(f"{FAST} TESTS tests")
    with project.checked():  # directory modes included
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, f"chmod {mode:#o} of a group directory")
        ledger = project.ledger()
        culprit = ledger.tests[f"{TEST_FILE}::test_chmods_the_group_directory"]
        assert (culprit["verdict"], culprit["dirty"]) == ("polluter", ["data"]), str(ledger)
        assert ledger.tests[f"{TEST_FILE}::test_reads_data"]["verdict"] == "stable", str(ledger)


@contextlib.contextmanager
def nobody_project(build_dir, canary, monkeypatch):
    """A Project whose ROOT and build tree belong to uid 65534, run as that user (setpriv): the
    permission checks root skips apply."""
    top = Path(tempfile.mkdtemp(prefix="evgate-nobody-"))
    top.chmod(0o755)
    for name, value in (("HOME", top), ("TMPDIR", top / "tmp")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    (top / "tmp").mkdir()
    try:
        yield Project(top, build_dir, canary)
    finally:
        shutil.rmtree(top)


AS_NOBODY = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


def give_to_nobody(path):
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(path)], check=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the suite as another user")
def test_as_a_user_who_is_not_root_an_unreadable_directory_is_put_back_before_it_is_read(build_dir, canary, monkeypatch):
    """Root reads a directory at mode 000 anyway; any other user cannot, until its mode is back."""
    with nobody_project(build_dir, canary, monkeypatch) as project:
        project.write("data/config.txt", "pristine\n")
        project.write("data/sub/deep.txt", "pristine\n")
        project.write("docs/guide.md", "guide\n")
        project.write("fixtures.manifest", "data: data/**\n")
        project.write(TEST_FILE, """
            import os
            from pathlib import Path

            def test_locks_the_directories():
                os.chmod("data/sub", 0)
                os.chmod("data", 0)
                os.chmod("docs", 0)

            def test_reads_data():
                assert Path("data/sub/deep.txt").read_text() == "pristine\\n"
        """)
        project.suite(f"{FAST} TESTS tests")
        give_to_nobody(project.tmp)
        with project.checked():
            assert project.configure(wrapper=AS_NOBODY).returncode == 0, project.results[-1].describe()
            result = project.ctest("-L", "evidence", wrapper=AS_NOBODY)
            expect_never_green(project, result, "chmod 0 of group and tree directories, as nobody")
            ledger = ledger_of(project, result)
            culprit = ledger.tests[f"{TEST_FILE}::test_locks_the_directories"]
            assert culprit["verdict"] == "polluter" and "data" in culprit["dirty"], str(ledger)
            # After it in one process the reader cannot read (as root it could): its victim, by order.
            victim = ledger.tests[f"{TEST_FILE}::test_reads_data"]
            assert (victim["verdict"], victim.get("partner")) == (
                "order-dependent", f"{TEST_FILE}::test_locks_the_directories"), str(ledger)
            rows = suite_rows(project)
            assert any("mode of docs/" in row["reason"] for name, row in rows.items() if name.startswith("tree:seed.")), \
                str(ledger)


# ============================================================== 3. the source tree outside the groups

TREE_WRITERS = {
    "edits-a-tracked-file": ('Path("README.txt").write_text("edited by a test\\n")', "README.txt"),
    "deletes-a-tracked-file": ('os.remove("docs/guide.md")', "docs/guide.md"),
    "chmods-a-tracked-file": ('os.chmod("src/tool.py", 0o600)', "src/tool.py"),
    "replaces-a-tracked-file-with-a-link": ('os.remove("README.txt"); os.symlink("/etc/hostname", "README.txt")',
                                            "README.txt"),
}


@pytest.mark.parametrize("git", [True, False], ids=["git", "no-git"])
@pytest.mark.parametrize("write", sorted(TREE_WRITERS))
def test_a_test_that_changes_the_source_tree_outside_every_group_is_its_polluter_and_it_is_put_back(project, write, git):
    """The README promises the guarded files are as they were after ctest: a tracked file a test
    edits, deletes, chmods or swaps for a link is put back, the test blocks as a polluter naming
    it, and a suite row names the run (what was replaced is kept in the build tree)."""
    code, changed = TREE_WRITERS[write]
    project.write("README.txt", "the project\n")
    project.write("docs/guide.md", "guide\n")
    project.write("src/tool.py", "print('tool')\n", mode=0o644)
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, f"""
        import os
        from pathlib import Path

        def test_changes_the_tree():
            {code}

        def test_reads_config():
            assert Path("data/config.txt").read_text() == "pristine\\n"
    """)
    project.suite(f"{FAST} TESTS tests")
    if git:
        git_repository(project.root)
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, f"a test that {write}")
        ledger = ledger_of(project, result)
        culprit = ledger.tests[f"{TEST_FILE}::test_changes_the_tree"]
        assert culprit["verdict"] == "polluter" and culprit["dirty"] == ["(source tree)"], str(ledger)
        assert culprit["reason"].startswith(f"changed {changed} in the source tree, outside every fixture group"), \
            culprit["reason"]
        assert ledger.tests[f"{TEST_FILE}::test_reads_config"]["verdict"] == "stable", str(ledger)
        rows = suite_rows(project)
        assert rows["tree:seed.0"]["gate"] == "block", str(ledger)
        assert rows["tree:seed.0"]["reason"].startswith(f"seed.0 changed {changed} in the source tree"), rows
        assert f"BLOCK tree:seed.0: polluter, seed.0 changed {changed}" in result.stdout, result.describe()


def test_new_files_a_run_leaves_are_named_never_removed_and_scratch_files_are_fine(project):
    """A file a test leaves under ROOT may be a user's own (an editor saved it meanwhile): it is
    never removed, but the gate blocks naming it and where it is. A file a test creates and
    deletes again, or one git ignores, is nobody's business."""
    project.write("README.txt", "the project\n")
    project.write(".gitignore", "*.log\n")
    project.write(TEST_FILE, """
        import os
        from pathlib import Path

        def test_leaves_a_file():
            Path("reports").mkdir(exist_ok=True)
            Path("reports/out.txt").write_text("left behind\\n")

        def test_scratch():
            Path("scratch.db").write_bytes(b"SQLite format 3\\0")
            os.remove("scratch.db")

        def test_writes_an_ignored_log():
            Path("run.log").write_text("ignored by git\\n")
    """)
    project.suite(f"{FAST} TESTS tests")
    git_repository(project.root)
    project.seal()
    project.configured()
    result = project.evidence()
    expect_never_green(project, result, "a file left under ROOT")
    assert (project.root / "reports/out.txt").read_text() == "left behind\n", "a file a run left was removed"
    ledger = ledger_of(project, result)
    assert set(ledger.verdicts().values()) == {("stable", "pass")}, str(ledger)  # creating a file pollutes nothing guarded
    rows = suite_rows(project)
    left = rows["tree:left"]
    assert left["gate"] == "block" and left["dirty"] == ["(source tree)"], rows
    assert "reports/out.txt (after seed." in left["reason"] and str(project.root) in left["reason"], left
    assert "scratch.db" not in left["reason"] and "run.log" not in left["reason"], left
    assert not any(name.startswith("tree:seed.") for name in rows), rows  # nothing guarded was changed
    # The user removes what the tests left (and the ignored log): the tree is as it was.
    shutil.rmtree(project.root / "reports")
    os.remove(project.root / "run.log")
    project.check_tree()
    project.check_canary()


# ============================================================== 4. state another user could plant

READS_CONFIG = """
    from pathlib import Path

    def test_reads_config():
        assert Path("data/config.txt").read_text() == "pristine\\n"
"""


def root_key(root):
    """How evgate names the state of a ROOT: a digest of its canonical path."""
    import hashlib
    return hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]


def private_temp(project, monkeypatch):
    """A temp directory of this scenario's own (what it plants there disturbs no other run)."""
    tmp = project.tmp / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.delenv("EVIDENCE_GATE_STATE_DIR", raising=False)
    return tmp


def plant_store(project, where, content):
    """A fixture directory of another user's making: a lease of data/config.txt whose pristine
    copy is their content, and a marker nobody holds (a killed run's restore, pending)."""
    import hashlib
    store = where / "planted" / "fixtures"
    (store / "pristine" / "data").mkdir(parents=True)
    (store / "pristine" / "data" / "config.txt").write_text(content)
    (store / "pending").mkdir()
    (store / "pending" / "abandoned").write_text("")
    identity = "sha256:" + hashlib.sha256(content.encode()).hexdigest()
    (store / "groups.json").write_text(json.dumps({"schema": 1, "root": str(project.root), "groups": [{
        "name": "data", "pattern": "data/*", "regex": "data/[^/]*", "base": "data", "max_depth": 0,
        "files": [{"path": "data/config.txt", "identity": identity, "mode": 0o644, "size": len(content)}]}]}))
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(where / "planted")], check=True)
    return store


@pytest.mark.skipif(os.geteuid() != 0, reason="plants files as another user")
def test_a_registry_another_user_planted_in_the_temp_directory_is_never_used(project, monkeypatch):
    """Before, the registry of build trees over a ROOT lived at a name in the shared temp
    directory: another user could list a fixture directory of theirs, and the next run
    "completed its restore" by writing their content into this user's tree."""
    tmp = private_temp(project, monkeypatch)
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, READS_CONFIG)
    project.suite(f"{FAST} TESTS tests")
    store = plant_store(project, tmp, "planted by another user\n")
    registry = tmp / f"evidence-gate-{root_key(project.root)}.stores"
    registry.write_text(f"{store}\n")
    for name in (registry.name, registry.with_suffix(".spans").name):
        (tmp / name).touch()
        os.chown(tmp / name, NOBODY, NOBODY)
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_ok(project, result, "a run beside a planted registry")
        assert "planted" not in step_output(project.build, f"{SUITE}.fixtures"), result.describe()


@pytest.mark.skipif(os.geteuid() != 0, reason="plants a directory as another user")
@pytest.mark.parametrize("plant", ["owned-by-another-user", "group-writable", "a-link"])
def test_a_state_directory_that_is_not_the_users_own_is_refused_with_a_clear_error(project, monkeypatch, plant):
    tmp = private_temp(project, monkeypatch)
    state = tmp / f"evidence-gate-{os.geteuid()}"
    if plant == "a-link":
        (tmp / "elsewhere").mkdir(mode=0o700)
        state.symlink_to(tmp / "elsewhere")
    else:
        state.mkdir(mode=0o700)
        if plant == "owned-by-another-user":
            os.chown(state, NOBODY, NOBODY)
        else:
            state.chmod(0o770)
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, READS_CONFIG)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, f"a state directory {plant}")
        why = {"owned-by-another-user": f"is owned by uid {NOBODY}, not by you \\(uid 0\\)",
               "group-writable": r"has mode 0770 \(group or other permission bits\)",
               "a-link": "is a symbolic link"}[plant]
        expect_message(result, rf"evgate: error: the state directory '{state}' {why}: refusing to trust it \(another "
                               r"user could have planted it\); (remove it|chmod 700 it)", "the refusal names the directory")


@pytest.mark.skipif(os.geteuid() != 0, reason="runs the suite as another user")
def test_a_lock_another_user_created_does_not_deny_the_suite(build_dir, canary, monkeypatch):
    """Before, the tree lock was a file in the shared temp directory: whoever created it first
    (mode 0644) denied the suite to every other user. State is per user now."""
    with nobody_project(build_dir, canary, monkeypatch) as project:
        project.write("data/config.txt", "pristine\n")
        project.write("fixtures.manifest", "data: data/*\n")
        project.write(TEST_FILE, READS_CONFIG)
        project.suite(f"{FAST} TESTS tests")
        give_to_nobody(project.tmp)
        tmp = project.tmp / "tmp"
        for suffix in (".lock", ".spans", ".stores"):  # root's, as another user's run would leave them
            path = tmp / f"evidence-gate-{root_key(project.root)}{suffix}"
            path.write_text("")
            path.chmod(0o644)
        with project.checked():
            assert project.configure(wrapper=AS_NOBODY).returncode == 0, project.results[-1].describe()
            result = project.ctest("-L", "evidence", wrapper=AS_NOBODY)
            expect_ok(project, result, "a run as nobody beside root's lock")


def test_a_temp_directory_that_does_not_exist_is_a_note_never_an_internal_error(project, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(project.tmp / "no-such-directory"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, READS_CONFIG)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_ok(project, result, "a run with TMPDIR missing")
        fixtures = step_output(project.build, f"{SUITE}.fixtures") or ""
        assert f"evgate: note: TMPDIR '{project.tmp}/no-such-directory' is not a directory; using /tmp" in fixtures, \
            fixtures


# ============================================================== 5. the build tree inside ROOT


@contextlib.contextmanager
def checked_outside(project, *inside):
    """Project.checked() for a ROOT that holds build trees: everything but them byte-identical."""
    def digest():
        return {rel: what for rel, what in tree_digest(project.root).items()
                if not any(rel == top or rel.startswith(top + "/") for top in inside)}
    before = digest()
    yield project
    diff = digest_diff(before, digest())
    if diff:
        raise TreeChanged(f"the source tree {project.root} changed:\n" + "\n".join(diff))
    project.check_canary()


def test_a_glob_over_the_whole_root_never_reaches_into_a_build_tree_inside_it(project):
    """`cfg: **/*.json` with the build tree (and its evidence directory) inside ROOT: before, the
    restore removed the build tree's receipt.json and groups.json as "added" group members."""
    project.build = project.root / "build"
    project.write("cfg/settings.json", '{"mode": "pristine"}\n')
    project.write("fixtures.manifest", "cfg: **/*.json\n")
    project.write(TEST_FILE, """
        import json
        from pathlib import Path

        def test_reads_settings():
            assert json.loads(Path("cfg/settings.json").read_text()) == {"mode": "pristine"}

        def test_pollutes_settings():
            Path("cfg/settings.json").write_text('{"mode": "polluted"}\\n')
    """)
    project.suite(f"{FAST} TESTS tests")
    with checked_outside(project, "build"):
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a polluter")
        ledger = ledger_of(project, result)
        assert ledger.verdicts()[f"{TEST_FILE}::test_pollutes_settings"] == ("polluter", "block"), str(ledger)
        assert ledger.tests[f"{TEST_FILE}::test_pollutes_settings"]["dirty"] == ["cfg"], str(ledger)
        assert not [row for row in ledger.suite_rows if row["gate"] == "block"], str(ledger)
        evidence = project.evidence_dir()
        for kept in ("receipt.json", "suite.json", "fixtures/groups.json", "manifest.json"):
            assert (evidence / kept).is_file(), f"the restore removed {kept}"
        fixtures = step_output(project.build, f"{SUITE}.fixtures") or ""
        assert "group 'cfg' ('**/*.json') reaches into build (a build tree, the evidence directory or .git): " \
               "never leased, never restored" in fixtures, fixtures
        lease = json.loads((evidence / "fixtures" / "groups.json").read_text())
        assert [f["path"] for f in lease["groups"][0]["files"]] == ["cfg/settings.json"], lease


# ============================================================== 6. file names that are not UTF-8

NAME = os.fsdecode(b"data/caf\xe9.txt")


def test_a_fixture_file_named_in_bytes_that_are_not_utf8_is_leased_blamed_and_restored(project):
    """Before, groups.json carried the raw bytes: the plugin could not read it and every seed
    failed with exit 4 (a usage error)."""
    path = project.root / NAME
    path.parent.mkdir(parents=True)
    path.write_text("pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write("tests/test_a_reads.py", f"""
        import os
        from pathlib import Path

        def test_reads_it():
            assert Path(os.fsdecode({os.fsencode(NAME)!r})).read_text() == "pristine\\n"
    """)
    project.write("tests/test_b_writes.py", f"""
        import os
        from pathlib import Path

        def test_writes_it():
            Path(os.fsdecode({os.fsencode(NAME)!r})).write_text("polluted\\n")
    """)
    project.suite(f"{FAST} TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "an undeclared write")
        ledger = ledger_of(project, result)
        polluters = [test for test, (verdict, _) in ledger.verdicts().items() if verdict == "polluter"]
        assert polluters == ["tests/test_b_writes.py::test_writes_it"], str(ledger)
        assert not [row for row in ledger.suite_rows if row["gate"] == "block"], str(ledger)
        reader = ledger.tests["tests/test_a_reads.py::test_reads_it"]
        assert reader["verdict"] == "stable" or reader.get("partner") == "tests/test_b_writes.py::test_writes_it", \
            str(ledger)
        lease = (project.evidence_dir() / "fixtures" / "groups.json").read_bytes()
        lease.decode("utf-8")  # strict: valid UTF-8
        assert json.loads(lease)["groups"][0]["files"][0]["path"] == NAME  # the plugin's json gives back the bytes


# ============================================================== 7. scratch files of runs side by side

SCRATCH_SUITE = """
    import os
    import time
    from pathlib import Path

    import pytest

    TOOL = Path({tool!r})  # a tool's scratch directory: in the checkout, hidden or not, or a hard-coded path
    DATABASE = Path(__file__).with_name("scratch.db")  # a SQLite-like file beside the tests
    STATE = []

    @pytest.mark.parametrize("n", range(5))
    def test_config_round_trip(n):
        TOOL.mkdir(exist_ok=True)
        config = TOOL / "config.ini"
        mine = f"[run]\\npid = {os.getpid()}\\nn = {n}\\n"
        config.write_text(mine)
        time.sleep(0.12)
        config.write_text(mine + "rewritten = yes\\n")
        time.sleep(0.04)
        assert config.read_text() == mine + "rewritten = yes\\n"
        config.unlink()
        TOOL.rmdir()

    @pytest.mark.parametrize("n", range(5))
    def test_database(n):
        DATABASE.write_bytes(b"SQLite format 3\\0" + bytes([n]) * 64)
        time.sleep(0.12)
        assert DATABASE.read_bytes()[-1] == n
        DATABASE.unlink()

    def test_sets_state():
        STATE.append("set")

    def test_needs_state():  # order-dependent on purpose: its orders are rerun
        assert STATE
"""


@pytest.mark.parametrize("lease, where", [("notifications", "checkout"), ("scan", "checkout"),
                                          ("notifications", "hidden"), ("notifications", "outside")])
def test_scratch_files_written_by_runs_side_by_side_give_the_ledger_of_one_run_at_a_time(project, lease, where):
    """Tests that create, rewrite and delete scratch files outside any fixture group collide when
    two runs go side by side (seed steps under ctest -j2, reruns in the rerun step): before, that
    gave false `flaky`, `order-dependent` and `failing` rows. Inside ROOT (in a hidden directory
    too) the runs that touched the tree are known, and a run that overlapped one is done again
    alone, and -j2 gives exactly the ledger of -j1. At a hard-coded path outside ROOT nothing can
    be seen: a disagreement seen only in runs side by side is done again alone, and a failure the
    redo does not show again is flaky, its row saying it was seen only beside other runs."""
    tool = {"checkout": "mytool_temp", "hidden": ".mytool", "outside": str(project.tmp / "myapp-test")}[where]
    project.write(TEST_FILE, SCRATCH_SUITE.replace("{tool!r}", repr(tool)))
    arguments = "SEEDS 3 PERTURB OFF PER_TEST OFF LOCALISE 0 TESTS tests"
    if lease == "scan":
        arguments += " PYTEST_ARGS --evidence-gate-lease=scan"
    project.suite(arguments)
    ledgers, reasons = {}, {}
    with project.checked():
        for jobs, attempt in ((1, 0), (2, 0), (2, 1)):
            project.build = project.tmp / f"build-j{jobs}-{attempt}"
            project.configured()
            result = project.ctest("-L", "evidence", jobs=jobs)
            ledger = ledger_of(project, result)
            ledgers[(jobs, attempt)] = (ledger.verdicts(), sorted(row["test"] for row in ledger.blocking_suite_rows()))
            reasons[(jobs, attempt)] = {row["test"]: row["reason"] for row in ledger.test_rows}
    serial = ledgers[(1, 0)]
    assert serial[0][f"{TEST_FILE}::test_needs_state"][0] == "order-dependent", serial
    assert {v for t, v in serial[0].items() if "needs_state" not in t} == {("stable", "pass")}, serial
    for key, ledger in ledgers.items():
        if where == "outside":
            # Nothing sees the runs meet there: a collision and a nondeterministic failure look the
            # same, and a failure is never taken back. What differs from -j1 is flaky and says so.
            differs = {t for t in ledger[0] if ledger[0][t] != serial[0][t]}
            for test in differs:
                assert ledger[0][test] == ("flaky", "block"), (key, test, ledger[0][test])
                assert "went beside other runs" in reasons[key][test], (key, test, reasons[key][test])
            ledger = ({t: v for t, v in ledger[0].items() if t not in differs}, ledger[1])
            expected = ({t: v for t, v in serial[0].items() if t not in differs}, serial[1])
        else:
            expected = serial
        assert ledger == expected, f"-j{key[0]} (attempt {key[1]}) differs from -j1:\n{json.dumps(ledger, indent=1)}\n" \
                                   f"-j1:\n{json.dumps(serial, indent=1)}"


ONCE_SUITE = """
    import time
    from pathlib import Path

    import pytest

    SEEN = Path({marker!r})  # outside ROOT, where evgate sees nothing

    @pytest.mark.parametrize("n", range(6))
    def test_slow(n):
        time.sleep(0.25)

    def test_fails_the_first_time_it_ever_runs():  # nondeterminism, as seen from the gate
        first = not SEEN.exists()
        SEEN.write_text("seen")
        assert not first, "the first run of this test anywhere"
"""


def test_a_failure_seen_once_beside_another_run_is_never_taken_back_by_a_redo_that_passes(project):
    """Under -j2 the seed steps go side by side; a test fails in exactly one of them (the first
    time it ever runs) and passes in every run after, the redo alone included. The redo alone is
    a run of its own beside the first: the failure stays evidence, the test is flaky (before,
    the redo's records replaced the first run's and the test read `stable`: a false green)."""
    marker = project.tmp / "seen-once"
    project.write(TEST_FILE, ONCE_SUITE.replace("{marker!r}", repr(str(marker))))
    project.suite("SEEDS 2 PERTURB OFF PER_TEST OFF LOCALISE 0 TESTS tests")
    with project.checked():
        project.configured()
        result = project.ctest("-L", "evidence", jobs=2)
        expect_never_green(project, result, "a failure seen once, beside another run")
        ledger = ledger_of(project, result)
        test = f"{TEST_FILE}::test_fails_the_first_time_it_ever_runs"
        row = ledger.tests[test]
        assert (row["verdict"], row["gate"]) == ("flaky", "block"), str(ledger)
        rerun = step_output(project.build, f"{SUITE}.rerun") or ""
        redone = re.findall(r"(seed\.\d) ran beside other runs and holds an outcome no run alone confirms; "
                            r"running it again, alone, as (seed\.\d\.apart)", rerun)
        # The failure ran beside another seed (they start together and each takes 1.5 s), so it was redone.
        assert redone and all(apart == f"{run}.apart" for run, apart in redone), rerun
        assert "went beside other runs" in row["reason"], row["reason"]
        runs = {path.name for path in (project.evidence_dir() / "runs").iterdir()}
        for run, apart in redone:
            assert f"{run}.jsonl" in runs and f"{apart}.jsonl" in runs, runs  # both kept: the first is evidence too


# ============================================================== 8. hidden directories outside git


def test_outside_git_a_test_that_edits_a_file_in_a_hidden_directory_is_its_polluter_and_it_is_put_back(project):
    """Outside a git work tree every file is guarded, hidden directories included (.config/,
    .github/): only version control, caches and virtual environments are nobody's. Before, a
    test's edit to .config/app.toml passed and stayed."""
    project.write(".config/app.toml", 'mode = "prod"\n')
    project.write(".env", "DEBUG=0\n")
    project.write(".venv/pyvenv.cfg", "home = /usr/bin\n")
    project.write(TEST_FILE, """
        from pathlib import Path

        def test_edits_the_config():
            Path(".config/app.toml").write_text('mode = "test"\\n')

        def test_uses_its_caches():
            Path(".mypy_cache").mkdir(exist_ok=True)
            Path(".venv/pyvenv.cfg").read_text()
    """)
    project.suite(f"{FAST} TESTS tests")
    project.seal()
    project.configured()
    result = project.evidence()
    expect_never_green(project, result, "an edit in a hidden directory outside git")
    ledger = ledger_of(project, result)
    culprit = ledger.tests[f"{TEST_FILE}::test_edits_the_config"]
    assert culprit["verdict"] == "polluter" and culprit["dirty"] == ["(source tree)"], str(ledger)
    assert culprit["reason"].startswith("changed .config/app.toml in the source tree"), culprit["reason"]
    assert ledger.tests[f"{TEST_FILE}::test_uses_its_caches"]["verdict"] == "stable", str(ledger)
    assert "tree:left" not in suite_rows(project), str(ledger)  # a tool's cache is nobody's
    shutil.rmtree(project.root / ".mypy_cache")
    project.check_tree()
    project.check_canary()


# ============================================================== 9. owners


def owners(root, *paths):
    return {rel: (os.lstat(root / rel).st_uid, os.lstat(root / rel).st_gid) for rel in paths}


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
def test_a_test_that_chowns_a_tracked_file_or_a_group_file_is_its_polluter_and_the_owner_comes_back(project):
    """Run as root (as in many containers), a test chowns files of the checkout: the owner is
    part of what a checkout is, leased and put back like the mode. Before, the gate passed and
    the files stayed another user's."""
    project.write("README.txt", "the project\n")
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, f"""
        import os

        def test_chowns():
            os.chown("README.txt", {NOBODY}, {NOBODY})
            os.chown("data/config.txt", {NOBODY}, {NOBODY})
            os.chown("data", -1, {NOBODY})
    """)
    project.suite(f"{FAST} TESTS tests")
    git_repository(project.root)
    before = owners(project.root, "README.txt", "data/config.txt", "data")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a chown of tracked files")
        ledger = ledger_of(project, result)
        culprit = ledger.tests[f"{TEST_FILE}::test_chowns"]
        assert culprit["verdict"] == "polluter" and set(culprit["dirty"]) == {"data", "(source tree)"}, str(ledger)
    assert owners(project.root, "README.txt", "data/config.txt", "data") == before


# ============================================================== 10. the pristine copy itself


def test_a_test_that_rewrites_a_group_file_and_its_pristine_copy_blocks_and_the_tree_ends_as_it_was(project):
    """The evidence directory is within a test's reach (the build tree is beside ROOT here). A
    test rewrites a group file and, identically, the pristine copy beside it: before, the gate
    passed and the "restore" kept the test's content. The copy is sealed in the per-user state
    directory: the change is found, the file comes back from a verified copy, and a suite row
    names the copy."""
    project.write("data/config.txt", "pristine\n")
    project.write("README.txt", "the project\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, """
        import os
        from pathlib import Path

        def test_rewrites_both():
            evidence = Path.cwd().parent / "build" / "evidence" / "faults"
            copies = list(evidence.glob("fixtures/pristine/**/config.txt")) + list(evidence.glob("fixtures/pristine/README.txt"))
            assert len(copies) == 2, copies
            for p in [Path("data/config.txt"), Path("README.txt")] + copies:
                p.write_text("rewritten by a test\\n")

        def test_reads_config():
            assert Path("data/config.txt").read_text() == "pristine\\n"
    """)
    project.suite("SEEDS 1 PERTURB OFF PER_TEST OFF TESTS tests")
    with project.checked():
        project.configured()
        result = project.evidence()
        expect_never_green(project, result, "a test that rewrote the pristine copy too")
        rows = suite_rows(project)
        assert "tree:store" in rows and rows["tree:store"]["gate"] == "block", project.ledger()
        reason = rows["tree:store"]["reason"]
        for copy in ("pristine/data/config.txt", "pristine/README.txt"):
            assert re.search(re.escape(copy) + r" \(after (seed|first)\.", reason), reason  # a seed or the alone pass
            assert "put back from a verified copy" in reason, reason
        ledger = project.ledger()
        assert ledger.tests[f"{TEST_FILE}::test_rewrites_both"]["verdict"] == "polluter", str(ledger)
        pristine = project.evidence_dir() / "fixtures" / "pristine"
        assert (pristine / "data" / "config.txt").read_text() == "pristine\n"
        assert (pristine / "README.txt").read_text() == "the project\n"


# ============================================================== 11. ROOT through a symbolic link


def test_a_project_configured_through_a_symbolic_link_names_its_tests_and_its_polluter(project):
    """cmake -S <link to ROOT> -B <link to the build tree>: before, pytest named the tests from
    the real path while ROOT was the link's (node ids lost their directory) and the polluter's
    change was taken for one made at start-up. ROOT and the build tree are resolved once."""
    project.write("data/config.txt", "pristine\n")
    project.write("fixtures.manifest", "data: data/*\n")
    project.write(TEST_FILE, """
        def test_pollutes():
            open("data/config.txt", "w").write("polluted\\n")

        def test_ok():
            pass
    """)
    project.suite("SEEDS 1 PERTURB OFF PER_TEST ON TESTS tests")
    source_link, build_link = project.tmp / "link-src", project.tmp / "link-build"
    source_link.symlink_to(project.root)
    project.build.mkdir()
    build_link.symlink_to(project.build)
    with project.checked():
        configured = project._record(cmake_configure(source_link, build_link, f"EvidenceGate_DIR={project.product}",
                                                     env=project.env()))
        assert configured.returncode == 0, configured.describe()
        result = project.ctest("-L", "evidence", binary=build_link)
        expect_never_green(project, result, "a polluter, through links")
        ledger = project.ledger()
        assert ledger.verdicts() == {f"{TEST_FILE}::test_pollutes": ("polluter", "block"),
                                     f"{TEST_FILE}::test_ok": ("stable", "pass")}, str(ledger)
        assert not [row for row in ledger.blocking_suite_rows()], str(ledger)
