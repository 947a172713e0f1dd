"""What an evidence run sets aside of the suite's own pytest setup, and why.

A run is one order of the collected tests, every test once, in one process, with nothing
written beside the sources. Some options and plugins a suite commits to its ``addopts``
would make it something else; each is accepted (so the suite's configuration still parses,
unedited) and set aside, and the receipt, each run's log and a WARN row of the gate name it:

* pytest's cache (``-p no:cacheprovider``, which takes stepwise with it, from evgate): no
  ``.pytest_cache`` beside the sources, every run starts as on a fresh checkout. ``--lf``,
  ``--ff``, ``--nf``, ``--sw`` and the rest are accepted here and do nothing;
* pytest-randomly and pytest-random-order (``-p no:randomly -p no:random_order``, after the
  suite's own arguments): the order is evgate's. Their options likewise, where installed;
* pytest-xdist stays loaded (``worker_id``, the ``xdist_group`` marker and a conftest's
  xdist hooks work as under ``-n 0``), but ``-n``, ``--dist`` and ``--tx`` are set aside:
  every run is one order in one process, and ``ctest -j`` runs orders side by side;
* pytest-rerunfailures stays loaded until pytest is configured (its ``flaky`` marker and its
  options stay valid), then is unregistered: no test is rerun inside a run, so a failure is
  never hidden by a pass on a rerun, and evgate's reruns of whole orders tell a flaky test
  from an order-dependent one;
* pytest-cov: ``--cov`` is set aside as by ``--no-cov``: coverage of shuffled orders is no
  report anyone asked for, and its data file would be written into the source tree.

pytest-timeout stays as the suite configures it: its timeout fails the test (or, with its
thread method, ends the process: the test is ``interrupted`` and the order goes on), below
evgate's own ``TEST_TIMEOUT``.

Only in evidence runs (an ``--evidence-gate-*`` mode option): a plain ``pytest -p
evidence_gate_pytest`` is left alone.

PYTEST_DONT_REWRITE: the plugin's other modules import this one before pytest loads it as a
plugin, which, were it rewritten, pytest would warn about in every run.
"""

import importlib.metadata
import threading

import pytest

# Plugins that reorder tests themselves (pytest11 entry point -> distribution); evgate passes
# -p no:<name> for them.
REORDERERS = {"randomly": "pytest-randomly", "random_order": "pytest-random-order"}

FLAG = {"action": "store_true"}
VALUE: dict = {}

# The plugins evgate turns off in every run: the blocked plugin's name, who it is to a reader,
# why it is off, and the options it would have defined (flags, its dest, how they parse).
TURNED_OFF = (
    ("cacheprovider", "pytest's cache",
     "off in evidence runs: nothing is written beside the sources, every run starts as on a fresh checkout",
     ((("--lf", "--last-failed"), "lf", FLAG), (("--ff", "--failed-first"), "failedfirst", FLAG),
      (("--nf", "--new-first"), "newfirst", FLAG), (("--cache-show",), "cacheshow", {"nargs": "?", "const": "*"}),
      (("--cache-clear",), "cacheclear", FLAG),
      (("--lfnf", "--last-failed-no-failures"), "last_failed_no_failures", {"choices": ("all", "none")}),
      (("--sw", "--stepwise"), "stepwise", FLAG), (("--sw-skip", "--stepwise-skip"), "stepwise_skip", FLAG),
      (("--sw-reset", "--stepwise-reset"), "stepwise_reset", FLAG))),
    ("randomly", "pytest-randomly", "off in evidence runs: the order is evidence-gate's",
     ((("--randomly-seed",), "randomly_seed", VALUE),
      (("--randomly-dont-reset-seed",), "randomly_reset_seed", {"action": "store_false"}),
      (("--randomly-dont-reorganize",), "randomly_reorganize", {"action": "store_false"}))),
    ("random_order", "pytest-random-order", "off in evidence runs: the order is evidence-gate's",
     ((("--random-order",), "random_order_enabled", FLAG), (("--random-order-bucket",), "random_order_bucket", VALUE),
      (("--random-order-seed",), "random_order_seed", VALUE))),
)

XDIST_WHY = "every run is one order in one process (ctest -j runs orders side by side)"
RERUN_WHY = ("no test is rerun inside a run, so a failure shows; evidence-gate reruns whole orders "
             "to tell flaky from order-dependent")
COV_WHY = "no coverage in evidence runs (its data file would be written beside the sources)"

ASIDE_KEY = pytest.StashKey["Aside"]()


class Aside:
    """What this pytest set aside: a phrase per plugin, and pytest-rerunfailures' options once it
    is unregistered (its flaky markers are known only after collection)."""

    def __init__(self):
        self.phrases = []
        self.reruns = None

    def note(self, who, given, why):
        if given:
            self.phrases.append(f"{who}'s {', '.join(given)}: {why}")


def aside(config):
    return config.stash.setdefault(ASIDE_KEY, Aside())


def set_aside(config, items=()):
    """What this pytest sets aside, one phrase per plugin ("pytest-xdist's -n 4: why"); with the
    collected `items`, the flaky markers pytest-rerunfailures would have rerun as well."""
    state = config.stash.get(ASIDE_KEY, None)
    if state is None:
        return []
    phrases = list(state.phrases)
    if state.reruns is not None:
        flaky = sum(1 for item in items if item.get_closest_marker("flaky") is not None)
        given = state.reruns + ([f"@pytest.mark.flaky on {flaky} test(s)"] if flaky else [])
        if given:
            phrases.append(f"pytest-rerunfailures's {', '.join(given)}: {RERUN_WHY}")
    return phrases


def evidence_run(option):
    """Does evgate run this pytest (any of its modes), rather than a person by hand?"""
    return any(getattr(option, name, None) is not None for name in (
        "evidence_gate_channel", "evidence_gate_records", "evidence_gate_collect", "evidence_gate_serve"))


# A wrapper, so that it comes before pytest-cov's own (tryfirst) decides whether to measure. By
# now every plugin of the command line, the entry points and PYTEST_PLUGINS is loaded or blocked,
# and addopts and PYTEST_ADDOPTS are in `args`; initial conftests add their options here too.
@pytest.hookimpl(hookwrapper=True)
def pytest_load_initial_conftests(early_config, parser, args):
    known = early_config.known_args_namespace
    if evidence_run(known):
        stand_in_for_turned_off(early_config, parser, args)
        if early_config.pluginmanager.has_plugin("pytest_cov") and getattr(known, "cov_source", None):
            given = [given_value("--cov", source) for source in known.cov_source]
            aside(early_config).note("pytest-cov", given, COV_WHY)
            # As if the suite had said --no-cov: pytest-cov reads the early namespace, pytest the args.
            known.no_cov = True
            args.append("--no-cov")
    yield


def stand_in_for_turned_off(config, parser, args):
    """The options of each plugin evgate turned off, accepted so that the suite's configuration
    parses unedited, and noted where the suite gives them. Only those no plugin defined: one
    loaded and then blocked (`-p randomly` before evgate's `-p no:randomly`) left its own."""
    known = config.known_args_namespace
    group = parser.getgroup("evidence-gate")
    for name, who, why, options in TURNED_OFF:
        if not config.pluginmanager.is_blocked(name):
            continue
        if name != "cacheprovider" and name not in installed_reorderers():
            continue  # not installed: the suite's options for it are as wrong as in a plain pytest
        for flags, dest, attrs in options:
            if not hasattr(known, dest):
                group.addoption(*flags, dest=dest, **attrs, help=f"set aside in evidence runs: {who} is {why}")
        aside(config).note(who, given_options(args, options), why)


def given_options(args, options):
    """The words of `args` that give one of `options`, each with its value ("--lfnf=none")."""
    given = []
    for i, word in enumerate(args):
        if word == "--":
            break
        flag, _, value = str(word).partition("=")
        for flags, _, attrs in options:
            if flag in flags:
                takes_value = attrs.get("action") is None and "nargs" not in attrs
                if takes_value and not value and i + 1 < len(args):
                    value = str(args[i + 1])
                given.append(f"{flag}={value}" if value else flag)
    return given


# A wrapper: before pytest-xdist's own (tryfirst) turns -n into workers.
@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config):
    option = config.option
    if evidence_run(option) and config.pluginmanager.has_plugin("xdist"):
        given = [f"-n {option.numprocesses}"] if option.numprocesses else []
        given += [f"--dist {option.dist}"] if option.dist != "no" else []
        given += [f"--tx {spec}" for spec in option.tx or ()]
        given += ["-d"] if getattr(option, "distload", False) else []
        given += ["--looponfail"] if getattr(option, "looponfail", False) else []
        aside(config).note("pytest-xdist", given, XDIST_WHY)
        # What -n 0 gives: pytest-xdist then leaves the run to pytest.
        option.numprocesses, option.dist, option.tx, option.distload = 0, "no", [], False
        if hasattr(option, "looponfail"):
            option.looponfail = False
    yield


# trylast: after pytest-rerunfailures' own pytest_configure registered its marker.
@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    rerunfailures = config.pluginmanager.get_plugin("rerunfailures")
    if rerunfailures is None or not evidence_run(config.option):
        return
    option = config.option
    given = [f"--reruns {option.reruns}"] if getattr(option, "reruns", None) else []
    given += [f"--force-reruns {option.force_reruns}"] if getattr(option, "force_reruns", None) else []
    if not given and config.getini("reruns"):
        given = [f"reruns = {config.getini('reruns')} (ini)"]
    aside(config).reruns = given
    config.pluginmanager.unregister(rerunfailures)


def given_value(flag, value):
    return flag if value is True else f"{flag}={value}"


def idle_threads(config):
    """Threads a plugin starts at configuration that run nothing a test could see, and that a
    fork need not have: pytest-rerunfailures' server of rerun counts for pytest-xdist's workers
    (started whenever pytest-xdist is installed), which no worker reaches, since every run is
    one process."""
    server = getattr(config, "failures_db", None)
    if server is None:
        return set()
    return {thread for thread in threading.enumerate()
            if getattr(getattr(thread, "_target", None), "__self__", None) is server}


def installed_reorderers():
    """Reordering plugins installed as pytest11 entry points, enabled or not."""
    installed = []
    for name, dist in REORDERERS.items():
        # By name: reading every installed distribution's entry points costs milliseconds.
        try:
            entry_points = importlib.metadata.distribution(dist).entry_points
        except importlib.metadata.PackageNotFoundError:
            continue
        if any(ep.group == "pytest11" and ep.name == name for ep in entry_points):
            installed.append(name)
    return sorted(installed)


def pytest_unconfigure(config):
    if ASIDE_KEY in config.stash:
        del config.stash[ASIDE_KEY]
