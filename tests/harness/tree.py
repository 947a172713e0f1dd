"""Snapshots of a source tree, to show that a run left it byte-identical, and a search of a
tree for a secret.

A digest never follows a link and opens nothing but regular files, so FIFOs and devices in
a hostile tree are safe to digest: each entry is its kind, content digest (or link target,
or file type and device number), mode and size.
"""

import contextlib
import hashlib
import mmap
import os
import stat
from pathlib import Path

# Files that must never appear in a source tree after a run.
FORBIDDEN_NAMES = ("__pycache__", ".pytest_cache")


class TreeChanged(AssertionError):
    """The source tree is not byte-identical after a run."""


def tree_digest(root):
    """{relative path: what it is} for everything below root."""
    root = Path(root)
    digest = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            st = path.lstat()
            mode = stat.S_IMODE(st.st_mode)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                digest[rel] = ("link", os.readlink(path), mode)
            elif stat.S_ISDIR(st.st_mode):
                digest[rel] = ("dir", None, mode)
            elif stat.S_ISREG(st.st_mode):
                digest[rel] = ("file", file_sha256(path), mode, st.st_size)
            else:
                digest[rel] = ("special", stat.S_IFMT(st.st_mode), mode, st.st_rdev)
    return digest


def file_sha256(path):
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def digest_diff(before, after):
    lines = []
    for rel in sorted(set(before) | set(after)):
        if rel not in after:
            lines.append(f"  removed: {rel}")
        elif rel not in before:
            lines.append(f"  added:   {rel}")
        elif before[rel] != after[rel]:
            lines.append(f"  changed: {rel}: {before[rel]} -> {after[rel]}")
    return lines


def expect_unchanged(root, before, after):
    """Raises TreeChanged, listing every difference, unless the two digests of root are equal."""
    diff = digest_diff(before, after)
    if diff:
        raise TreeChanged(f"the source tree {root} changed:\n" + "\n".join(diff))


@contextlib.contextmanager
def source_tree_untouched(root):
    """Asserts that the body leaves `root` byte-identical and without caches."""
    before = tree_digest(root)
    yield before
    after = tree_digest(root)
    expect_unchanged(root, before, after)
    caches = sorted(rel for rel in after if Path(rel).name in FORBIDDEN_NAMES)
    assert not caches, f"caches in the source tree {root}: {caches}"


def files_holding(root, needle):
    """Regular files below root (links not followed) whose bytes contain `needle`."""
    hits = []
    for dirpath, _, filenames in os.walk(root, followlinks=False):
        for name in filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                continue
            with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if data.find(needle) >= 0:
                    hits.append(str(path))
    return hits
