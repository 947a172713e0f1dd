"""Tests of templates/pytest/evidence_gate_manifest.py: the environment manifest."""

import json
import os
import subprocess
import sys

import pytest

from conftest import PLUGIN_DIR, TIMEOUT


# ----------------------------------------------------------------- manifest mode


def test_manifest_writes_env_names_but_no_secret_values(tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "ReadMe").write_text("x")
    digits = tmp_path / "digits"
    digits.mkdir()
    (digits / "123").write_text("x")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": str(PLUGIN_DIR),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "7",
        "TZ": "UTC",
        "LC_ALL": "C.UTF-8",
        "DEPLOY_API_TOKEN": "canary-123",
        "PYTHON_API_TOKEN": "canary-456",
        "PYTHONPYPITOKEN": "canary-789",  # CPython's prefix, not CPython's variable
    }
    for root, out in ((probe, tmp_path / "manifest.json"), (digits, tmp_path / "digits.json")):
        subprocess.run([sys.executable, "-m", "evidence_gate_manifest", str(out), "--root", str(root)],
                       env=env, cwd=str(tmp_path), check=True, timeout=TIMEOUT)
    text = (tmp_path / "manifest.json").read_text(encoding="utf-8")
    assert "canary-123" not in text and "canary-456" not in text and "canary-789" not in text
    doc = json.loads(text)
    assert doc["schema"] == 1
    assert {"DEPLOY_API_TOKEN", "PYTHON_API_TOKEN", "PYTHONPYPITOKEN", "TZ", "PATH"} <= set(doc["env_names"])
    assert doc["env_names"] == sorted(doc["env_names"])
    assert doc["env"] == {"LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "7",
                          "PYTHONPATH": str(PLUGIN_DIR), "TZ": "UTC"}
    assert doc["pythonhashseed"] == "7"
    assert doc["timezone"]["TZ"] == "UTC" and doc["timezone"]["utc_offset_minutes"] == 0
    assert doc["locale"]["env"] == {"LC_ALL": "C.UTF-8"}
    assert doc["python_executable"] == sys.executable
    assert doc["pytest_version"] == pytest.__version__
    assert doc["distributions"]["pytest"] == pytest.__version__
    assert doc["umask"] == format(current_umask(), "04o")
    assert doc["case_sensitive"] == {"root": True, "tempdir": True}
    assert sorted(os.listdir(probe)) == ["ReadMe"]  # the probe wrote nothing
    assert json.loads((tmp_path / "digits.json").read_text())["case_sensitive"]["root"] is None


def test_the_manifest_costs_no_pytest_start_up(tmp_path):
    out = tmp_path / "manifest.json"
    check = ("import sys, evidence_gate_manifest; evidence_gate_manifest.main([sys.argv[1]]); "
             "assert 'pytest' not in sys.modules, 'the manifest imported pytest'")
    subprocess.run([sys.executable, "-c", check, str(out)], env={**os.environ, "PYTHONPATH": str(PLUGIN_DIR)},
                   cwd=str(tmp_path), check=True, timeout=TIMEOUT)
    assert json.loads(out.read_text())["pytest_version"] == pytest.__version__


def current_umask():
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def manifest_module():
    sys.path.insert(0, str(PLUGIN_DIR))
    try:
        import evidence_gate_manifest
    finally:
        sys.path.remove(str(PLUGIN_DIR))
    return evidence_gate_manifest


def test_distributions_are_those_importlib_metadata_finds():
    manifest = manifest_module()
    assert manifest.installed_distributions() == manifest.distributions_from_importlib()
    assert manifest.installed_distributions()["pytest"] == pytest.__version__


def test_distributions_come_from_header_lines_the_first_on_the_path_winning(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    for directory in (first, second):
        directory.mkdir()

    def dist(directory, name, text, kind="dist-info"):
        if kind == "egg-info file":
            (directory / name).write_text(text, encoding="utf-8")
            return
        (directory / name).mkdir()
        (directory / name / ("METADATA" if kind == "dist-info" else "PKG-INFO")).write_text(text, encoding="utf-8")

    dist(first, "alpha-1.0.dist-info", "Metadata-Version: 2.1\nName: alpha\nVersion: 1.0\n\nName: not-a-header\n")
    dist(first, "beta-2.0.egg-info", "Metadata-Version: 1.1\nName: beta\nVersion: 2.0\n", kind="egg-info")
    dist(first, "gamma.egg-info", "Name: gamma\nVersion: 3.0\nSummary: a long\n  folded: line\n", kind="egg-info file")
    dist(first, "nameless-0.1.dist-info", "Metadata-Version: 2.1\nVersion: 0.1\n")
    (first / "empty-0.1.dist-info").mkdir()  # no METADATA at all
    dist(second, "alpha-9.9.dist-info", "Name: alpha\nVersion: 9.9\n")  # shadowed
    dist(second, "delta-4.0.dist-info", "name: delta\nversion: 4.0\n")
    manifest = manifest_module()
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])
    found = manifest.installed_distributions()
    assert found == {"alpha": "1.0", "beta": "2.0", "delta": "4.0", "gamma": "3.0"}
    assert found == manifest.distributions_from_importlib()
    # Metadata that is not UTF-8 (importlib.metadata raises on it) is read, not a crash.
    (first / "broken-0.1.dist-info").mkdir()
    (first / "broken-0.1.dist-info" / "METADATA").write_bytes(b"Name: broken\nVersion: \xff0.1\n")
    assert manifest.installed_distributions()["broken"] == "\ufffd0.1"
    assert manifest.pytest_version({"PyTest": "8.0", "other": "1"}) == "8.0"
