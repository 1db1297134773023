"""Workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job) and their templates."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from kubetide.model.meta import KindKeyedIdentity, ObjectMeta, OwnerReference, checked_labels, parse_meta
from kubetide.model.pod import Pod, parse_pod_spec
from kubetide.model.reader import Reader
from kubetide.model.selectors import LabelSelector, parse_label_selector
from kubetide.model.validation import int32_problem


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """spec.template, parsed once into a prototype Pod that controllers stamp copies of.

    What the prototype leaves out (container images, probes, env, ...) still decides whether two
    templates are the same, which is what a Deployment rollout turns on: `spec_hash` is a digest
    of the template's pod spec as given (canonical JSON), and a Deployment's template also keeps
    that JSON as `spec_text`, so a change of image can be made to it. "" for templates built in
    code."""

    prototype: Pod
    spec_hash: str = ""
    spec_text: str = ""

    @property
    def labels(self) -> dict[str, str]:
        return self.prototype.labels

    def instantiate(
        self, name: str, namespace: str, uid: str, owner: OwnerReference, created: float, node_name: str = ""
    ) -> Pod:
        meta = ObjectMeta(
            name=name,
            namespace=namespace,
            uid=uid,
            labels=dict(self.prototype.labels),
            annotations=dict(self.prototype.annotations),
            owner_references=(owner,),
            creation_timestamp=created,
        )
        return dataclasses.replace(self.prototype, meta=meta, node_name=node_name)


@dataclass(frozen=True, slots=True)
class Workload(KindKeyedIdentity):
    """Fields every controller kind shares. `replicas` is None for DaemonSets."""

    kind: str
    meta: ObjectMeta
    selector: LabelSelector
    template: PodTemplate
    replicas: int | None = None
    # Job
    parallelism: int | None = None
    completions: int | None = None
    # StatefulSet
    pod_management_policy: str = "OrderedReady"
    # Deployment: spec.strategy (maxSurge / maxUnavailable as given: an int or "25%") and
    # spec.minReadySeconds
    strategy: str = "RollingUpdate"
    max_surge: int | str = "25%"
    max_unavailable: int | str = "25%"
    min_ready_seconds: int = 0
    # Deployment: spec.revisionHistoryLimit, the old ReplicaSets kept at 0 (apps/v1's default 10)
    revision_history_limit: int = 10
    # status, as the API server last reported it
    status_replicas: int | None = None
    status_ready_replicas: int | None = None
    # Deployment rollouts: metadata.generation and what the controller last reported of it
    # (None: not reported; the API server leaves zero counts out)
    generation: int | None = None
    status_observed_generation: int | None = None
    status_updated_replicas: int | None = None
    status_available_replicas: int | None = None

    def owner_reference(self) -> OwnerReference:
        return OwnerReference(self.kind, self.meta.name, self.meta.uid, controller=True)


WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job")


def spec_digest(spec_text: str) -> str:
    """PodTemplate.spec_hash of a pod spec's canonical JSON."""
    return hashlib.sha1(spec_text.encode()).hexdigest()


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def parse_template(reader: Reader, namespace: str, keep_text: bool = False) -> PodTemplate:
    template = reader.child("template")
    tmeta = template.child("metadata")
    meta = ObjectMeta(
        name=tmeta.str("name", default="") or "",
        namespace=namespace,
        labels=checked_labels(tmeta, "labels"),
        annotations=tmeta.str_map("annotations"),
    )
    text = canonical_json(template.raw("spec"))
    return PodTemplate(parse_pod_spec(template, meta), spec_digest(text), text if keep_text else "")


DEPLOYMENT_STRATEGIES = ("RollingUpdate", "Recreate")
# What `kubectl rollout restart` sets in a Deployment's spec.template.metadata.annotations.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"
# What the Deployment controller numbers its ReplicaSets with (on the ReplicaSet's metadata): the
# highest revision among those with the Deployment's template is the current one.
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def parse_strategy(spec: Reader) -> tuple[str, int | str, int | str]:
    """A Deployment's spec.strategy, checked as the API server validates it: (type, maxSurge,
    maxUnavailable), the defaults 25% / 25%."""
    strategy = spec.child("strategy")
    kind = strategy.str("type", default="RollingUpdate")
    if kind not in DEPLOYMENT_STRATEGIES:
        raise strategy.error(f'unknown strategy "{kind}" (expected RollingUpdate or Recreate)', "type")
    if kind == "Recreate" and strategy.has("rollingUpdate"):
        raise strategy.error("may not be given when the strategy type is Recreate", "rollingUpdate")
    rolling = strategy.child("rollingUpdate")
    surge = rolling.int_or_percent("maxSurge")
    unavailable = rolling.int_or_percent("maxUnavailable")
    surge = "25%" if surge is None else surge
    unavailable = "25%" if unavailable is None else unavailable
    for key, value in (("maxSurge", surge), ("maxUnavailable", unavailable)):
        problem = int32_problem(value) if isinstance(value, int) else None
        if problem is not None:
            raise rolling.error(problem, key)
    if isinstance(unavailable, str) and int(unavailable[:-1]) > 100:
        raise rolling.error(f"must not be greater than 100%, got {unavailable}", "maxUnavailable")
    if _amount(surge) == 0 and _amount(unavailable) == 0:
        raise rolling.error("may not be 0 when maxSurge is 0", "maxUnavailable")
    return kind, surge, unavailable


# The API server's default spec.progressDeadlineSeconds, which must exceed spec.minReadySeconds.
DEFAULT_PROGRESS_DEADLINE = 600


def parse_deployment_limits(spec: Reader) -> tuple[int, int]:
    """A Deployment's spec.minReadySeconds and revisionHistoryLimit (default 10), checked with the
    fields the API server checks them against (progressDeadlineSeconds, its default 600)."""
    values = {}
    for key, default in (
        ("minReadySeconds", 0),
        ("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE),
        ("revisionHistoryLimit", 10),
    ):
        value = values[key] = spec.int(key, default=default)
        problem = int32_problem(value) or (f"must be non-negative, got {value}" if value < 0 else None)
        if problem is not None:
            raise spec.error(problem, key)
    min_ready, deadline = values["minReadySeconds"], values["progressDeadlineSeconds"]
    if deadline <= min_ready:
        raise spec.error(
            f"must be greater than minReadySeconds ({min_ready}), got {deadline}"
            + (" (the default)" if not spec.has("progressDeadlineSeconds") else ""),
            "progressDeadlineSeconds",
        )
    return min_ready, values["revisionHistoryLimit"]


def template_restart_problem(kind: str, policy: object) -> str | None:
    """A pod template's restartPolicy for a controller of `kind`: a Job's pods must end
    (OnFailure or Never), the other controllers' must run on (Always). None when it is fine or
    not given (the API server defaults it to Always, which kubetide takes for a Job too)."""
    if policy is None:
        return None
    allowed = ("OnFailure", "Never") if kind == "Job" else ("Always",)
    if policy in allowed:
        return None
    return f"must be {' or '.join(allowed)} in a {kind}'s template, got {policy!r:.80}"


def _amount(value: int | str) -> int:
    return int(value[:-1]) if isinstance(value, str) else value


def parse_workload(reader: Reader, kind: str) -> Workload:
    meta = parse_meta(reader, kind, namespaced=True)
    spec = reader.child("spec")
    template = parse_template(spec, meta.namespace, keep_text=kind == "Deployment")
    if spec.has("selector"):
        selector = parse_label_selector(spec.child("selector"))
    elif kind == "Job":
        selector = LabelSelector(tuple(sorted(template.labels.items())))
    else:
        raise spec.error("required field is missing", "selector")
    if kind != "Job" and selector.empty:
        raise spec.error(f"an empty selector is invalid for a {kind}", "selector")
    if kind != "Job" and not selector.matches(template.labels):
        raise spec.error("selector does not match the template labels", "selector")
    template_spec = spec.child("template").child("spec")
    problem = template_restart_problem(kind, template_spec.raw("restartPolicy"))
    if problem is not None:
        raise template_spec.error(problem, "restartPolicy")
    replicas = None
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        replicas = spec.int("replicas", default=1)
        if replicas < 0:
            raise spec.error(f"must be non-negative, got {replicas}", "replicas")
        problem = int32_problem(replicas)
        if problem is not None:
            raise spec.error(problem, "replicas")
    status = reader.child("status")
    strategy: str = "RollingUpdate"
    surge: int | str = "25%"
    unavailable: int | str = "25%"
    min_ready = 0
    history = 10
    if kind == "Deployment":
        strategy, surge, unavailable = parse_strategy(spec)
        min_ready, history = parse_deployment_limits(spec)
    parallelism = completions = None
    if kind == "Job":
        parallelism = spec.int("parallelism", default=1)
        completions = spec.int("completions")
        for name, value in (("parallelism", parallelism), ("completions", completions)):
            if value is not None and value < 0:
                raise spec.error(f"must be non-negative, got {value}", name)
            problem = None if value is None else int32_problem(value)
            if problem is not None:
                raise spec.error(problem, name)
    return Workload(
        kind=kind,
        meta=meta,
        selector=selector,
        template=template,
        replicas=replicas,
        parallelism=parallelism,
        completions=completions,
        pod_management_policy=spec.str("podManagementPolicy", default="OrderedReady"),
        status_replicas=status.int("replicas"),
        status_ready_replicas=status.int("readyReplicas"),
        generation=reader.child("metadata").int("generation"),
        status_observed_generation=status.int("observedGeneration"),
        status_updated_replicas=status.int("updatedReplicas"),
        status_available_replicas=status.int("availableReplicas"),
        strategy=strategy,
        max_surge=surge,
        max_unavailable=unavailable,
        min_ready_seconds=min_ready,
        revision_history_limit=history,
    )


def rollout_verdict(
    generation: int, observed_generation: int, spec_replicas: int, replicas: int, updated: int, available: int
) -> tuple[bool, str]:
    """(done, message) of a Deployment's rollout, as `kubectl rollout status` decides it from the
    Deployment's generation, spec.replicas and status (replicas, updatedReplicas,
    availableReplicas)."""
    if observed_generation < generation:
        return False, "Waiting for deployment spec update to be observed..."
    if updated < spec_replicas:
        return False, f"{updated} out of {spec_replicas} new replicas have been updated..."
    if replicas > updated:
        return False, f"{replicas - updated} old replicas are pending termination..."
    if available < updated:
        return False, f"{available} of {updated} updated replicas are available..."
    return True, "successfully rolled out"


def rolling_out(workload: Workload) -> bool | None:
    """Whether a Deployment is rolling out a change (True) or has settled (False), from the status
    its controller reported; None when that is not known (not a Deployment, no status)."""
    if workload.kind != "Deployment" or workload.status_observed_generation is None:
        return None
    done, _ = rollout_verdict(
        workload.generation if workload.generation is not None else workload.status_observed_generation,
        workload.status_observed_generation,
        workload.replicas or 0,
        workload.status_replicas or 0,
        workload.status_updated_replicas or 0,
        workload.status_available_replicas or 0,
    )
    return not done
