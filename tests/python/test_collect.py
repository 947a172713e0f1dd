"""Tests of templates/pytest/evidence_gate_collect.py: the document collect mode writes."""

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import PLUGIN_DIR, make_tree


# ------------------------------------------------------------------ collect mode


def test_collect_document(gate, monkeypatch):
    pytester = gate.pytester
    pytester.makefile(".ini", pytest="""
        [pytest]
        testpaths = tests
        addopts = -rA
    """)
    monkeypatch.setenv("PYTEST_ADDOPTS", "--tb=short -p no:cacheprovider")
    pytester.makeconftest("")
    make_tree(pytester.path, {
        "tests/conftest.py": "",
        "tests/test_m.py": textwrap.dedent("""
            import datetime, pytest

            def test_plain(): pass

            @pytest.mark.serial
            @pytest.mark.writes("db")
            @pytest.mark.writes("cfg", "db")
            def test_marked(): pass

            @pytest.mark.env_sensitive(until=datetime.date(2030, 1, 2), owner="ops", reason="needs TZ")
            def test_sensitive(): pass

            @pytest.mark.writes("tree")
            class TestC:
                @pytest.mark.writes("db")
                def test_in_class(self): pass
        """),
        "tests/test_broken.py": "import no_such_module_here\n",
    })
    out = pytester.path / "collect.json"
    result = gate.run("--collect-only", f"--evidence-gate-collect={out}")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert not Path(str(out) + ".tmp").exists()
    assert doc["schema"] == 1
    assert doc["rootdir"] == str(pytester.path)
    assert doc["configfile"] == str(pytester.path / "pytest.ini")
    assert doc["inifile_kind"] == "pytest.ini"
    assert doc["testpaths"] == ["tests"]
    assert doc["addopts"] == ["-rA", "--tb=short", "-p", "no:cacheprovider"]
    assert doc["args"] == ["tests"]
    assert doc["invocation_dir"] == str(pytester.path)
    assert doc["conftests"] == sorted([str(pytester.path / "conftest.py"), str(pytester.path / "tests/conftest.py")])
    assert doc["plugins"] == [{"name": "evidence_gate_aside", "dist": None, "version": None},
                              {"name": "evidence_gate_fork", "dist": None, "version": None},
                              {"name": "evidence_gate_pytest", "dist": None, "version": None}]
    assert doc["python"] == sys.executable
    assert doc["pytest_version"] == pytest.__version__
    assert doc["tests"] == [
        {"id": "tests/test_m.py::test_plain", "serial": False, "writes": [], "env_sensitive": None},
        {"id": "tests/test_m.py::test_marked", "serial": True, "writes": ["cfg", "db"], "env_sensitive": None},
        {"id": "tests/test_m.py::test_sensitive", "serial": False, "writes": [],
         "env_sensitive": {"until": "2030-01-02", "owner": "ops", "reason": "needs TZ"}},
        {"id": "tests/test_m.py::TestC::test_in_class", "serial": False, "writes": ["db", "tree"],
         "env_sensitive": None},
    ]
    assert [e["nodeid"] for e in doc["errors"]] == ["tests/test_broken.py"]
    assert "no_such_module_here" in doc["errors"][0]["message"]
    assert len(doc["errors"][0]["message"]) <= 2000
    assert doc["exitstatus"] == result.ret == pytest.ExitCode.INTERRUPTED


# ------------------------------------------------------------- what collection lost


def test_tests_deselected_or_removed_by_a_hook_are_named_with_who(gate, monkeypatch):
    """A conftest deselects through pytest_deselected, takes another out of the items without a
    word, a plugin from PYTEST_PLUGINS deselects a third, and -k a fourth: each is listed, with
    the code that called pytest_deselected where there was one."""
    site = gate.path / "site"
    make_tree(gate.path, {"site/thinplug.py": textwrap.dedent("""
        def pytest_collection_modifyitems(config, items):
            drop = [i for i in items if i.name == "test_by_plugin"]
            config.hook.pytest_deselected(items=drop)
            items[:] = [i for i in items if i not in drop]
    """)})
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_DIR), str(site)]))
    monkeypatch.setenv("PYTEST_PLUGINS", "thinplug")
    gate.pytester.makeconftest("""
        def pytest_collection_modifyitems(config, items):
            drop = [i for i in items if i.name == "test_by_conftest"]
            config.hook.pytest_deselected(items=drop)
            items[:] = [i for i in items if i not in drop and i.name != "test_quietly"]
    """)
    gate.pytester.makepyfile(test_m="""
        def test_kept(): pass
        def test_by_conftest(): pass
        def test_quietly(): pass
        def test_by_plugin(): pass
        def test_by_k(): pass
    """)
    out = gate.path / "collect.json"
    gate.run("--collect-only", f"--evidence-gate-collect={out}", "-k", "not test_by_k")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [t["id"] for t in doc["tests"]] == ["test_m.py::test_kept"]
    assert doc["deselected"] == [
        {"id": "test_m.py::test_by_conftest", "by": "conftest.py:3 (pytest_collection_modifyitems)"},
        {"id": "test_m.py::test_quietly", "by": None},
        {"id": "test_m.py::test_by_plugin", "by": "thinplug (pytest_collection_modifyitems)"},
        {"id": "test_m.py::test_by_k", "by": "pytest's -k/-m"},
    ]
    assert doc["pytest_plugins_env"] == ["thinplug"]


def test_nothing_lost_nothing_listed(gate, monkeypatch):
    monkeypatch.delenv("PYTEST_PLUGINS", raising=False)
    gate.pytester.makepyfile(test_m="def test_a(): pass\n")
    out = gate.path / "collect.json"
    gate.run("--collect-only", f"--evidence-gate-collect={out}")
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert (doc["deselected"], doc["pytest_plugins_env"]) == ([], [])


def test_collect_lists_the_files_imported_from_outside_the_installation(gate):
    """The files of every module the collection imported that is no part of the interpreter's
    installation, conftests included: a library beside rootdir that a conftest puts on sys.path
    is among them; the standard library, pytest and the plugin are not."""
    pytester = gate.pytester
    lib = pytester.path.parent / f"{pytester.path.name}-lib"
    lib.mkdir()
    (lib / "helper_beside_root.py").write_text("def answer():\n    return 42\n")
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(lib)!r})\n")
    make_tree(pytester.path, {"tests/test_h.py": "import json\nimport helper_beside_root\n\ndef test_h(): pass\n"})
    out = pytester.path / "collect.json"
    gate.run("--collect-only", f"--evidence-gate-collect={out}")
    imported = json.loads(out.read_text(encoding="utf-8"))["imported"]
    assert str(lib / "helper_beside_root.py") in imported, imported
    assert str(pytester.path / "conftest.py") in imported and str(pytester.path / "tests/test_h.py") in imported, imported
    for installed in (json.__file__, pytest.__file__, str(Path(__file__).parents[2] / "templates/pytest/evidence_gate_pytest.py")):
        assert str(Path(installed).resolve()) not in imported and installed not in imported, installed
    assert imported == sorted(imported)
