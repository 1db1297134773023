"""Fixtures for tests against a real control plane (see controlplane.py).

`control_plane` starts one control plane per test session, the first time a test asks for it.
`kube` gives each test its own namespace and an admin client, and at teardown removes what the test
made: its namespace (pods force-deleted, so nothing waits on a kubelet) and every Node that did not
exist when the test began. Tests run one at a time in a session, so such Nodes are the test's own,
including Nodes that code under test (the kwok cloud provider) created.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests have no __init__.py: the helpers are imported by their (unique) module name.
sys.path.insert(0, str(Path(__file__).parent))

import image_build
from controlplane import ControlPlane, ControlPlaneUnavailable, KubeTestContext

REQUIRE_CONTROL_PLANE_VARIABLE = "KUBETIDE_REQUIRE_CONTROL_PLANE"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "controlplane: the test runs against a real control plane (etcd, kube-apiserver, KWOK)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Marked from the fixtures a test uses, so `-m "not controlplane"` leaves out exactly those tests.
    for item in items:
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.controlplane)


def pytest_collection_finish(session: pytest.Session) -> None:
    image_build.start_if_needed(session)  # overlaps the tests that run before the image's


def pytest_unconfigure(config: pytest.Config) -> None:
    image_build.stop(config)  # a build the session ended before waiting for


def no_control_plane(reason: str) -> BaseException:
    """What to raise when there can be no control plane here: a skip, unless this run must have one
    (CI sets the variable). Raised `from None`, so the report is the reason alone."""
    if os.environ.get(REQUIRE_CONTROL_PLANE_VARIABLE) == "1":
        return pytest.fail.Exception(f"{reason} ({REQUIRE_CONTROL_PLANE_VARIABLE}=1)", pytrace=False)
    return pytest.skip.Exception(reason)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    try:
        import cryptography  # noqa: F401
        import kubernetes  # noqa: F401
    except ImportError as error:
        raise no_control_plane(f"control plane tests need the Python package {error.name!r}") from None
    try:
        plane = ControlPlane()
    except ControlPlaneUnavailable as unavailable:
        raise no_control_plane(str(unavailable)) from None
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def kube(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[KubeTestContext]:
    test = KubeTestContext(control_plane, request.node.name)
    try:
        yield test
    finally:
        test.teardown()
