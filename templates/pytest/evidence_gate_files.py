"""Files as Evidence Gate names and identifies them, for the leases and the source-tree watch.

A file is named by its path relative to ROOT, with "/" between components, "" for ROOT
itself. Its state is its (identity, mode): the identity is the one evgate computes (sha256
of the content, the target of a link, or "special"), and is worked out again only when the
file's lstat key moved or its timestamps are too recent to prove anything ("racy").

Needs no pytest, and nothing else of the plugin.
"""

import os
import stat

# git's racy-clean margin: a file touched this close to the previous check may
# have been rewritten within one timestamp tick, so its metadata proves nothing.
RACY_NS = 50_000_000

CHUNK = 1 << 20


def parent_of(rel):
    return rel.rpartition("/")[0]


def joined(rel, name):
    return f"{rel}/{name}" if rel else name


def excluded(rel, exclude):
    """Build trees and the evidence directory (evgate lists them), and version control."""
    return rel in exclude or rel.rpartition("/")[2] == ".git"


def printable(rel):
    """A name for a record: bytes that are not UTF-8 (surrogate escapes) as \\xHH."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def components(rel):
    return rel.count("/") + 1 if rel else 0


def within(rel, top):
    return rel == top or not top or rel.startswith(top + "/")


def list_directory(path):
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return None


def lstat(path):
    try:
        return os.lstat(path)
    except OSError:
        return None


def stat_key(st):
    return None if st is None else (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def is_racy(st, racy_after):
    return st.st_mtime_ns >= racy_after or st.st_ctime_ns >= racy_after


def state_of(path, st):
    return None if st is None else (identity(path, st), stat.S_IMODE(st.st_mode))


def identity(path, st):
    """The identity evgate computes: sha256 of content, link target, or "special"."""
    if stat.S_ISLNK(st.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError:
            return "unreadable"
    if not stat.S_ISREG(st.st_mode):
        return "special"
    try:
        # O_NONBLOCK|O_NOFOLLOW: if the file was swapped for a FIFO or a link
        # after lstat, opening must neither hang nor follow it.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return "unreadable"
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "special"
        import hashlib  # here, not at the top: loading OpenSSL costs milliseconds, most runs hash nothing
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(CHUNK), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()
