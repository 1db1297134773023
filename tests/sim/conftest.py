"""tests/sim: helpers live in sim_helpers.py and sim_doubles.py (unique names: tests have no
__init__.py, so a module called `conftest` or `doubles` could be another directory's)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def tmp_scenario(tmp_path):
    def write(text: str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write
