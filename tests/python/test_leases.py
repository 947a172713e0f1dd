"""Tests of templates/pytest/evidence_gate_leases.py: fixture leases by notification and by scan."""

import errno
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import PLUGIN_DIR, make_tree, only, results, write_groups


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


# What the session record says for each --evidence-gate-lease on this (Linux, local disk) machine.
LEASE_PATHS = {"auto": "inotify", "scan": "scan"}


@pytest.fixture(params=list(LEASE_PATHS))
def lease_mode(request):
    """Each lease test runs on both paths, notifications and the scan, for the same verdicts."""
    return request.param


def run_leased(gate, lease_mode, groups, *args):
    """Records of a run in lease_mode, checking that its session record names the path taken."""
    _, records = gate.run_records(f"--evidence-gate-lease={lease_mode}", *args, groups=groups)
    session = only(records, "session")
    assert session["lease"] == LEASE_PATHS[lease_mode], session
    assert session["lease_note"] == (None if lease_mode == "auto" else "--evidence-gate-lease=scan")
    return records


def by_test(records, key):
    return {nodeid.split("::")[-1]: r[key] for nodeid, r in results(records).items()}


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


MAPPED_WRITE_TESTS = """
    import mmap, time
    mappings = []

    def test_1_write_through_a_shared_mapping():
        f = open("fixtures/m/a.bin", "r+b")
        mappings.append((f, mmap.mmap(f.fileno(), 0)))
        mappings[0][1][0:1] = b"Z"

    def test_2_later():
        time.sleep(0.2)  # so that the mapped write is older than the racy window of the next check

    def test_3_close_the_mapping():
        if CLOSE:
            f, mapping = mappings.pop()
            mapping.close()
            f.close()
"""


@pytest.mark.parametrize("close", [True, False], ids=["closed-later", "kept-open"])
def test_writes_through_a_shared_mapping_are_seen_late_by_notifications(gate, lease_mode, close):
    """No event comes for a write through a mapping until the mapping's file is closed.

    The scan sees the write by its metadata (the kernel stamps mtime and ctime when a
    mapped page is first written). Notifications see it when the mapping is closed, in a later test: the change
    is reported there and the process falls back to the scan, the end record saying why.
    A mapping kept open to the end is seen by no check in the process.
    """
    make_tree(gate.path, {"fixtures/m/a.bin": "A" * 4096})
    gate.pytester.makepyfile(test_mapped=f"CLOSE = {close}\n" + textwrap.dedent(MAPPED_WRITE_TESTS))
    records = run_leased(gate, lease_mode, [("m", "fixtures/m", r"fixtures/m/[^/]*", 0)])
    dirty = [r["dirty"] for r in results(records).values()]
    end = only(records, "end")
    if lease_mode == "scan":
        assert dirty == [["m"], [], []]
        assert end["lease"] == "scan"
    elif close:
        assert dirty == [[], [], ["m"]]
        assert end["lease"] == "scan"
        assert "fixtures/m/a.bin (group 'm') changed before the previous check but was notified only now" \
            in end["lease_note"]
    else:
        assert dirty == [[], [], []]
        assert (end["lease"], end["lease_note"]) == ("inotify", None)


FAILING_LIBC = textwrap.dedent("""
    import ctypes, errno

    FAIL = {}  # C library function -> errno it fails with from now on

    class Libc:
        \"\"\"The C library as ctypes finds it, but the functions named in FAIL fail.\"\"\"

        def __init__(self, libc):
            self.libc = libc

        def __getattr__(self, name):
            real = getattr(self.libc, name)

            def call(*args):
                if name in FAIL:
                    ctypes.set_errno(FAIL[name])
                    return -1
                return real(*args)
            return call

    real_cdll = ctypes.CDLL
    ctypes.CDLL = lambda name, **kwargs: Libc(real_cdll(name, **kwargs))
""")


FALLBACK_TESTS = """
    import errno
    import conftest

    def append(path):
        with open(path, "a") as f:
            f.write("x")

    def test_1_write():
        append("fixtures/g/a.bin")

    def test_2_add_when_watches_run_out():
        conftest.FAIL["inotify_add_watch"] = errno.ENOSPC
        append("fixtures/g/new.bin")

    def test_3_write_the_new_file():
        append("fixtures/g/new.bin")

    def test_4_clean():
        pass
"""


def fallback_run(gate, conftest):
    make_tree(gate.path, {"fixtures/g/a.bin": "a"})
    gate.pytester.makeconftest(conftest)
    gate.pytester.makepyfile(test_fallback=FALLBACK_TESTS)
    _, records = gate.run_records(groups=[("g", "fixtures/g", r"fixtures/g/[^/]*", 0)])
    assert by_test(records, "dirty") == {
        "test_1_write": ["g"], "test_2_add_when_watches_run_out": ["g"],
        "test_3_write_the_new_file": ["g"], "test_4_clean": []}
    return only(records, "session"), only(records, "end")


def test_leases_fall_back_to_the_scan_when_a_watch_fails(gate):
    session, end = fallback_run(gate, FAILING_LIBC)
    assert (session["lease"], session["lease_note"]) == ("inotify", None)
    assert end["lease"] == "scan"
    assert end["lease_note"] == (f"inotify_add_watch {gate.path}/fixtures/g/new.bin: {os.strerror(errno.ENOSPC)} "
                                 "(the limit is fs.inotify.max_user_watches)")


def test_leases_use_the_scan_when_inotify_cannot_start(gate):
    session, end = fallback_run(gate, FAILING_LIBC + "FAIL['inotify_init1'] = errno.EMFILE\n")
    assert session["lease"] == end["lease"] == "scan"
    assert session["lease_note"] == end["lease_note"] == (
        f"inotify_init1: {os.strerror(errno.EMFILE)} "
        "(the limits are fs.inotify.max_user_instances and the open-file limit)")


def test_leases_use_the_scan_on_filesystems_notifications_cannot_vouch_for(gate):
    filesystem = subprocess.run(["findmnt", "-n", "-o", "FSTYPE", "-T", str(gate.path)],
                                capture_output=True, text=True, check=True).stdout.strip()
    # As if that filesystem were NFS: no local type is trusted.
    session, end = fallback_run(gate, FAILING_LIBC + textwrap.dedent("""
        import evidence_gate_leases
        evidence_gate_leases.LOCAL_FILESYSTEMS = frozenset()
    """))
    assert session["lease"] == end["lease"] == "scan"
    assert session["lease_note"] == (f"{gate.path} is on {filesystem}, "
                                     "where a change need not pass through this kernel")


@pytest.fixture(scope="module")
def leases_module():
    """The leases module imported here, to drive a Lease directly (no bytecode written)."""
    spec = importlib.util.spec_from_file_location("evidence_gate_leases_under_test",
                                                  PLUGIN_DIR / "evidence_gate_leases.py")
    module = importlib.util.module_from_spec(spec)
    saved, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = saved
    return module


@pytest.fixture
def open_leases(leases_module, lease_mode):
    """Leases(document) on the lease_mode path, closed (with their inotify instance) after the test."""
    opened = []

    def open_document(document):
        opened.append(leases_module.Leases(document, lease_mode))
        assert opened[-1].how == LEASE_PATHS[lease_mode], opened[-1].note
        return opened[-1]
    yield open_document
    for leases in opened:
        leases.close()


@pytest.fixture
def one_lease(open_leases, tmp_path):
    """Leases of one group "g" (regex, like g/*) made of these files under tmp_path."""
    def make(files, regex=r"g/.*"):
        make_tree(tmp_path, files)
        return open_leases(json.loads(write_groups(tmp_path, [("g", "g", regex, 0)]).read_text()))
    return make


def test_racy_same_size_rewrite_with_unchanged_stat_is_caught(leases_module, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "AAAA"})
    path = str(tmp_path / "g/a.bin")
    (tmp_path / "g/a.bin").write_text("CCCC")
    assert lease.check()
    # A coarse-timestamp file system: the rewrite right after the check leaves
    # every stat field as the check saw it.
    frozen = os.lstat(path)
    real = leases_module.lstat
    monkeypatch.setattr(leases_module, "lstat", lambda p: frozen if p == path else real(p))
    (tmp_path / "g/a.bin").write_text("BBBB")
    assert lease.check()
    assert not lease.check()  # blamed once: the next check starts from the new content


def test_racy_directory_is_rescanned(leases_module, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "A"})
    (tmp_path / "g/b.bin").write_text("B")
    assert lease.check()
    # As above, for the directory: the addition does not move its mtime.
    directory = str(tmp_path / "g")
    frozen = os.lstat(directory)
    real = leases_module.lstat
    monkeypatch.setattr(leases_module, "lstat", lambda p: frozen if p == directory else real(p))
    (tmp_path / "g/c.bin").write_text("C")
    assert lease.check()


def test_file_present_before_the_session_is_not_blamed(tmp_path, open_leases):
    make_tree(tmp_path, {"g/a.bin": "A"})
    groups = json.loads(write_groups(tmp_path, [("g", "g", r"g/.*", 0)]).read_text())
    (tmp_path / "g/late.bin").write_text("L")  # after evgate listed the group
    lease = open_leases(groups)
    assert not lease.check()
    (tmp_path / "g/late.bin").write_text("M")
    assert lease.check()


def test_unchanged_old_file_is_not_read(leases_module, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "AAAA", "g/b.bin": "BBBB"})
    time.sleep(0.2)  # older than the racy window of the next checks
    assert not lease.check()
    reads = []
    real = leases_module.identity
    monkeypatch.setattr(leases_module, "identity", lambda path, st: reads.append(path) or real(path, st))
    time.sleep(0.1)
    assert not lease.check()
    assert reads == []
    (tmp_path / "g/b.bin").write_text("CCCCC")
    assert lease.check()
    assert reads == [str(tmp_path / "g/b.bin")]


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


def counting_lstat(leases_module, monkeypatch):
    """Every path the plugin lstats from now on."""
    seen = []
    real = leases_module.lstat
    monkeypatch.setattr(leases_module, "lstat", lambda path: seen.append(path) or real(path))
    return seen


def test_with_notifications_an_unchanged_group_is_not_even_lstated(leases_module, tmp_path, monkeypatch, one_lease,
                                                                      lease_mode):
    lease = one_lease({f"g/{i}.bin": str(i) for i in range(20)})
    seen = counting_lstat(leases_module, monkeypatch)
    assert not lease.check()
    if lease_mode == "auto":
        assert seen == []
    else:
        assert {str(tmp_path / f"g/{i}.bin") for i in range(20)} <= set(seen)


@pytest.mark.parametrize("lease_mode", ["auto"])
def test_a_long_write_is_one_look_at_one_file(leases_module, tmp_path, monkeypatch, one_lease):
    """A write raises an event on the file's watch only: they coalesce, the queue does not overflow."""
    lease = one_lease({f"g/{i}.bin": str(i) for i in range(50)})
    seen = counting_lstat(leases_module, monkeypatch)
    with open(tmp_path / "g/7.bin", "ab", buffering=0) as f:
        for _ in range(max_queued_events() + 1):
            f.write(b"x")
    assert lease.check() == ["g"]
    assert seen == [str(tmp_path / "g/7.bin")]


@pytest.mark.parametrize("lease_mode", ["auto"])
def test_a_changed_file_is_watched_again_only_when_it_is_another_inode(tmp_path, one_lease):
    """Watching again costs a call, and as a user other than root fails on a file made unreadable."""
    lease = one_lease({"g/a.bin": "A"})
    watched = []
    real = lease.watches.add_watch
    lease.watches.add_watch = lambda fd, path, mask: watched.append(os.fsdecode(path)) or real(fd, path, mask)
    (tmp_path / "g/a.bin").write_text("B")
    os.chmod(tmp_path / "g/a.bin", 0)
    assert lease.check() == ["g"]
    assert watched == []
    (tmp_path / "staged").write_text("C")
    os.replace(tmp_path / "staged", tmp_path / "g/a.bin")
    assert lease.check() == ["g"]
    assert watched == [str(tmp_path / "g/a.bin")]


@pytest.mark.parametrize("lease_mode", ["auto"])
def test_an_overflowed_queue_makes_every_group_looked_at_again(tmp_path, one_lease):
    lease = one_lease({"g/a.bin": "A"}, regex=r"g/[^/]*\.bin")
    for _ in range(max_queued_events()):  # two events each, in the directory above the base
        (tmp_path / "flood").touch()
        (tmp_path / "flood").unlink()
    (tmp_path / "g/a.bin").write_text("B")  # its event is lost: the queue is full
    assert lease.check() == ["g"]
    assert lease.how == "inotify"
    assert not lease.check()


@pytest.mark.parametrize("lease_mode", ["auto"])
def test_a_lost_inotify_descriptor_falls_back_to_the_scan(tmp_path, one_lease):
    lease = one_lease({"g/a.bin": "A"})
    os.close(lease.watches.fd)  # as a test that closes every descriptor above 2 would
    (tmp_path / "g/a.bin").write_text("B")
    assert lease.check() == ["g"]
    assert lease.how == "scan" and lease.note.startswith("cannot read the inotify queue: ")
    (tmp_path / "g/a.bin").write_text("C")
    assert lease.check() == ["g"]


def max_queued_events():
    return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())


# ------------------------------------------ directory modes, excluded trees, the source tree


def lease_document(root, groups, **extra):
    """The groups file evgate writes: write_groups' members, with each group's directories and
    their modes, and whatever `extra` adds (exclude, tree)."""
    document = json.loads(write_groups(root, groups).read_text())
    for spec in document["groups"]:
        base = root / spec["base"]
        spec["directories"] = [{"path": str(d.relative_to(root)), "mode": d.stat().st_mode & 0o7777}
                               for d in [base, *base.rglob("*")] if d.is_dir() and not d.is_symlink()]
    document.update(extra)
    path = root / "groups.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


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


def tree_document(root, groups, guarded):
    """A lease document with the source tree: `guarded` files listed in tree.json as evgate does."""
    import hashlib
    files = [{"path": rel, "identity": "sha256:" + hashlib.sha256((root / rel).read_bytes()).hexdigest(),
              "mode": (root / rel).stat().st_mode & 0o7777, "size": (root / rel).stat().st_size} for rel in guarded]
    directories = [{"path": "", "mode": root.stat().st_mode & 0o7777, "mtime_ns": 0, "entries": []}]
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

    def test_05_writes_the_build_tree_and_a_hidden_directory():
        Path("build/out.txt").write_text("evidence")
        Path(".cache").mkdir()
        Path(".cache/x").write_text("cached")

    def test_06_chmods_the_readme():
        os.chmod("README.txt", 0o600)

    def test_07_leaves_a_scratch_database():
        Path("scratch.db").write_bytes(b"SQLite format 3")

    def test_08_clean():
        pass
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
                     "test_05_writes_the_build_tree_and_a_hidden_directory": [], "test_06_chmods_the_readme": [readme],
                     "test_07_leaves_a_scratch_database": [], "test_08_clean": []}
    assert changed["test_01_scratch_made_and_removed"] == ["(source tree)"]
    assert changed["test_04_writes_its_group"] == ["data"]  # a member is its group's business only
    assert changed["test_05_writes_the_build_tree_and_a_hidden_directory"] == []
    assert changed["test_07_leaves_a_scratch_database"] == ["(source tree)"]
    assert changed["test_00_clean"] == changed["test_08_clean"] == []
    assert tree["test_01_scratch_made_and_removed"] == ["tool_temp"]  # gone before it could be watched: one name
    assert tree["test_02_edits_the_readme"] == ["README.txt"]
    assert tree["test_07_leaves_a_scratch_database"] == ["scratch.db"]


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
