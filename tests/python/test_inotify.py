"""Tests of templates/pytest/evidence_gate_inotify.py: what notifications cost, what they miss,
and the fall back to the scan when they cannot be trusted."""

import errno
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from conftest import by_test, make_tree, only, patch_everywhere, results, run_leased


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
        import evidence_gate_inotify
        evidence_gate_inotify.LOCAL_FILESYSTEMS = frozenset()
    """))
    assert session["lease"] == end["lease"] == "scan"
    assert session["lease_note"] == (f"{gate.path} is on {filesystem}, "
                                     "where a change need not pass through this kernel")


def counting_lstat(plugin, monkeypatch):
    """Every path the plugin lstats from now on."""
    seen = []
    real = plugin.files.lstat
    patch_everywhere(monkeypatch, plugin, "lstat", lambda path: seen.append(path) or real(path))
    return seen


def test_with_notifications_an_unchanged_group_is_not_even_lstated(plugin, tmp_path, monkeypatch, one_lease,
                                                                   lease_mode):
    lease = one_lease({f"g/{i}.bin": str(i) for i in range(20)})
    seen = counting_lstat(plugin, monkeypatch)
    assert not lease.check()
    if lease_mode == "auto":
        assert seen == []
    else:
        assert {str(tmp_path / f"g/{i}.bin") for i in range(20)} <= set(seen)


@pytest.mark.parametrize("lease_mode", ["auto"])
def test_a_long_write_is_one_look_at_one_file(plugin, tmp_path, monkeypatch, one_lease):
    """A write raises an event on the file's watch only: they coalesce, the queue does not overflow."""
    lease = one_lease({f"g/{i}.bin": str(i) for i in range(50)})
    seen = counting_lstat(plugin, monkeypatch)
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
