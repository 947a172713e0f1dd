"""Evidence Gate plugin for pytest: its options, its markers, and which mode runs.

Loaded by the ``evgate`` tool with ``-p evidence_gate_pytest`` (the other modules here are
found beside it on PYTHONPATH). Without an ``--evidence-gate-*`` option it only registers
its markers. With them, one of two modes, each an object kept under a ``pytest.StashKey``
and registered as a plugin only while it runs:

* run mode (``--evidence-gate-channel`` from evgate, or ``--evidence-gate-records`` by
  hand), ``evidence_gate_records``: runs the tests in the order evgate chose and sends one
  JSON Lines record per event. Beside it, ``evidence_gate_leases`` (who changed which
  fixture group, by ``evidence_gate_inotify`` notifications or a stat scan of
  ``evidence_gate_files``), ``evidence_gate_scopes`` (what a fixture wider than a test
  changed while it was set up or torn down), ``evidence_gate_tree`` (what a test touched in
  the source tree outside the groups) and ``evidence_gate_leftovers`` (the threads and
  processes a test leaves running);
* collect mode (``--evidence-gate-collect`` with ``--collect-only``),
  ``evidence_gate_collect``: one JSON document describing the suite and the configuration
  that found it.

In every mode, ``evidence_gate_aside`` sets aside what the suite's own setup asks for that a
run is not (pytest's cache, the reorderers, pytest-xdist's workers, reruns, coverage), and
says so. ``evidence_gate_manifest`` (the environment manifest) needs no pytest, so taking it
costs no pytest start-up.
"""

import pytest

from evidence_gate_bytecode import verify_cached_bytecode
from evidence_gate_collect import CollectRecorder
from evidence_gate_protocol import OPTION
from evidence_gate_records import RunRecorder

# Loaded with -p, before any conftest or test module is imported: cached bytecode a failed
# process left cut short is gone before it is read (evidence_gate_bytecode).
verify_cached_bytecode()

# Fork mode (--evidence-gate-serve) and what every evidence run sets aside of the suite's own
# setup: each in a module of its own, with its options and hooks.
pytest_plugins = ("evidence_gate_fork", "evidence_gate_aside")

MARKERS = (
    "writes(group, ...): the test owns these evidence-gate fixture groups.",
    "serial: evidence-gate keeps this test's place in collection order.",
    'env_sensitive(until="YYYY-MM-DD", owner="...", reason="..."): '
    "the test depends on the environment; evidence-gate tolerates it until the date.",
)


def pytest_addoption(parser):
    group = parser.getgroup("evidence-gate", "Evidence Gate (options are set by evgate)")
    group.addoption(OPTION.channel, metavar="FD", type=int,
                    help="run mode: send JSON Lines run records on this inherited socket (evgate's)")
    group.addoption(OPTION.records, metavar="PATH",
                    help="run mode by hand: append JSON Lines run records to PATH")
    group.addoption(OPTION.run, metavar="ID",
                    help="run id copied into the session record")
    group.addoption(OPTION.seed, metavar="N", type=int, default=0,
                    help="reseed random per test from N and the node id (default 0)")
    group.addoption(OPTION.order, metavar="PATH",
                    help="JSON Lines node ids: run exactly these, in this order")
    group.addoption(OPTION.groups, metavar="PATH",
                    help="run mode: fixture groups (JSON) to watch for undeclared writes")
    group.addoption(OPTION.verified_ns, metavar="T", type=int,
                    help="run mode: when evgate last found the groups as listed (ns since the epoch); "
                         "what changed since counts as changed outside any test")
    group.addoption(OPTION.lease, choices=("auto", "scan"), default="auto",
                    help="how groups are checked after each test: auto (change notifications "
                         "where they can be trusted, else the stat scan) or scan (default auto)")
    group.addoption(OPTION.collect, metavar="PATH",
                    help="collect mode (with --collect-only): write the suite description to PATH")


RUN_KEY = pytest.StashKey["RunRecorder"]()
COLLECT_KEY = pytest.StashKey["CollectRecorder"]()


def pytest_configure(config):
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    if config.option.evidence_gate_channel is not None or config.option.evidence_gate_records:
        config.stash[RUN_KEY] = RunRecorder(config)
        config.pluginmanager.register(config.stash[RUN_KEY], "evidence-gate-run")
    if config.option.evidence_gate_collect:
        if not config.option.collectonly:
            raise pytest.UsageError(f"{OPTION.collect} needs --collect-only")
        config.stash[COLLECT_KEY] = CollectRecorder(config)
        config.pluginmanager.register(config.stash[COLLECT_KEY], "evidence-gate-collect")


def pytest_unconfigure(config):
    run = config.stash.get(RUN_KEY, None)
    if run is not None:
        # Last of the unconfigure hooks (this module was registered before any conftest).
        run.close()
        config.pluginmanager.unregister(run)
        del config.stash[RUN_KEY]
    collect = config.stash.get(COLLECT_KEY, None)
    if collect is not None:
        config.pluginmanager.unregister(collect)
        del config.stash[COLLECT_KEY]
