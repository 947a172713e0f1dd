"""Cached bytecode, checked before it is used.

evgate keeps every pytest process's bytecode in the build tree (PYTHONPYCACHEPREFIX), shared by
the runs of a suite and by later invocations. CPython writes a ``.pyc`` with a rename, but does
not check how much of it reached the file: a process that runs under a file-size limit
(``ulimit -f``, a test's ``resource.setrlimit``) or runs out of disk leaves one cut short, and
reads it back without a check — every later import of that module fails with ``EOFError:
marshal data too short``. One failed run must not poison the next: before a process (or a fork
of the collected session) imports anything of the suite's, each ``.pyc`` written since the last
check is read back, and one that does not load is removed; its module is compiled again from
its source.

The check runs only in a cache evgate keeps: one that holds the stamp file evgate creates
(``STAMP``), whose modification time is when the cache was last checked. evgate also runs this
file as a script (``python -I -B evidence_gate_bytecode.py CACHE``) before the first pytest of an
invocation when the cache holds anything newer than the stamp: pytest's own modules are
imported before any plugin, and they may be the ones cut short. Run so, it reads no cached
bytecode itself (what it imports is built in or frozen, or read from the interpreter's own
cache).
"""

import importlib.util
import marshal
import os
import sys
import time

STAMP = ".evidence-gate-verified"
HEADER = 16  # magic, flags, and the source's mtime and size (or hash): PEP 552


def verify_cached_bytecode(prefix=None):
    """Removes every .pyc of this interpreter's in the cache `prefix` (default: this process's)
    that was written since the stamp and does not load; returns how many. Nothing outside a
    cache evgate keeps is looked at."""
    prefix = prefix or sys.pycache_prefix
    if not prefix:
        return 0
    stamp = os.path.join(prefix, STAMP)
    try:
        since = os.stat(stamp).st_mtime_ns
    except OSError:
        return 0
    started = time.time_ns()
    removed = 0
    for path in written_since(prefix, since):
        if not loads(path):
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
    try:
        os.utime(stamp, ns=(started, started))
    except OSError:
        pass
    return removed


def written_since(directory, since):
    """The .pyc files below `directory` modified at `since` or later (links not followed)."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from written_since(entry.path, since)
            elif entry.name.endswith(".pyc") and entry.stat(follow_symlinks=False).st_mtime_ns >= since:
                yield entry.path
        except OSError:
            continue


def loads(path):
    """False for a .pyc of this interpreter's whose code does not unmarshal; another
    interpreter's (its own magic number) is left to it."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return True
    if data[:4] != importlib.util.MAGIC_NUMBER:
        return len(data) >= 4
    try:
        marshal.loads(memoryview(data)[HEADER:])
    except (EOFError, ValueError, TypeError):
        return False
    return True


if __name__ == "__main__":
    verify_cached_bytecode(sys.argv[1])
