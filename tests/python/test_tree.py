"""Tests of templates/pytest/evidence_gate_tree.py: what a test touched in the source tree outside
the fixture groups, and which guarded files it left changed."""

import json
import os

import pytest

from conftest import by_test, lease_document, make_tree


def tree_document(root, groups, guarded):
    """A lease document with the source tree: `guarded` files listed in tree.json as evgate does."""
    import hashlib
    files = [{"path": rel, "identity": "sha256:" + hashlib.sha256((root / rel).read_bytes()).hexdigest(),
              "mode": (root / rel).stat().st_mode & 0o7777, "size": (root / rel).stat().st_size,
              "uid": (root / rel).stat().st_uid, "gid": (root / rel).stat().st_gid} for rel in guarded]
    directories = [{"path": "", "mode": root.stat().st_mode & 0o7777, "uid": root.stat().st_uid, "gid": root.stat().st_gid,
                    "mtime_ns": 0, "entries": []}]
    tree = root / "build" / "tree.json"
    tree.parent.mkdir(exist_ok=True)
    (root / "build" / "CMakeCache.txt").write_text("")
    tree.write_text(json.dumps({"schema": 1, "git": False, "files": files, "directories": directories,
                                "excluded": ["build"]}))
    return lease_document(root, groups, exclude=["build"], tree=str(tree))


TREE_TESTS = """
    import os
    from pathlib import Path

    def test_00_clean():
        pass

    def test_01_scratch_made_and_removed():
        Path("tool_temp").mkdir()
        Path("tool_temp/config.ini").write_text("[x]")
        Path("tool_temp/config.ini").unlink()
        Path("tool_temp").rmdir()

    def test_02_edits_the_readme():
        Path("README.txt").write_text("edited")

    def test_03_puts_it_back():
        Path("README.txt").write_text("the project")

    def test_04_writes_its_group():
        Path("data/a.txt").write_text("changed")

    def test_05_writes_the_build_tree_and_a_cache():
        Path("build/out.txt").write_text("evidence")
        Path(".ruff_cache").mkdir()
        Path(".ruff_cache/x").write_text("cached")
        Path(".venv").mkdir()
        Path(".venv/pyvenv.cfg").write_text("home = /usr/bin")
        Path(".venv/lib").mkdir()
        Path(".venv/lib/x.py").write_text("installed")

    def test_06_chmods_the_readme():
        os.chmod("README.txt", 0o600)

    def test_07_leaves_a_scratch_database():
        Path("scratch.db").write_bytes(b"SQLite format 3")

    def test_08_clean():
        pass

    def test_09_scratch_in_a_hidden_directory():
        Path(".mytool").mkdir()
        Path(".mytool/config.ini").write_text("[x]")
        Path(".mytool/config.ini").unlink()

    def test_10_rewrites_scratch_in_it_again():
        Path(".mytool/config.ini").write_text("[y]")
        Path(".mytool/config.ini").unlink()
"""


@pytest.mark.parametrize("lease_mode", ["auto", "scan"])
def test_what_a_test_touched_in_the_source_tree_outside_the_groups(gate, lease_mode):
    """With notifications: a scratch file made and removed is activity ("(source tree)" in
    changed: runs beside it are redone), a guarded file left changed is the test's pollution
    ("(source tree):<path>" in dirty). On the scan path evgate's check after the process stands in."""
    make_tree(gate.path, {"README.txt": "the project", "data/a.txt": "a"})
    document = tree_document(gate.path, [("data", "data", r"data/[^/]*", 0)], ["README.txt"])
    gate.pytester.makepyfile(test_tree=TREE_TESTS)
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", f"--evidence-gate-groups={document}")
    changed, dirty, tree = by_test(records, "changed"), by_test(records, "dirty"), by_test(records, "tree")
    if lease_mode == "scan":
        assert dirty == {**{name: [] for name in dirty}, "test_04_writes_its_group": ["data"]}
        assert all(touched == [] for touched in tree.values()), tree
        return
    readme = "(source tree):README.txt"
    assert dirty == {"test_00_clean": [], "test_01_scratch_made_and_removed": [], "test_02_edits_the_readme": [readme],
                     "test_03_puts_it_back": [readme], "test_04_writes_its_group": ["data"],
                     "test_05_writes_the_build_tree_and_a_cache": [], "test_06_chmods_the_readme": [readme],
                     "test_07_leaves_a_scratch_database": [], "test_08_clean": [],
                     "test_09_scratch_in_a_hidden_directory": [], "test_10_rewrites_scratch_in_it_again": []}
    assert changed["test_01_scratch_made_and_removed"] == ["(source tree)"]
    assert changed["test_04_writes_its_group"] == ["data"]  # a member is its group's business only
    # A build tree, a tool's cache and a virtual environment (by the time the test ends) are nobody's.
    assert changed["test_05_writes_the_build_tree_and_a_cache"] == []
    # A hidden directory is the project's: its scratch files are activity, as anywhere else.
    assert changed["test_09_scratch_in_a_hidden_directory"] == ["(source tree)"]
    assert tree["test_09_scratch_in_a_hidden_directory"][0] == ".mytool"
    assert changed["test_10_rewrites_scratch_in_it_again"] == ["(source tree)"]
    assert tree["test_10_rewrites_scratch_in_it_again"] == [".mytool/config.ini"]
    assert changed["test_07_leaves_a_scratch_database"] == ["(source tree)"]
    assert changed["test_00_clean"] == changed["test_08_clean"] == []
    assert tree["test_01_scratch_made_and_removed"] == ["tool_temp"]  # gone before it could be watched: one name
    assert tree["test_02_edits_the_readme"] == ["README.txt"]
    assert tree["test_07_leaves_a_scratch_database"] == ["scratch.db"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
def test_a_chown_of_a_guarded_file_is_the_tests_pollution(gate):
    make_tree(gate.path, {"README.txt": "the project", "docs/guide.md": "guide", "data/a.txt": "a"})
    document = tree_document(gate.path, [("data", "data", r"data/[^/]*", 0)], ["README.txt", "docs/guide.md"])
    gate.pytester.makepyfile(test_owner="""
        import os

        def test_0_chown_the_readme():
            os.chown("README.txt", 65534, 65534)

        def test_1_clean():
            pass

        def test_2_chgrp_a_file_below():
            os.chown("docs/guide.md", -1, 65534)
    """)
    _, records = gate.run_records(f"--evidence-gate-groups={document}")
    assert by_test(records, "dirty") == {"test_0_chown_the_readme": ["(source tree):README.txt"], "test_1_clean": [],
                                         "test_2_chgrp_a_file_below": ["(source tree):docs/guide.md"]}


def test_names_that_are_not_utf8_are_leased_and_recorded_as_valid_json(gate):
    name = os.fsdecode(b"data/caf\xe9.txt")
    (gate.path / "data").mkdir()
    (gate.path / name).write_text("pristine")
    (gate.path / "README.txt").write_text("the project")
    document = tree_document(gate.path, [("data", "data", r"data/[^/]*", 0)], ["README.txt"])
    raw = document.read_bytes()
    document.write_bytes(raw)  # evgate writes \udcXX escapes: json.dumps did the same
    assert b"\\udce9" in raw
    gate.pytester.makepyfile(test_names=f"""
        import os
        from pathlib import Path

        def test_0_writes_the_member():
            Path(os.fsdecode({os.fsencode(name)!r})).write_text("polluted")

        def test_1_leaves_a_scratch_file_so_named():
            Path(os.fsdecode(b"scratch-\\xff.txt")).write_text("x")
    """)
    _, records = gate.run_records(f"--evidence-gate-groups={document}")  # records() reads them as strict UTF-8
    assert by_test(records, "dirty") == {"test_0_writes_the_member": ["data"], "test_1_leaves_a_scratch_file_so_named": []}
    assert by_test(records, "tree")["test_1_leaves_a_scratch_file_so_named"] == ["scratch-\\xff.txt"]
