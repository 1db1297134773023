"""KubeClusterActions.restart_deployment on a recording client: the PATCH `kubectl rollout restart`
sends, and its failures as ActionError (no control plane needed)."""

from __future__ import annotations

import pytest

from kubetide.autoscaler.ports import ActionError
from kubetide.clock import ManualClock
from kubetide.kube.actions import KubeClusterActions
from kubetide.kube.client import ApiError

AT = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class RecordingClient:
    def __init__(self, error: ApiError | None = None):
        self.requests: list[tuple] = []
        self.error = error

    def request(self, method, path, *, query=None, body=None, content_type="application/json", timeout=30.0):
        self.requests.append((method, path, body, content_type))
        if self.error is not None:
            raise self.error
        return {}


def test_restart_is_a_strategic_merge_patch_of_the_template_annotation():
    client = RecordingClient()
    KubeClusterActions(client, ManualClock(AT), events=object()).restart_deployment("shop", "web", AT)  # type: ignore[arg-type]
    assert client.requests == [
        (
            "PATCH",
            "/apis/apps/v1/namespaces/shop/deployments/web",
            {
                "spec": {
                    "template": {
                        "metadata": {
                            "annotations": {"kubectl.kubernetes.io/restartedAt": "2027-01-15T08:00:00Z"}
                        }
                    }
                }
            },
            "application/strategic-merge-patch+json",
        )
    ]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (ApiError(404, "NotFound", 'deployments.apps "web" not found'), 'deployments.apps "web" not found'),
        (
            ApiError(403, "Forbidden", "cannot patch"),
            "restart deployment shop/web: 403 Forbidden: cannot patch",
        ),
    ],
)
def test_restart_failures_are_action_errors(error, message):
    actions = KubeClusterActions(RecordingClient(error), ManualClock(AT), events=object())  # type: ignore[arg-type]
    with pytest.raises(ActionError) as info:
        actions.restart_deployment("shop", "web", AT)
    assert str(info.value) == message


def test_a_replica_that_is_not_the_leader_does_not_restart():
    client = RecordingClient()
    actions = KubeClusterActions(client, ManualClock(AT), may_write=lambda: False, events=object())  # type: ignore[arg-type]
    with pytest.raises(ActionError, match="not the leader"):
        actions.restart_deployment("shop", "web", AT)
    assert client.requests == []
