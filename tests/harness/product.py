"""The product under test: a configured and built Evidence Gate tree, its sources, the tools.

The build tree is named by ``EVIDENCE_GATE_BUILD_DIR`` (CTest sets it), the source tree by
``EVIDENCE_GATE_SOURCE_DIR`` (default: the repository this file is in). Every consumer build
goes below ``tmp_path``; nothing is written to the repository.
"""

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def tool(name):
    """The path of `name` on PATH; the test fails (without a traceback) when it is not there."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"'{name}' is not on PATH; the end-to-end and fault tests need CMake and CTest", pytrace=False)
    return path


def product_build_dir():
    """The product's build tree (EVIDENCE_GATE_BUILD_DIR), checked to hold a usable package and a built evgate."""
    value = os.environ.get("EVIDENCE_GATE_BUILD_DIR")
    if not value:
        pytest.fail(
            "EVIDENCE_GATE_BUILD_DIR is not set. Point it at a configured and built Evidence Gate "
            "build tree, e.g. cmake -S . -B build -G Ninja && cmake --build build && "
            "EVIDENCE_GATE_BUILD_DIR=$PWD/build /usr/bin/python3 -m pytest -p no:cacheprovider tests/e2e",
            pytrace=False)
    path = Path(value).resolve()
    if not (path / "EvidenceGateConfig.cmake").is_file():
        pytest.fail(f"EVIDENCE_GATE_BUILD_DIR={value} holds no EvidenceGateConfig.cmake: "
                    "is it a configured Evidence Gate build tree?", pytrace=False)
    if not (path / "tools" / "evgate").is_file():
        pytest.fail(f"EVIDENCE_GATE_BUILD_DIR={value} has no tools/evgate: build it first "
                    f"(cmake --build {value})", pytrace=False)
    return path


def product_source_dir():
    """The Evidence Gate source tree (EVIDENCE_GATE_SOURCE_DIR, default: this repository)."""
    path = Path(os.environ.get("EVIDENCE_GATE_SOURCE_DIR") or REPO).resolve()
    if not (path / "modules" / "EvidenceGate.cmake").is_file():
        pytest.fail(f"EVIDENCE_GATE_SOURCE_DIR={path} is not an Evidence Gate source tree", pytrace=False)
    return path
