"""Files as Evidence Gate names and identifies them, for the leases and the source-tree watch.

A file is named by its path relative to ROOT, with "/" between components, "" for ROOT
itself. Its state is its (identity, mode, owner): the identity is the one evgate computes (sha256
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


VERSION_CONTROL = frozenset({".git", ".hg", ".svn"})
# Directories of tools, nobody's to guard; so is every ".*_cache" (.pytest_cache, .mypy_cache, ...).
TOOL_DIRECTORIES = frozenset({"__pycache__", ".tox", ".nox", ".eggs"})


def excluded(rel, exclude):
    """Build trees and the evidence directory (evgate lists them), and version control."""
    return rel in exclude or rel.rpartition("/")[2] in VERSION_CONTROL


def never_guarded(path, name):
    """Whether the directory `name` at `path` is nobody's to guard, as evgate decides it: version
    control, a tool's cache, a virtual environment (it holds pyvenv.cfg). Hidden ones are guarded."""
    if name in VERSION_CONTROL or name in TOOL_DIRECTORIES:
        return True
    if name.startswith(".") and name.endswith("_cache") and len(name) > len("._cache"):
        return True
    st = lstat(os.path.join(path, "pyvenv.cfg"))
    return st is not None and stat.S_ISREG(st.st_mode)


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
    """A file's (identity, mode, uid, gid); None while it is absent."""
    return None if st is None else (identity(path, st), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def listed_state(entry):
    """A file's state as evgate listed it (the lease document, tree.json)."""
    return entry["identity"], entry["mode"], entry.get("uid"), entry.get("gid")


def owned(listed, st):
    """A listed state whose owner evgate did not record (a lease document of an older evgate) takes
    the present owner from `st`: nothing to compare it with."""
    if listed is None or st is None or None not in listed[-2:]:
        return listed
    return (*listed[:-2], st.st_uid, st.st_gid)


def directory_state(st):
    """A directory's (mode, uid, gid): a chmod or chown of it is a change."""
    return stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid


def listed_directory(entry):
    return entry["mode"], entry.get("uid"), entry.get("gid")


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
