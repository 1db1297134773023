"""The wire schema of the workload kinds (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job),
CronJob, HorizontalPodAutoscaler and ConfigMap: msgspec Structs carrying only the fields kubetide
reads, as model/wire.py does for pods and nodes (see there for what the decoder checks and skips).

A pod template's spec is kept as plain values (`Any`): a template's identity is a digest of its
spec as written, images and probes included (model/workloads.py's spec_hash), so the whole spec
is needed, and its prototype pod is built from it through the pods' own wire schema
(model/pod_typed.py). Fields the Reader's own parsers read with their field paths (selectors,
a Deployment's strategy, an HPA's behavior) are plain values too.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kubetide.model.wire import ObjectMetaWire

_OPTIONS: dict[str, Any] = {"frozen": True, "gc": False, "rename": "camel"}


class WorkloadMetaWire(ObjectMetaWire, **_OPTIONS):
    """ObjectMeta and metadata.generation (what a Deployment's rollout status is judged against)."""

    generation: int | None = None


class TemplateMetaWire(msgspec.Struct, **_OPTIONS):
    name: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PodTemplateWire(msgspec.Struct, **_OPTIONS):
    metadata: TemplateMetaWire | None = None
    spec: Any = None


class WorkloadSpecWire(msgspec.Struct, **_OPTIONS):
    replicas: int | None = None
    selector: Any = None
    template: PodTemplateWire | None = None
    # Deployment
    strategy: Any = None
    min_ready_seconds: int | None = None
    progress_deadline_seconds: int | None = None
    revision_history_limit: int | None = None
    # StatefulSet
    pod_management_policy: str | None = None
    # Job
    parallelism: int | None = None
    completions: int | None = None


class WorkloadStatusWire(msgspec.Struct, **_OPTIONS):
    replicas: int | None = None
    ready_replicas: int | None = None
    observed_generation: int | None = None
    updated_replicas: int | None = None
    available_replicas: int | None = None


class WorkloadWire(msgspec.Struct, **_OPTIONS):
    metadata: WorkloadMetaWire
    spec: WorkloadSpecWire | None = None
    status: WorkloadStatusWire | None = None
    kind: str = ""


class JobTemplateMetaWire(msgspec.Struct, **_OPTIONS):
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class JobSpecWire(msgspec.Struct, **_OPTIONS):
    """A CronJob's job spec: what parse_workload reads of a Job (WorkloadSpecWire's Job fields)."""

    selector: Any = None
    template: PodTemplateWire | None = None
    pod_management_policy: str | None = None
    parallelism: int | None = None
    completions: int | None = None


class JobTemplateWire(msgspec.Struct, **_OPTIONS):
    metadata: JobTemplateMetaWire | None = None
    spec: JobSpecWire | None = None


class CronJobSpecWire(msgspec.Struct, **_OPTIONS):
    schedule: str
    time_zone: str | None = None
    concurrency_policy: str | None = None
    starting_deadline_seconds: int | None = None
    suspend: bool | None = None
    successful_jobs_history_limit: int | None = None
    failed_jobs_history_limit: int | None = None
    job_template: JobTemplateWire | None = None


class CronJobStatusWire(msgspec.Struct, **_OPTIONS):
    last_schedule_time: str | None = None
    last_successful_time: str | None = None


class CronJobWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    spec: CronJobSpecWire
    status: CronJobStatusWire | None = None
    kind: str = ""


class CrossVersionObjectReferenceWire(msgspec.Struct, **_OPTIONS):
    kind: str
    name: str


class MetricTargetWire(msgspec.Struct, **_OPTIONS):
    type: str
    average_utilization: int | None = None
    average_value: str | None = None
    value: Any = None  # never set on a Resource metric the typed path takes


class ResourceMetricSourceWire(msgspec.Struct, **_OPTIONS):
    name: str
    target: MetricTargetWire


class MetricSpecWire(msgspec.Struct, **_OPTIONS):
    type: str
    resource: ResourceMetricSourceWire | None = None
    # The other sources, kept only to see whether one is given: such a metric (or a Resource
    # metric with a second source, which the API server refuses) is read by the Reader.
    pods: Any = None
    object: Any = None
    external: Any = None
    container_resource: Any = None


class HorizontalPodAutoscalerSpecWire(msgspec.Struct, **_OPTIONS):
    scale_target_ref: CrossVersionObjectReferenceWire
    max_replicas: int
    min_replicas: int | None = None
    metrics: list[MetricSpecWire] | None = None
    behavior: Any = None  # read by the Reader's parser (defaults, ranges and their field paths)


class MetricValueStatusWire(msgspec.Struct, **_OPTIONS):
    average_utilization: int | None = None
    average_value: str | None = None


class ResourceMetricStatusWire(msgspec.Struct, **_OPTIONS):
    name: str | None = None
    current: MetricValueStatusWire | None = None


class MetricStatusWire(msgspec.Struct, **_OPTIONS):
    type: str | None = None
    resource: ResourceMetricStatusWire | None = None


class HorizontalPodAutoscalerStatusWire(msgspec.Struct, **_OPTIONS):
    current_replicas: int | None = None
    desired_replicas: int | None = None
    last_scale_time: str | None = None
    current_metrics: list[MetricStatusWire] | None = None


class HorizontalPodAutoscalerWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    spec: HorizontalPodAutoscalerSpecWire
    status: HorizontalPodAutoscalerStatusWire | None = None
    kind: str = ""


class ConfigMapWire(msgspec.Struct, **_OPTIONS):
    metadata: ObjectMetaWire
    data: dict[str, str] | None = None
    kind: str = ""
