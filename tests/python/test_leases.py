"""Tests of templates/pytest/evidence_gate_leases.py: who changed which fixture group, by
notification and by scan, for the same verdicts."""

import json
import os

import pytest

from conftest import LEASE_PATHS, by_test, lease_document, make_tree, only, results, run_leased, write_groups


# ----------------------------------------------------------------------- leases


LEASE_TESTS = """
    import os, pytest

    def append(path, text="x"):
        with open(path, "a") as f:
            f.write(text)

    def test_00_clean():
        pass

    def test_01_undeclared_write():
        append("fixtures/db/a.sqlite")

    def test_02_next_test_is_clean():
        pass

    @pytest.mark.writes("db")
    def test_03_declared_write():
        append("fixtures/db/a.sqlite")

    def test_04_add():
        append("fixtures/db/new.sqlite")

    def test_05_add_not_matching():
        append("fixtures/db/notes.txt")

    def test_06_remove():
        os.remove("fixtures/db/b.sqlite")

    def test_07_chmod():
        os.chmod("fixtures/db/a.sqlite", 0o600)

    def test_08_other_group():
        append("fixtures/cfg/x.json")

    @pytest.mark.writes("db")
    @pytest.mark.writes("cfg", "tree")
    def test_09_declares_all():
        append("fixtures/db/a.sqlite")
        append("fixtures/cfg/x.json")
        append("tree/top.txt")

    def test_10_deep_add():
        os.makedirs("tree/sub/deeper")
        append("tree/sub/deeper/new.txt")

    def test_11_same_size_rewrite_with_restored_mtime():
        path = "fixtures/cfg/x.json"
        st = os.stat(path)
        with open(path, "r+") as f:
            f.write("Z")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def test_12_replace_with_fifo():
        os.remove("fixtures/db/a.sqlite")
        os.mkfifo("fixtures/db/a.sqlite")

    def test_13_clean():
        pass
"""


GROUPS = [("db", "fixtures/db", r"fixtures/db/[^/]*\.sqlite", 0),
          ("cfg", "fixtures/cfg", r"fixtures/cfg/[^/]*", 0),
          ("tree", "tree", r"tree/.*", -1)]


def test_leases_blame_only_the_undeclared_writer(gate, lease_mode):
    make_tree(gate.path, {"fixtures/db/a.sqlite": "aaaa", "fixtures/db/b.sqlite": "bbbb",
                          "fixtures/cfg/x.json": "{}", "tree/top.txt": "t"})
    gate.pytester.makepyfile(test_leases=LEASE_TESTS)
    records = run_leased(gate, lease_mode, GROUPS)
    dirty = {nodeid.split("::")[1]: r["dirty"] for nodeid, r in results(records).items()}
    assert dirty == {
        "test_00_clean": [],
        "test_01_undeclared_write": ["db"],
        "test_02_next_test_is_clean": [],
        "test_03_declared_write": [],
        "test_04_add": ["db"],
        "test_05_add_not_matching": [],
        "test_06_remove": ["db"],
        "test_07_chmod": ["db"],
        "test_08_other_group": ["cfg"],
        "test_09_declares_all": [],
        "test_10_deep_add": ["tree"],
        "test_11_same_size_rewrite_with_restored_mtime": ["cfg"],
        "test_12_replace_with_fifo": ["db"],
        "test_13_clean": [],
    }
    assert {r["outcome"] for r in results(records).values()} == {"passed"}
    # changed: every group that changed, declared or not.
    assert by_test(records, "changed") == {
        **dirty,
        "test_03_declared_write": ["db"],
        "test_09_declares_all": ["cfg", "db", "tree"],
    }
    assert only(records, "end")["lease"] == LEASE_PATHS[lease_mode]


def test_leases_do_not_follow_symlinks(gate, tmp_path, lease_mode):
    outside = tmp_path / "outside"
    make_tree(outside, {"target.txt": "t", "other.txt": "o", "dir/inner.txt": "i"})
    links = gate.path / "fixtures" / "links"
    links.mkdir(parents=True)
    (links / "file.txt").symlink_to(outside / "target.txt")
    (links / "dir").symlink_to(outside / "dir", target_is_directory=True)
    gate.pytester.makepyfile(test_links=f"""
        import os
        OUTSIDE = {str(outside)!r}

        def test_1_write_link_target():
            with open(os.path.join(OUTSIDE, "target.txt"), "a") as f:
                f.write("changed")
            # New link metadata forces a look at its identity: the target, not the content.
            os.utime("fixtures/links/file.txt", ns=(1, 1), follow_symlinks=False)

        def test_2_add_in_linked_dir():
            with open(os.path.join(OUTSIDE, "dir", "added.txt"), "w") as f:
                f.write("new")

        def test_3_retarget_link():
            os.remove("fixtures/links/file.txt")
            os.symlink(os.path.join(OUTSIDE, "other.txt"), "fixtures/links/file.txt")
    """)
    records = run_leased(gate, lease_mode, [("links", "fixtures/links", r"fixtures/links/.*", -1)])
    groups = json.loads((gate.path / "groups.json").read_text())
    assert [f["identity"] for f in groups["groups"][0]["files"]] == [
        "link:" + str(outside / "dir"), "link:" + str(outside / "target.txt")]
    assert [r["dirty"] for r in results(records).values()] == [[], [], ["links"]]


def test_leases_descend_as_deep_as_the_glob_reaches(gate, lease_mode):
    # data/*/x.json: evgate's base "data", max_depth 1 (one level below the base may be entered).
    make_tree(gate.path, {"data/a/x.json": "a", "data/b/x.json": "b", "data/b/deeper/x.json": "not a member"})
    gate.pytester.makepyfile(test_depth="""
        import os

        def append(path):
            with open(path, "a") as f:
                f.write("x")

        def test_1_write_a_member(): append("data/a/x.json")
        def test_2_add_a_member():
            os.mkdir("data/c")
            append("data/c/x.json")
        def test_3_write_below_the_reach(): append("data/b/deeper/x.json")
    """)
    records = run_leased(gate, lease_mode, [("data", "data", r"data/[^/]*/x\.json", 1)])
    assert json.loads((gate.path / "groups.json").read_text())["groups"][0]["files"][0]["path"] == "data/a/x.json"
    assert [r["dirty"] for r in results(records).values()] == [["data"], ["data"], []]


def test_fifo_in_a_group_does_not_hang(gate, lease_mode):
    make_tree(gate.path, {"fixtures/p/a.sqlite": "a"})
    os.mkfifo(gate.path / "fixtures/p/pipe.sqlite")
    gate.pytester.makepyfile(test_fifo="""
        import os
        def test_1_clean(): pass
        def test_2_add_fifo(): os.mkfifo("fixtures/p/new.sqlite")
        def test_3_clean(): pass
    """)
    records = run_leased(gate, lease_mode, [("p", "fixtures/p", r"fixtures/p/[^/]*\.sqlite", 0)])
    groups = json.loads((gate.path / "groups.json").read_text())
    assert "special" in [f["identity"] for f in groups["groups"][0]["files"]]
    assert [r["dirty"] for r in results(records).values()] == [[], ["p"], []]
    assert only(records, "end")["exitstatus"] == 0


MORE_LEASE_TESTS = """
    import os, shutil

    def append(path, text="x"):
        with open(path, "a") as f:
            f.write(text)

    def test_01_write_through_a_hard_link_from_outside():
        append("outside.link")

    def test_02_rename_over_a_member():
        with open("staged", "w") as f:
            f.write("new content")
        os.replace("staged", "fixtures/db/a.sqlite")

    def test_03_write_the_member_that_replaced_it():
        append("fixtures/db/a.sqlite")

    def test_04_add_in_a_new_subdirectory():
        os.makedirs("tree/new/deeper")
        append("tree/new/deeper/n.txt")

    def test_05_write_in_the_new_subdirectory():
        append("tree/new/deeper/n.txt")

    def test_06_move_a_subdirectory_within_the_group():
        os.rename("tree/new", "tree/moved")

    def test_07_remove_a_subdirectory():
        shutil.rmtree("tree/moved")

    def test_08_rename_a_member_out_of_the_group():
        os.rename("fixtures/db/b.sqlite", "b.sqlite")

    def test_09_write_the_file_moved_out():
        append("b.sqlite")

    def test_10_write_a_member_of_two_groups():
        append("fixtures/db/c.sqlite")

    def test_11_utime_only():
        os.utime("fixtures/db/c.sqlite", ns=(1, 1))

    def test_12_replace_a_directory_above_the_base_with_a_link_to_a_copy():
        shutil.copytree("fixtures", "copy", symlinks=True)
        os.rename("fixtures", "original")
        os.symlink("copy", "fixtures")

    def test_13_clean():
        pass

    def test_14_put_the_directory_back():
        os.remove("fixtures")
        os.rename("original", "fixtures")

    def test_15_clean():
        pass
"""


def test_leases_see_links_renames_and_new_directories(gate, lease_mode):
    make_tree(gate.path, {"fixtures/db/a.sqlite": "aaaa", "fixtures/db/b.sqlite": "bbbb",
                          "fixtures/db/c.sqlite": "cccc", "tree/top.txt": "t"})
    # A second name for a.sqlite outside every group: only a watch on the file sees writes through it.
    os.link(gate.path / "fixtures/db/a.sqlite", gate.path / "outside.link")
    gate.pytester.makepyfile(test_more=MORE_LEASE_TESTS)
    groups = GROUPS + [("c", "fixtures/db", r"fixtures/db/c\.sqlite", 0)]
    records = run_leased(gate, lease_mode, groups)
    assert by_test(records, "dirty") == {
        "test_01_write_through_a_hard_link_from_outside": ["db"],
        "test_02_rename_over_a_member": ["db"],
        "test_03_write_the_member_that_replaced_it": ["db"],
        "test_04_add_in_a_new_subdirectory": ["tree"],
        "test_05_write_in_the_new_subdirectory": ["tree"],
        "test_06_move_a_subdirectory_within_the_group": ["tree"],
        "test_07_remove_a_subdirectory": ["tree"],
        "test_08_rename_a_member_out_of_the_group": ["db"],
        "test_09_write_the_file_moved_out": [],
        "test_10_write_a_member_of_two_groups": ["c", "db"],
        "test_11_utime_only": [],
        "test_12_replace_a_directory_above_the_base_with_a_link_to_a_copy": ["c", "db"],
        "test_13_clean": [],
        "test_14_put_the_directory_back": ["c", "db"],
        "test_15_clean": [],
    }
    assert {r["outcome"] for r in results(records).values()} == {"passed"}
    assert only(records, "end")["lease"] == LEASE_PATHS[lease_mode]


def test_file_present_before_the_session_is_not_blamed(tmp_path, open_leases):
    make_tree(tmp_path, {"g/a.bin": "A"})
    groups = json.loads(write_groups(tmp_path, [("g", "g", r"g/.*", 0)]).read_text())
    (tmp_path / "g/late.bin").write_text("L")  # after evgate listed the group
    lease = open_leases(groups)
    assert not lease.check()
    (tmp_path / "g/late.bin").write_text("M")
    assert lease.check()


def test_what_evgate_listed_is_a_member_whatever_the_regex_says(tmp_path, open_leases):
    make_tree(tmp_path, {"g/listed.bin": "L"})
    document = json.loads(write_groups(tmp_path, [("g", "g", r"g/.*", 0)]).read_text())
    # As if Python's re read evgate's (ECMAScript) regex differently.
    document["groups"][0]["regex"] = r"g/[^/]*\.other"
    lease = open_leases(document)
    (tmp_path / "g/listed.bin").write_text("M")
    assert lease.check() == ["g"]


def test_a_group_whose_base_comes_later_is_seen_when_it_comes(tmp_path, open_leases):
    make_tree(tmp_path, {"other.txt": "o"})
    lease = open_leases(json.loads(write_groups(tmp_path, [("g", "fixtures/deep/g", r"fixtures/deep/g/[^/]*", 0)])
                                   .read_text()))
    (tmp_path / "fixtures").mkdir()
    assert not lease.check()
    make_tree(tmp_path, {"fixtures/deep/g/a.bin": "A"})
    assert lease.check() == ["g"]
    (tmp_path / "fixtures/deep/g/a.bin").write_text("B")
    assert lease.check() == ["g"]


def test_a_group_at_the_root(tmp_path, open_leases):
    make_tree(tmp_path, {"top.cfg": "t", "notes.txt": "n"})
    lease = open_leases(json.loads(write_groups(tmp_path, [("cfg", "", r"[^/]*\.cfg", 0)]).read_text()))
    (tmp_path / "notes.txt").write_text("m")
    (tmp_path / "sub").mkdir()
    assert not lease.check()
    (tmp_path / "top.cfg").write_text("u")
    assert lease.check() == ["cfg"]
    (tmp_path / "new.cfg").write_text("n")
    assert lease.check() == ["cfg"]


# ------------------------------------------ directory modes, excluded trees, the source tree


def test_a_chmod_of_a_group_directory_is_a_change_to_the_group(gate, lease_mode):
    make_tree(gate.path, {"fixtures/db/a.sqlite": "a", "fixtures/db/deep/b.sqlite": "b"})
    gate.pytester.makepyfile(test_modes="""
        import os

        def test_0_clean():
            pass

        def test_1_chmod_the_base():
            os.chmod("fixtures/db", 0o555)

        def test_2_clean():
            pass

        def test_3_chmod_a_subdirectory():
            os.chmod("fixtures/db/deep", 0o700)

        def test_4_both_back():
            os.chmod("fixtures/db", 0o755)
            os.chmod("fixtures/db/deep", 0o755)
    """)
    document = lease_document(gate.path, [("db", "fixtures/db", r"fixtures/db/.*", -1)])
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", f"--evidence-gate-groups={document}")
    assert by_test(records, "dirty") == {"test_0_clean": [], "test_1_chmod_the_base": ["db"], "test_2_clean": [],
                                         "test_3_chmod_a_subdirectory": ["db"], "test_4_both_back": ["db"]}


@pytest.mark.skipif(os.geteuid() != 0, reason="only root gives a file to another user")
def test_a_chown_of_a_member_or_a_group_directory_is_a_change_to_the_group(gate, lease_mode):
    make_tree(gate.path, {"fixtures/db/a.sqlite": "a", "fixtures/db/deep/b.sqlite": "b"})
    gate.pytester.makepyfile(test_owners="""
        import os

        def test_0_chown_a_member():
            os.chown("fixtures/db/a.sqlite", 65534, 65534)

        def test_1_clean():
            pass

        def test_2_chgrp_a_subdirectory():
            os.chown("fixtures/db/deep", -1, 65534)

        def test_3_clean():
            pass
    """)
    document = lease_document(gate.path, [("db", "fixtures/db", r"fixtures/db/.*", -1)])
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", f"--evidence-gate-groups={document}")
    assert by_test(records, "dirty") == {"test_0_chown_a_member": ["db"], "test_1_clean": [],
                                         "test_2_chgrp_a_subdirectory": ["db"], "test_3_clean": []}


def test_build_trees_the_evidence_directory_and_git_are_never_group_members(gate, lease_mode):
    make_tree(gate.path, {"cfg/a.json": "{}", "build/CMakeCache.txt": "", "build/evidence/receipt.json": "{}",
                          ".git/x.json": "{}"})
    gate.pytester.makepyfile(test_excluded="""
        from pathlib import Path

        def test_0_writes_the_build_tree():
            Path("build/evidence/receipt.json").write_text('{"rewritten": 1}')
            Path("build/evidence/new.json").write_text("{}")
            Path(".git/x.json").write_text('{"y": 1}')

        def test_1_writes_the_group():
            Path("cfg/a.json").write_text('{"a": 1}')
    """)
    document = json.loads(write_groups(gate.path, [("cfg", "", r"(?:.*/)?[^/]*\.json", -1)]).read_text())
    for spec in document["groups"]:  # as evgate lists them: never inside an excluded tree
        spec["files"] = [f for f in spec["files"] if f["path"] == "cfg/a.json"]
    document["exclude"] = ["build"]
    path = gate.path / "groups.json"
    path.write_text(json.dumps(document))
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", f"--evidence-gate-groups={path}")
    assert by_test(records, "dirty") == {"test_0_writes_the_build_tree": [], "test_1_writes_the_group": ["cfg"]}
