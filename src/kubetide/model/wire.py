"""The wire schema: the Kubernetes objects kubetide reads, as msgspec Structs carrying only the
fields kubetide uses.

msgspec decodes JSON straight into these in C (`msgspec.json.decode(text, type=...)`) and converts
already-parsed YAML into them (`msgspec.convert`): fields not named here (managedFields, images,
probes, env, most of status...) are skipped by the decoder without a Python object being made for
them, and every declared field is type-checked on the way. Fields are typed as the API server
writes them (strings where it writes strings, int64s where it writes integers): anything else, a
YAML 1.1 number in a label, a null where a default applies, fails the decode, and the object is
then read by the path-aware Reader (model/reader.py), which alone decides what is an error and
words it (file, item, object, field), or what a lenient form means.

Structs are frozen (immutable, like the model values built from them) and untracked by the cycle
collector (`gc=False`: they hold no cycles), which keeps a 150,000-pod load from paying for
collector passes. Rare structured fields (affinity, topology spread, volumes) are left as plain
values (`Any`) for the Reader's own parsers, which give their field paths.
"""

from __future__ import annotations

from typing import Any

import msgspec

_OPTIONS: dict[str, Any] = {"frozen": True, "gc": False, "rename": "camel"}


class OwnerReferenceWire(msgspec.Struct, **_OPTIONS):
    kind: str
    name: str
    uid: str = ""
    controller: bool | None = None


class ObjectMetaWire(msgspec.Struct, **_OPTIONS):
    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReferenceWire] | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class ResourceRequirementsWire(msgspec.Struct, **_OPTIONS):
    requests: dict[str, str] | None = None
    limits: dict[str, str] | None = None


class ContainerPortWire(msgspec.Struct, **_OPTIONS):
    protocol: str | None = None
    host_port: int | None = None


class ContainerWire(msgspec.Struct, **_OPTIONS):
    name: str
    resources: ResourceRequirementsWire | None = None
    ports: list[ContainerPortWire] | None = None
    restart_policy: str | None = None


class _Present(msgspec.Struct, **_OPTIONS):
    """A volume source whose content kubetide does not read: decoded by skipping it."""


class EmptyDirWire(msgspec.Struct, **_OPTIONS):
    medium: str | None = None


_Source = _Present | None | msgspec.UnsetType


class VolumeWire(msgspec.Struct, forbid_unknown_fields=True, **_OPTIONS):
    """A volume: its name and which source it has (the Reader takes the first key after the name;
    any key not listed here fails the decode, and the Reader reads the pod)."""

    name: str
    empty_dir: EmptyDirWire | msgspec.UnsetType | None = msgspec.UNSET
    host_path: _Source = msgspec.UNSET
    persistent_volume_claim: _Source = msgspec.UNSET
    config_map: _Source = msgspec.UNSET
    secret: _Source = msgspec.UNSET
    projected: _Source = msgspec.UNSET
    downward_api: _Source = msgspec.field(default=msgspec.UNSET, name="downwardAPI")
    csi: _Source = msgspec.UNSET
    ephemeral: _Source = msgspec.UNSET
    image: _Source = msgspec.UNSET
    nfs: _Source = msgspec.UNSET
    iscsi: _Source = msgspec.UNSET
    fc: _Source = msgspec.UNSET
    rbd: _Source = msgspec.UNSET
    cephfs: _Source = msgspec.UNSET
    cinder: _Source = msgspec.UNSET
    glusterfs: _Source = msgspec.UNSET
    git_repo: _Source = msgspec.UNSET
    flex_volume: _Source = msgspec.UNSET
    flocker: _Source = msgspec.UNSET
    gce_persistent_disk: _Source = msgspec.UNSET
    aws_elastic_block_store: _Source = msgspec.UNSET
    azure_file: _Source = msgspec.UNSET
    azure_disk: _Source = msgspec.UNSET
    vsphere_volume: _Source = msgspec.UNSET
    quobyte: _Source = msgspec.UNSET
    photon_persistent_disk: _Source = msgspec.UNSET
    portworx_volume: _Source = msgspec.UNSET
    scale_io: _Source = msgspec.field(default=msgspec.UNSET, name="scaleIO")
    storageos: _Source = msgspec.UNSET


# (attribute, the manifest's key) of every volume source, for the source's kind.
VOLUME_SOURCES = tuple(
    (name, encoded)
    for name, encoded in zip(VolumeWire.__struct_fields__, VolumeWire.__struct_encode_fields__, strict=True)
    if name != "name"
)


class PodSpecWire(msgspec.Struct, **_OPTIONS):
    containers: list[ContainerWire] | None = None
    node_name: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, str | int]] | None = None
    priority: int | None = None
    priority_class_name: str | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    scheduler_name: str | None = None
    # Read by the Reader's parsers (their field paths), or, when set, the whole pod is.
    affinity: Any = None
    topology_spread_constraints: Any = None
    volumes: list[VolumeWire] | None = None
    init_containers: Any = None
    overhead: Any = None
    host_network: Any = None


class PodConditionWire(msgspec.Struct, **_OPTIONS):
    type: str = ""
    status: str | None = None
    reason: str | None = None
    last_transition_time: str | None = None


class ContainerStatusWire(msgspec.Struct, **_OPTIONS):
    restart_count: int | None = None


class PodStatusWire(msgspec.Struct, **_OPTIONS):
    phase: str | None = None
    conditions: list[PodConditionWire] | None = None
    start_time: str | None = None
    nominated_node_name: str | None = None
    container_statuses: list[ContainerStatusWire] | None = None
    init_container_statuses: Any = None


class PodWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    spec: PodSpecWire
    status: PodStatusWire | None = None
    # Last, and defaulted, so that a batch of List items decodes as pods in one pass and is
    # checked to be pods after (model/stream.py).
    kind: str = ""


class KindWire(msgspec.Struct, **_OPTIONS):
    """Only an object's kind: what a List item is, read without decoding the rest of it."""

    kind: Any = None


class TaintWire(msgspec.Struct, **_OPTIONS):
    key: str
    effect: str
    value: str | None = None
    time_added: str | None = None


class NodeSpecWire(msgspec.Struct, **_OPTIONS):
    taints: list[TaintWire] | None = None
    unschedulable: bool | None = None
    provider_id: str | None = msgspec.field(default=None, name="providerID")


class NodeConditionWire(msgspec.Struct, **_OPTIONS):
    type: str | None = None
    status: str | None = None
    last_transition_time: str | None = None


class NodeStatusWire(msgspec.Struct, **_OPTIONS):
    capacity: dict[str, str] | None = None
    allocatable: dict[str, str] | None = None
    conditions: list[NodeConditionWire] | None = None


class NodeWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    spec: NodeSpecWire | None = None
    status: NodeStatusWire | None = None
    kind: str = ""


class NamespaceWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    kind: str = ""


class PriorityClassWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    value: int
    global_default: bool | None = None
    preemption_policy: str | None = None
    kind: str = ""


class PodDisruptionBudgetSpecWire(msgspec.Struct, **_OPTIONS):
    min_available: int | str | None = None
    max_unavailable: int | str | None = None
    unhealthy_pod_eviction_policy: str | None = None
    selector: Any = None  # read by the Reader's selector parser (its field paths)


class PodDisruptionBudgetStatusWire(msgspec.Struct, **_OPTIONS):
    disruptions_allowed: int | None = None
    current_healthy: int | None = None
    desired_healthy: int | None = None
    expected_pods: int | None = None


class PodDisruptionBudgetWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    spec: PodDisruptionBudgetSpecWire | None = None
    status: PodDisruptionBudgetStatusWire | None = None
    kind: str = ""
