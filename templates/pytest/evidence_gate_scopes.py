"""Fixtures wider than a test, for the Evidence Gate pytest plugin: who changed a group while one
was set up or torn down.

A session-, package-, module- or class-scoped fixture is set up inside the setup of the first
test that needs it and torn down inside the teardown of whichever test happens to come last
(the last of its module, the last of the run): what it writes there is not that test's doing.
Just before such a fixture runs, the groups are checked (what changed so far is the running
test's), and just after (what changed since is the fixture's). The fixture's change belongs to
the tests that use it when every one of them declared the group (``writes``); otherwise it is an
``outside`` record naming the fixture, its scope, where it is defined and the test it ran in,
and no test is blamed.

Needs no pytest beyond the fixture objects it is handed: ``evidence_gate_records`` drives it
from pytest's hooks.
"""

import functools
import os

from evidence_gate_protocol import EVENT
from evidence_gate_tree import SOURCE_TREE

FUNCTION_SCOPE = "function"


class Scopes:
    """What the fixtures wider than a test changed, between the checks of one test's leases."""

    def __init__(self, leases, emit, rootdir):
        self.leases = leases
        self.emit = emit
        self.rootdir = rootdir
        self.item = None
        self.active = {}  # id(fixturedef) -> groups every test that used it so far declared
        self.tearing = set()  # id(fixturedef) between its first finalizer and pytest_fixture_post_finalizer
        self.own = []  # groups the running test changed before a fixture ran
        self.owned = []  # groups fixtures changed on behalf of tests that all declared them
        self.tree = []  # what those checks found touched outside the groups

    def test_started(self, item):
        """A test begins: the wide fixtures it shares with earlier tests are its too from now on."""
        self.item = item
        self.own, self.owned, self.tree = [], [], []
        if not self.active:
            return
        fixturenames = set(getattr(item, "fixturenames", ()))
        declared = declared_groups(item)
        for key, (fixturedef, groups) in self.active.items():
            if fixturedef.argname in fixturenames:
                self.active[key] = (fixturedef, groups & declared)

    def test_changes(self):
        """At the end of the running test: (what it changed itself, what fixtures changed on
        behalf of it and the other tests that declared it, the tree touched)."""
        own = merged(self.own, self.leases.check())
        tree = self.tree + self.leases.tree_touched
        owned, self.item = self.owned, None
        self.own, self.owned, self.tree = [], [], []
        return own, owned, tree

    # ------------------------------------------------------------ pytest_fixture_setup

    def before_setup(self, fixturedef):
        if wide(fixturedef):
            self.hold()

    def after_setup(self, fixturedef):
        if not wide(fixturedef):
            return
        users = declared_groups(self.item) if self.item is not None else set()
        self.active[id(fixturedef)] = (fixturedef, users)
        self.attribute(fixturedef, "setup")
        # Added last, so run first when the fixture is finished: before its own teardown.
        fixturedef.addfinalizer(functools.partial(self.before_teardown, fixturedef))

    # ------------------------------------------------------------ its teardown

    def before_teardown(self, fixturedef):
        self.hold()
        self.tearing.add(id(fixturedef))

    def after_teardown(self, fixturedef):
        """At pytest_fixture_post_finalizer, which pytest calls whether or not the fixture was set up."""
        if id(fixturedef) not in self.tearing:
            return
        self.tearing.discard(id(fixturedef))
        self.attribute(fixturedef, "teardown")
        self.active.pop(id(fixturedef), None)

    # ------------------------------------------------------------ the checks

    def hold(self):
        """What changed before a wide fixture runs: the running test's, or outside any test at
        session end (pytest tears down what is left in pytest_sessionfinish)."""
        changed = self.leases.check()
        if self.item is not None:
            self.own = merged(self.own, changed)
            self.tree += self.leases.tree_touched
        elif changed:
            self.emit({"event": EVENT.outside, "phase": "session end", "changed": changed})

    def attribute(self, fixturedef, when):
        changed = self.leases.check()
        if not changed:
            return
        self.tree += self.leases.tree_touched
        _, declared = self.active.get(id(fixturedef), (None, set()))
        # Touching the tree outside the groups blames nobody; a file left changed there is a change.
        # Outside any test (a teardown at session end) nothing is declared.
        owned = [] if self.item is None else [group for group in changed if group in declared or group == SOURCE_TREE]
        self.owned = merged(self.owned, owned)
        rest = [group for group in changed if group not in owned and group != SOURCE_TREE]
        if rest:
            self.emit({
                "event": EVENT.outside,
                "phase": f"fixture {when}",
                "fixture": fixturedef.argname,
                "scope": fixturedef.scope,
                "location": location_of(fixturedef, self.rootdir),
                "test": self.item.nodeid if self.item is not None else None,
                "changed": rest,
            })


def wide(fixturedef):
    return fixturedef.scope != FUNCTION_SCOPE


def declared_groups(item):
    return {group for mark in item.iter_markers("writes") for group in mark.args}


def merged(first, second):
    """Two check() lists as one: the groups sorted, then the source tree's names."""
    names = set(first) | set(second)
    groups = sorted(name for name in names if not name.startswith(SOURCE_TREE))
    tree = sorted(name for name in names if name.startswith(SOURCE_TREE))
    return groups + tree


def location_of(fixturedef, rootdir):
    """'conftest.py:12' for where the fixture function is defined, relative to rootdir when below it."""
    code = getattr(getattr(fixturedef, "func", None), "__code__", None)
    if code is None:
        return None
    path = code.co_filename
    relative = os.path.relpath(path, rootdir) if os.path.isabs(path) else path
    return f"{path if relative.startswith('..') else relative}:{code.co_firstlineno}"
