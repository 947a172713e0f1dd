"""Tests of templates/pytest/evidence_gate_pytest.py: records, order, reseeding, collect mode, the manifest."""

import json
import os
import random
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from conftest import PLUGIN_DIR, TIMEOUT, make_tree, only, results, started, write_groups


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


# ---------------------------------------------------------------------- records


OUTCOMES = """
    import pytest

    @pytest.fixture
    def broken_setup():
        raise RuntimeError("setup broke")

    @pytest.fixture
    def broken_teardown():
        yield
        raise RuntimeError("teardown broke")

    def test_pass():
        pass

    def test_fail():
        raise ValueError("boom\\nsecond line")

    def test_setup_error(broken_setup):
        pass

    def test_teardown_error(broken_teardown):
        pass

    def test_fail_and_teardown_error(broken_teardown):
        assert 0, "call broke"

    def test_skip():
        pytest.skip("not here")

    @pytest.mark.skip(reason="marked skip")
    def test_skip_marker():
        pass

    @pytest.mark.xfail(reason="known bug")
    def test_xfail():
        assert 0

    @pytest.mark.xfail(reason="fixed already")
    def test_xpass():
        pass

    @pytest.mark.xfail(reason="strict", strict=True)
    def test_xpass_strict():
        pass
"""


def test_records_every_outcome_and_phase(gate):
    gate.pytester.makepyfile(test_outcomes=OUTCOMES)
    _, records = gate.run_records()
    got = {nodeid.split("::")[1]: (r["outcome"], r["phases"], r["message"]) for nodeid, r in results(records).items()}
    ok = "passed"
    assert got == {
        "test_pass": ("passed", {"setup": ok, "call": ok, "teardown": ok}, ""),
        "test_fail": ("failed", {"setup": ok, "call": "failed", "teardown": ok}, "ValueError: boom"),
        "test_setup_error": ("error", {"setup": "failed", "teardown": ok}, "RuntimeError: setup broke"),
        "test_teardown_error": ("error", {"setup": ok, "call": ok, "teardown": "failed"},
                                "RuntimeError: teardown broke"),
        "test_fail_and_teardown_error": ("failed", {"setup": ok, "call": "failed", "teardown": "failed"},
                                         "AssertionError: call broke"),
        "test_skip": ("skipped", {"setup": ok, "call": "skipped", "teardown": ok}, "not here"),
        "test_skip_marker": ("skipped", {"setup": "skipped", "teardown": ok}, "marked skip"),
        "test_xfail": ("xfailed", {"setup": ok, "call": "skipped", "teardown": ok}, "known bug"),
        "test_xpass": ("xpassed", {"setup": ok, "call": ok, "teardown": ok}, "fixed already"),
        "test_xpass_strict": ("failed", {"setup": ok, "call": "failed", "teardown": ok}, "[XPASS(strict)] strict"),
    }
    for r in results(records).values():
        assert isinstance(r["duration"], float) and r["duration"] >= 0
        assert r["dirty"] == []
    # Each result directly follows its start.
    events = [(r["event"], r.get("test")) for r in records]
    for i, (event, test) in enumerate(events):
        if event == "start":
            assert events[i + 1] == ("result", test)


def test_session_and_end_records_append(gate):
    gate.pytester.makeconftest("")
    gate.pytester.makepyfile(test_two="def test_a(): pass\ndef test_b(): assert 0\n")
    gate.run_records("--evidence-gate-run=seed.3", "--evidence-gate-seed=3")
    _, records = gate.run_records("--evidence-gate-run=seed.4", "--evidence-gate-seed=4")
    assert [r["event"] for r in records] == ["session", "start", "result", "start", "result", "end"] * 2
    first, second = [r for r in records if r["event"] == "session"]
    assert first["run"] == "seed.3" and second["run"] == "seed.4"
    assert (first["seed"], second["seed"]) == (3, 4)
    assert isinstance(first["pid"], int) and first["pid"] != os.getpid()
    assert first["rootdir"] == str(gate.path)
    assert first["configfile"] is None
    assert first["conftests"] == [str(gate.path / "conftest.py")]
    assert (first["collected"], first["planned"], first["unlisted"], first["absent"]) == (2, 2, [], [])
    assert first["disabled"] == [] and first["active"] == []
    assert [r["exitstatus"] for r in records if r["event"] == "end"] == [1, 1]


def test_hard_exit_leaves_start_without_result_or_end(gate):
    gate.pytester.makepyfile(test_exit="""
        import os
        def test_a(): pass
        def test_b(): os._exit(3)
        def test_c(): pass
    """)
    result, records = gate.run_records()
    assert result.ret == 3
    assert [(r["event"], r.get("test")) for r in records] == [
        ("session", None), ("start", "test_exit.py::test_a"), ("result", "test_exit.py::test_a"),
        ("start", "test_exit.py::test_b")]


# ------------------------------------------------------------------------ order


ODD_IDS = """
    import pytest

    @pytest.mark.parametrize("v", [1, 2, 3, 4], ids=["a b", "x::y", "q\\"'; z", "n\\nl"])
    def test_p(v):
        pass

    class TestK:
        def test_m(self):
            pass

    def test_plain():
        pass
"""


def test_order_file_reorders_deselects_and_reports_absent(gate):
    gate.pytester.makepyfile(test_ids=ODD_IDS)
    gate.pytester.path.joinpath("test_ünï.py").write_text("def test_café():\n    pass\n", encoding="utf-8")
    order = [
        "test_ünï.py::test_café",
        "test_ids.py::test_p[n\\nl]",
        "test_ids.py::TestK::test_m",
        "test_ids.py::test_gone[1]",
        "test_ids.py::test_p[q\"'; z]",
        "test_ids.py::test_p[a b]",
    ]
    result, records = gate.run_records(order=order)
    expected = [i for i in order if "gone" not in i]
    assert started(records) == expected
    assert list(results(records)) == expected
    session = only(records, "session")
    assert session["absent"] == ["test_ids.py::test_gone[1]"]
    assert session["unlisted"] == ["test_ids.py::test_p[x::y]", "test_ids.py::test_plain"]
    assert (session["collected"], session["planned"]) == (7, 5)
    result.stdout.fnmatch_lines(["*5 passed, 2 deselected*"])


def test_without_order_file_collection_order_is_kept(gate):
    gate.pytester.makepyfile(test_ids=ODD_IDS)
    _, records = gate.run_records()
    assert started(records) == [
        "test_ids.py::test_p[a b]", "test_ids.py::test_p[x::y]", "test_ids.py::test_p[q\"'; z]",
        "test_ids.py::test_p[n\\nl]", "test_ids.py::TestK::test_m", "test_ids.py::test_plain"]


def test_other_reorderers_run_before_the_order_file(gate):
    gate.pytester.makeconftest("""
        def pytest_collection_modifyitems(items):
            items.reverse()
    """)
    gate.pytester.makepyfile(test_abc="def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n")
    order = ["test_abc.py::test_b", "test_abc.py::test_a", "test_abc.py::test_c"]
    _, records = gate.run_records(order=order)
    assert started(records) == order
    gate.records_path.unlink()
    _, records = gate.run_records()
    assert started(records) == ["test_abc.py::test_c", "test_abc.py::test_b", "test_abc.py::test_a"]


@pytest.fixture
def fake_randomly(gate, monkeypatch):
    """An installed 'pytest-randomly' (pytest11 entry point 'randomly') that reverses the tests."""
    site = gate.path / "site"
    dist_info = site / "pytest_randomly-9.9.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytest-randomly\nVersion: 9.9\n")
    (dist_info / "entry_points.txt").write_text("[pytest11]\nrandomly = randomly\n")
    (site / "randomly.py").write_text("def pytest_collection_modifyitems(items):\n    items.reverse()\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_DIR), str(site)]))
    # Entry points must load here, as in a real installation.
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    gate.pytester.makepyfile(test_abc="def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n")
    return ["test_abc.py::test_b", "test_abc.py::test_c", "test_abc.py::test_a"]


def test_disabled_reorderer_is_reported(gate, fake_randomly):
    result, records = gate.run_records("-p", "no:randomly", order=fake_randomly)
    session = only(records, "session")
    assert (session["disabled"], session["active"]) == (["randomly"], [])
    result.stdout.fnmatch_lines(["evidence-gate: disabled pytest-randomly (the order is evidence-gate's)"])
    assert started(records) == fake_randomly


def test_active_reorderer_does_not_override_the_order(gate, fake_randomly):
    result, records = gate.run_records(order=fake_randomly)
    session = only(records, "session")
    assert (session["disabled"], session["active"]) == ([], ["randomly"])
    result.stdout.fnmatch_lines(["evidence-gate: warning: pytest-randomly is active*"])
    assert started(records) == fake_randomly


def test_bad_order_file_is_a_usage_error(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records(order=["test_a.py::test_a", "test_a.py::test_a"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert records == []
    result.stderr.fnmatch_lines(["*listed twice*"])


# ----------------------------------------------------------------------- random


def test_random_is_reseeded_per_test_from_seed_and_node_id(gate):
    gate.pytester.makepyfile(test_rand="""
        import json, random

        def record(request):
            with open("values.jsonl", "a") as f:
                f.write(json.dumps([request.node.nodeid, random.random()]) + "\\n")

        def test_one(request):
            random.random()  # consumed state must not leak into the next test
            record(request)

        def test_two(request):
            record(request)
    """)
    values = gate.path / "values.jsonl"

    def draw(seed):
        gate.run_records(f"--evidence-gate-seed={seed}")
        drawn = dict(json.loads(line) for line in values.read_text().splitlines())
        values.unlink()
        return drawn

    first, again, other = draw(1), draw(1), draw(2)
    assert first == again
    assert all(first[k] != other[k] for k in first)
    assert first["test_rand.py::test_two"] == random.Random("evidence-gate:1:test_rand.py::test_two").random()
    assert first["test_rand.py::test_one"] != first["test_rand.py::test_two"]


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
    assert doc["plugins"] == [{"name": "evidence_gate_pytest", "dist": None, "version": None}]
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


def test_collect_mode_requires_collect_only(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result = gate.run(f"--evidence-gate-collect={gate.path / 'c.json'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (gate.path / "c.json").exists()


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


def test_terminal_colour_codes_are_kept_out_of_messages(gate):
    gate.pytester.makepyfile(test_coloured='''
        def test_coloured():
            raise ValueError("\\x1b[31mred\\x1b[0m text")
    ''')
    _, records = gate.run_records()
    [result] = results(records).values()
    assert result["message"] == "ValueError: red text", result


# --------------------------------------------------------------- the record channel


UCRED = struct.Struct("iII")  # pid, uid, gid


def run_on_channel(gate, *args):
    """Run mode as evgate runs it: records on an inherited socket, read as they come and sorted
    by the pid the kernel stamps on each write. Returns (exit status, pytest's pid, {pid: bytes})."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    received = {}

    def read():
        while True:
            data, ancillary, _, _ = ours.recvmsg(1 << 16, socket.CMSG_SPACE(UCRED.size))
            if not data:
                return
            pid = next((UCRED.unpack(cdata[:UCRED.size])[0] for level, kind, cdata in ancillary
                        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS), 0)
            received[pid] = received.get(pid, b"") + data

    reader = threading.Thread(target=read)
    reader.start()
    with theirs:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "evidence_gate_pytest", "-p", "no:cacheprovider",
             f"--evidence-gate-channel={theirs.fileno()}", *args],
            cwd=gate.path, pass_fds=[theirs.fileno()], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.communicate(timeout=TIMEOUT)[0]
    reader.join(timeout=TIMEOUT)
    ours.close()
    return process.returncode, process.pid, received, output.decode(errors="replace")


def lines_of(data):
    return [json.loads(line) for line in data.decode().splitlines()]


def test_records_go_to_the_channel_and_the_channel_to_no_program_a_test_starts(gate):
    gate.pytester.makepyfile(test_two="""
        import subprocess, sys

        def test_a():
            pass

        def test_starts_a_program():
            # The channel is not inherited across exec: the program finds no such descriptor.
            fd = next(int(a.split("=")[1]) for a in sys.argv if a.startswith("--evidence-gate-channel="))
            code = f"import os\\ntry:\\n    os.fstat({fd})\\nexcept OSError:\\n    raise SystemExit(7)"
            assert subprocess.run([sys.executable, "-c", code], close_fds=False).returncode == 7
    """)
    status, pid, received, output = run_on_channel(gate)
    assert status == 0, output
    assert list(received) == [pid], received.keys()
    records = lines_of(received[pid])
    assert [r["event"] for r in records] == ["session", "start", "result", "start", "result", "end"]
    assert {r["outcome"] for r in results(records).values()} == {"passed"}
    assert not gate.records_path.exists()


def test_a_channel_that_is_not_a_socket_is_a_usage_error(gate):
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result = gate.run("--evidence-gate-channel=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--evidence-gate-channel=0: descriptor 0 is not a socket*"])


def test_a_forked_child_that_goes_on_as_pytest_writes_under_its_own_pid(gate):
    gate.pytester.makepyfile(test_fork="""
        import os

        def test_forks():
            child = os.fork()
            if child == 0:
                return  # on with the session, as if it were pytest
            os.waitpid(child, 0)

        def test_after():
            pass
    """)
    status, pid, received, output = run_on_channel(gate)
    assert status == 0, output
    assert set(received) - {pid}, "the child's records come under another pid"
    [child] = set(received) - {pid}
    ours, theirs = lines_of(received[pid]), lines_of(received[child])
    assert [r["event"] for r in ours] == ["session", "start", "result", "start", "result", "end"]
    assert [(r["event"], r.get("test")) for r in theirs] == [
        ("result", "test_fork.py::test_forks"), ("start", "test_fork.py::test_after"),
        ("result", "test_fork.py::test_after"), ("end", None)]


# ------------------------------------------------------------ the end of the session


def test_the_end_record_says_pytests_count_and_what_it_exits_with(gate):
    gate.pytester.makeconftest("""
        def pytest_sessionfinish(session):
            session.exitstatus = 1
    """)
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert result.ret == 1
    end = only(records, "end")
    assert (end["exitstatus"], end["final"]) == (0, 1)
    assert records[-1] == end


def test_pytest_exit_at_session_end_is_what_the_end_record_says_it_exits_with(gate):
    gate.pytester.makeconftest("""
        import pytest

        def pytest_sessionfinish(session):
            pytest.exit("leaving", returncode=3)
    """)
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    result, records = gate.run_records()
    assert result.ret == 3
    end = only(records, "end")
    assert (end["exitstatus"], end["final"]) == (0, 3)


# ------------------------------------------------------- changes outside any test


def data_groups(gate):
    make_tree(gate.path, {"data/config.txt": "pristine\n"})
    return [("data", "data", r"data/[^/]*", 0)]


OUTSIDE = {
    "conftest-import": ('open("data/config.txt", "w").write("at import\\n")\n', "collection"),
    "collection-hook": ('def pytest_collection_finish(session):\n    open("data/config.txt", "w").write("x\\n")\n',
                        "collection"),
    "session-start-hook": ('def pytest_sessionstart(session):\n    open("data/new.txt", "w").write("x\\n")\n',
                           "collection"),
    "sessionfinish": ('def pytest_sessionfinish(session):\n    open("data/config.txt", "w").write("x\\n")\n',
                      "session end"),
    "unconfigure": ('import os\ndef pytest_unconfigure(config):\n    os.remove("data/config.txt")\n', "session end"),
}


@pytest.mark.parametrize("mode", ["auto", "scan"])
@pytest.mark.parametrize("where", sorted(OUTSIDE))
def test_a_change_outside_any_test_is_an_outside_record_naming_the_phase(gate, where, mode):
    conftest, phase = OUTSIDE[where]
    groups = data_groups(gate)
    verified = time.time_ns()  # evgate's check before the process
    gate.pytester.makeconftest(conftest)
    gate.pytester.makepyfile(test_a="def test_a(): pass\ndef test_b(): pass\n")
    _, records = gate.run_records(f"--evidence-gate-lease={mode}", f"--evidence-gate-verified-ns={verified}",
                                  groups=groups)
    assert [r for r in records if r["event"] == "outside"] == [{"event": "outside", "phase": phase, "changed": ["data"]}]
    assert all(r["changed"] == [] and r["dirty"] == [] for r in results(records).values()), "no test is blamed"


def test_a_change_before_the_leases_start_needs_evgates_verified_time(gate):
    """What a conftest changes at import comes before the leases start: only the time evgate last
    verified the groups tells it from the state they were listed in."""
    groups = data_groups(gate)
    verified = time.time_ns()
    time.sleep(0.2)  # older than the racy window: only the verified time makes the plugin look
    gate.pytester.makeconftest('open("data/config.txt", "w").write("at import\\n")\n')
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    _, records = gate.run_records(groups=groups)
    assert [r for r in records if r["event"] == "outside"] == []  # unseen without it
    gate.records_path.unlink()
    (gate.path / "data/config.txt").write_text("pristine\n")
    _, records = gate.run_records(f"--evidence-gate-verified-ns={verified}", groups=groups)
    assert [r["phase"] for r in records if r["event"] == "outside"] == ["collection"]


@pytest.mark.parametrize("change", ["removed", "added"])
def test_a_file_removed_or_added_before_the_leases_start_is_a_change(gate, change):
    listed = write_groups(gate.path, data_groups(gate))  # as evgate listed the group
    verified = time.time_ns()
    time.sleep(0.2)
    if change == "removed":
        (gate.path / "data/config.txt").unlink()
    else:
        (gate.path / "data/new.txt").write_text("new\n")
    gate.pytester.makepyfile(test_a="def test_a(): pass\n")
    _, records = gate.run_records(f"--evidence-gate-verified-ns={verified}", f"--evidence-gate-groups={listed}")
    assert [r["phase"] for r in records if r["event"] == "outside"] == ["collection"]


# ------------------------------------------------------------------ honest blame


LEFT_BEHIND = {
    "thread": """
        import threading, time

        def write_later():
            time.sleep(0.3)
            open("data/config.txt", "w").write("late\\n")

        def test_x():
            threading.Thread(target=write_later, name="late-writer", daemon=True).start()
    """,
    "process": """
        import subprocess, sys

        def test_x():
            subprocess.Popen([sys.executable, "-c",
                              "import time; time.sleep(0.3); open('data/config.txt', 'w').write('late')"])
    """,
}


@pytest.mark.parametrize("what", sorted(LEFT_BEHIND))
def test_a_change_while_an_earlier_tests_leftovers_run_is_blamed_on_nobody(gate, what):
    groups = data_groups(gate)
    gate.pytester.makepyfile(test_left=textwrap.dedent(LEFT_BEHIND[what]) + textwrap.dedent("""
        import time

        def test_y():
            time.sleep(1.0)

        def test_z():
            pass
    """))
    _, records = gate.run_records(groups=groups)
    got = results(records)
    y = got["test_left.py::test_y"]
    assert (y["changed"], y["dirty"], y["unblamed"]) == (["data"], [], ["data"]), y
    kind = "a thread left by test_left.py::test_x ('late-writer')" if what == "thread" else \
        "a process left by test_left.py::test_x (pid "
    assert y["leftover"].startswith(kind), y
    assert "unblamed" not in got["test_left.py::test_z"]  # what was left is gone: blame is certain again
    assert "unblamed" not in got["test_left.py::test_x"]


def test_a_thread_a_test_joins_is_no_leftover(gate):
    groups = data_groups(gate)
    gate.pytester.makepyfile(test_joined="""
        import threading

        def test_x():
            t = threading.Thread(target=lambda: None)
            t.start()
            t.join()

        def test_y():
            open("data/config.txt", "w").write("polluted\\n")
    """)
    _, records = gate.run_records(groups=groups)
    y = results(records)["test_joined.py::test_y"]
    assert (y["dirty"], "unblamed" in y) == (["data"], False), y
