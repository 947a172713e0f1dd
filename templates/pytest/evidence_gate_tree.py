"""The source tree outside the fixture groups, watched by notifications: what each test
touched there (scratch files made, rewritten, removed) and which of the files evgate guards
(the lease document's "tree", evgate's tree.json) it left changed.

``Leases`` starts a ``Tree`` with the groups, when notifications are asked for and can be
trusted; anywhere else, and once notifications fail, evgate's check of the tree after each
pytest process stands in. A result names what a test did here with ``reported()``.

Needs no pytest.
"""

import json
import stat

from evidence_gate_files import (directory_state, excluded, joined, list_directory, listed_directory, listed_state, lstat,
                                 never_guarded, owned, printable, state_of)
from evidence_gate_inotify import (IN_CREATE, IN_IGNORED, IN_ISDIR, IN_MOVED_TO, IN_Q_OVERFLOW, TREE, Unwatchable,
                                   Watches)

# How a result names the source tree outside the groups: touched (scratch files, which are
# nobody's), or "(source tree):<path>" for a file evgate guards that the test left changed.
SOURCE_TREE = "(source tree)"
# The touched paths a result lists at most.
TREE_LIST_MAX = 20


class Tree:
    """The source tree outside the groups, by notifications: every directory under ROOT, hidden
    ones too, but build trees, the evidence directory, version control, caches and virtual
    environments (``never_guarded``), on an inotify instance of its own (a
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
        self.states = None  # guarded path -> (identity, mode, uid, gid); directories -> (mode, uid, gid)
        self.directories = set()
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
        assert self.watches is not None
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
        return not excluded(rel, self.exclude) and not never_guarded(self.path(rel), rel.rpartition("/")[2])

    def is_member(self, rel):
        return any(lease.is_member(rel) or rel in lease.modes for lease in self.leases)

    def activity(self):
        """(paths touched, guarded paths left changed) since the last call, sorted."""
        assert self.watches is not None
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
            self.states, self.directories = read_listing(self.listing)
        rel = "" if rel == "." else rel
        if rel not in self.states:
            return False  # a scratch file: nobody's
        st = lstat(self.path(rel))
        was = owned(self.states[rel], st)
        if rel in self.directories:
            now = None if st is None or not stat.S_ISDIR(st.st_mode) else directory_state(st)
        else:
            now = state_of(self.path(rel), st)
        self.states[rel] = now
        return now != was

    def close(self):
        if self.watches is not None:
            self.watches.close()
            self.watches = None


def read_listing(path):
    """The states of the guarded files and directories evgate listed in tree.json, and which
    paths are directories."""
    try:
        with open(path, encoding="utf-8") as f:
            document = json.load(f)
    except (OSError, ValueError):
        return {}, set()  # evgate's check after the process stands in
    states = {f["path"]: listed_state(f) for f in document.get("files", ())}
    directories = {d["path"] for d in document.get("directories", ())}
    states.update((d["path"], listed_directory(d)) for d in document.get("directories", ()))
    return states, directories


def reported(touched, changed):
    """What a result says of Tree.activity(): its names among the changed groups, then the
    touched paths it lists (its "tree")."""
    listed = [printable(rel) for rel in touched[:TREE_LIST_MAX]]
    if len(touched) > TREE_LIST_MAX:
        listed.append(f"... and {len(touched) - TREE_LIST_MAX} more")
    return [SOURCE_TREE] + [f"{SOURCE_TREE}:{printable(rel)}" for rel in changed], listed
