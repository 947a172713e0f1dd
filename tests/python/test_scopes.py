"""Tests of templates/pytest/evidence_gate_scopes.py: what a fixture wider than a test changes while
it is set up or torn down is the fixture's, not the test it happened in."""

import pytest

from conftest import data_groups, results, run_leased

TESTS = """
    import pytest

    def test_one():
        pass

    def test_two():
        pass
"""


def outside(records):
    return [r for r in records if r["event"] == "outside"]


def test_a_session_fixture_writing_at_teardown_is_named_and_the_last_test_is_not_blamed(gate, lease_mode):
    groups = data_groups(gate)
    gate.pytester.makeconftest("""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="session", autouse=True)
        def server():
            yield
            Path("data/config.txt").write_text("written at session-fixture teardown\\n")
    """)
    gate.pytester.makepyfile(test_a=TESTS)
    records = run_leased(gate, lease_mode, groups)
    assert outside(records) == [{"event": "outside", "phase": "fixture teardown", "fixture": "server", "scope": "session",
                                 "location": "conftest.py:4", "test": "test_a.py::test_two", "changed": ["data"]}]
    assert all(r["dirty"] == [] and r["outcome"] == "passed" for r in results(records).values()), records


@pytest.mark.parametrize("scope", ["module", "class", "package"])
def test_a_wide_fixture_writing_at_setup_is_named_not_the_first_test(gate, lease_mode, scope):
    groups = data_groups(gate)
    gate.pytester.makeconftest(f"""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="{scope}")
        def prepared():
            Path("data/config.txt").write_text("written at setup\\n")
    """)
    gate.pytester.makepyfile(test_a="""
        class TestIt:
            def test_one(self, prepared):
                pass

            def test_two(self, prepared):
                pass
    """)
    records = run_leased(gate, lease_mode, groups)
    [record] = outside(records)
    assert (record["phase"], record["fixture"], record["scope"], record["test"]) == (
        "fixture setup", "prepared", scope, "test_a.py::TestIt::test_one")
    assert all(r["dirty"] == [] for r in results(records).values()), records


def test_a_wide_fixture_every_user_of_which_declares_the_group_is_their_write(gate, lease_mode):
    """Its change at setup and at teardown is the tests' declared change: no outside record, no
    polluter; the test it happened in lists it as changed."""
    groups = data_groups(gate)
    gate.pytester.makeconftest("""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="module")
        def scratch():
            Path("data/scratch.txt").write_text("made by the fixture\\n")
            yield
            Path("data/scratch.txt").unlink()
    """)
    gate.pytester.makepyfile(test_a="""
        import pytest

        @pytest.mark.writes("data")
        def test_one(scratch):
            pass

        @pytest.mark.writes("data")
        def test_two(scratch):
            pass
    """)
    records = run_leased(gate, lease_mode, groups)
    assert outside(records) == []
    by_name = {nodeid.split("::")[1]: r for nodeid, r in results(records).items()}
    assert (by_name["test_one"]["changed"], by_name["test_two"]["changed"]) == (["data"], ["data"])
    assert all(r["dirty"] == [] for r in by_name.values())


def test_a_wide_fixture_a_user_of_which_does_not_declare_the_group_is_outside(gate, lease_mode):
    groups = data_groups(gate)
    gate.pytester.makeconftest("""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="module")
        def scratch():
            yield
            Path("data/config.txt").write_text("changed at teardown\\n")
    """)
    gate.pytester.makepyfile(test_a="""
        import pytest

        @pytest.mark.writes("data")
        def test_one(scratch):
            pass

        def test_two(scratch):
            pass
    """)
    records = run_leased(gate, lease_mode, groups)
    [record] = outside(records)
    assert (record["phase"], record["fixture"], record["test"]) == ("fixture teardown", "scratch", "test_a.py::test_two")
    assert all(r["dirty"] == [] for r in results(records).values()), records


def test_the_test_itself_is_still_blamed_for_its_own_write(gate, lease_mode):
    """A test that writes the group undeclared, then a session fixture's teardown in its teardown:
    both are named, each for its own change."""
    groups = data_groups(gate)
    gate.pytester.makeconftest("""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="session", autouse=True)
        def server():
            yield
            Path("data/other.txt").write_text("at teardown\\n")

        @pytest.fixture
        def per_test():
            yield
            Path("data/config.txt").write_text("by a function-scoped fixture: the test's own\\n")
    """)
    gate.pytester.makepyfile(test_a="""
        def test_only(per_test):
            pass
    """)
    records = run_leased(gate, lease_mode, groups)
    [result] = results(records).values()
    assert result["dirty"] == ["data"], result
    [record] = outside(records)
    assert (record["fixture"], record["test"]) == ("server", "test_a.py::test_only")


def test_a_wide_fixture_torn_down_at_session_end_is_outside_any_test(gate, lease_mode):
    """Under -x pytest stops after a failure and tears down what is left: before 8.2 in
    pytest_sessionfinish (outside any test), from 8.2 on in the failed test's own teardown
    (pytest's #11706); either way the write is named with its fixture and blames no test."""
    groups = data_groups(gate)
    gate.pytester.makeconftest("""
        import pytest
        from pathlib import Path

        @pytest.fixture(scope="session", autouse=True)
        def server():
            yield
            Path("data/config.txt").write_text("at teardown\\n")
    """)
    gate.pytester.makepyfile(test_a="def test_fails():\n    assert 0\n\ndef test_never():\n    pass\n")
    records = run_leased(gate, lease_mode, groups, "-x")
    [record] = outside(records)
    during = "test_a.py::test_fails" if pytest.version_tuple >= (8, 2) else None
    assert (record["phase"], record["fixture"], record["test"]) == ("fixture teardown", "server", during)
    assert all(r["dirty"] == [] for r in results(records).values()), records
