"""Tests of templates/pytest/evidence_gate_pytest.py: the options, the markers, which mode runs."""

import pytest


# ------------------------------------------------------------------- no options


def test_without_options_only_markers_are_registered(gate):
    gate.pytester.makepyfile(test_plain="""
        import random, pytest
        from evidence_gate_pytest import RUN_KEY, COLLECT_KEY

        @pytest.mark.writes("db")
        @pytest.mark.serial
        @pytest.mark.env_sensitive(until="2999-01-01", owner="me", reason="tz")
        def test_inert(request):
            pm = request.config.pluginmanager
            assert pm.get_plugin("evidence-gate-run") is None
            assert pm.get_plugin("evidence-gate-collect") is None
            assert RUN_KEY not in request.config.stash
            assert COLLECT_KEY not in request.config.stash
    """)
    result = gate.run("--strict-markers")
    result.assert_outcomes(passed=1)
    assert not gate.records_path.exists()
    markers = gate.run("--markers")
    markers.stdout.fnmatch_lines(["@pytest.mark.writes(group, ...)*", "@pytest.mark.serial*",
                                  "@pytest.mark.env_sensitive(until=*"])


def test_collect_mode_requires_collect_only(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result = gate.run(f"--evidence-gate-collect={gate.path / 'c.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (gate.path / "c.json").exists()
