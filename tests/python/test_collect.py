"""Tests of templates/pytest/evidence_gate_collect.py: the document collect mode writes."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import make_tree


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
    assert doc["plugins"] == [{"name": "evidence_gate_fork", "dist": None, "version": None},
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
