"""Fixtures for tests against a real control plane (see controlplane.py).

`control_plane` starts one control plane per test session, the first time a test asks for it.
`kube` gives each test its own namespace and an admin client, and at teardown removes what the test
made: its namespace (pods force-deleted, so nothing waits on a kubelet) and every Node that did not
exist when the test began. Tests run one at a time in a session, so such Nodes are the test's own,
including Nodes that code under test (the kwok cloud provider) created.
"""

from __future__ import annotations

import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# Tests have no __init__.py: the helpers are imported by their (unique) module name.
sys.path.insert(0, str(Path(__file__).parent))

from controlplane import (
    KWOK_NODE_ANNOTATION,
    ControlPlane,
    ControlPlaneUnavailable,
    wait_until,
)

REQUIRE_CONTROL_PLANE_VARIABLE = "KUBETIDE_REQUIRE_CONTROL_PLANE"
NODE_DELETION_TIMEOUT_SECONDS = 30.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "controlplane: the test runs against a real control plane (etcd, kube-apiserver, KWOK)"
    )


def skip_or_fail(reason: str) -> None:
    """No control plane here: skip, unless this run must have one (CI sets the variable)."""
    if os.environ.get(REQUIRE_CONTROL_PLANE_VARIABLE) == "1":
        pytest.fail(f"{reason} ({REQUIRE_CONTROL_PLANE_VARIABLE}=1)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    try:
        import cryptography  # noqa: F401
        import kubernetes  # noqa: F401
    except ImportError as error:
        skip_or_fail(f"control plane tests need the Python package {error.name!r}")
    try:
        plane = ControlPlane()
    except ControlPlaneUnavailable as unavailable:
        skip_or_fail(str(unavailable))
    plane.start()
    try:
        yield plane
    finally:
        plane.stop()


class KubeTestContext:
    """One test's view of the shared control plane: an admin client, a fresh namespace, cleanup."""

    def __init__(self, control_plane: ControlPlane, test_name: str):
        import kubernetes

        self.control_plane = control_plane
        self.api_client = kubernetes.config.new_client_from_config(
            config_file=str(control_plane.kubeconfig_path)
        )
        self.core = kubernetes.client.CoreV1Api(self.api_client)
        self._api_exception = kubernetes.client.ApiException
        readable = re.sub(r"[^a-z0-9]+", "-", test_name.lower())[:40].strip("-")
        self.namespace = f"{readable}-{uuid.uuid4().hex[:6]}"
        self._nodes_before = self.node_names()
        self._cleanups: list[Callable[[], object]] = []
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        # Pods are refused until the ServiceAccount controller has made the namespace's `default` account.
        wait_until(
            lambda: (
                self.core.list_namespaced_service_account(
                    self.namespace, field_selector="metadata.name=default"
                ).items
            ),
            timeout=30,
            what=f"ServiceAccount {self.namespace}/default",
        )

    def node_names(self) -> set[str]:
        return {node.metadata.name for node in self.core.list_node().items}

    def add_cleanup(self, action: Callable[[], object]) -> None:
        """Run `action` at teardown, before the namespace and Nodes go (last added runs first): for
        cluster-scoped objects other than Nodes, such as ClusterRoleBindings or PriorityClasses."""
        self._cleanups.append(action)

    def create_fake_node(
        self,
        name: str,
        *,
        cpu: str = "4",
        memory: str = "8Gi",
        pods: str = "110",
        labels: dict[str, str] | None = None,
        taints: list[dict] | None = None,
    ):
        """Create a Node that KWOK manages (heartbeats, runs its pods); returns the API's V1Node."""
        resources = {"cpu": cpu, "memory": memory, "pods": pods}
        return self.core.create_node(
            {
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, "type": "kwok", **(labels or {})},
                    "annotations": {KWOK_NODE_ANNOTATION: "fake"},
                },
                "spec": {"taints": taints or []},
                "status": {"allocatable": resources, "capacity": resources},
            }
        )

    def wait_node_ready(self, name: str, timeout: float = 30.0):
        def ready():
            node = self.core.read_node(name)
            conditions = {condition.type: condition.status for condition in node.status.conditions or []}
            return node if conditions.get("Ready") == "True" else None

        return wait_until(ready, timeout=timeout, what=f"Node {name} Ready")

    def cleanup_nodes(self) -> None:
        """Delete every Node that did not exist when the test began, and wait until they are gone."""
        created = self.node_names() - self._nodes_before
        for name in created:
            try:
                self.core.delete_node(name)
            except self._api_exception as error:
                if error.status != 404:
                    raise
        wait_until(
            lambda: not (self.node_names() & created),
            timeout=NODE_DELETION_TIMEOUT_SECONDS,
            what=f"Nodes {sorted(created)} deleted",
        )

    def teardown(self) -> None:
        try:
            for action in reversed(self._cleanups):
                action()
            # The namespace goes first, so its controllers stop making pods; then its pods are removed
            # at once rather than waiting for KWOK to finish graceful deletions.
            self.core.delete_namespace(self.namespace)
            self.core.delete_collection_namespaced_pod(self.namespace, grace_period_seconds=0)
            self.cleanup_nodes()
        finally:
            self.api_client.close()


@pytest.fixture
def kube(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[KubeTestContext]:
    test = KubeTestContext(control_plane, request.node.name)
    try:
        yield test
    finally:
        test.teardown()
