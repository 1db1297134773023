"""ClusterActions over a live API server: taints, evictions, node deletion, status, events.

- Taints are written as the Cluster Autoscaler writes them: read the Node fresh, change its
  taint list, update it with the read resourceVersion, and on a 409 Conflict (someone else
  wrote the Node in between: the kubelet, the node controller) read again and retry.
- Evictions go through policy/v1 Eviction, with the pod's UID as a precondition so that a pod
  recreated under the same name is never evicted by mistake. 201 evicted; 429 refused by a
  PodDisruptionBudget (the actuator retries later); 404 already gone.
- The status ConfigMap is written only when the document changed, ignoring the probe times
  that change every loop, and refreshed at least every `status_refresh_seconds` so its
  timestamps still say the autoscaler is alive.
- `restart_deployment` is `kubectl rollout restart`: a strategic-merge PATCH of the Deployment's
  spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"] (RFC 3339), after
  which the Deployment controller rolls it out under its own strategy.
- Every write first asks `may_write()`: with leader election, a replica whose lease may have
  been lost writes nothing (taints and evictions raise ActionError, status and events are
  skipped), so two replicas never act at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kubetide.autoscaler.clusterstate.status import ClusterAutoscalerStatus, status_yaml, to_dict
from kubetide.autoscaler.events import Event
from kubetide.autoscaler.options import STATUS_CONFIG_MAP_NAME
from kubetide.autoscaler.ports import ActionError, EvictionOutcome
from kubetide.clock import Clock
from kubetide.durations import rfc3339
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.events import BackgroundEvents, EventRecorder
from kubetide.model import Pod, Taint
from kubetide.model.workloads import RESTARTED_AT_ANNOTATION

log = logging.getLogger("kubetide.kube")

CONFLICT_RETRIES = 5
# CA's annotation on the status ConfigMap, in Go's time.Time String() layout
# ("2006-01-02 15:04:05.999999999 -0700 MST"), UTC.
LAST_UPDATED_ANNOTATION = "cluster-autoscaler.kubernetes.io/last-updated"
STATUS_REFRESH_SECONDS = 300.0
# Fields of the status document that change every loop without saying anything new.
_PROBE_FIELDS = frozenset({"lastProbeTime", "time"})


def _without_probe_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_probe_times(v) for k, v in value.items() if k not in _PROBE_FIELDS}
    if isinstance(value, list):
        return [_without_probe_times(v) for v in value]
    return value


def go_time_string(moment: float) -> str:
    """Unix seconds as Go prints a UTC time.Time: fraction without trailing zeros, then the zone."""
    exact = datetime.fromtimestamp(moment, UTC)
    fraction = f"{exact.microsecond:06d}".rstrip("0")
    return f"{exact:%Y-%m-%d %H:%M:%S}{'.' + fraction if fraction else ''} +0000 UTC"


def _taint_json(taint: Taint) -> dict:
    body: dict[str, Any] = {"key": taint.key, "effect": taint.effect}
    if taint.value:
        body["value"] = taint.value
    return body


class KubeClusterActions:
    def __init__(
        self,
        client: KubeClient,
        clock: Clock,
        *,
        namespace: str = "kube-system",
        status_configmap: str = STATUS_CONFIG_MAP_NAME,
        write_status_configmap: bool = True,
        may_write: Callable[[], bool] = lambda: True,
        status_refresh_seconds: float = STATUS_REFRESH_SECONDS,
        events: EventRecorder | BackgroundEvents | None = None,
    ):
        self.client = client
        self.clock = clock
        self.namespace = namespace
        self.status_configmap = status_configmap
        self.write_status_configmap = write_status_configmap
        self.may_write = may_write
        self.status_refresh_seconds = status_refresh_seconds
        # `kubetide run` passes BackgroundEvents on a client of their own, so the loop never
        # waits on them; tests and the agent may record synchronously.
        self.events = events if events is not None else EventRecorder(client, clock)
        self._status_written: Any = None  # the last document written, probe times removed
        self._status_written_at = float("-inf")
        self.status_writes = 0

    def _check_leader(self, what: str) -> None:
        if not self.may_write():
            raise ActionError(f"{what}: not written, this replica is not the leader")

    # -- taints --------------------------------------------------------------------------------
    def add_taint(self, node_name: str, taint: Taint) -> None:
        def change(taints: list[dict]) -> list[dict] | None:
            if any(t.get("key") == taint.key and t.get("effect") == taint.effect for t in taints):
                return None  # already there (a previous run or a retry put it): nothing to write
            return [*taints, _taint_json(taint)]

        self._update_taints(node_name, change, f"taint {taint.key}")

    def remove_taint(self, node_name: str, key: str) -> None:
        def change(taints: list[dict]) -> list[dict] | None:
            kept = [t for t in taints if t.get("key") != key]
            return kept if len(kept) != len(taints) else None

        self._update_taints(node_name, change, f"untaint {key}")

    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        """Read, change, replace (update, as the taints are: the install grants no patch on
        nodes), retried on conflicts; nothing is written when the annotation already is so."""

        def change(node: dict) -> bool:
            metadata = node.setdefault("metadata", {})
            annotations = dict(metadata.get("annotations") or {})
            if annotations.get(key) == value:
                return False
            if value is None:
                del annotations[key]
            else:
                annotations[key] = value
            metadata["annotations"] = annotations
            return True

        self._update_node(node_name, change, f"annotate {key}")

    def _update_taints(
        self, node_name: str, change: Callable[[list[dict]], list[dict] | None], what: str
    ) -> None:
        self._check_leader(f"{what} on node {node_name}")

        def change_node(node: dict) -> bool:
            spec = node.setdefault("spec", {})
            taints = change(list(spec.get("taints") or []))
            if taints is None:
                return False
            spec["taints"] = taints
            return True

        self._update_node(node_name, change_node, what)

    def _update_node(self, node_name: str, change: Callable[[dict], bool], what: str) -> None:
        """Read the Node, `change` it in place (False: nothing to write), replace it; read again
        on a conflict (the Node changed since we read it), up to CONFLICT_RETRIES times."""
        path = f"/api/v1/nodes/{node_name}"
        for _ in range(CONFLICT_RETRIES):
            try:
                node = self.client.request("GET", path)
                if not change(node):
                    return
                self._check_leader(f"{what} on node {node_name}")
                self.client.request("PUT", path, body=node)
                return
            except ApiError as exc:
                if exc.status == 409:
                    continue
                if exc.status == 404:
                    raise ActionError(f'nodes "{node_name}" not found') from None
                raise ActionError(f"{what} on node {node_name}: {exc}") from None
        raise ActionError(f"{what} on node {node_name}: still conflicting after {CONFLICT_RETRIES} tries")

    # -- pods and nodes ------------------------------------------------------------------------
    def evict(self, pod: Pod, grace_period_seconds: int) -> EvictionOutcome:
        if not self.may_write():
            return EvictionOutcome.FAILED
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod.name, "namespace": pod.namespace},
            "deleteOptions": {
                "gracePeriodSeconds": grace_period_seconds,
                "preconditions": {"uid": pod.uid},
            },
        }
        try:
            self.client.request(
                "POST", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/eviction", body=body
            )
        except ApiError as exc:
            if exc.status == 429:
                return EvictionOutcome.BLOCKED_BY_PDB
            if exc.status == 404 or (exc.status == 409 and "UID" in exc.message):
                return EvictionOutcome.NOT_FOUND  # gone, or replaced by a pod of the same name
            log.warning("eviction of pod %s failed: %s", pod.key, exc)
            return EvictionOutcome.FAILED
        return EvictionOutcome.EVICTED

    def delete_node_object(self, node_name: str) -> None:
        self._check_leader(f"delete node {node_name}")
        try:
            self.client.request("DELETE", f"/api/v1/nodes/{node_name}")
        except ApiError as exc:
            if exc.status != 404:
                raise ActionError(f"delete node {node_name}: {exc}") from None

    def restart_deployment(self, namespace: str, name: str, at: float) -> None:
        self._check_leader(f"restart deployment {namespace}/{name}")
        annotations = {RESTARTED_AT_ANNOTATION: rfc3339(at)}
        body = {"spec": {"template": {"metadata": {"annotations": annotations}}}}
        try:
            self.client.request(
                "PATCH",
                f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                body=body,
                content_type="application/strategic-merge-patch+json",
            )
        except ApiError as exc:
            if exc.status == 404:
                raise ActionError(f'deployments.apps "{name}" not found') from None
            raise ActionError(f"restart deployment {namespace}/{name}: {exc}") from None

    # -- status and events -----------------------------------------------------------------------
    def write_status(self, status: ClusterAutoscalerStatus) -> None:
        if not self.write_status_configmap or not self.may_write():
            return
        document = _without_probe_times(to_dict(status))
        now = self.clock.now()
        if document == self._status_written and now - self._status_written_at < self.status_refresh_seconds:
            return
        path = f"/api/v1/namespaces/{self.namespace}/configmaps/{self.status_configmap}"
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.status_configmap,
                "namespace": self.namespace,
                "annotations": {LAST_UPDATED_ANNOTATION: go_time_string(now)},
            },
            "data": {"status": status_yaml(status)},
        }
        try:
            try:
                self.client.request("PUT", path, body=body)
            except ApiError as exc:
                if exc.status != 404:
                    raise
                self.client.request("POST", f"/api/v1/namespaces/{self.namespace}/configmaps", body=body)
        except ApiError as exc:
            # The loop goes on without its status; the next loop tries again.
            log.warning("status ConfigMap %s/%s not written: %s", self.namespace, self.status_configmap, exc)
            return
        self._status_written, self._status_written_at = document, now
        self.status_writes += 1

    def emit_event(self, event: Event) -> None:
        if self.may_write():
            self.events.record(event)
