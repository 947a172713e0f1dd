"""Tests of templates/pytest/evidence_gate_files.py through a lease: racy timestamps prove
nothing, and a file's content is read only when its metadata moved."""

import os
import time

from conftest import patch_everywhere


def test_racy_same_size_rewrite_with_unchanged_stat_is_caught(plugin, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "AAAA"})
    path = str(tmp_path / "g/a.bin")
    (tmp_path / "g/a.bin").write_text("CCCC")
    assert lease.check()
    # A coarse-timestamp file system: the rewrite right after the check leaves
    # every stat field as the check saw it.
    frozen = os.lstat(path)
    real = plugin.files.lstat
    patch_everywhere(monkeypatch, plugin, "lstat", lambda p: frozen if p == path else real(p))
    (tmp_path / "g/a.bin").write_text("BBBB")
    assert lease.check()
    assert not lease.check()  # blamed once: the next check starts from the new content


def test_racy_directory_is_rescanned(plugin, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "A"})
    (tmp_path / "g/b.bin").write_text("B")
    assert lease.check()
    # As above, for the directory: the addition does not move its mtime.
    directory = str(tmp_path / "g")
    frozen = os.lstat(directory)
    real = plugin.files.lstat
    patch_everywhere(monkeypatch, plugin, "lstat", lambda p: frozen if p == directory else real(p))
    (tmp_path / "g/c.bin").write_text("C")
    assert lease.check()


def test_unchanged_old_file_is_not_read(plugin, tmp_path, monkeypatch, one_lease):
    lease = one_lease({"g/a.bin": "AAAA", "g/b.bin": "BBBB"})
    time.sleep(0.2)  # older than the racy window of the next checks
    assert not lease.check()
    reads = []
    real = plugin.files.identity
    patch_everywhere(monkeypatch, plugin, "identity", lambda path, st: reads.append(path) or real(path, st))
    time.sleep(0.1)
    assert not lease.check()
    assert reads == []
    (tmp_path / "g/b.bin").write_text("CCCCC")
    assert lease.check()
    assert reads == [str(tmp_path / "g/b.bin")]
