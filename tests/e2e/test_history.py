"""Evidence over time, end to end: junit.xml, EVIDENCE_GATE_HISTORY, EVIDENCE_GATE_COMPARE, evgate history.

One history is made once for the module, as CI would make it: copies of examples/nondeterministic
and examples/polluter-victim, each a git repository, run with ctest several times with
EVIDENCE_GATE_HISTORY set, every run's evidence directory kept as a CI artifact would be:

- nondeterministic (suite flaky_unquarantined), three runs in three commits: the coin-flip test
  is flaky; then "fixed" (and test_backoff_is_capped renamed); then the flake is back;
- polluter-victim (suite billing), two runs at once in two build trees of one source tree, both
  archiving into the same history directory.

The tests then read that history with `evgate history`, read the reports, junit.xml (checked
against tests/junit/evidence-gate-junit.xsd with xmllint, and against a plain pytest --junitxml
run for classname and name), and hand one build tree's junit.xml to the other as a runner bundle.
"""

import json
import random
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import EXAMPLES, REPO, CTEST_TIMEOUT, Ledger, child_env, configure_example, run

SCHEMA = REPO / "tests" / "junit" / "evidence-gate-junit.xsd"
COIN = "tests/test_retry.py::test_retry_budget"
CAPPED = "tests/test_retry.py::test_backoff_is_capped"
CAPS = "tests/test_retry.py::test_backoff_caps"
POLLUTER = "tests/test_billing.py::test_apply_discount"
VICTIM = "tests/test_billing.py::test_invoice_totals"
GIT = ["git", "-c", "user.name=evidence", "-c", "user.email=evidence@example.invalid", "-c", "commit.gpgsign=false"]


def git(repo, *args):
    result = run([*GIT, *args], cwd=repo, timeout=60)
    assert result.returncode == 0, result.describe()
    return result.stdout.strip()


def repository(example, into):
    """A copy of the example as a git repository on branch main, committed."""
    shutil.copytree(example, into)
    git(into, "init", "-q", "-b", "main")
    git(into, "add", "-A")
    git(into, "commit", "-q", "-m", "example")
    return git(into, "rev-parse", "HEAD")


def commit_change(repo, path, old, new):
    file = repo / path
    text = file.read_text()
    assert old in text, f"{old!r} not in {file}"
    file.write_text(text.replace(old, new))
    git(repo, "commit", "-q", "-am", f"change {path}")
    return git(repo, "rev-parse", "HEAD")


def ctest_env(history, **extra):
    return child_env(EVIDENCE_GATE_HISTORY=str(history), **extra)


def ctest_run(binary, label, env, jobs=2):
    argv = ["ctest", "--test-dir", str(binary), "-L", label, f"-j{jobs}"]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")


def finished(proc):
    out, _ = proc.communicate(timeout=CTEST_TIMEOUT)
    return out


def keep_artifact(binary, suite, into):
    """The evidence directory as a CI artifact keeps it: copied, times kept."""
    shutil.copytree(Path(binary) / "evidence" / suite, into,
                    ignore=shutil.ignore_patterns("sandbox", "pycache", "fixtures", "logs"))
    return into


def evgate(build_dir, *args, env=None, cwd=None):
    return run([build_dir / "tools" / "evgate", *args], cwd=cwd, env=env or child_env(), timeout=300)


class History:
    """What the module's runs left: artifacts, the archive, the build trees, the commits."""


@pytest.fixture(scope="module")
def history(tmp_path_factory, build_dir):
    h = History()
    root = tmp_path_factory.mktemp("history")
    h.root, h.archive, h.artifacts = root, root / "archive", root / "artifacts"
    h.artifacts.mkdir()

    # polluter-victim: two build trees of one source tree, run at the same time.
    pv = root / "pv"
    h.pv_commit = repository(EXAMPLES / "polluter-victim", pv)
    h.pv_a, h.pv_b = root / "pv-a", root / "pv-b"
    for binary in (h.pv_a, h.pv_b):
        configure_example(pv, binary, build_dir)
    both = [ctest_run(binary, "evidence", ctest_env(h.archive)) for binary in (h.pv_a, h.pv_b)]
    h.pv_output = [finished(proc) for proc in both]
    h.pv_runs = [keep_artifact(h.pv_a, "billing", h.artifacts / "pv-a"), keep_artifact(h.pv_b, "billing", h.artifacts / "pv-b")]

    # nondeterministic: flaky, fixed (and a test renamed), flaky again; the third compared with the second.
    nd = root / "nd"
    h.nd_commits = [repository(EXAMPLES / "nondeterministic", nd)]
    h.nd_build = root / "nd-build"
    configure_example(nd, h.nd_build, build_dir)
    h.nd_runs, h.nd_output = [], []
    changes = [None,
               [("tests/test_retry.py", "jitter = os.urandom(1)[0]", "jitter = 0"),
                ("tests/test_retry.py", "def test_backoff_is_capped", "def test_backoff_caps")],
               [("tests/test_retry.py", "jitter = 0", "jitter = os.urandom(1)[0]")]]
    for k, change in enumerate(changes):
        for path, old, new in change or []:
            commit = commit_change(nd, path, old, new)
        if change:
            h.nd_commits.append(commit)
        extra = {"EVIDENCE_GATE_COMPARE": str(h.nd_runs[1])} if k == 2 else {}
        # -j1: the coin must show both faces in every run of it. Side by side, a face seen only in
        # runs that overlapped is confirmed alone, which can take the one failure back (issue 14's note).
        h.nd_output.append(finished(ctest_run(h.nd_build, "flaky_unquarantined", ctest_env(h.archive, **extra), jobs=1)))
        h.nd_runs.append(keep_artifact(h.nd_build, "flaky_unquarantined", h.artifacts / f"nd-{k + 1}"))
    return h


def verdict(artifact, test):
    rows = [json.loads(line) for line in (artifact / "ledger.jsonl").read_text().splitlines()]
    return next((row["verdict"] for row in rows if row["test"] == test), None)


def expected_flips(artifacts, test):
    """Changes of verdict between consecutive runs that have the test, from the ledgers themselves."""
    seen = [v for v in (verdict(a, test) for a in artifacts) if v is not None]
    return sum(1 for a, b in zip(seen, seen[1:]) if a != b), seen


def history_of(build_dir, out, inputs, *args):
    result = evgate(build_dir, "history", "--out", out, *args, *map(str, inputs))
    return result, json.loads((out / "history.json").read_text()) if (out / "history.json").exists() else None


# ------------------------------------------------------------------ evgate history


def test_history_ranks_the_flaky_test_first_with_its_flips(history, build_dir, tmp_path):
    flips, seen = expected_flips(history.nd_runs, COIN)
    assert seen == ["flaky", "stable", "flaky"], f"the runs did not make the history this test is about: {seen}"
    assert flips == 2
    for test in (POLLUTER, VICTIM):
        assert expected_flips(history.pv_runs, test)[0] == 0
    inputs = history.nd_runs + history.pv_runs
    random.Random(17).shuffle(inputs)  # downloaded artifacts come in any order
    result, doc = history_of(build_dir, tmp_path / "out", inputs)
    assert result.returncode == 0, result.describe()

    assert doc["runs"] == 5
    first = doc["tests"][0]
    assert (first["test"], first["suite"], first["flips"]) == (COIN, "flaky_unquarantined", 2), json.dumps(doc["tests"][:3])
    assert [s["verdict"] for s in first["verdicts"]] == ["flaky", "stable", "flaky"]
    assert (first["runs"], first["bad"], first["counts"]) == (3, 2, {"flaky": 2, "stable": 1})
    assert first["first_bad"]["commit"] == history.nd_commits[0]
    assert first["last_bad"]["commit"] == history.nd_commits[2]
    assert all(t["flips"] == 0 for t in doc["tests"][1:]), "only the coin flip changed verdict"
    by_id = {(t["suite"], t["test"]): t for t in doc["tests"]}
    for test, word in ((POLLUTER, "polluter"), (VICTIM, "order-dependent")):
        assert by_id[("billing", test)]["counts"] == {word: 2} and by_id[("billing", test)]["bad"] == 2
    # A renamed test: the old id is gone after its run, the new one starts there.
    assert (by_id[("flaky_unquarantined", CAPPED)]["runs"], by_id[("flaky_unquarantined", CAPPED)]["in_last_run"]) == (1, False)
    assert (by_id[("flaky_unquarantined", CAPS)]["runs"], by_id[("flaky_unquarantined", CAPS)]["in_last_run"]) == (2, True)
    # Time order, by the ledger step's clock in junit.xml: the nondeterministic runs in the order they ran.
    timeline = doc["timeline"]
    assert all(run["time_from"] == "junit.xml" for run in timeline)
    assert [run["time"] for run in timeline] == sorted(run["time"] for run in timeline)
    nd_sources = [run["source"] for run in timeline if run["suite"] == "flaky_unquarantined"]
    assert nd_sources == [str(p) for p in history.nd_runs]
    assert {run["commit"] for run in timeline if run["suite"] == "billing"} == {history.pv_commit}
    assert {run["branch"] for run in timeline} == {"main"}

    md = (tmp_path / "out" / "history.md").read_text()
    table = md.split("## Tests that flip most often", 1)[1]
    assert re.search(r"^\| 1 \| `" + re.escape(COIN) + r"` \| flaky\\_unquarantined \| 2 \| 2 / 3 \|", table, re.M), md
    html = (tmp_path / "out" / "history.html").read_text()
    assert "default-src 'none'" in html and "<script" not in html and " src=" not in html
    assert f"flips most often:\n  2 flip(s), bad in 2 of 3: flaky_unquarantined {COIN}" in result.stdout, result.stdout


def test_history_names_and_skips_what_it_cannot_read(history, build_dir, tmp_path):
    broken = shutil.copytree(history.nd_runs[0], tmp_path / "broken")
    (broken / "ledger.jsonl").write_text((broken / "ledger.jsonl").read_text()[:-40])  # cut mid-row
    bare = tmp_path / "ci-1234.jsonl"
    shutil.copy2(history.nd_runs[2] / "ledger.jsonl", bare)
    missing = tmp_path / "never-downloaded"
    result, doc = history_of(build_dir, tmp_path / "out", [history.nd_runs[1], broken, bare, missing])
    assert result.returncode == 0, result.describe()
    assert doc["runs"] == 2
    left_out = {entry["source"]: entry["reason"] for entry in doc["left_out"]}
    assert left_out[str(missing)] == "it does not exist"
    assert "torn last line" in left_out[str(broken)]
    for source in (missing, broken):
        assert f"left out: {source}: " in result.stdout, result.stdout
        assert str(source) in (tmp_path / "out" / "history.md").read_text()
    # A ledger without its receipt: placed by its file's time, said so, and taken as the one suite there is.
    assert f"placed by ledger.jsonl mtime: {bare}" in result.stdout, result.stdout
    assert [run["time_from"] for run in doc["timeline"]].count("ledger.jsonl mtime") == 1
    assert doc["tests"][0]["test"] == COIN and doc["tests"][0]["flips"] == 1  # stable, then flaky

    nothing, _ = history_of(build_dir, tmp_path / "none", [missing])
    assert nothing.returncode == 1, nothing.describe()
    assert f"left out: {missing}: it does not exist" in nothing.stdout


def test_history_reads_the_archive_ctest_kept(history, build_dir, tmp_path):
    billing = sorted(p.name for p in (history.archive / "billing").iterdir())
    assert len(billing) == 2 and not any(name.startswith(".") for name in billing), billing  # two at once, both whole
    for entry in (history.archive / "billing").iterdir():
        assert sorted(p.name for p in entry.iterdir()) == ["junit.xml", "ledger.jsonl", "manifest.json", "receipt.json"]
    names = sorted(p.name for p in (history.archive / "flaky_unquarantined").iterdir())
    assert [name.split("-")[1] for name in names] == [c[:12] for c in history.nd_commits], names  # time, then commit
    result, doc = history_of(build_dir, tmp_path / "out", [history.archive])
    assert result.returncode == 0, result.describe()
    assert doc["runs"] == 5
    assert (doc["tests"][0]["test"], doc["tests"][0]["flips"]) == (COIN, 2)
    log = (history.nd_build / "Testing" / "Temporary" / "LastTest.log").read_text()  # the ledger step's output
    assert "history: this run is archived in " + str(history.archive / "flaky_unquarantined") in log


# ------------------------------------------------------------------ the reports of a run


def test_reports_say_how_often_a_blocking_test_was_bad_before_and_what_flips_most(history):
    md = (history.nd_runs[2] / "report.md").read_text()
    row = next(line for line in md.splitlines() if line.startswith(f"| `{COIN}` |"))
    assert row.endswith(f"| flaky in 1 of the last 2 runs on main, first on {history.nd_commits[0][:12]} |"), row
    flips = md.split("### Flips most often", 1)[1]
    assert "over the last 3 runs of the suite, this one included" in flips
    assert f"| `{COIN}` | 2 | 2 / 3 |" in flips, flips
    html = (history.nd_runs[2] / "report.html").read_text()
    assert "<section id=history><h2>Flips most often</h2>" in html
    assert f"flaky in 1 of the last 2 runs on main, first on {history.nd_commits[0][:12]}" in html
    # The first run had no history yet.
    first = (history.nd_runs[0] / "report.md").read_text()
    assert "no earlier run of the suite in the history" in first


def test_compare_splits_report_md_without_changing_the_gate(history, build_dir):
    md = (history.nd_runs[2] / "report.md").read_text()
    fresh = md.index(f"### Blocking because of this change (not bad in `{history.nd_runs[1]}`): 1")
    assert md.index(f"`{COIN}`") > fresh
    assert "already bad in" not in md
    assert Ledger(history.nd_build, "flaky_unquarantined").tests[COIN]["gate"] == "block"
    assert "**BLOCKED**" in md

    # The other way: polluter and victim were bad in the other build tree's run already.
    suite_json = history.pv_b / "evidence" / "billing" / "suite.json"
    env = child_env(EVIDENCE_GATE_COMPARE=str(history.pv_runs[0]))
    result = evgate(build_dir, "ledger", "--suite", suite_json, env=env)
    assert result.returncode == 0, result.describe()
    md = (history.pv_b / "evidence" / "billing" / "report.md").read_text()
    old = md.index(f"### Blocking, already bad in `{history.pv_runs[0]}`: 2")
    assert "### Blocking because of this change: 0" in md
    assert md.index(f"`{POLLUTER}`") > old and md.index(f"`{VICTIM}`") > old
    gate = evgate(build_dir, "gate", "--suite", suite_json, "--from-ledger")
    assert gate.returncode == 1 and "-> BLOCKED" in gate.stdout, gate.describe()


# ------------------------------------------------------------------ junit.xml


def xmllint(path):
    if shutil.which("xmllint") is None:
        pytest.fail("xmllint is not installed (Debian: libxml2-utils); junit.xml is checked against the schema with it",
                    pytrace=False)
    return run(["xmllint", "--noout", "--schema", SCHEMA, path], timeout=60)


def cases(path):
    return ET.parse(path).getroot().find("testsuite").findall("testcase")


def properties(case):
    return {p.get("name"): p.get("value") for p in case.find("properties")}


def test_junit_xml_has_the_schema_the_readers_use(history, tmp_path):
    for artifact in (history.nd_runs[0], history.nd_runs[1], history.pv_runs[0]):
        result = xmllint(artifact / "junit.xml")
        assert result.returncode == 0, result.describe()
        suite = ET.parse(artifact / "junit.xml").getroot().find("testsuite")
        all_cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(all_cases)
        assert int(suite.get("failures")) == sum(1 for c in all_cases if c.find("failure") is not None)
        assert int(suite.get("skipped")) == sum(1 for c in all_cases if c.find("skipped") is not None)
    # The schema checks structure, not just well-formedness: each of these is well-formed and fails it.
    text = (history.nd_runs[0] / "junit.xml").read_text()
    broken = {
        "attempt without stackTrace": re.sub(r"<stackTrace>.*?</stackTrace>", "", text, count=1, flags=re.S),
        "properties after the failure": re.sub(r"(<properties>.*?</properties>\n)(<failure.*?</failure>\n)", r"\2\1",
                                               text, count=1, flags=re.S),
        "testcase without time": text.replace(' time="0.000">', ">", 1),
        "failure without type": re.sub(r'<failure type="[^"]*"', "<failure", text, count=1),
        "a count that is no number": re.sub(r'tests="\d+"', 'tests="many"', text, count=1),
    }
    for what, variant in broken.items():
        assert variant != text, f"the mutation {what!r} changed nothing"
        (tmp_path / "x.xml").write_text(variant)
        ET.parse(tmp_path / "x.xml")
        assert xmllint(tmp_path / "x.xml").returncode != 0, f"the schema accepts a junit.xml with {what}"


def test_junit_xml_says_the_gate_and_every_attempt(history):
    ledger = {json.loads(line)["test"]: json.loads(line) for line in (history.nd_runs[0] / "ledger.jsonl").read_text().splitlines()}
    coin = next(c for c in cases(history.nd_runs[0] / "junit.xml") if c.get("name") == "test_retry_budget")
    assert coin.get("classname") == "tests.test_retry"
    failure = coin.find("failure")
    assert failure.get("type") == "flaky" and failure.get("message").startswith("flaky: "), ET.tostring(coin)
    failed_runs = sorted(run for run, outcome in ledger[COIN]["outcomes"].items() if outcome == "failed")
    reruns = coin.findall("rerunFailure")
    assert sorted(r.get("message").split(":")[0] for r in reruns) == failed_runs
    assert coin.findall("flakyFailure") == []
    props = properties(coin)
    assert props["verdict"] == "flaky" and props["gate"] == "block" and props["host"]
    assert props["reproduce"] == ledger[COIN]["reproduce"]
    assert props["order"].startswith("seed.") and props["seed"].isdigit()
    assert json.loads(props["outcomes"]) == ledger[COIN]["outcomes"]

    pv = {c.get("name"): c for c in cases(history.pv_runs[0] / "junit.xml")}
    victim = pv["test_invoice_totals"]
    assert victim.find("failure").get("message").startswith("order-dependent: ")
    assert properties(victim)["partner"] == POLLUTER
    assert properties(victim)["partner_role"] == "polluter"
    assert pv["test_apply_discount"].find("failure").get("message").startswith("polluter: ")
    assert pv["test_health"].find("failure") is None and properties(pv["test_health"])["verdict"] == "stable"


NAMES_PROJECT = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.21)
project(names NONE)
enable_testing()
find_package(EvidenceGate CONFIG REQUIRED)
evidence_gate_add_suite(names TESTS tests SEEDS 1 PERTURB OFF)
""",
    "pytest.ini": "[pytest]\n",
    "tests/test_names.py": '''import pytest


def test_plain():
    pass


class TestOuter:
    def test_method(self):
        pass

    class TestInner:
        @pytest.mark.parametrize("value", ["a b", "x.y", "a::b/c", "[n]", "\\x1b", "caf\\u00e9", 3.5])
        def test_deep(self, value):
            pass


@pytest.mark.parametrize("left,right", [(1, 2), ("p/q", "r.py")])
def test_pairs(left, right):
    pass


@pytest.mark.skip(reason="not here")
def test_skipped():
    pass
''',
    "tests/pkg/__init__.py": "",
    "tests/pkg/test_in_package.py": "def test_in_package():\n    pass\n",
}


def test_junit_xml_names_tests_as_pytest_does(build_dir, tmp_path):
    """classname and name as `pytest --junitxml` writes them: the file merges with a plain pytest history."""
    project = tmp_path / "names"
    for rel, text in NAMES_PROJECT.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    configure_example(project, tmp_path / "build", build_dir)
    proc = ctest_run(tmp_path / "build", "names", child_env())
    output = finished(proc)
    ours = tmp_path / "build" / "evidence" / "names" / "junit.xml"
    assert ours.is_file(), output
    assert xmllint(ours).returncode == 0
    plain = tmp_path / "plain.xml"
    result = run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={plain}", "tests"],
                 cwd=project, env=child_env(PYTHONDONTWRITEBYTECODE="1"), timeout=300)
    assert result.returncode == 0, result.describe()
    theirs = {(c.get("classname"), c.get("name")) for c in cases(plain)}
    mine = {(c.get("classname"), c.get("name")) for c in cases(ours)}
    assert len(theirs) == 13 and mine == theirs, f"only pytest's: {sorted(theirs - mine)}\nonly ours: {sorted(mine - theirs)}"
    skipped = next(c for c in cases(ours) if c.get("name") == "test_skipped")
    assert skipped.find("skipped") is not None and skipped.find("failure") is None


def test_junit_xml_as_a_runner_bundle_gives_the_outcomes_of_its_evidence_directory(history, build_dir):
    """One build tree's junit.xml, handed to the other as a runner bundle: the same runner outcomes per test
    as that build tree's evidence directory gives."""
    suite_json = history.pv_b / "evidence" / "billing" / "suite.json"
    host = ET.parse(history.pv_runs[0] / "junit.xml").getroot().find("testsuite").get("hostname")
    runner = {}
    for bundle in (history.pv_runs[0], history.pv_runs[0] / "junit.xml"):
        result = evgate(build_dir, "ledger", "--suite", suite_json, env=child_env(EVIDENCE_GATE_RUNNER_BUNDLES=str(bundle)))
        assert result.returncode == 0, result.describe()
        ledger = Ledger(history.pv_b, "billing")
        assert [row["test"] for row in ledger.suite_rows if row["test"].startswith("runner:")] == [f"runner:{host}"], str(ledger)
        runner[bundle] = {test: ({run: o for run, o in row["outcomes"].items() if run.startswith(host + ":")}, row["verdict"])
                          for test, row in ledger.tests.items()}
    from_dir, from_junit = runner.values()
    assert all(outcomes for outcomes, _ in from_dir.values()), from_dir
    assert from_junit == from_dir


# ------------------------------------------------------------------ CI templates


def test_ci_templates_keep_the_history_per_branch_and_upload_junit_xml():
    yaml = pytest.importorskip("yaml", reason="python3-yaml reads the CI templates")
    github = yaml.safe_load((REPO / "templates" / "ci" / "github-actions.yml").read_text())
    steps = github["jobs"]["merge"]["steps"]
    uses = [step.get("uses", "") for step in steps]
    restore = steps[uses.index("actions/cache/restore@v4")]
    save = steps[uses.index("actions/cache/save@v4")]
    assert restore["with"]["path"] == save["with"]["path"] == "evidence-history"
    assert restore["with"]["key"] == save["with"]["key"] and "github.ref_name" in save["with"]["key"]
    assert save["if"] == "always()", "a blocked gate fails the job: its run must be kept all the same"
    gate = next(step for step in steps if step.get("name") == "Merge and gate")["run"]
    assert 'EVIDENCE_GATE_HISTORY="$PWD/evidence-history"' in gate and "EVIDENCE_GATE_COMPARE" in gate
    assert any(step.get("with", {}).get("path") == "build/evidence/*/junit.xml" for step in steps)

    gitlab = yaml.safe_load((REPO / "templates" / "ci" / "gitlab-ci.yml").read_text())
    job = gitlab["evidence-gate"]
    assert job["variables"]["EVIDENCE_GATE_HISTORY"] == "$CI_PROJECT_DIR/evidence-history"
    history_cache = job["cache"][0]
    assert history_cache["key"] == "evidence-history-$CI_COMMIT_REF_SLUG"
    assert history_cache["paths"] == ["evidence-history/"] and history_cache["when"] == "always"
    assert job["artifacts"]["reports"]["junit"] == "build/evidence/*/junit.xml"
    assert any("EVIDENCE_GATE_COMPARE" in line for line in job["script"])
