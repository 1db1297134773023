"""The clusterapi cloud provider: node groups are Cluster API MachineDeployments and MachineSets.

With the Cluster Autoscaler's clusterapi provider's names and semantics (cluster.x-k8s.io/v1beta1):

- A MachineDeployment, or a MachineSet that no MachineDeployment owns, is a node group when it
  carries both `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size` and `-max-size`
  (integers, 0 <= min <= max, max > 0); at zero replicas only if it can scale from zero (the
  `capacity.cluster-autoscaler.kubernetes.io/cpu` and `/memory` annotations). Its id is
  `Kind/namespace/name`, as CA's.
- `--node-group-auto-discovery=clusterapi:namespace=NS,clusterName=NAME,LABEL=VALUE,...` keeps
  only the matching resources (several specs: any may match); without it every annotated
  resource is a group.
- Target size is spec.replicas; it changes only through the `scale` subresource (read, then
  written with the read resourceVersion, so a concurrent change is never overwritten).
- Deleting a chosen node annotates its Machine with `cluster.x-k8s.io/delete-machine` and then
  lowers replicas by one: the MachineSet controller deletes annotated Machines first, so exactly
  that Machine (and its Node) goes.
- A Machine belongs to the MachineSet its ownerReference names, and through that MachineSet's
  owner to a MachineDeployment. A Node is a Machine's through the Node's `cluster.x-k8s.io/machine`
  annotation (with `cluster.x-k8s.io/cluster-namespace`), else through providerIDs (compared by
  their last path segment, as CA does), else through the Machine's status.nodeRef.
- Instances are the group's Machines: Pending/Provisioning are CREATING, Provisioned/Running
  RUNNING, Deleting (or a deletionTimestamp) DELETING, and so are annotated Machines beyond
  replicas (the MachineSet controller deletes them next); a failureReason/failureMessage is an
  InstanceError the cluster state registry backs the group off for. Replicas the MachineSet
  controller has not made Machines for yet are placeholder CREATING instances. An instance's id
  is its Node's providerID once there is a Node, so registration is seen exactly.
- Templates: a Node of the group, as `kubetide plan` copies one (cloud/static.py); with none,
  the capacity annotations (cpu, memory, ephemeral-disk, maxPods (default 110), gpu-type and
  gpu-count) plus the labels the Machine template propagates to Nodes and the
  `capacity.cluster-autoscaler.kubernetes.io/labels` and `/taints` annotations.
- Prices (kubetide's own: CA's provider has none): the resource's `kubetide.io/price-per-hour`
  annotation (USD per node-hour, a plain number); without it, the bundled table's price
  (cloud/prices.py) of the instance type its Nodes carry (`node.kubernetes.io/instance-type`), else
  of the one its capacity labels annotation names. No price otherwise (said once per group and
  type in the log): cheaper-group replacement and the price expander pass the group over.

Machines, MachineSets and MachineDeployments are read through informers, as raw JSON (the model
has no Cluster API types). Their changes are applied when `node_groups()` is called, which the
autoscaler does first in each loop: the Cluster Autoscaler's `Refresh()`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kubetide.autoscaler.ports import (
    TO_BE_DELETED_TAINT,
    ActionError,
    Instance,
    InstanceError,
    InstanceState,
    ProviderErrorCode,
    TemplateError,
)
from kubetide.cloud.prices import INSTANCE_TYPE_LABELS, bundled_table, instance_type
from kubetide.cloud.static import template_from_node
from kubetide.errors import UserError
from kubetide.kube.client import ApiError, KubeClient
from kubetide.kube.informer import DELETED, InformerGroup
from kubetide.kube.resources import Resource
from kubetide.model import Node, ObjectMeta, Taint
from kubetide.model.node import TAINT_EFFECTS
from kubetide.model.quantity import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, parse_capacity
from kubetide.snapshot import ClusterSnapshot

log = logging.getLogger("kubetide.clusterapi")

API_GROUP = "cluster.x-k8s.io"
API_VERSION = f"{API_GROUP}/v1beta1"
MACHINE_DEPLOYMENT, MACHINE_SET, MACHINE = "MachineDeployment", "MachineSet", "Machine"
MACHINE_DEPLOYMENTS = Resource(MACHINE_DEPLOYMENT, API_VERSION, "machinedeployments", namespaced=True)
MACHINE_SETS = Resource(MACHINE_SET, API_VERSION, "machinesets", namespaced=True)
MACHINES = Resource(MACHINE, API_VERSION, "machines", namespaced=True)
SCALABLE = {MACHINE_DEPLOYMENT: MACHINE_DEPLOYMENTS, MACHINE_SET: MACHINE_SETS}

MIN_SIZE_ANNOTATION = f"{API_GROUP}/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE_ANNOTATION = f"{API_GROUP}/cluster-api-autoscaler-node-group-max-size"
DELETE_MACHINE_ANNOTATION = f"{API_GROUP}/delete-machine"
MACHINE_ANNOTATION = f"{API_GROUP}/machine"  # on Nodes: the Machine's name
CLUSTER_NAMESPACE_ANNOTATION = f"{API_GROUP}/cluster-namespace"  # on Nodes: the Machine's namespace
CLUSTER_NAME_LABEL = f"{API_GROUP}/cluster-name"

CAPACITY_PREFIX = "capacity.cluster-autoscaler.kubernetes.io/"
CAPACITY_CPU = CAPACITY_PREFIX + "cpu"
CAPACITY_MEMORY = CAPACITY_PREFIX + "memory"
CAPACITY_EPHEMERAL_DISK = CAPACITY_PREFIX + "ephemeral-disk"
CAPACITY_MAX_PODS = CAPACITY_PREFIX + "maxPods"
CAPACITY_GPU_TYPE = CAPACITY_PREFIX + "gpu-type"
CAPACITY_GPU_COUNT = CAPACITY_PREFIX + "gpu-count"
CAPACITY_LABELS = CAPACITY_PREFIX + "labels"
CAPACITY_TAINTS = CAPACITY_PREFIX + "taints"
# kubetide's own, on a MachineDeployment or MachineSet: what one of its nodes costs, USD per hour.
PRICE_ANNOTATION = "kubetide.io/price-per-hour"
DEFAULT_MAX_PODS = 110  # CA's default when maxPods is not annotated
# What CA assumes of a node it has never seen (it reads the architecture from an environment
# variable that defaults to amd64).
DEFAULT_TEMPLATE_LABELS = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
# Label domains Cluster API copies from a Machine template's metadata onto its Nodes.
PROPAGATED_LABEL_DOMAINS = (
    "node-role.kubernetes.io",
    "node-restriction.kubernetes.io",
    "node.cluster.x-k8s.io",
)

CREATING_PHASES = frozenset({"Pending", "Provisioning"})
RUNNING_PHASES = frozenset({"Provisioned", "Running"})
# Instance ids of Machines without a providerID yet, and of replicas without a Machine yet.
PENDING_MACHINE_PREFIX = "clusterapi://machine/"
PENDING_REPLICA_PREFIX = "clusterapi://replica/"
CONFLICT_RETRIES = 5


# -- auto-discovery -------------------------------------------------------------------------------


@dataclass(frozen=True)
class AutoDiscovery:
    """One `clusterapi:` spec: every given field must match (empty: any)."""

    namespace: str = ""
    cluster_name: str = ""
    labels: tuple[tuple[str, str], ...] = ()

    def allows(self, obj: dict) -> bool:
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        if self.namespace and meta.get("namespace") != self.namespace:
            return False
        if self.cluster_name and _cluster_name(obj) != self.cluster_name:
            return False
        return all(labels.get(k) == v for k, v in self.labels)


def parse_auto_discovery(specs: Iterable[str]) -> list[AutoDiscovery]:
    """`clusterapi:namespace=NS,clusterName=NAME,LABEL=VALUE,...` specs; a UserError otherwise."""
    result = []
    for spec in specs:
        flag = f"run: --node-group-auto-discovery={spec}"
        kind, sep, body = spec.partition(":")
        if kind != "clusterapi" or not sep:
            raise UserError(f"{flag}: the clusterapi provider takes clusterapi:KEY=VALUE,...")
        namespace = cluster_name = ""
        labels = []
        for item in filter(None, body.split(",")):
            key, eq, value = item.partition("=")
            if not eq or not key or not value:
                raise UserError(f"{flag}: expected KEY=VALUE, got {item!r}")
            if key == "namespace":
                namespace = value
            elif key == "clusterName":
                cluster_name = value
            else:
                labels.append((key, value))
        result.append(AutoDiscovery(namespace, cluster_name, tuple(labels)))
    return result


def _cluster_name(obj: dict) -> str:
    spec_name = (obj.get("spec") or {}).get("clusterName")
    if spec_name is not None:
        return str(spec_name)
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(CLUSTER_NAME_LABEL, ""))


# -- reading Cluster API objects ------------------------------------------------------------------


def _key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _owner(obj: dict, kind: str) -> str | None:
    """namespace/name of the owner of `kind`, or None."""
    meta = obj.get("metadata") or {}
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") == kind and ref.get("name"):
            return f"{meta.get('namespace', '')}/{ref['name']}"
    return None


def _annotations(obj: dict) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _resource_version(obj: dict) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))


def _keep_raw(obj: dict) -> dict:
    # managedFields are most of an object's size and nothing here reads them.
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def normalized_provider_id(provider_id: str) -> str:
    """CA's comparison: the last path segment (`aws:///us-east-1a/i-1` and `aws:////i-1` match)."""
    return provider_id.rsplit("/", 1)[-1]


def parse_bounds(obj: dict) -> tuple[int, int] | None:
    """(min, max) from the annotations; None when the resource is not a node group. Raises
    ValueError for values CA rejects (not integers, negative, max < min)."""
    annotations = _annotations(obj)
    if MIN_SIZE_ANNOTATION not in annotations or MAX_SIZE_ANNOTATION not in annotations:
        return None
    low, high = int(annotations[MIN_SIZE_ANNOTATION]), int(annotations[MAX_SIZE_ANNOTATION])
    if low < 0 or high < low:
        raise ValueError(f"min {low}, max {high}: need 0 <= min <= max")
    return (low, high) if high > 0 else None


def parse_price(text: str) -> float:
    """The price annotation's value: a finite number >= 0. Raises ValueError."""
    try:
        price = float(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(price) or price < 0:
        raise ValueError(f"{text!r} is not a price (a finite number >= 0)")
    return price


def template_from_annotations(obj: dict, name: str) -> Node | None:
    """The scale-from-zero template, or None without the cpu and memory capacity annotations.
    Raises ValueError for an unreadable quantity."""
    annotations = _annotations(obj)
    if not annotations.get(CAPACITY_CPU) or not annotations.get(CAPACITY_MEMORY):
        return None
    capacity = {
        CPU: parse_capacity(CPU, annotations[CAPACITY_CPU]),
        MEMORY: parse_capacity(MEMORY, annotations[CAPACITY_MEMORY]),
        PODS: parse_capacity(PODS, annotations.get(CAPACITY_MAX_PODS) or DEFAULT_MAX_PODS),
    }
    if annotations.get(CAPACITY_EPHEMERAL_DISK):
        capacity[EPHEMERAL_STORAGE] = parse_capacity(EPHEMERAL_STORAGE, annotations[CAPACITY_EPHEMERAL_DISK])
    gpu_type, gpu_count = annotations.get(CAPACITY_GPU_TYPE), annotations.get(CAPACITY_GPU_COUNT)
    if gpu_type and gpu_count:
        capacity[gpu_type] = parse_capacity(gpu_type, gpu_count)
    template_labels = (
        (((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")
    ) or {}
    labels = dict(DEFAULT_TEMPLATE_LABELS)
    labels.update({k: v for k, v in template_labels.items() if _propagated(k)})
    labels.update(_pairs(annotations.get(CAPACITY_LABELS, "")))
    return Node(
        meta=ObjectMeta(name, labels=labels),
        allocatable=dict(capacity),
        capacity=capacity,
        taints=_template_taints(obj),
    )


def _propagated(label: str) -> bool:
    domain = label.partition("/")[0] if "/" in label else ""
    return any(domain == d or domain.endswith("." + d) for d in PROPAGATED_LABEL_DOMAINS)


def _pairs(text: str) -> dict[str, str]:
    pairs = {}
    for item in text.split(","):
        key, eq, value = item.strip().partition("=")
        if eq and key:
            pairs[key] = value
    return pairs


def _template_taints(obj: dict) -> tuple[Taint, ...]:
    """spec.template.spec.taints (newer Cluster API), then the taints annotation
    (`key=value:Effect,...`), which replaces a taint of the same key and effect."""
    taints: dict[tuple[str, str], Taint] = {}
    spec_taints = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("taints") or ()
    for raw in spec_taints:
        if isinstance(raw, dict) and raw.get("key") and raw.get("effect") in TAINT_EFFECTS:
            taints[(raw["key"], raw["effect"])] = Taint(
                raw["key"], str(raw.get("value") or ""), raw["effect"]
            )
    for item in filter(None, (i.strip() for i in _annotations(obj).get(CAPACITY_TAINTS, "").split(","))):
        key_value, _, effect = item.rpartition(":")
        key, _, value = key_value.partition("=")
        if not key or effect not in TAINT_EFFECTS:
            log.warning("%s: ignoring taint %r (expected key=value:Effect)", _key(obj), item)
            continue
        taints[(key, effect)] = Taint(key, value, effect)
    return tuple(taints.values())


def machine_state(machine: dict, has_node: bool) -> tuple[InstanceState, InstanceError | None]:
    meta, status = machine.get("metadata") or {}, machine.get("status") or {}
    phase = status.get("phase") or ""
    if meta.get("deletionTimestamp") or phase == "Deleting":
        state = InstanceState.DELETING
    elif phase in RUNNING_PHASES or (phase not in CREATING_PHASES and (has_node or status.get("nodeRef"))):
        state = InstanceState.RUNNING
    else:
        state = InstanceState.CREATING
    reason, message = status.get("failureReason"), status.get("failureMessage")
    if not (reason or message or phase == "Failed"):
        return state, None
    code = str(reason or ("DeletingFailed" if state is InstanceState.DELETING else "ProvisioningFailed"))
    return state, InstanceError("OtherError", code, str(message or f"Machine {_key(machine)} failed"))


# -- the provider --------------------------------------------------------------------------------


@dataclass
class _Member:
    """A Machine of a group, as this refresh sees it."""

    key: str
    instance_id: str
    node: Node | None
    state: InstanceState
    error: InstanceError | None
    marked: bool  # carries the delete-machine annotation


class ClusterApiNodeGroup:
    """A MachineDeployment or MachineSet. Everything is read from the provider's latest refresh,
    so a group object held across loops (a drain in progress) never acts on stale state."""

    def __init__(self, provider: ClusterApiCloudProvider, kind: str, key: str):
        self.provider = provider
        self.kind = kind
        self.key = key  # namespace/name
        self.namespace, _, self.name = key.partition("/")
        self.resource = SCALABLE[kind]

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.key}"

    @property
    def min_size(self) -> int:
        return self.provider.bounds.get(self.id, (0, 0))[0]

    @property
    def max_size(self) -> int:
        return self.provider.bounds.get(self.id, (0, 0))[1]

    def _object(self) -> dict:
        return self.provider.objects[self.kind].get(self.key) or {}

    def target_size(self) -> int:
        written = self.provider.replicas_written.get(self.id)
        if written is not None:
            return written[1]
        return int((self._object().get("spec") or {}).get("replicas") or 0)

    def _members(self) -> list[_Member]:
        return self.provider.members.get(self.id, [])

    # -- writes ------------------------------------------------------------------------------
    def _scale_path(self) -> str:
        return self.resource.object_path(self.namespace, self.name) + "/scale"

    def _change_replicas(self, change: Callable[[int], int]) -> int:
        """Read the scale subresource, write `change(replicas)` with the read resourceVersion
        (a 409 re-reads), and return the new replicas. Bounds are checked on the value read."""
        client = self.provider.client
        for _ in range(CONFLICT_RETRIES):
            try:
                scale = client.request("GET", self._scale_path())
                current = int((scale.get("spec") or {}).get("replicas") or 0)
                wanted = change(current)
                if wanted > self.max_size:
                    raise ActionError(f"{self.id}: size increase too large: {wanted} > max {self.max_size}")
                if wanted < self.min_size:
                    raise ActionError(f"{self.id}: size decrease too large: {wanted} < min {self.min_size}")
                scale["spec"] = {**(scale.get("spec") or {}), "replicas": wanted}
                written = client.request("PUT", self._scale_path(), body=scale)
            except ApiError as exc:
                if exc.status == 409:
                    continue
                raise ActionError(f"{self.id}: scaling: {exc}") from None
            self.provider.note_replicas_written(self, _resource_version(written), wanted)
            return wanted
        raise ActionError(f"{self.id}: scaling: {CONFLICT_RETRIES} conflicts in a row")

    def increase_size(self, delta: int) -> None:
        if delta <= 0:
            raise ActionError(f"{self.id}: size increase must be positive, got {delta}")
        self._change_replicas(lambda replicas: replicas + delta)

    def decrease_target_size(self, delta: int) -> None:
        if delta >= 0:
            raise ActionError(f"{self.id}: size decrease must be negative, got {delta}")
        registered = sum(
            1 for m in self._members() if m.node is not None and m.state is not InstanceState.DELETING
        )

        def smaller(replicas: int) -> int:
            if replicas + delta < registered:
                raise ActionError(
                    f"{self.id}: cannot decrease replicas {replicas} by {-delta}: "
                    f"{registered} Machines have Nodes"
                )
            return replicas + delta

        self._change_replicas(smaller)

    def delete_nodes(self, nodes: Sequence[Node]) -> None:
        """Annotate each node's Machine for deletion, then lower replicas by one, node by node
        (CA's order: the MachineSet controller must find the annotation when replicas drop)."""
        provider = self.provider
        targets: list[str | None] = []  # Machine keys; None for a replica without a Machine
        for node in nodes:
            if node.provider_id.startswith(PENDING_REPLICA_PREFIX):
                if not any(p.id == node.provider_id for p in provider.placeholders(self)):
                    raise ActionError(f"{self.id}: {node.provider_id} is no longer a pending replica")
                targets.append(None)
                continue
            machine = provider.machine_for(node)
            if machine is None:
                raise ActionError(f"{self.id}: no Machine found for node {node.name}")
            if provider.group_of_machine(machine) != self.id:
                raise ActionError(f"{self.id}: node {node.name} belongs to another node group")
            targets.append(machine)
        # Machines already on their way out are out of replicas too: nothing to do for them.
        deleting = {m.key for m in self._members() if m.state is InstanceState.DELETING}
        targets = [t for t in targets if t is None or t not in deleting]
        if self.target_size() - len(targets) < self.min_size:
            raise ActionError(
                f"{self.id}: deleting {len(targets)} nodes would take replicas below min {self.min_size}"
            )
        try:
            for machine in targets:
                if machine is not None:
                    self._mark(machine, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
                try:
                    self._change_replicas(lambda replicas: replicas - 1)
                except ActionError:
                    if machine is not None:
                        self._mark(machine, None, quiet=True)
                    raise
        finally:
            # The port's contract: what left the target is DELETING now, not at the next refresh.
            provider._derive_members()

    def _mark(self, machine: str, value: str | None, *, quiet: bool = False) -> None:
        namespace, _, name = machine.partition("/")
        patch = {"metadata": {"annotations": {DELETE_MACHINE_ANNOTATION: value}}}
        try:
            self.provider.client.request(
                "PATCH",
                MACHINES.object_path(namespace, name),
                body=patch,
                content_type="application/merge-patch+json",
            )
        except ApiError as exc:
            if quiet:
                log.warning(
                    "%s: could not remove %s from Machine %s: %s",
                    self.id,
                    DELETE_MACHINE_ANNOTATION,
                    machine,
                    exc,
                )
                return
            raise ActionError(f"{self.id}: marking Machine {machine} for deletion: {exc}") from None
        if value is None:
            self.provider.marked_written.discard(machine)
        else:
            self.provider.marked_written.add(machine)

    # -- reads --------------------------------------------------------------------------------
    def instances(self) -> Sequence[Instance]:
        result = [Instance(m.instance_id, m.state, m.error) for m in self._members()]
        return result + self.provider.placeholders(self)

    def template_node(self) -> Node | None:
        """A Node of the group when it has one, else its capacity annotations; None when it has
        neither. Raises TemplateError (configurationError) when the annotations do not parse."""
        nodes = [
            m.node for m in self._members() if m.node is not None and m.state is not InstanceState.DELETING
        ]
        name = f"{self.kind.lower()}-{self.namespace}-{self.name}"
        if nodes:
            usable = [
                n for n in nodes if n.ready and not n.unschedulable and not n.has_taint(TO_BE_DELETED_TAINT)
            ]
            return template_from_node((usable or nodes)[0], name)
        try:
            return template_from_annotations(self._object(), f"{name}-template")
        except ValueError as exc:
            raise TemplateError(
                self.id, f"{self.id}: capacity annotations: {exc}", ProviderErrorCode.CONFIGURATION
            ) from None

    def price_per_hour(self) -> float | None:
        """The price annotation, else the bundled table's price of the group's instance type
        (its Nodes' label, else its capacity labels annotation's); None when neither gives one.
        A malformed annotation is no price, and one warning naming the object and annotation:
        the operator's own figure is not replaced by a guess."""
        obj = self._object()
        text = _annotations(obj).get(PRICE_ANNOTATION)
        if text is not None:
            try:
                return parse_price(text)
            except ValueError as exc:
                self.provider._warn_once(
                    obj,
                    f"{self.kind} {self.key}: annotation {PRICE_ANNOTATION}: {exc}; the group has no price",
                )
                return None
        return self.provider.table_price(self, self._instance_type())

    def _instance_type(self) -> str | None:
        for member in self._members():
            found = instance_type(member.node) if member.node is not None else None
            if found:
                return found
        labels = _pairs(_annotations(self._object()).get(CAPACITY_LABELS, ""))
        return next((labels[k] for k in INSTANCE_TYPE_LABELS if labels.get(k)), None)


class ClusterApiCloudProvider:
    """Node groups over Cluster API objects. `start()` the informers and `wait_for_sync()` before
    the first loop; `stop()` at the end."""

    def __init__(
        self,
        client: KubeClient,
        snapshot: Callable[[], ClusterSnapshot],
        discovery: Sequence[AutoDiscovery] = (),
    ):
        self.client = client
        self._snapshot = snapshot
        self.discovery = list(discovery)
        self.group = InformerGroup()
        for resource in (MACHINE_DEPLOYMENTS, MACHINE_SETS, MACHINES):
            self.group.add(client, resource, parse=_keep_raw)
        self.informers = self.group.informers
        self._relists = {informer.resource.kind: 0 for informer in self.informers}
        self.objects: dict[str, dict[str, dict]] = {MACHINE_DEPLOYMENT: {}, MACHINE_SET: {}, MACHINE: {}}
        # group id -> (resourceVersion written, replicas): our own scale writes, until the
        # informer delivers that version. Without it a watch event from just before the write,
        # applied after it, would show the old replicas for a moment.
        self.replicas_written: dict[str, tuple[str, int]] = {}
        # Machines we annotated for deletion, until the informer shows the annotation: with
        # replicas_written already lowered, a Machine not yet seen marked would look RUNNING
        # beside a target that left it out, and the min-size check would count it twice.
        self.marked_written: set[str] = set()
        self.bounds: dict[str, tuple[int, int]] = {}
        self.members: dict[str, list[_Member]] = {}
        self._machine_by_instance: dict[str, str] = {}  # instance id -> Machine key
        self._machine_by_provider_id: dict[str, str] = {}  # normalized spec.providerID -> Machine key
        self._groups: dict[str, ClusterApiNodeGroup] = {}
        self._active: list[ClusterApiNodeGroup] = []
        self._warned: set[tuple[str, str]] = set()  # (object key, resourceVersion) already logged
        self._unpriced_said: set[tuple[str, str | None]] = set()  # (group id, instance type) logged
        self.price_table = bundled_table()
        self._refreshed = False

    # -- lifecycle -----------------------------------------------------------------------------
    @classmethod
    def started(
        cls,
        client: KubeClient,
        snapshot: Callable[[], ClusterSnapshot],
        discovery_specs: Sequence[str],
        timeout: float,
    ) -> ClusterApiCloudProvider:
        """A provider with its caches filled, for `kubetide run`; a UserError of one line when
        the flags are wrong, the API server does not serve Cluster API, or a list fails."""
        provider = cls(client, snapshot, parse_auto_discovery(discovery_specs))
        try:
            client.request("GET", f"/apis/{API_VERSION}", timeout=10.0)
        except ApiError as exc:
            why = "not served (are the Cluster API CRDs installed?)" if exc.status == 404 else str(exc)
            raise UserError(f"{client.source}: {API_VERSION}: {why}") from None
        provider.start()
        missing = provider.wait_for_sync(timeout)
        if missing:
            provider.stop()
            raise UserError(f"{client.source}: caches not filled within {timeout:g}s: {'; '.join(missing)}")
        return provider

    def start(self) -> None:
        self.group.start()

    def wait_for_sync(self, timeout: float) -> list[str]:
        """The resources not listed within `timeout` (with the last error each saw)."""
        return [f"{API_GROUP} {missing}" for missing in self.group.wait_for_sync(timeout)]

    def stop(self) -> None:
        self.group.stop()

    # -- refresh ---------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Apply the informers' changes and re-derive groups, memberships and instances."""
        for change in self.group.changes():
            table = self.objects[change.kind]
            if change.type == DELETED:
                table.pop(change.key, None)
            else:
                table[change.key] = change.obj
                written = self.replicas_written.get(f"{change.kind}/{change.key}")
                if written is not None and written[0] == _resource_version(change.obj):
                    del self.replicas_written[f"{change.kind}/{change.key}"]
        for informer in self.informers:
            kind = informer.resource.kind
            if informer.relists != self._relists[kind]:
                # A re-list may skip the version we wrote; what it brought is newer anyway.
                self._relists[kind] = informer.relists
                self.replicas_written = {
                    g: w for g, w in self.replicas_written.items() if not g.startswith(kind + "/")
                }
        self._derive()
        self._refreshed = True

    def _derive(self) -> None:
        self.bounds = {}
        active = []
        for kind in (MACHINE_DEPLOYMENT, MACHINE_SET):
            for key, obj in sorted(self.objects[kind].items()):
                if kind == MACHINE_SET and _owner(obj, MACHINE_DEPLOYMENT) is not None:
                    continue  # its MachineDeployment is the group, if any
                if self.discovery and not any(d.allows(obj) for d in self.discovery):
                    continue
                try:
                    bounds = parse_bounds(obj)
                except ValueError as exc:
                    self._warn_once(obj, f"{kind} {key}: not autoscaled: invalid size annotations ({exc})")
                    continue
                if bounds is None:
                    continue
                replicas = int((obj.get("spec") or {}).get("replicas") or 0)
                if replicas == 0 and not (
                    _annotations(obj).get(CAPACITY_CPU) and _annotations(obj).get(CAPACITY_MEMORY)
                ):
                    continue  # CA's rule: a group at zero must be able to scale from zero
                group_id = f"{kind}/{key}"
                self.bounds[group_id] = bounds
                active.append(self._groups.setdefault(group_id, ClusterApiNodeGroup(self, kind, key)))
        self._active = active
        self._derive_members()

    def _derive_members(self) -> None:
        snapshot = self._snapshot()
        by_machine: dict[str, Node] = {}
        by_provider_id: dict[str, Node] = {}
        for known in snapshot.nodes():
            annotations = known.annotations
            if annotations.get(MACHINE_ANNOTATION):
                namespace = annotations.get(CLUSTER_NAMESPACE_ANNOTATION, "")
                by_machine[f"{namespace}/{annotations[MACHINE_ANNOTATION]}"] = known
            if known.provider_id:
                by_provider_id[normalized_provider_id(known.provider_id)] = known
        active = {g.id for g in self._active}
        self.members = {group_id: [] for group_id in active}
        self._machine_by_instance = {}
        self._machine_by_provider_id = {}
        for key, machine in self.objects[MACHINE].items():
            provider_id = str((machine.get("spec") or {}).get("providerID") or "")
            if provider_id:
                self._machine_by_provider_id[normalized_provider_id(provider_id)] = key
            group_id = self.group_of_machine(key)
            if group_id not in active:
                continue
            node = by_machine.get(key)
            if node is None and provider_id:
                node = by_provider_id.get(normalized_provider_id(provider_id))
            if node is None:
                node_ref = ((machine.get("status") or {}).get("nodeRef") or {}).get("name")
                node = snapshot.node(node_ref) if node_ref and node_ref in snapshot else None
            state, error = machine_state(machine, node is not None)
            instance_id = (
                (node.provider_id if node is not None else "") or provider_id or PENDING_MACHINE_PREFIX + key
            )
            marked = DELETE_MACHINE_ANNOTATION in _annotations(machine)
            if marked:
                self.marked_written.discard(key)
            marked = marked or key in self.marked_written
            self._machine_by_instance[instance_id] = key
            self.members[group_id].append(_Member(key, instance_id, node, state, error, marked))
        self.marked_written &= set(self.objects[MACHINE])
        for group_id, members in self.members.items():
            # Replicas already lowered below the Machines there are: the MachineSet controller
            # deletes the annotated ones first, so they are on their way out now, and restart
            # safety must not take their nodes back.
            live = [m for m in members if m.state is not InstanceState.DELETING]
            excess = len(live) - self._groups[group_id].target_size()
            for member in [m for m in live if m.marked][: max(0, excess)]:
                member.state = InstanceState.DELETING

    def _warn_once(self, obj: dict, message: str) -> None:
        seen = (_key(obj), _resource_version(obj))
        if seen not in self._warned:
            self._warned.add(seen)
            log.warning("%s", message)

    def table_price(self, group: ClusterApiNodeGroup, instance_type: str | None) -> float | None:
        """The bundled table's price of `instance_type`; None, said once per group and type in
        the log, when there is no type or the table does not know it."""
        guess = self.price_table.guess(instance_type) if instance_type else None
        if guess is not None:
            return guess.price
        if (group.id, instance_type) not in self._unpriced_said:
            self._unpriced_said.add((group.id, instance_type))
            why = (
                f"instance type {instance_type} is not in kubetide's price table of {self.price_table.date}"
                if instance_type
                else "its Nodes and capacity labels annotation name no instance type"
            )
            log.warning(
                "%s: no price (%s; set the %s annotation): cheaper-group replacement and the price "
                "expander pass the group over",
                group.id,
                why,
                PRICE_ANNOTATION,
            )
        return None

    def _ensure_refreshed(self) -> None:
        if not self._refreshed:
            self.refresh()

    # -- lookups ---------------------------------------------------------------------------------
    def group_of_machine(self, machine_key: str) -> str | None:
        """The id of the scalable resource that owns the Machine (a node group or not)."""
        machine = self.objects[MACHINE].get(machine_key)
        machine_set = _owner(machine, MACHINE_SET) if machine is not None else None
        if machine_set is None:
            return None
        owner = self.objects[MACHINE_SET].get(machine_set)
        deployment = _owner(owner, MACHINE_DEPLOYMENT) if owner is not None else None
        if deployment is not None and deployment in self.objects[MACHINE_DEPLOYMENT]:
            return f"{MACHINE_DEPLOYMENT}/{deployment}"
        return f"{MACHINE_SET}/{machine_set}"

    def machine_for(self, node: Node) -> str | None:
        """The key of the node's Machine: its annotation, else its providerID (also an instance
        id of this provider, for nodes that never registered)."""
        self._ensure_refreshed()
        annotations = node.annotations
        if annotations.get(MACHINE_ANNOTATION):
            key = f"{annotations.get(CLUSTER_NAMESPACE_ANNOTATION, '')}/{annotations[MACHINE_ANNOTATION]}"
            if key in self.objects[MACHINE]:
                return key
        if not node.provider_id:
            return None
        return self._machine_by_instance.get(node.provider_id) or self._machine_by_provider_id.get(
            normalized_provider_id(node.provider_id)
        )

    def placeholders(self, group: ClusterApiNodeGroup) -> list[Instance]:
        """Replicas the MachineSet controller has not made Machines for yet."""
        machines = sum(1 for m in self.members.get(group.id, []) if m.state is not InstanceState.DELETING)
        missing = max(0, group.target_size() - machines)
        return [
            Instance(f"{PENDING_REPLICA_PREFIX}{group.id}/{i}", InstanceState.CREATING)
            for i in range(missing)
        ]

    def note_replicas_written(self, group: ClusterApiNodeGroup, resource_version: str, replicas: int) -> None:
        self.replicas_written[group.id] = (resource_version, replicas)

    # -- CloudProvider -----------------------------------------------------------------------------
    def node_groups(self) -> Sequence[ClusterApiNodeGroup]:
        self.refresh()
        return list(self._active)

    def node_group_for(self, node: Node) -> ClusterApiNodeGroup | None:
        machine = self.machine_for(node)
        group_id = self.group_of_machine(machine) if machine is not None else None
        return next((g for g in self._active if g.id == group_id), None)
