"""Workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) and CronJobs from the wire schema
(model/wire_workloads.py): decoded in C, built into the model's values here, as pods are
(model/pod_typed.py).

A template's prototype pod is built by the pods' own wire-schema path (`convert_pod`), so a
template is read exactly as a pod of it would be; its spec_hash is the digest of the spec as
decoded, which is what the Reader path hashes. The selector and a Deployment's strategy go
through the Reader's own parsers on just those fields, so their lenient forms ("25%", "3") mean
the same. Anything the API server would not have written (a type msgspec refused, a value out of
range, a template the pod path declines) makes the build decline, and the object is read by
parse_workload / parse_cronjob through the Reader, which alone words errors.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from kubetide.errors import ManifestError
from kubetide.model.cronjob import (
    CONCURRENCY_POLICIES,
    CronJob,
    Schedule,
    check_time_zone,
    parse_cronjob,
    parse_schedule,
)
from kubetide.model.meta import ObjectMeta
from kubetide.model.pod_typed import convert_pod
from kubetide.model.reader import INT64_MAX, INT64_MIN, Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.model.typed import Declined, timestamp, typed_meta
from kubetide.model.typed_kinds import Decode, wire_decoder, wire_parser
from kubetide.model.validation import int32_problem, labels_problem
from kubetide.model.wire_workloads import (
    CronJobWire,
    JobSpecWire,
    PodTemplateWire,
    WorkloadMetaWire,
    WorkloadSpecWire,
    WorkloadStatusWire,
    WorkloadWire,
)
from kubetide.model.workloads import (
    WORKLOAD_KINDS,
    PodTemplate,
    Workload,
    canonical_json,
    parse_deployment_limits,
    parse_strategy,
    parse_workload,
    spec_digest,
    template_restart_problem,
)

_SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet")
# A template is checked as a pod of it would be: under a name every kind accepts.
_PROTOTYPE_NAME = {"name": "template"}


def _int64(value: int | None) -> int | None:
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise Declined
    return value


def _count(value: int | None, default: int | None) -> int | None:
    """An int32 count that may not be negative (replicas, parallelism, completions)."""
    if value is None:
        return default
    if value < 0 or int32_problem(value) is not None:
        raise Declined
    return value


def _template(wire: PodTemplateWire | None, namespace: str, keep_text: bool) -> PodTemplate:
    """parse_template's result: the prototype built as a pod, the spec hashed as written."""
    if wire is None:
        raise Declined  # a template without containers: the Reader says so
    tmeta = wire.metadata
    labels = dict(tmeta.labels or {}) if tmeta else {}
    if labels and labels_problem(labels) is not None:
        raise Declined
    pod = convert_pod({"metadata": _PROTOTYPE_NAME, "spec": wire.spec}, "", "")
    if pod is None:
        raise Declined
    meta = ObjectMeta(
        name=(tmeta.name if tmeta else None) or "",
        namespace=namespace,
        labels=labels,
        annotations=dict(tmeta.annotations or {}) if tmeta else {},
    )
    try:
        text = canonical_json(wire.spec)
    except (ValueError, RecursionError):
        raise Declined from None  # an integer longer than Python prints: the Reader words it
    prototype = dataclasses.replace(pod, meta=meta, parsed_shape=pod.shape)  # the shape ignores meta
    return PodTemplate(prototype, spec_digest(text), text if keep_text else "")


def _selector(selector: Any) -> LabelSelector:
    try:
        return parse_label_selector(Reader(selector, "", "", "spec.selector"))
    except ManifestError:
        raise Declined from None


def _strategy(strategy: Any) -> tuple[str, int | str, int | str]:
    try:
        return parse_strategy(Reader({} if strategy is None else {"strategy": strategy}, "", "", "spec"))
    except ManifestError:
        raise Declined from None


def _deployment_limits(spec: WorkloadSpecWire) -> tuple[int, int]:
    given = {
        "minReadySeconds": spec.min_ready_seconds,
        "progressDeadlineSeconds": spec.progress_deadline_seconds,
        "revisionHistoryLimit": spec.revision_history_limit,
    }
    try:
        return parse_deployment_limits(
            Reader({key: value for key, value in given.items() if value is not None}, "", "", "spec")
        )
    except ManifestError:
        raise Declined from None


def build_workload(
    kind: str,
    meta_wire: WorkloadMetaWire,
    spec: WorkloadSpecWire | None,
    status: WorkloadStatusWire | None = None,
) -> Workload:
    """parse_workload's result for a workload as the API server writes it; Declined otherwise."""
    meta = typed_meta(meta_wire, kind, namespaced=True)
    if spec is None:
        raise Declined
    template = _template(spec.template, meta.namespace, keep_text=kind == "Deployment")
    if spec.selector is not None:
        selector = _selector(spec.selector)
    elif kind == "Job":
        selector = LabelSelector(tuple(sorted(template.labels.items())))
    else:
        raise Declined
    if kind != "Job" and (selector.empty or not selector.matches(template.labels)):
        raise Declined
    pod_spec = spec.template.spec if spec.template is not None else None
    if isinstance(pod_spec, dict) and template_restart_problem(kind, pod_spec.get("restartPolicy")):
        raise Declined
    replicas = _count(spec.replicas, 1) if kind in _SCALED_KINDS else None
    strategy: tuple[str, int | str, int | str] = ("RollingUpdate", "25%", "25%")
    min_ready = 0
    history = 10
    if kind == "Deployment":
        strategy = _strategy(spec.strategy)
        min_ready, history = _deployment_limits(spec)
    parallelism = completions = None
    if kind == "Job":
        parallelism = _count(spec.parallelism, 1)
        completions = _count(spec.completions, None)
    counts = (
        (
            status.replicas,
            status.ready_replicas,
            status.observed_generation,
            status.updated_replicas,
            status.available_replicas,
        )
        if status is not None
        else (None, None, None, None, None)
    )
    for count in counts:
        _int64(count)
    return Workload(
        kind=kind,
        meta=meta,
        selector=selector,
        template=template,
        replicas=replicas,
        parallelism=parallelism,
        completions=completions,
        pod_management_policy=(
            "OrderedReady" if spec.pod_management_policy is None else spec.pod_management_policy
        ),
        status_replicas=counts[0],
        status_ready_replicas=counts[1],
        generation=_int64(meta_wire.generation),
        status_observed_generation=counts[2],
        status_updated_replicas=counts[3],
        status_available_replicas=counts[4],
        strategy=strategy[0],
        max_surge=strategy[1],
        max_unavailable=strategy[2],
        min_ready_seconds=min_ready,
        revision_history_limit=history,
    )


def _workload_builder(kind: str) -> Callable[[WorkloadWire], Workload]:
    def build(wire: WorkloadWire) -> Workload:
        return build_workload(kind, wire.metadata, wire.spec, wire.status)

    return build


# kind -> decode(JSON text), and kind -> parse(Reader), for each of WORKLOAD_KINDS
WORKLOAD_DECODERS: dict[str, Decode] = {
    kind: wire_decoder(WorkloadWire, _workload_builder(kind), kind) for kind in WORKLOAD_KINDS
}
WORKLOAD_PARSERS: dict[str, Callable[[Reader], Workload]] = {
    kind: wire_parser(WorkloadWire, _workload_builder(kind), functools.partial(parse_workload, kind=kind))
    for kind in WORKLOAD_KINDS
}


@functools.lru_cache(maxsize=1024)
def _schedule(text: str) -> Schedule:
    try:
        return parse_schedule(text)
    except ValueError:
        raise Declined from None


@functools.lru_cache(maxsize=256)
def _time_zone(name: str) -> str:
    try:
        check_time_zone(name)
    except ValueError:
        raise Declined from None
    return name


def _history_limit(value: int | None, default: int) -> int:
    if value is None:
        return default
    if not 0 <= value <= INT64_MAX:
        raise Declined
    return value


def _workload_spec(spec: JobSpecWire) -> WorkloadSpecWire:
    return WorkloadSpecWire(
        selector=spec.selector,
        template=spec.template,
        pod_management_policy=spec.pod_management_policy,
        parallelism=spec.parallelism,
        completions=spec.completions,
    )


def _cronjob(wire: CronJobWire) -> CronJob:
    meta = typed_meta(wire.metadata, "CronJob", namespaced=True)
    spec = wire.spec
    schedule = _schedule(spec.schedule)
    zone = None if spec.time_zone is None else _time_zone(spec.time_zone)
    policy = "Allow" if spec.concurrency_policy is None else spec.concurrency_policy
    if policy not in CONCURRENCY_POLICIES:
        raise Declined
    deadline = _int64(spec.starting_deadline_seconds)
    if deadline is not None and deadline < 0:
        raise Declined
    # The job spec.jobTemplate stamps, as parse_cronjob makes it: named after the CronJob.
    template = spec.job_template
    template_meta = template.metadata if template else None
    job_meta = WorkloadMetaWire(
        name=meta.name,
        namespace=meta.namespace,
        labels=(template_meta.labels if template_meta else None) or {},
        annotations=(template_meta.annotations if template_meta else None) or {},
    )
    job_spec = template.spec if template else None
    job = build_workload("Job", job_meta, _workload_spec(job_spec) if job_spec else WorkloadSpecWire())
    status = wire.status
    return CronJob(
        meta=meta,
        schedule=schedule,
        time_zone=zone,
        concurrency_policy=policy,
        starting_deadline_seconds=deadline,
        suspend=bool(spec.suspend),
        successful_jobs_history_limit=_history_limit(spec.successful_jobs_history_limit, 3),
        failed_jobs_history_limit=_history_limit(spec.failed_jobs_history_limit, 1),
        job=job,
        last_schedule_time=timestamp(status.last_schedule_time) if status else None,
        last_successful_time=timestamp(status.last_successful_time) if status else None,
    )


decode_cronjob = wire_decoder(CronJobWire, _cronjob, "CronJob")
parse_cronjob_typed = wire_parser(CronJobWire, _cronjob, parse_cronjob)
