"""The pytest fixtures of the harness; a conftest takes the ones its tests use by importing them."""

import secrets

import pytest

from harness.product import product_build_dir, product_source_dir
from harness.project import Project


@pytest.fixture(scope="session")
def build_dir():
    """The product's build tree (EVIDENCE_GATE_BUILD_DIR), checked to hold a usable package and a built evgate."""
    return product_build_dir()


@pytest.fixture(scope="session")
def source_dir():
    """The Evidence Gate source tree (EVIDENCE_GATE_SOURCE_DIR, default: this repository)."""
    return product_source_dir()


@pytest.fixture(scope="session")
def canary():
    return "canary-" + secrets.token_hex(16)


@pytest.fixture
def project(tmp_path, build_dir, canary):
    return Project(tmp_path, build_dir, canary)
