"""The end-to-end tests: the examples, the three ways to consume the package, configure-time
errors, receipts, reports, shards and history, with real CMake, real CTest and real pytest
against a built Evidence Gate tree. Their helpers are the harness they share with the fault
matrix (tests/harness); this file only makes it importable and takes its fixtures.

The product under test is named by ``EVIDENCE_GATE_BUILD_DIR`` (CTest sets it; by hand:
``EVIDENCE_GATE_BUILD_DIR=/path/to/build /usr/bin/python3 -m pytest -p no:cacheprovider
--rootdir=tests/e2e tests/e2e``). ``EVIDENCE_GATE_SOURCE_DIR`` names the repository (default:
the one this file is in). Every consumer build goes below ``tmp_path``; nothing is written to
the repository.
"""

import sys
from pathlib import Path

# tests/, which holds the harness: CTest runs this folder as a rootdir of its own.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.fixtures import build_dir, canary, project, source_dir  # noqa: E402

__all__ = ["build_dir", "canary", "project", "source_dir"]
