"""Evidence Gate environment manifest: the environment as this interpreter sees it.

``python -m evidence_gate_manifest OUT.json [--root DIR]``, run by ``evgate`` with the
interpreter and environment of the suite's runs. Variable names are all written, values only
for a fail-closed allowlist. Standard library only (and ``evidence_gate_files`` beside it):
pytest is not imported (its version comes from its distribution metadata), so the manifest
costs no pytest start-up.
"""

import argparse
import json
import locale
import os
import platform
import re
import sys
import tempfile
import time

from evidence_gate_files import lstat

SCHEMA = 1


def manifest(root):
    """The environment as this interpreter sees it; env values only if allowlisted."""
    return {
        "schema": SCHEMA,
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "os_release": platform.release(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "locale": effective_locale(),
        "timezone": {
            "TZ": os.environ.get("TZ"),
            "utc_offset_minutes": time.localtime().tm_gmtoff // 60,
            "tzname": list(time.tzname),
        },
        "case_sensitive": {
            "root": None if root is None else dir_case_sensitive(root),
            "tempdir": tempdir_case_sensitive(),
        },
        "encodings": {
            "default": sys.getdefaultencoding(),
            "filesystem": sys.getfilesystemencoding(),
            "preferred": locale.getpreferredencoding(False),
        },
        "pythonhashseed": os.environ.get("PYTHONHASHSEED"),
        "umask": format(current_umask(), "04o"),
        **packages(),
        "env": {name: value for name, value in sorted(os.environ.items()) if env_value_allowed(name)},
        "env_names": sorted(os.environ),
    }


# Fail closed: only these values are written, every other variable by name only. The
# PYTHON* ones are CPython's own, named one by one: a pattern would let PYTHONPYPITOKEN in.
ENV_VALUE_ALLOWED = re.compile(
    r"TZ|LANG|LC_[A-Z]+|PYTHON(?:HASHSEED|PATH|HOME|DONTWRITEBYTECODE|PYCACHEPREFIX|IOENCODING|UTF8|WARNINGS"
    r"|OPTIMIZE|DEVMODE|FAULTHANDLER|NOUSERSITE|USERBASE|UNBUFFERED|VERBOSE|SAFEPATH|INTMAXSTRDIGITS"
    r"|COERCECLOCALE|MALLOC|BREAKPOINT|PLATLIBDIR|STARTUP|TRACEMALLOC|INSPECT|DEBUG)")


def env_value_allowed(name):
    return ENV_VALUE_ALLOWED.fullmatch(name) is not None


def effective_locale():
    result: dict = {"env": {name: value for name, value in sorted(os.environ.items())
                            if name == "LANG" or re.fullmatch(r"LC_[A-Z]+", name)}}
    saved = locale.setlocale(locale.LC_ALL)
    try:
        result["setlocale"] = locale.setlocale(locale.LC_ALL, "")
        result["getlocale"] = list(locale.getlocale())
    except (locale.Error, ValueError) as e:
        result["setlocale"] = None
        result["getlocale"] = None
        result["error"] = str(e)
    finally:
        locale.setlocale(locale.LC_ALL, saved)
    return result


def current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def packages():
    distributions = installed_distributions()
    return {"pytest_version": pytest_version(distributions), "distributions": distributions}


def dir_case_sensitive(directory, names=None):
    """Probe by looking up an existing entry under its case-swapped name; never writes.

    None when no entry name has letters (nothing to probe with).
    """
    try:
        names = os.listdir(directory) if names is None else names
    except OSError:
        return None
    present = set(names)
    for name in names:
        swapped = name.swapcase()
        if swapped == name:
            continue
        if swapped in present:
            return True  # two entries differ only in case
        original = lstat(os.path.join(directory, name))
        other = lstat(os.path.join(directory, swapped))
        if original is None:
            continue  # vanished meanwhile
        return other is None or (other.st_dev, other.st_ino) != (original.st_dev, original.st_ino)
    return None


def tempdir_case_sensitive():
    directory = tempfile.gettempdir()
    try:
        fd, path = tempfile.mkstemp(prefix="evidence-gate-Case-", dir=directory)
    except OSError:
        return None
    os.close(fd)
    try:
        return dir_case_sensitive(directory, [os.path.basename(path)])
    finally:
        os.unlink(path)


def pytest_version(distributions):
    """The version of the pytest this interpreter imports, read without importing it."""
    for name, version in distributions.items():
        if normalized(name) == "pytest":
            return version
    import pytest  # pytest without metadata (a vendored copy)
    return pytest.__version__


def installed_distributions():
    """Name -> version of every distribution on sys.path, as importlib.metadata.distributions()
    finds them (in each directory the *.dist-info ones, then the *.egg-info ones; the first on
    sys.path is the one imported), read from their metadata's header lines only: parsing every
    METADATA file whole with the email package cost most of this module's time."""
    if any(os.path.isfile(entry) for entry in sys.path):  # a zip on sys.path: importlib reads inside
        return distributions_from_importlib()
    versions = {}
    for entry in sys.path:
        directory = entry or "."
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for suffix, inside in ((".dist-info", "METADATA"), (".egg-info", "PKG-INFO")):
            for name in names:
                if not name.endswith(suffix):
                    continue
                path = os.path.join(directory, name)
                headers = metadata_headers(os.path.join(path, inside) if os.path.isdir(path) else path)
                found = headers.get("name")
                if found and found not in versions:
                    versions[found] = headers.get("version")
    return dict(sorted(versions.items()))


def metadata_headers(path):
    """The header fields of a METADATA or PKG-INFO file (up to its first empty line), keys in
    lower case; {} when it cannot be read."""
    headers: dict = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                key, colon, value = line.partition(":")
                if colon and not key[:1].isspace():
                    headers.setdefault(key.strip().lower(), value.strip())
    except OSError:
        return {}
    return headers


def distributions_from_importlib():
    import importlib.metadata
    versions = {}
    for dist in importlib.metadata.distributions():
        metadata = dist.metadata
        name = metadata["Name"]
        if name and name not in versions:
            versions[name] = metadata["Version"]
    return dict(sorted(versions.items()))


def normalized(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def write_json_atomic(path, document):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as f:
        json.dump(document, f, ensure_ascii=False, sort_keys=True, indent=1)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m evidence_gate_manifest",
                                     description="write the environment manifest (JSON)")
    parser.add_argument("out", metavar="OUT.json")
    parser.add_argument("--root", metavar="DIR", help="also probe case sensitivity of DIR (read-only)")
    args = parser.parse_args(argv)
    write_json_atomic(args.out, manifest(args.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
