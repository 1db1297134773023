"""The Cluster Autoscaler oracle, unpacked once per test session (see ca_oracle.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Tests have no __init__.py: the helpers are imported by their (unique) module name.
sys.path.insert(0, str(Path(__file__).parent))

from ca_oracle import unpack


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return unpack(tmp_path_factory.mktemp("ca-oracle"))
