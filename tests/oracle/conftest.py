"""The Cluster Autoscaler oracles, unpacked once per test session (see ca_oracle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Tests have no __init__.py: the helpers are imported by their (unique) module name.
sys.path.insert(0, str(Path(__file__).parent))

from ca_oracle import ARCHIVES, unpack


@pytest.fixture(scope="session")
def oracles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """CA version -> its oracle binary, for every version: a test runs each on its dumps."""
    directory = tmp_path_factory.mktemp("ca-oracle")
    return {version: unpack(directory, version) for version in ARCHIVES}
