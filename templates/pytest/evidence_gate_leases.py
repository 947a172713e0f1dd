"""Fixture leases of the Evidence Gate pytest plugin: who changed which fixture group.

Every group is checked after every test, in one of two ways with the same verdicts:

* notifications (Linux, ``evidence_gate_inotify``): a watch on every directory of a group's
  tree, every directory on the way down to it, and every member file (a file's own
  watch sees writes through a hard link from elsewhere, which directory watches miss).
  After a test: one non-blocking read; only what the events name is looked at again.
* the stat scan (anywhere else, and whenever notifications cannot be trusted): lstat
  every member, and walk the tree again when a directory's mtime moved.

Either way a file's content is hashed only when its lstat metadata moved or is "racy"
(``evidence_gate_files``). The modes and owners of a group's directories (and of its files)
are part of its lease: a chmod or chown of one is a change. Build trees, the evidence directory and .git are never entered,
whatever a glob says.

With notifications the source tree outside the groups is watched too
(``evidence_gate_tree``); a check reports it after the groups.

Writes through a shared memory mapping raise no event until the mapping's file is
closed (IN_CLOSE_WRITE): a test that writes a member through mmap and keeps the mapping
open is seen by the test that closes it, or only by evgate's check after the run. When
a change arrives that late (the file's ctime is older than the previous check), it is
reported where it was seen and the rest of the process falls back to the scan, the
end record saying why.

Needs no pytest: ``evidence_gate_records`` drives it.
"""

import re
import stat
import time

from evidence_gate_files import (RACY_NS, components, directory_state, excluded, is_racy, list_directory, listed_directory,
                                 listed_state, lstat, owned, parent_of, stat_key, state_of, within)
from evidence_gate_inotify import ABOVE, DIRECTORY, FILE, IN_IGNORED, IN_ISDIR, IN_Q_OVERFLOW, Unwatchable, Watches
from evidence_gate_protocol import OPTION
from evidence_gate_tree import Tree, reported


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
        self.note = f"{OPTION.lease}=scan" if self.leases and mode == "scan" else None
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
        names, self.tree_touched = reported(touched, changed)
        return names

    def catch_up(self, racy_after):
        """Look at what the events since the previous check name; False if there were none."""
        assert self.watches is not None
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
        self.listed = {member["path"]: listed_state(member) for member in spec["files"]}
        # The (mode, uid, gid) of the group's directories, as evgate listed them; then as last seen.
        self.modes = {d["path"]: listed_directory(d) for d in spec.get("directories", ())}
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
        """A directory's mode and owner as they are now; a change from the last seen is a change to the group."""
        state = directory_state(st)
        if owned(self.modes.get(rel, state), st) != state:
            self.changed = True
        self.modes[rel] = state

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
            member.state = owned(self.listed[rel], st) if rel in self.listed and st is not None else state_of(member.path, st)
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
            if self.modes.get(rel) != directory_state(st):  # a chmod or chown moves no mtime
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
        walked: list = []
        looked = set()
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
    """A file of a group: its lstat key when last looked at, and its (identity, mode, uid, gid), or None while absent."""

    __slots__ = ("path", "directory", "key", "state")

    def __init__(self, path, directory):
        self.path = path
        self.directory = directory
        self.key = None
        self.state = None

    def update(self, st, racy_after):
        """Take the file's present lstat; True if its state moved."""
        key = stat_key(st)
        if key == self.key and (st is None or not is_racy(st, racy_after)):
            return False
        self.key = key
        state = state_of(self.path, st)
        if state == self.state:
            return False
        self.state = state
        return True
