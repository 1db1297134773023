import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: a documented command too slow for the suite; `pytest -m slow` (and .ci/run) runs it"
    )
