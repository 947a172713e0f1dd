"""A worker: a fork of the collected session's server (evidence_gate_fork_server) for one run.
It takes the run's directory, environment, output and options, and calls the last two hooks of
collection as a fresh pytest calls them. Also the checks of a run's request that need pytest's
view of the options: the command line against the collection's, the start-up environment.
"""

import argparse
import fcntl
import os
import shutil
import sys
import tempfile

from evidence_gate_bytecode import verify_cached_bytecode
from evidence_gate_protocol import OPTION, OPTION_PREFIX

# The environment as the interpreter started with it, before any conftest changed it: a run's
# environment is applied as the difference from this. (Imported with the plugin, at start-up.)
STARTUP_ENVIRON = dict(os.environ)

# The lowest descriptor the record channel is given, as evgate gives it to a process
# (record_channel.hpp): a test that writes to descriptor 3 (a habit from TAP and bats), or to one
# a shell allocates from 10 up, does not stumble on it.
CHANNEL_FLOOR = 100

# Variables read when the interpreter starts, whose value a fork cannot change.
STARTUP_PREFIXES = ("PYTHON", "LD_", "LC_")
STARTUP_NAMES = ("LANG", "LANGUAGE", "TZ")


class Worker:
    """A fork of the server for one run: the run's options, environment and output, then the
    last two hooks of collection as a fresh pytest calls them."""

    def __init__(self, session, collected, run, fds, output):
        self.session = session
        self.config = session.config
        self.collected = collected
        self.run = run
        self.log, channel = fds
        self.channel = placed(channel, run["options"].get("evidence_gate_channel"))
        self.output_fds = output

    def begin(self, session):
        config = self.config
        # A fork imports a module a test imports first as a process would, from the cache another
        # run may have left cut short.
        verify_cached_bytecode()
        os.chdir(self.run["cwd"])
        self.environment()
        self.output()
        args = [f"{OPTION.channel}={self.channel}" if a.startswith(f"{OPTION.channel}=") else a
                for a in self.run["args"]]
        sys.argv = [sys.argv[0], *args]
        params = config.invocation_params
        config.invocation_params = type(params)(args=args, plugins=params.plugins, dir=params.dir)
        for dest, value in self.run["options"].items():
            setattr(config.option, dest, value)
        config.option.evidence_gate_channel = self.channel
        # The collection's --collect-only and -q are not the run's.
        config.option.collectonly = False
        config.option.verbose += 1
        if hasattr(config.option, "quiet"):
            config.option.quiet -= 1
        factory = getattr(config, "_tmp_path_factory", None)  # its base is computed once, from TMPDIR
        if factory is not None and getattr(factory, "_given_basetemp", None) is None:
            factory._basetemp = None
        recorder = self.run_mode()
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.stats.pop("deselected", None)  # counted again below
            reporter.pytest_sessionstart(session)  # its header and start time
            reporter.write_line(f"evidence-gate: this run is a fork (pid {os.getpid()}) of the session "
                                f"collected by process {os.getppid()}")
        recorder.pytest_sessionstart(session)
        session.items[:] = self.collected
        try:
            config.hook.pytest_collection_modifyitems(session=session, config=config, items=session.items)
        finally:
            config.hook.pytest_collection_finish(session=session)
        session.testscollected = len(session.items)
        recorder.after_collection()

    def environment(self):
        """The run's environment, as its difference from the one evgate started the collection
        with: what the session's own code set, or a wrapper that started the interpreter (a pyenv
        shim's PATH), stays where the run does not change it, as it would in a fresh process."""
        run, launched = self.run["environ"], self.run["launched"]
        for name in set(run) | set(launched):
            if run.get(name) == launched.get(name):
                continue
            if name in run:
                os.environ[name] = run[name]
            else:
                os.environ.pop(name, None)
        tempfile.tempdir = None  # TMPDIR is looked at again

    def output(self):
        """The run's log wherever the collection's output went, and global capture started
        afresh: its temporary files are this worker's own."""
        for fd in self.output_fds:
            os.dup2(self.log, fd)
        os.close(self.log)
        capman = self.config.pluginmanager.get_plugin("capturemanager")
        if capman is not None:
            capman.start_global_capturing()
            capman.suspend_global_capture()

    def run_mode(self):
        """Run mode registered as evidence_gate_pytest's pytest_configure registers it; collect
        and serve mode gone."""
        import evidence_gate_pytest as entry
        from evidence_gate_fork import SERVE_KEY
        from evidence_gate_records import RunRecorder
        config = self.config
        for key in (entry.COLLECT_KEY, SERVE_KEY):
            plugin = config.stash.get(key, None)
            if plugin is not None:
                config.pluginmanager.unregister(plugin)
                del config.stash[key]
        config.stash[entry.RUN_KEY] = RunRecorder(config)
        config.pluginmanager.register(config.stash[entry.RUN_KEY], "evidence-gate-run")
        return config.stash[entry.RUN_KEY]


def placed(fd, wanted):
    """The record channel `fd` where the run's command line says it is (`wanted`, as evgate
    numbers it for a process), when that is free and at CHANNEL_FLOOR or above; else at the
    lowest free descriptor from CHANNEL_FLOOR up (the command line then names that one).
    Close-on-exec either way."""
    if isinstance(wanted, int) and wanted >= CHANNEL_FLOOR and wanted != fd and not is_open(wanted):
        os.dup2(fd, wanted, inheritable=False)
        os.close(fd)
        return wanted
    if fd >= CHANNEL_FLOOR:
        return fd
    try:
        moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, CHANNEL_FLOOR)
    except OSError:
        return fd
    os.close(fd)
    return moved


def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def is_startup_variable(name):
    return name.startswith(STARTUP_PREFIXES) or name in STARTUP_NAMES


def arguments_after_pytest(argv, launched):
    """The arguments after `python -m pytest`, when argv runs this interpreter — the one evgate
    named when it started the collection (`launched`: a wrapper such as a pyenv shim is the same
    wrapper), or this very executable; else None."""
    if len(argv) < 3 or argv[1:3] != ["-m", "pytest"]:
        return None
    if argv[0] == launched:
        return argv[3:]
    exe = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if exe is None or os.path.realpath(exe) != os.path.realpath(sys.executable):
        return None
    return argv[3:]


def different_arguments(run, collection):
    """How a run's pytest arguments differ from the collection's, their --evidence-gate-*
    options and the collection's own --collect-only and -q aside; None when they agree."""
    run = [a for a in run if not a.startswith(OPTION_PREFIX)]
    collection = [a for a in collection if not a.startswith(OPTION_PREFIX)]
    for own in ("--collect-only", "-q"):
        if own not in collection:
            return f"the collection was not run with {own}"
        collection.remove(own)
    if run == collection:
        return None
    for ours, theirs in zip(run, collection):
        if ours != theirs:
            return f"{ours!r} where the collection had {theirs!r}"
    return f"{len(run)} arguments where the collection had {len(collection)}"


class OptionGroup:
    """What the plugin's pytest_addoption hooks use of pytest's parser, over argparse."""

    def __init__(self, parser):
        self.parser = parser

    def getgroup(self, *args, **kwargs):
        return self

    def addoption(self, *names, **attrs):
        self.parser.add_argument(*names, **attrs)


class RaisingParser(argparse.ArgumentParser):
    def error(self, message):
        raise ValueError(message)


def option_parser():
    """The --evidence-gate-* options of the plugin, typed as pytest parses them."""
    import evidence_gate_fork
    import evidence_gate_pytest
    parser = RaisingParser(add_help=False, allow_abbrev=False)
    evidence_gate_pytest.pytest_addoption(OptionGroup(parser))
    evidence_gate_fork.pytest_addoption(OptionGroup(parser))
    return parser


def evidence_gate_options(parser, args):
    """Every --evidence-gate-* option's value in a run's arguments (the default when absent)."""
    namespace, _ = parser.parse_known_args([a for a in args if a.startswith(OPTION_PREFIX)])
    return vars(namespace)
