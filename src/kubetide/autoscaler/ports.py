"""The ports the autoscaler talks through. The simulator and the real-cluster adapters implement
them; decision code sees nothing else, which is why the simulator shows what the real controller
would do.

The shapes mirror the Cluster Autoscaler's cloudprovider.NodeGroup and its Kubernetes listers,
trimmed to what kubetide's decisions use.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kubetide.autoscaler.events import Event
from kubetide.autoscaler.status import ClusterAutoscalerStatus
from kubetide.model import ConfigMap, Node, Pod, PodDisruptionBudget, Taint, Workload
from kubetide.snapshot import ClusterSnapshot

# Taints the autoscaler owns (Cluster Autoscaler's names, so existing tooling recognises them).
TO_BE_DELETED_TAINT = "ToBeDeletedByClusterAutoscaler"  # NoSchedule, value = Unix seconds
DELETION_CANDIDATE_TAINT = "DeletionCandidateOfClusterAutoscaler"  # PreferNoSchedule
# A node removed within this many seconds of joining the cluster is churn (the disruption
# ledger's definition, in the simulator and in `kubetide run`'s metrics alike).
CHURN_SECONDS = 1800.0


class ClusterView(Protocol):
    """Read side of the Kubernetes API, as an informer cache would serve it."""

    def snapshot(self) -> ClusterSnapshot:
        """Nodes and the pods bound to them. Callers may fork/revert, and must leave it as found."""
        ...

    def pending_pods(self) -> Sequence[Pod]:
        """Pods not bound to any node (their PodScheduled condition says why)."""
        ...

    def pdbs(self) -> Sequence[PodDisruptionBudget]: ...

    def workloads(self) -> Sequence[Workload]:
        """Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs with their current status."""
        ...

    def configmap(self, namespace: str, name: str) -> ConfigMap | None: ...

    def refresh(self) -> None:
        """Take in the changes that arrived since the snapshot was served (a real view applies
        its informers' queue; the simulator's world does not move during a loop). The loop
        calls it after deciding, to validate the decision against the cluster as it is then."""
        ...


@dataclass(frozen=True, slots=True)
class UsageCeiling:
    """How much of one resource a node may use before its node QoS agent evicts or throttles:
    the lowest such watermark of the NodeQOS objects selecting it, in absolute units (millicores,
    bytes). `source` names it for people, e.g. "NodeQOS workers-cpu rule cpu-80 (80% of 8 cpu)"."""

    resource: str
    amount: int
    source: str


@dataclass(frozen=True, slots=True)
class UsageSample:
    """Real usage now, as a metrics pipeline reports it (metrics.k8s.io in a cluster, usage
    profiles in the simulator), and the ceilings the QoS agents enforce.

    `pods`: pod UID -> resource -> usage; a pod without metrics is absent. `nodes`: node name ->
    resource -> the node's whole usage (system daemons included); a node without metrics is
    absent, and then its pods' sum stands in. `ceilings`: node name -> its ceilings; a node no
    NodeQOS selects is absent. `warnings`: what the source had to leave out (a NodeQOS rule on a
    metric nobody registered), for the adapter to say once."""

    pods: Mapping[str, Mapping[str, int]]
    nodes: Mapping[str, Mapping[str, int]]
    ceilings: Mapping[str, Sequence[UsageCeiling]]
    warnings: Sequence[str] = ()


class UsageSource(Protocol):
    """Where scale-down learns real usage, so it does not pack pods onto a node whose QoS agent
    would evict them at the next spike. Optional: without one, scale-down packs by requests."""

    def sample(self) -> UsageSample:
        """Usage now; called once per loop."""
        ...


class EvictionOutcome(enum.Enum):
    EVICTED = "evicted"  # 201: the pod is on its way out
    BLOCKED_BY_PDB = "blocked"  # 429: a disruption budget refused it; retry later
    NOT_FOUND = "not-found"  # 404: already gone, which counts as success
    FAILED = "failed"  # anything else


class ActionError(Exception):
    """A write to the cluster failed (API error, conflict); the caller decides how to roll back."""


class ClusterActions(Protocol):
    """Write side of the Kubernetes API."""

    def add_taint(self, node_name: str, taint: Taint) -> None: ...

    def remove_taint(self, node_name: str, key: str) -> None: ...

    def evict(self, pod: Pod, grace_period_seconds: int) -> EvictionOutcome: ...

    def delete_node_object(self, node_name: str) -> None: ...

    def write_status(self, status: ClusterAutoscalerStatus) -> None:
        """Store the status document (the options' namespace/status-config-map-name, by
        default kube-system/STATUS_CONFIG_MAP_NAME of options.py; key `status`).

        The object, not its YAML: the loop writes it every scan-interval, and an adapter that
        only keeps the latest (the simulator) need not serialise thousands it will never show.
        A real adapter stores `kubetide.autoscaler.status.status_yaml(status)`.
        """
        ...

    def emit_event(self, event: Event) -> None:
        """A Kubernetes Event on the object it names (e.g. Node "n1", Pod "ns/p"), stamped with
        `event.at`, the decision's time, however late the adapter writes it."""
        ...

    def annotate_node(self, node_name: str, key: str, value: str | None) -> None:
        """Set the node's annotation `key` to `value`, or remove it (None); nothing is written
        when it already is so. Raises ActionError (no such node, API error)."""
        ...

    def restart_deployment(self, namespace: str, name: str, at: float) -> None:
        """`kubectl rollout restart`: set the Deployment's pod template annotation
        kubectl.kubernetes.io/restartedAt to `at` (Unix seconds, written as RFC 3339), which
        rolls it out anew under its own strategy. Raises ActionError (no such Deployment, API
        error)."""
        ...


class ProviderErrorCode(enum.StrEnum):
    """The Cluster Autoscaler's AutoscalerErrorType values a provider's failure is classed under."""

    CLOUD_PROVIDER = "cloudProviderError"  # the cloud's API failed or refused
    CONFIGURATION = "configurationError"  # the group's own settings are wrong (an operator's fix)


class ProviderError(Exception):
    """A cloud provider could not answer a question about one node group. Raised only by
    NodeGroup implementations (kubetide.cloud.*, the simulator's cloud), as one of the subclasses
    below, never bare; decision code catches exactly these, passes the group over for this loop,
    and says why in the status document and an Event. `group_id` names the group, `code` classes
    the failure, the message says what went wrong in one line."""

    def __init__(
        self, group_id: str, message: str, code: ProviderErrorCode = ProviderErrorCode.CLOUD_PROVIDER
    ):
        super().__init__(message)
        self.group_id = group_id
        self.code = code


class TemplateError(ProviderError):
    """`template_node()` failed although the group should have a template: the cloud's API did
    not answer (the AWS provider reading a launch template), or the group's template settings
    are malformed (Cluster API capacity annotations that do not parse: CONFIGURATION). A group
    that simply has no template returns None instead."""


class PriceError(ProviderError):
    """`price_per_hour()` failed for a provider that prices its groups: its pricing source did
    not answer or gave nonsense. A group the provider knows no price for returns None instead.
    The AWS provider raises it when AWS cannot say what a group launches; the others' prices are
    configured (static, kwok, the simulator) or annotated (Cluster API), else looked up in the
    bundled table (cloud/prices.py), and an unknown instance type is None."""


class InstanceState(enum.Enum):
    CREATING = "creating"
    RUNNING = "running"
    DELETING = "deleting"


@dataclass(frozen=True, slots=True)
class InstanceError:
    """Why an instance could not be created (Cluster Autoscaler's InstanceErrorInfo)."""

    error_class: str  # OutOfResources | OtherError
    code: str  # e.g. STOCKOUT, QUOTA_EXCEEDED
    message: str


@dataclass(frozen=True, slots=True)
class Instance:
    """A machine as the cloud sees it. `id` equals the Node's spec.providerID once registered."""

    id: str
    state: InstanceState
    error: InstanceError | None = None


class NodeGroup(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def min_size(self) -> int: ...

    @property
    def max_size(self) -> int: ...

    def target_size(self) -> int:
        """The size the cloud is asked for. A node's deletion leaves it when `delete_nodes`
        accepts the node (as CA's DeleteNodes lowers the target), not when the node is tainted or
        drained, nor when it is finally gone; from then until it is gone its instance is
        reported DELETING by `instances()`. The min-size check relies on this to count each
        deletion once: deletions in progress are subtracted only while not yet DELETING."""
        ...

    def increase_size(self, delta: int) -> None:
        """Raise the target size; raises ActionError when the cloud refuses."""
        ...

    def decrease_target_size(self, delta: int) -> None:
        """Lower the target by -delta (delta < 0, CA's convention) without deleting any registered
        node: only requests not yet fulfilled are dropped. Raises ActionError otherwise."""
        ...

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        """Delete these nodes' instances and lower the target accordingly, at once (see
        `target_size`); their instances are DELETING until gone. Raises ActionError."""
        ...

    def instances(self) -> Sequence[Instance]: ...

    def template_node(self) -> Node | None:
        """What a new node of this group looks like: labels, taints, allocatable. None when the
        group has no template (a normal answer: a Cluster API group with no Node to copy and no
        capacity annotations); scale-up passes it over. Raises TemplateError when the group has
        one but the provider cannot build it now. Any other exception is a provider bug and
        propagates."""
        ...

    def price_per_hour(self) -> float | None:
        """What one node of this group costs per hour; None when the provider knows no price for
        it (a normal answer: the price expander then prefers priced groups). Raises PriceError
        when the provider has prices but cannot give this group's now."""
        ...


class CloudProvider(Protocol):
    def node_groups(self) -> Sequence[NodeGroup]: ...

    def node_group_for(self, node: Node) -> NodeGroup | None:
        """The group a node belongs to, or None when the autoscaler does not manage it."""
        ...
