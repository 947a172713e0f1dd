"""A healthy suite is never blocked: the gate's runs see what a fresh `pytest` sees.

A consumer project as CI checks it out — deep below /builds/<group>/<subgroup>/<project>, its
build tree inside it — whose tests are healthy under plain pytest but observe what a fork of a
collected session could change: a token stamped when its module is imported, a scratch path
computed at import below the temp directory, a `multiprocessing.Manager` whose socket lives
below TMPDIR. Plain pytest passes; so must the gate, and `ISOLATION fork` and
`ISOLATION process` must give the same ledger.
"""

import subprocess
import sys

import pytest

from harness import Project

SUITE_FILES = {
    "tests/test_token.py": """
import time

class Session:
    # issued when the module is imported, valid for 4 s
    issued = time.time()

def test_session_token_is_valid():
    assert time.time() < Session.issued + 4.0, "token expired"
""",
    "tests/test_scratch.py": """
import os
import tempfile

SCRATCH = os.path.join(tempfile.gettempdir(), "ci-scratch")

def test_scratch_starts_empty():
    assert not os.path.exists(SCRATCH), "scratch left by an earlier run"
    os.makedirs(SCRATCH)
""",
    "tests/test_workers.py": """
import multiprocessing

def test_manager_shares_a_dict():
    with multiprocessing.Manager() as manager:
        shared = manager.dict()
        shared["answer"] = 42
        assert shared["answer"] == 42
""",
    "tests/test_slow.py": """
import time

def test_takes_a_while():
    time.sleep(1.0)
""",
}


def ci_project(tmp_path, build_dir, canary, isolation):
    checkout = tmp_path / isolation / "builds" / "platform-group" / "python-bindings" / "a-project-with-a-long-name"
    checkout.mkdir(parents=True)
    project = Project(checkout, build_dir, canary)
    for path, text in SUITE_FILES.items():
        project.write(path, text)
    project.suite(f"SEEDS 4 PERTURB OFF ISOLATION {isolation} TESTS tests", name="ci")
    return project


def verdicts(project):
    ledger = project.ledger("ci")
    return {row["test"]: (row["verdict"], row["gate"]) for row in ledger.rows if not row.get("warning")}


def test_a_healthy_suite_under_a_ci_path_passes_as_plain_pytest_does_fork_or_process(tmp_path, build_dir, canary):
    ledgers = {}
    for isolation in ("fork", "process"):
        project = ci_project(tmp_path, build_dir, canary, isolation)
        fresh_tmp = tmp_path / f"t-{isolation}"  # a CI machine's: empty, and short
        fresh_tmp.mkdir()
        plain = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project.root,
                               capture_output=True, text=True, timeout=120,
                               env=project.env(PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(fresh_tmp)))
        assert plain.returncode == 0, f"plain pytest must pass:\n{plain.stdout}\n{plain.stderr}"
        with project.checked():
            project.configured()
            result = project.evidence()
            assert result.returncode == 0, f"ISOLATION {isolation}: the gate must pass:\n{result.describe()}\n{project.ledger('ci')}"
            ledgers[isolation] = verdicts(project)
    assert ledgers["fork"] == ledgers["process"]
    assert all(gate == "pass" for _, gate in ledgers["fork"].values()), ledgers["fork"]


@pytest.mark.parametrize("isolation", ["fork"])
def test_the_evidence_says_why_runs_left_the_forks(tmp_path, build_dir, canary, isolation):
    """The scratch test writes in the collection's temp directory: forks stop, and say so."""
    project = ci_project(tmp_path, build_dir, canary, isolation)
    with project.checked():
        project.configured()
        assert project.evidence().returncode == 0
        declined = (project.build / "evidence" / "ci" / "forks.declined").read_text()
        assert "a path its module took at import" in declined, declined
