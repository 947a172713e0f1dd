"""Collect mode of the Evidence Gate pytest plugin (``--evidence-gate-collect`` with
``--collect-only``): one JSON document describing the suite (each test with its markers)
and the configuration that found it (rootdir, config file, options and where they came
from, conftests, plugins, interpreter). evgate turns it into the receipt and the CTest
entries.

It also says what collection lost on the way: each test a hook deselected (through
``pytest_deselected``, with the code that called it) or took out of the items without a
word, and the plugins ``PYTEST_PLUGINS`` in the environment loads. evgate's thinning row
names them: a conftest or plugin that thins the suite does so in every run alike, and
nothing else would say so.
"""

import os
import platform
import shlex
import site
import sys
import sysconfig
import types

import pytest

from evidence_gate_aside import set_aside
from evidence_gate_manifest import write_json_atomic

SCHEMA = 1


class CollectRecorder:
    """Hooks and state of collect mode."""

    def __init__(self, config):
        self.config = config
        self.errors = []
        self.collected = {}  # node id -> None, in collection order (items before any hook)
        self.deselected = {}  # node id -> who deselected it

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append({"nodeid": report.nodeid, "message": str(report.longrepr)[:2000]})

    def pytest_itemcollected(self, item):
        self.collected.setdefault(item.nodeid)

    def pytest_deselected(self, items):
        by = hook_caller(self.config)
        for item in items:
            self.deselected.setdefault(item.nodeid, by)

    def lost(self, items):
        """Collected tests the final items lack: each with who deselected it (None: taken out
        without pytest_deselected, by a hook that is not known)."""
        kept = {item.nodeid for item in items}
        return [{"id": nodeid, "by": self.deselected.get(nodeid)} for nodeid in self.collected if nodeid not in kept]

    def pytest_sessionfinish(self, session, exitstatus):
        config = self.config
        write_json_atomic(config.option.evidence_gate_collect, {
            "schema": SCHEMA,
            "rootdir": str(config.rootpath),
            "configfile": str(config.inipath) if config.inipath else None,
            "inifile_kind": config.inipath.name if config.inipath else None,
            "testpaths": list(config.getini("testpaths")),
            "addopts": list(config.getini("addopts")) + shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
            # The same by source: evgate says where an option that thins the run came from.
            "addopts_ini": list(config.getini("addopts")),
            "addopts_env": shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
            "args": list(config.args),
            "invocation_dir": str(config.invocation_params.dir),
            "conftests": loaded_conftests(config),
            "imported": imported_files(config),
            "plugins": plugin_list(config),
            "python": sys.executable,
            "python_version": platform.python_version(),
            "pytest_version": pytest.__version__,
            "tests": [describe(item) for item in session.items],
            "deselected": self.lost(session.items),
            "set_aside": set_aside(config, session.items),
            "pytest_plugins_env": [name.strip() for name in os.environ.get("PYTEST_PLUGINS", "").split(",") if name.strip()],
            "errors": self.errors,
            "exitstatus": int(exitstatus),
        })


def hook_caller(config):
    """Who called the hook being run: 'conftest.py:7 (pytest_collection_modifyitems)' for a
    conftest, 'thinplug (pytest_collection_modifyitems)' for a plugin module, "pytest's -k/-m"
    (or "pytest's --deselect") for pytest's own options; None when nothing outside the hook
    machinery did."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module == "_pytest" or module.startswith("_pytest."):
            return PYTEST_CALLERS.get(module, f"pytest ({module})")
        if module != __name__ and module != "pluggy" and not module.startswith("pluggy."):
            return describe_caller(frame, config)
        frame = frame.f_back
    return None


PYTEST_CALLERS = {"_pytest.mark": "pytest's -k/-m", "_pytest.main": "pytest's --deselect",
                  "_pytest.cacheprovider": "pytest's cache (--lf, --sw)"}


def describe_caller(frame, config):
    path = frame.f_code.co_filename
    function = frame.f_code.co_name
    if os.path.basename(path) == "conftest.py":
        relative = os.path.relpath(path, str(config.rootpath))
        return f"{path if relative.startswith('..') else relative}:{frame.f_lineno} ({function})"
    return f"{frame.f_globals.get('__name__', path)} ({function})"


def plugin_list(config):
    """Plugin modules that are neither pytest's own nor conftests, with their distribution."""
    dists = {id(plugin): dist for plugin, dist in config.pluginmanager.list_plugin_distinfo()}
    plugins = []
    for name, plugin in config.pluginmanager.list_name_plugin():
        # Non-module plugins are state objects of a module plugin listed anyway.
        if (not isinstance(plugin, types.ModuleType) or name.isdigit()
                or plugin.__name__ == "_pytest" or plugin.__name__.startswith("_pytest.")
                or os.path.basename(getattr(plugin, "__file__", None) or "") == "conftest.py"):
            continue
        dist = dists.get(id(plugin))
        plugins.append({
            "name": name,
            "dist": dist.project_name if dist is not None else None,
            "version": dist.version if dist is not None else None,
        })
    return sorted(plugins, key=lambda p: p["name"])


def describe(item):
    sensitive = item.get_closest_marker("env_sensitive")
    return {
        "id": item.nodeid,
        "serial": item.get_closest_marker("serial") is not None,
        "writes": sorted({group for mark in item.iter_markers("writes") for group in mark.args}),
        "env_sensitive": None if sensitive is None else {
            # str(): a datetime.date for "until" becomes YYYY-MM-DD.
            key: None if sensitive.kwargs.get(key) is None else str(sensitive.kwargs[key])
            for key in ("until", "owner", "reason")
        },
    }


def loaded_conftests(config):
    """The conftest files pytest loaded, absolute (run mode's session record says them too)."""
    return sorted({
        os.path.abspath(str(plugin.__file__))
        for plugin in config.pluginmanager.get_plugins()
        if isinstance(plugin, types.ModuleType)
        and os.path.basename(getattr(plugin, "__file__", None) or "") == "conftest.py"
    })


def imported_files(config):
    """The files of the modules the collection imported that are no part of the interpreter's
    installation (its prefixes, the standard library, site-packages), and the conftests:
    absolute. A library beside ROOT that a conftest puts on sys.path is among them; evgate
    digests them with the sources a shard ran over (runs/receipt_sources.hpp)."""
    rootdir = os.path.abspath(str(config.rootpath))
    installed = _installed_dirs(rootdir)
    files = set(loaded_conftests(config))
    paths = [getattr(module, "__file__", None) for module in list(sys.modules.values())]
    for path in paths + sorted(mapped_libraries()):
        if not isinstance(path, str) or not path:
            continue
        path = os.path.abspath(path)
        if not any(_inside(path, d) for d in installed):
            files.add(path)
    return sorted(files)


# The system's own libraries: never the project's, and they differ between machines.
SYSTEM_LIBRARY_DIRS = ("/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/")


def mapped_libraries():
    """The shared libraries the process has mapped (Linux): a compiled module's own libraries,
    libgeo.so beside the _geo module in a build tree, which a rebuild changes while the module
    itself may come out byte-identical; the system's are left out. None where there is no
    /proc/self/maps."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="surrogateescape") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        fields = line.split(None, 5)
        if len(fields) < 6 or not fields[5].startswith("/") or fields[5].endswith(" (deleted)"):
            continue
        path = fields[5]
        if ".so" in os.path.basename(path) and not path.startswith(SYSTEM_LIBRARY_DIRS):
            found.add(path)
    return found


def _installed_dirs(rootdir):
    """Where the interpreter keeps what is installed; a prefix that holds ROOT (a system
    interpreter's /usr and a checkout below it) counts only through its library dirs."""
    dirs = {os.path.dirname(os.path.abspath(__file__))}  # this plugin
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.abspath(path))
    for site_dir in list(getattr(site, "getsitepackages", list)()) + [site.getusersitepackages()]:
        dirs.add(os.path.abspath(site_dir))
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        prefix = os.path.abspath(prefix)
        if not _inside(rootdir, prefix):
            dirs.add(prefix)
    return dirs


def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
