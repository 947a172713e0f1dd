"""The harness shared by the end-to-end tests (tests/e2e) and the fault matrix (tests/faults):
real CMake, CTest and pytest run against a configured and built Evidence Gate tree.

Each conftest puts tests/ on the import path and imports the fixtures it needs from
``harness.fixtures``; the tests import everything else from here (``from harness import
Ledger, ctest``). The modules, from the product outward:

* ``product``: the build tree under test, the source tree, tools on PATH;
* ``commands``: running a command within a bound, in the environment a user would have;
* ``ctest``: cmake and ctest as a consumer runs them, and what ctest printed;
* ``gate``: what the gate step printed (BLOCK/DEFER lines, the summary line);
* ``evidence``: the ledger, the verdicts it may name, the run records;
* ``tree``: source tree digests (byte-identical afterwards) and secrets written to a tree;
* ``processes``: processes a run left behind;
* ``project``: consumer projects generated into tmp_path (the fault matrix's ``Project``);
* ``fixtures``: ``build_dir``, ``source_dir``, ``canary``, ``project``.
"""

from harness.commands import BUILD_TIMEOUT, CONFIGURE_TIMEOUT, CTEST_TIMEOUT, Result, child_env, run
from harness.ctest import CTestRun, cmake_configure, configure_example, ctest, ctest_names, ninja_or_default, step_output
from harness.evidence import (Ledger, expect_verdicts, known_verdicts, record_damage, record_files,
                              planned_by_run, repeated_orders, repeated_steps, results_by_run)
from harness.gate import decision, gate_lines, summary_line
from harness.processes import process_alive, processes_mentioning, wait_until_gone
from harness.product import EXAMPLES, REPO, product_build_dir, product_source_dir, tool
from harness.project import (CANARY_VARIABLE, FAST, HANGING_FORK_SERVER, SUITE, Project, expect_message,
                             gate_summary, normalized)
from harness.tree import (FORBIDDEN_NAMES, TreeChanged, digest_diff, expect_unchanged, file_sha256, files_holding,
                          source_tree_untouched, tree_digest)

__all__ = [
    "BUILD_TIMEOUT", "CANARY_VARIABLE", "CONFIGURE_TIMEOUT", "CTEST_TIMEOUT", "CTestRun", "EXAMPLES", "FAST",
    "FORBIDDEN_NAMES", "HANGING_FORK_SERVER", "Ledger", "Project", "REPO", "Result", "SUITE", "TreeChanged", "child_env",
    "cmake_configure", "configure_example", "ctest", "ctest_names", "decision", "digest_diff", "expect_message",
    "expect_unchanged", "expect_verdicts", "file_sha256", "files_holding", "gate_lines", "gate_summary",
    "known_verdicts", "ninja_or_default", "normalized", "process_alive", "processes_mentioning",
    "product_build_dir", "product_source_dir", "planned_by_run", "record_damage", "record_files", "repeated_orders",
    "repeated_steps", "results_by_run", "run",
    "source_tree_untouched", "step_output", "summary_line", "tool", "tree_digest", "wait_until_gone",
]
