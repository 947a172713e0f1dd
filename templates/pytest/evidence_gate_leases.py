"""Fixture leases of the Evidence Gate pytest plugin: who changed which fixture group.

Every group is checked after every test, in one of two ways with the same verdicts:

* notifications (Linux): inotify, through ctypes, watches every directory of a group's
  tree, every directory on the way down to it, and every member file (a file's own
  watch sees writes through a hard link from elsewhere, which directory watches miss).
  After a test: one non-blocking read; only what the events name is looked at again.
* the stat scan (anywhere else, and whenever notifications cannot be trusted): lstat
  every member, and walk the tree again when a directory's mtime moved.

Either way a file's content is hashed only when its lstat metadata moved or is "racy".
The modes of a group's directories are part of its lease: a chmod of one is a change.
Build trees, the evidence directory and .git are never entered, whatever a glob says.

The source tree outside the groups (``Tree``) is watched by notifications only: what each
test touched there (scratch files made, rewritten, removed) and which of the files evgate
guards (the lease document's "tree") it left changed. Elsewhere evgate's check after each
pytest process stands in.

Writes through a shared memory mapping raise no event until the mapping's file is
closed (IN_CLOSE_WRITE): a test that writes a member through mmap and keeps the mapping
open is seen by the test that closes it, or only by evgate's check after the run. When
a change arrives that late (the file's ctime is older than the previous check), it is
reported where it was seen and the rest of the process falls back to the scan, the
end record saying why.

Needs no pytest: ``evidence_gate_pytest`` drives it.
"""

import contextlib
import errno
import json
import os
import re
import select
import stat
import struct
import sys
import time

# git's racy-clean margin: a file touched this close to the previous check may
# have been rewritten within one timestamp tick, so its metadata proves nothing.
RACY_NS = 50_000_000

CHUNK = 1 << 20


# How a result names the source tree outside the groups: touched (scratch files, which are
# nobody's), or "(source tree):<path>" for a file evgate guards that the test left changed.
SOURCE_TREE = "(source tree)"
# The touched paths a result lists at most.
TREE_LIST_MAX = 20


class Unwatchable(Exception):
    """Notifications cannot be trusted for this run; the message says why."""


class Leases:
    """The fixture groups of a run and how they are checked: "inotify" or "scan".

    check() names the groups that changed since the previous check and makes the
    present state the new baseline, so a change is blamed on one test only.
    """

    def __init__(self, document, mode, verified_ns=None):
        exclude = frozenset(document.get("exclude", ()))
        self.leases = [Lease(spec, document["root"], exclude) for spec in document["groups"]]
        self.tree = None
        self.tree_touched = []  # what the last check found touched outside the groups
        if "tree" in document and mode == "auto":
            self.tree = Tree(document, exclude, self.leases)
            if not self.tree.start():
                self.tree = None
        self.how = "scan" if self.leases else None
        self.note = "--evidence-gate-lease=scan" if self.leases and mode == "scan" else None
        self.watches = None
        self.checked_ns = time.time_ns()
        if self.leases and mode == "auto":
            try:
                self.watches = Watches()
                for lease in self.leases:
                    lease.start(self.watches, verified_ns)
                self.how = "inotify"
            except Unwatchable as e:
                self.close()
                self.note = str(e)
        if self.watches is None:
            for lease in self.leases:
                lease.start(None, verified_ns)
        # Changes start() found (made before the leases started): the first check reports them.
        self.started_changed = any(lease.changed for lease in self.leases)

    def check(self):
        """The groups that changed, then SOURCE_TREE when the tree outside them was touched and
        "(source tree):<path>" for each guarded file left changed."""
        return self.check_groups() + self.check_tree()

    def check_groups(self):
        racy_after = self.checked_ns - RACY_NS
        self.checked_ns = time.time_ns()
        if self.watches is not None:
            try:
                if not self.catch_up(racy_after) and not self.started_changed:
                    return []
            except Unwatchable as e:
                self.close_watches()
                self.how, self.note = "scan", str(e)
                for lease in self.leases:
                    lease.rescan(lease.base, None, racy_after)
        else:
            for lease in self.leases:
                lease.check_by_scan(racy_after)
        changed = [lease for lease in self.leases if lease.changed]
        for lease in changed:
            lease.changed = False
        self.started_changed = False
        return sorted(lease.name for lease in changed)

    def check_tree(self):
        self.tree_touched = []
        if self.tree is None:
            return []
        touched, changed = self.tree.activity()
        if not touched:
            return []
        if self.tree.watches is None:  # notifications failed: evgate's check stands in from now on
            self.tree = None
        self.tree_touched = [printable(rel) for rel in touched[:TREE_LIST_MAX]]
        if len(touched) > TREE_LIST_MAX:
            self.tree_touched.append(f"... and {len(touched) - TREE_LIST_MAX} more")
        return [SOURCE_TREE] + [f"{SOURCE_TREE}:{printable(rel)}" for rel in changed]

    def catch_up(self, racy_after):
        """Look at what the events since the previous check name; False if there were none."""
        events = self.watches.read()
        if not events:
            return False
        owners = self.watches.owners
        for wd, mask, name in events:
            if mask & IN_Q_OVERFLOW:  # events were lost: walk every tree again
                for lease in self.leases:
                    lease.stale.add(lease.base)
                continue
            for lease, kind, rel in owners.get(wd, ()):
                lease.event(kind, rel, mask, name)
            if mask & IN_IGNORED:
                self.watches.forget(wd)
        for lease in self.leases:
            if lease.stale or lease.stale_files:
                lease.catch_up(self.watches, racy_after)
        self.watches.prune()
        return True

    def close(self):
        self.close_watches()
        if self.tree is not None:
            self.tree.close()
            self.tree = None

    def close_watches(self):
        if self.watches is not None:
            self.watches.close()
            self.watches = None


class Lease:
    """One fixture group: its members and the tree of directories they are found in.

    The tree is the base directory, reached from ROOT through plain directories only (as
    evgate lists a group), and its subdirectories down to max_depth. Links are never
    followed: a directory that became a link is no longer in the tree.
    """

    def __init__(self, spec, root, exclude=frozenset()):
        self.name = spec["name"]
        self.root = root
        self.exclude = exclude  # build trees and the evidence directory: never entered
        self.regex = re.compile(spec["regex"])
        self.base = spec["base"]
        self.max_depth = int(spec["max_depth"])
        self.listed = {member["path"]: (member["identity"], member["mode"]) for member in spec["files"]}
        # The modes of the group's directories, as evgate listed them; then as last seen.
        self.modes = {d["path"]: d["mode"] for d in spec.get("directories", ())}
        parts = self.base.split("/") if self.base else []
        # Each directory above the base, with the name in it that leads on to the base.
        self.above = {"/".join(parts[:i]): parts[i] for i in range(len(parts))}
        self.way_down = (*self.above, self.base)
        self.members = {}  # rel -> Member; absent ones stay, so that their return counts
        self.dirs = {}  # rel -> st_mtime_ns of each directory of the tree, as last listed
        self.way = []  # (st_dev, st_ino) of the way_down directories, as far as each is plain
        self.current = []  # the members whose directory is in the tree: all the scan looks at
        self.stale = set()  # directories notifications say to walk again
        self.stale_files = set()  # members notifications say to look at again
        self.changed = False

    def path(self, rel):
        return f"{self.root}/{rel}" if rel else self.root

    def is_member(self, rel):
        # What evgate listed is a member whatever Python's regex dialect says.
        return rel in self.listed or (self.regex.fullmatch(rel) is not None and not excluded(rel, self.exclude))

    def note_mode(self, rel, st):
        """A directory's mode as it is now; a change from the last one seen is a change to the group."""
        mode = stat.S_IMODE(st.st_mode)
        if self.modes.get(rel, mode) != mode:
            self.changed = True
        self.modes[rel] = mode

    def start(self, watches, verified_ns=None):
        """The baseline: evgate's identities for what it listed, the present state of files that came since.

        With verified_ns (when evgate last found the group as it listed it), what changed since
        then (before the leases started: a conftest imported at start-up) counts as a change,
        reported by the first check: a listed file stamped since is hashed, a file that came or
        went since is one.
        """
        self.members = {}
        for rel in self.walk(self.base, watches):
            member = self.members[rel] = Member(self.path(rel), parent_of(rel))
            st = self.lstat_member(rel, member, watches)
            member.key = stat_key(st)
            member.state = self.listed[rel] if rel in self.listed and st is not None else state_of(member.path, st)
            if verified_ns is not None and st is not None and rel in self.listed and is_racy(st, verified_ns - RACY_NS):
                present = state_of(member.path, st)
                self.changed = self.changed or present != member.state
                member.state = present
        if verified_ns is not None and self.members.keys() != self.listed.keys():
            self.changed = True
        self.current = list(self.members.values())

    def check_by_scan(self, racy_after):
        if self.tree_moved(racy_after):
            self.rescan(self.base, None, racy_after)
            return
        for member in self.current:
            if member.update(lstat(member.path), racy_after):
                self.changed = True

    def tree_moved(self, racy_after):
        """Whether the way to the base changed or a directory of the tree may have new entries."""
        if self.reach(None) != self.way:
            return True
        for rel, mtime in self.dirs.items():
            st = lstat(self.path(rel))
            if st is None or not stat.S_ISDIR(st.st_mode) or st.st_mtime_ns != mtime or mtime >= racy_after:
                return True
            if self.modes.get(rel) != stat.S_IMODE(st.st_mode):  # a chmod moves no mtime
                return True
        return False

    def event(self, kind, rel, mask, name):
        """Note what one notification asks to look at again (catch_up looks)."""
        if kind == FILE:
            self.stale_files.add(rel)
        elif kind == ABOVE:
            if not name or name == self.above[rel]:  # the way down to the base changed
                self.stale.add(self.base)
        elif not name or mask & IN_ISDIR:  # the directory itself, or a subdirectory in it
            self.stale.add(rel)
        else:
            child = f"{rel}/{name}" if rel else name
            if self.is_member(child):
                self.stale_files.add(child)

    def catch_up(self, watches, racy_after):
        stale, self.stale = self.stale, set()
        stale_files, self.stale_files = self.stale_files, set()
        walked, looked = [], set()
        for top in sorted(stale, key=len):  # a directory before those below it
            if any(within(top, done) for done in walked) or (top != self.base and top not in self.dirs):
                continue
            looked.update(self.rescan(top, watches, racy_after))
            walked.append(top)
        for rel in stale_files - looked:
            self.look(rel, watches, racy_after, present=True)

    def rescan(self, top, watches, racy_after):
        """Walk the tree at and below top again and look at every member in it; returns them."""
        found = self.walk(top, watches)
        looked = [rel for rel in self.members if within(rel, top)]
        looked += found - self.members.keys()
        for rel in looked:
            self.look(rel, watches, racy_after, present=rel in found)
        self.current = [member for member in self.members.values() if member.directory in self.dirs]
        return looked

    def look(self, rel, watches, racy_after, present):
        member = self.members.get(rel)
        if member is None:
            member = self.members[rel] = Member(self.path(rel), parent_of(rel))
        inode = None if member.key is None else member.key[3]
        st = self.lstat_member(rel, member, watches) if present else None
        if st is None and watches is not None:
            watches.drop(self, FILE, rel)
        if member.update(st, racy_after):
            self.changed = True
            # The same inode changed, and the kernel stamped that before the previous check.
            if watches is not None and st is not None and st.st_ino == inode and st.st_ctime_ns < racy_after:
                raise Unwatchable(f"{rel} (group {self.name!r}) changed before the previous check but was "
                                  "notified only now (written through a shared mapping?)")

    def lstat_member(self, rel, member, watches):
        """lstat of a member in the tree.

        With notifications a file is watched before the lstat that becomes its baseline,
        or a change in between would go unseen. A file still on its watched inode is not
        watched again: that would cost a call, and fail once a test made it unreadable.
        """
        if member.directory not in self.dirs:
            return None
        if watches is None:
            return lstat(member.path)
        if member.key is not None and watches.has(self, FILE, rel):
            st = lstat(member.path)
            if st is not None and st.st_ino == member.key[3]:
                return st
        return lstat(member.path) if watches.add(self, FILE, rel) else None

    def walk(self, top, watches):
        """The members at and below top, its directories listed (and watched) afresh."""
        for rel in [rel for rel in self.dirs if within(rel, top)]:
            del self.dirs[rel]
            if watches is not None:
                watches.drop(self, DIRECTORY, rel)
        if top == self.base:
            self.way = self.reach(watches)
            if len(self.way) < len(self.way_down):
                return set()
        found = set()
        pending = [(top, components(top) - components(self.base))]  # depth below the base
        while pending:
            rel, depth = pending.pop()
            if watches is not None and not watches.add(self, DIRECTORY, rel):
                continue
            st = lstat(self.path(rel))
            if st is not None and stat.S_ISDIR(st.st_mode):
                self.note_mode(rel, st)
            entries = list_directory(self.path(rel)) if st is not None and stat.S_ISDIR(st.st_mode) else None
            if entries is None:
                if watches is not None:
                    watches.drop(self, DIRECTORY, rel)
                continue
            self.dirs[rel] = st.st_mtime_ns
            deeper = self.max_depth < 0 or depth < self.max_depth  # max_depth: levels below the base
            prefix = f"{rel}/" if rel else ""
            for entry in entries:
                child = prefix + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if deeper and not excluded(child, self.exclude):
                        pending.append((child, depth + 1))
                elif self.is_member(child):
                    found.add(child)
        return found

    def reach(self, watches):
        """(st_dev, st_ino) of the directories from ROOT down to the base, as far as each is plain.

        With notifications, each directory above the base is watched on the way, so that
        a change to the way down (a directory renamed, replaced, created) is noticed.
        """
        way = []
        for rel in self.way_down:
            if watches is not None and rel != self.base and not watches.add(self, ABOVE, rel):
                break
            st = lstat(self.path(rel))
            if st is None or not stat.S_ISDIR(st.st_mode):
                break
            if rel:  # ROOT's own mode is the source tree's
                self.note_mode(rel, st)
            way.append((st.st_dev, st.st_ino))
        if watches is not None:
            for rel in list(self.above)[len(way) + 1:]:  # below where the way ends
                watches.drop(self, ABOVE, rel)
        return way


class Member:
    """A file of a group: its lstat key when last looked at, and its (identity, mode), or None while absent."""

    __slots__ = ("path", "directory", "key", "state")

    def __init__(self, path, directory):
        self.path = path
        self.directory = directory
        self.key = None
        self.state = None

    def update(self, st, racy_after):
        """Take the file's present lstat; True if its (identity, mode) moved."""
        key = stat_key(st)
        if key == self.key and (st is None or not is_racy(st, racy_after)):
            return False
        self.key = key
        state = state_of(self.path, st)
        if state == self.state:
            return False
        self.state = state
        return True


class Tree:
    """The source tree outside the groups, by notifications: every directory under ROOT but
    hidden ones, build trees and the evidence directory, on an inotify instance of its own (a
    second watch on a group's directory in the same instance would replace the group's mask).

    activity() says what was touched since it last looked: names created, removed, renamed,
    closed after writing or chmodded (group members aside: the leases see those), and which of
    them are files evgate guards (listed in the document's "tree", read at the first event that
    names one) left other than before.
    """

    def __init__(self, document, exclude, leases):
        self.root = document["root"]
        self.exclude = exclude
        self.leases = leases  # their members and directories are theirs
        self.listing = document["tree"]
        self.states = None  # guarded path -> (identity, mode); directories -> mode
        self.watches = None

    def path(self, rel):
        return f"{self.root}/{rel}" if rel else self.root

    def start(self):
        """Watch the tree; False when notifications cannot be trusted here."""
        try:
            self.watches = Watches()
            self.watch("")
            return True
        except Unwatchable:
            self.close()
            return False

    def watch(self, top):
        """Watch `top` and the directories below it; returns every path found below it."""
        found, pending = [], [top]
        while pending:
            rel = pending.pop()
            if not self.watches.add(self, TREE, rel):
                continue
            for entry in list_directory(self.path(rel)) or ():
                child = joined(rel, entry.name)
                if entry.is_dir(follow_symlinks=False):
                    if self.wanted(child):
                        pending.append(child)
                elif not self.is_member(child):
                    found.append(child)
        return found

    def wanted(self, rel):
        return not rel.rpartition("/")[2].startswith(".") and not excluded(rel, self.exclude)

    def is_member(self, rel):
        return any(lease.is_member(rel) or rel in lease.modes for lease in self.leases)

    def activity(self):
        """(paths touched, guarded paths left changed) since the last call, sorted."""
        try:
            events = self.watches.read()
            if not events:  # after most tests: one poll
                return [], []
            touched = set()
            for wd, mask, name in events:
                if mask & IN_Q_OVERFLOW:  # events were lost: touched, somewhere
                    touched.add(".")
                for _, _, rel in self.watches.owners.get(wd, ()):
                    child = joined(rel, name) if name else rel
                    if self.is_member(child) or (name and mask & IN_ISDIR and not self.wanted(child)):
                        continue
                    touched.add(child or ".")
                    if mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):  # watched before its files are listed
                        touched.update(self.watch(child))
                if mask & IN_IGNORED:
                    self.watches.forget(wd)
            self.watches.prune()
        except Unwatchable:
            self.close()
            return ["."], []
        return sorted(touched), sorted(rel for rel in touched if self.left_changed(rel))

    def left_changed(self, rel):
        """Whether a guarded file (or directory) is no longer as the last look saw it."""
        if self.states is None:
            self.states = read_listing(self.listing)
        rel = "" if rel == "." else rel
        if rel not in self.states:
            return False  # a scratch file: nobody's
        st = lstat(self.path(rel))
        was = self.states[rel]
        now = stat.S_IMODE(st.st_mode) if isinstance(was, int) and st is not None else state_of(self.path(rel), st)
        self.states[rel] = now
        return now != was

    def close(self):
        if self.watches is not None:
            self.watches.close()
            self.watches = None


def read_listing(path):
    """The guarded files (identity, mode) and directories (mode) evgate listed in tree.json."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError):
        return {}  # evgate's check after the process stands in
    states = {f["path"]: (f["identity"], f["mode"]) for f in document.get("files", ())}
    states.update((d["path"], d["mode"]) for d in document.get("directories", ()))
    return states


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


# What a watch is on: a member file, a directory of a group's tree, a directory above a base,
# a directory of the source tree outside the groups.
FILE, DIRECTORY, ABOVE, TREE = "file", "directory", "above", "tree"

# <sys/inotify.h>
IN_MODIFY, IN_ATTRIB, IN_CLOSE_WRITE = 0x2, 0x4, 0x8
IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE = 0x40, 0x80, 0x100, 0x200
IN_DELETE_SELF, IN_MOVE_SELF, IN_Q_OVERFLOW, IN_IGNORED = 0x400, 0x800, 0x4000, 0x8000
IN_ONLYDIR, IN_DONT_FOLLOW, IN_ISDIR = 0x1000000, 0x2000000, 0x40000000

# Directories report entries coming and going, files their content and metadata (IN_ATTRIB:
# mode, times, link count). Directories do not ask for IN_MODIFY: a write would then queue
# one event per watch, which never coalesce, and a large write would overflow the queue.
# IN_DONT_FOLLOW: a link is watched as itself; IN_ONLYDIR: a directory that became anything
# else is not watched.
# IN_ATTRIB on directories: a directory's mode is leased too. The source tree's directories also
# report their files' closes after writing and metadata: nobody watches those files one by one.
SELF_EVENTS = IN_DELETE_SELF | IN_MOVE_SELF
DIRECTORY_MASK = (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | SELF_EVENTS | IN_ONLYDIR
                  | IN_DONT_FOLLOW)
MASKS = {
    FILE: IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | SELF_EVENTS | IN_DONT_FOLLOW,
    DIRECTORY: DIRECTORY_MASK,
    ABOVE: DIRECTORY_MASK,
    TREE: DIRECTORY_MASK | IN_CLOSE_WRITE,
}

INOTIFY_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name
INOTIFY_READ = 1 << 16
LONGEST_EVENT = INOTIFY_EVENT.size + 256  # NAME_MAX and its NUL

# Filesystems on which every change passes through this kernel, so that a watch sees it.
# On the others (NFS, CIFS/SMB, 9p, virtiofs, FUSE, Ceph, Lustre, ...) another client or
# the server behind the mount can change a file without an event here: they get the scan.
# overlay: changing its layers underneath a mounted overlay is undefined for overlayfs itself.
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "bcachefs", "zfs", "jfs", "reiserfs",
    "tmpfs", "ramfs", "overlay", "vfat", "exfat", "ntfs3", "hfsplus",
})


class Watches:
    """One inotify instance for the run, through ctypes, and who owns each of its watches.

    A watch (wd) is per inode, so it may have several owners (lease, kind, rel): a
    directory of two groups, a file reached under two names.
    """

    def __init__(self):
        if sys.platform != "linux":
            raise Unwatchable(f"no inotify on {sys.platform}")
        try:
            import ctypes  # here, not at the top: only runs that watch need it
            libc = ctypes.CDLL(None, use_errno=True)
            init1, self.add_watch, self.rm_watch = libc.inotify_init1, libc.inotify_add_watch, libc.inotify_rm_watch
        except (ImportError, OSError, AttributeError) as e:
            raise Unwatchable(f"no inotify through ctypes: {e}") from None
        init1.argtypes = [ctypes.c_int]
        self.add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self.rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        self.get_errno = ctypes.get_errno
        self.fd = init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise Unwatchable(inotify_failure("inotify_init1", self.get_errno()))
        self.queued = select.poll()
        self.queued.register(self.fd, select.POLLIN)
        self.owners = {}  # wd -> {(lease, kind, rel)}
        self.wd_of = {}  # (lease, kind, rel) -> wd
        self.unowned = set()  # wds that lost their last owner; prune() removes them unless owned again
        self.trusted = set()  # st_dev of the filesystems checked against LOCAL_FILESYSTEMS
        self.mounts = None

    def add(self, lease, kind, rel):
        """Watch rel of the lease; False if it is not there (or, as a directory, is no longer one)."""
        path = lease.path(rel)
        if kind != FILE:
            self.trust(path)
        wd = self.add_watch(self.fd, os.fsencode(path), MASKS[kind])
        if wd < 0:
            error = self.get_errno()
            if error not in (errno.ENOENT, errno.ENOTDIR):
                raise Unwatchable(inotify_failure("inotify_add_watch", error, path))
            self.drop(lease, kind, rel)
            return False
        owner = (lease, kind, rel)
        old = self.wd_of.get(owner)
        if old != wd:
            if old is not None:
                self.disown(owner, old)
            self.wd_of[owner] = wd
            self.owners.setdefault(wd, set()).add(owner)
            self.unowned.discard(wd)
        return True

    def has(self, lease, kind, rel):
        return (lease, kind, rel) in self.wd_of

    def drop(self, lease, kind, rel):
        owner = (lease, kind, rel)
        wd = self.wd_of.pop(owner, None)
        if wd is not None:
            self.disown(owner, wd)

    def disown(self, owner, wd):
        owners = self.owners[wd]
        owners.discard(owner)
        if not owners:
            self.unowned.add(wd)

    def forget(self, wd):
        """The kernel removed this watch (its inode is gone, or prune() removed it)."""
        for owner in self.owners.pop(wd, ()):
            if self.wd_of.get(owner) == wd:
                del self.wd_of[owner]
        self.unowned.discard(wd)

    def prune(self):
        """Remove the watches nothing owns any more: their inodes left every group."""
        for wd in self.unowned:
            if not self.owners.get(wd):
                self.owners.pop(wd, None)
                self.rm_watch(self.fd, wd)
        self.unowned.clear()

    def read(self):
        """The events queued since the last read, as (wd, mask, name), without waiting."""
        events = []
        # poll first: when nothing is queued (after most tests) it is cheaper than a failing read.
        while self.queued.poll(0):
            try:
                data = os.read(self.fd, INOTIFY_READ)
            except OSError as e:  # a test closed descriptors it did not own
                raise Unwatchable(f"cannot read the inotify queue: {e}") from None
            offset = 0
            while offset < len(data):
                wd, mask, _, size = INOTIFY_EVENT.unpack_from(data, offset)
                offset += INOTIFY_EVENT.size
                events.append((wd, mask, os.fsdecode(data[offset:offset + size].rstrip(b"\0"))))
                offset += size
            if len(data) <= INOTIFY_READ - LONGEST_EVENT:  # the queue was emptied
                break
        return events

    def trust(self, path):
        """Refuse a directory on a filesystem where a change can bypass this kernel."""
        st = lstat(path)
        if st is None or st.st_dev in self.trusted:
            return
        if self.mounts is None:
            self.mounts = read_mounts()
        real = os.path.realpath(path)
        # The longest mount point above it; of mounts on the same point, the last one shows.
        _, kind = max(((point, kind) for point, kind in reversed(self.mounts) if within(real, point.rstrip("/"))),
                      key=lambda mount: len(mount[0]), default=(None, "an unknown filesystem"))
        if kind not in LOCAL_FILESYSTEMS:
            raise Unwatchable(f"{path} is on {kind}, where a change need not pass through this kernel")
        self.trusted.add(st.st_dev)

    def close(self):
        with contextlib.suppress(OSError):  # already closed by a test that closed descriptors it did not own
            os.close(self.fd)


def inotify_failure(call, error, path=None):
    limit = {errno.ENOSPC: " (the limit is fs.inotify.max_user_watches)",
             errno.EMFILE: " (the limits are fs.inotify.max_user_instances and the open-file limit)"}
    where = f" {path}" if path else ""
    return f"{call}{where}: {os.strerror(error)}{limit.get(error, '')}"


def read_mounts():
    """(mount point, filesystem type) of each mount this process sees, in mount order."""
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise Unwatchable(f"cannot tell filesystems apart: {e}") from None
    mounts = []
    for line in lines:
        # ID PARENT MAJOR:MINOR ROOT MOUNT-POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER-OPTIONS
        fields = line.split(b" ")
        point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])  # \040 is a space
        mounts.append((os.fsdecode(point), os.fsdecode(fields[fields.index(b"-", 6) + 1])))
    return mounts
