"""The fault matrix: consumer projects generated into tmp_path under bad input, hostile fixture
trees, kills, timeouts and parallel runs, run with real CMake, CTest and pytest against the
product's build tree. Every scenario goes through ``project`` (harness.project.Project), which
checks that the consumer's source tree is byte-identical afterwards and that a canary secret
leaked nowhere. The helpers are the harness shared with the end-to-end tests (tests/harness);
this file only makes it importable and takes its fixtures.

The product under test is named by ``EVIDENCE_GATE_BUILD_DIR`` (CTest sets it; by hand:
``EVIDENCE_GATE_BUILD_DIR=/path/to/build /usr/bin/python3 -m pytest -p no:cacheprovider
--rootdir=tests/faults tests/faults``).
"""

import sys
from pathlib import Path

# tests/, which holds the harness: CTest runs this folder as a rootdir of its own.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.fixtures import build_dir, canary, project  # noqa: E402

__all__ = ["build_dir", "canary", "project"]
