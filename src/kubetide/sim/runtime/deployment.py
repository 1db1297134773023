"""The Deployment controller: ReplicaSets per pod template, and rollouts between them.

A Deployment owns ReplicaSets named `<name>-<hash>`, the hash (label pod-template-hash) taken
from its pod template: labels, annotations and the pod spec as written, images included. When the
template changes (an `apply` of a changed manifest, a `setImage` or `restart` scenario event,
`kubectl rollout restart` through `ClusterActions.restart_deployment`) the controller creates the
ReplicaSet of the new template, or takes back the one that already has it (a rollback), gives it
the next revision, and moves the replicas over as the strategy says (sim/rollout.py has the
arithmetic):

- RollingUpdate: the new ReplicaSet grows while all pods stay within replicas + maxSurge; old
  ReplicaSets shrink, unhealthy pods first, only while replicas - maxUnavailable pods stay
  available (Ready for minReadySeconds). Every sync does one step; the next comes when a pod
  becomes Ready, available, or goes.
- Recreate: every old ReplicaSet is scaled to 0; once their pods are gone, the new one is scaled
  up to replicas.

A Deployment created while ReplicaSets it owns exist (a cluster dump) takes the one whose template
is its own (the highest revision) with its replicas and pods; if none is, it rolls out a new one.

Differences from kube-controller-manager, each on purpose:
- The Deployment and ReplicaSet controllers act as one: the controller delay is paid once per
  change, and a ReplicaSet whose replicas the Deployment sync changed is synced at once (upstream,
  the ReplicaSet controller follows within milliseconds). So pods never outnumber what the
  Deployment allowed, and the surge bound holds on the pods themselves.
- A scale event during a rollout goes through the rolling arithmetic with the new replicas
  (upstream scales the ReplicaSets proportionally); progressDeadlineSeconds and paused are not
  modelled.
- Once a rollout is complete, old ReplicaSets beyond spec.revisionHistoryLimit (default 10) are
  deleted, lowest revision first, as upstream's cleanupDeployment does, but only those with no pod
  left at all (upstream: no active pod; its garbage collector then deletes the terminating ones),
  so one whose pods are still terminating goes at a later sync.
  Without it, every rollout restart would leave one more ReplicaSet that each later sync reads.
- A pod is available once Ready for minReadySeconds or more (upstream: more than), so the sync
  that the controller schedules for that moment sees it available.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

from kubetide.durations import rfc3339
from kubetide.model import ObjectMeta, OwnerReference, Pod, PodTemplate, Workload
from kubetide.model.selectors import LabelSelector
from kubetide.model.workloads import RESTARTED_AT_ANNOTATION, REVISION_ANNOTATION, canonical_json, spec_digest
from kubetide.sim.runtime.controller import Controller
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.replicaset import TEMPLATE_HASH_LABEL, ReplicaSets
from kubetide.sim.runtime.rollout import (
    OldReplicaSet,
    RolloutStatus,
    max_unavailable,
    new_replicaset_replicas,
    old_replicaset_scale_down,
    resolve_fenceposts,
)
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import ClusterSpec

_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # what upstream's SafeEncodeString maps hash digits to


class Deployments(Controller):
    kind = "Deployment"

    def __init__(
        self,
        engine: Engine,
        world: World,
        cluster: ClusterSpec,
        kubelets: Kubelets,
        replicasets: ReplicaSets,
        log: EventLog | None = None,
    ):
        super().__init__(engine, world, cluster, kubelets)
        self.replicasets = replicasets
        self.log = log  # ScalingReplicaSet events; None while the simulation sets up its t=0 state
        self.generation: dict[str, int] = {}  # Deployment key -> metadata.generation
        self.observed: dict[str, int] = {}  # Deployment key -> status.observedGeneration
        self.rollouts = 0  # ReplicaSets a template change created or took back
        self._moving: set[str] = set()  # Deployments whose last sync left them rolling out
        self._wake: dict[str, Timer] = {}  # Deployment key -> its sync when a pod turns available
        self._updated: dict[str, str] = {}  # Deployment key -> UID of its current ReplicaSet
        # While a batch of syncs runs: (namespace, Deployment name) -> keys of the ReplicaSets
        # naming it as controller, so a sync does not scan every workload.
        self._index: dict[tuple[str, str], list[str]] | None = None

    # -- the API server's side -----------------------------------------------------------------
    def apply(self, workload: Workload) -> None:
        """Create or update; an update keeps the object's identity and bumps its generation when
        the spec changed."""
        old = self.world.workloads.get(workload.key)
        if old is None:
            self.generation[workload.key] = 1
        else:
            meta = dataclasses.replace(
                workload.meta, uid=old.meta.uid, creation_timestamp=old.meta.creation_timestamp
            )
            workload = dataclasses.replace(workload, meta=meta)
            if _spec(old) != _spec(workload):
                self.generation[workload.key] = self.generation.get(workload.key, 1) + 1
        self.world.workloads[workload.key] = workload
        self.enqueue(workload.key)

    def scale(self, key: str, count: int) -> None:
        workload = self.world.workloads[key]
        if workload.replicas != count:
            self._update(dataclasses.replace(workload, replicas=count))

    def restart(self, key: str, at: float) -> None:
        """`kubectl rollout restart`: the template's restartedAt annotation set to `at`."""
        workload = self.world.workloads[key]
        prototype = workload.template.prototype
        annotations = {**prototype.annotations, RESTARTED_AT_ANNOTATION: rfc3339(at)}
        meta = dataclasses.replace(prototype.meta, annotations=annotations)
        template = dataclasses.replace(workload.template, prototype=dataclasses.replace(prototype, meta=meta))
        self._update(dataclasses.replace(workload, template=template))

    def set_images(self, key: str, images: dict[str, str]) -> None:
        """`kubectl set image`: new images for the named containers (init containers included).
        ValueError naming a container the template does not have."""
        workload = self.world.workloads[key]
        unknown = sorted(set(images) - set(container_names(workload.template)))
        if unknown:
            raise ValueError(f'no container "{unknown[0]}" in the pod template')
        if not workload.template.spec_text:
            raise ValueError("the pod template was not read from a manifest")
        spec = json.loads(workload.template.spec_text)
        for field in ("initContainers", "containers"):
            for container in spec.get(field) or ():
                if container.get("name") in images:
                    container["image"] = images[container["name"]]
        text = canonical_json(spec)
        template = dataclasses.replace(workload.template, spec_hash=spec_digest(text), spec_text=text)
        self._update(dataclasses.replace(workload, template=template))

    def _update(self, workload: Workload) -> None:
        self.generation[workload.key] = self.generation.get(workload.key, 1) + 1
        self.world.workloads[workload.key] = workload
        self.enqueue(workload.key)

    def delete(self, key: str) -> None:
        """Delete with cascading (background) garbage collection: every ReplicaSet the Deployment
        owns, and their pods."""
        workload = self.world.workloads.pop(key, None)
        if workload is None:
            return
        self._moving.discard(key)
        self.generation.pop(key, None)
        self.observed.pop(key, None)
        self._updated.pop(key, None)
        timer = self._wake.pop(key, None)
        if timer is not None:
            timer.cancel()
        for rs in self.owned(workload):
            del self.world.workloads[rs.key]
            self.delete_pods(rs)

    # -- reading -------------------------------------------------------------------------------
    def owned(self, deployment: Workload) -> list[Workload]:
        """The ReplicaSets whose controller is this Deployment (by UID, or by name where a
        hand-written ReplicaSet's owner reference has no UID), oldest first."""
        if self._index is not None:
            keys = self._index.get((deployment.namespace, deployment.name), ())
            candidates = [rs for key in keys if (rs := self.world.workloads.get(key)) is not None]
        else:
            candidates = list(self.world.workloads.values())
        owned = []
        for rs in candidates:
            ref = rs.meta.controller
            if (
                rs.kind == "ReplicaSet"
                and rs.namespace == deployment.namespace
                and ref is not None
                and ref.kind == "Deployment"
                and ref.name == deployment.name
                and ref.uid in ("", deployment.meta.uid)
            ):
                owned.append(rs)
        owned.sort(key=lambda rs: (rs.meta.creation_timestamp or 0.0, rs.name))
        return owned

    def current(self, deployment: Workload, owned: list[Workload] | None = None) -> Workload | None:
        """The ReplicaSet with the Deployment's template (the highest revision), if any."""
        identity = template_identity(deployment.template)
        matching = [
            rs
            for rs in (owned if owned is not None else self.owned(deployment))
            if template_identity(rs.template) == identity
        ]
        if not matching:
            return None
        return max(matching, key=lambda rs: (revision(rs), rs.meta.creation_timestamp or 0.0, rs.name))

    def status(self, namespace: str, name: str) -> RolloutStatus | None:
        """The Deployment's status now (None: no such Deployment)."""
        key = f"Deployment/{namespace}/{name}"
        deployment = self.world.workloads.get(key)
        if deployment is None:
            return None
        owned = self.owned(deployment)
        new = self.current(deployment, owned)
        now = self.engine.now()
        active = self.world.active
        replicas = ready = available = 0
        for rs in owned:
            replicas += active.get(rs.meta.uid, 0)
            ready += self.world.ready.get(rs.meta.uid, 0)
            available += self._available(rs, deployment, now)
        return RolloutStatus(
            spec_replicas=deployment.replicas or 0,
            generation=self.generation.get(key, 1),
            observed_generation=self.observed.get(key, 0),
            replicas=replicas,
            updated=0 if new is None else active.get(new.meta.uid, 0),
            ready=ready,
            available=available,
        )

    def reported(self, deployment: Workload, replicasets: list[str], ready: int) -> tuple[int, int, int, int]:
        """(generation, observedGeneration, updatedReplicas, availableReplicas) as the controller
        reports them in the Deployment's status, for `ClusterView.workloads()`: the ReplicaSet
        that counts as updated is the one its last sync settled on; `replicasets` are the UIDs of
        those it owns, `ready` their Ready active pods (the available ones without
        minReadySeconds)."""
        key = deployment.key
        current = self._updated.get(key)
        updated = self.world.active.get(current, 0) if current in replicasets else 0
        available = ready
        if deployment.min_ready_seconds > 0:
            now = self.engine.now()
            available = sum(
                _available(pod, deployment.min_ready_seconds, now)
                for uid in replicasets
                for pod in self.world.pods_of(uid)
            )
        return self.generation.get(key, 1), self.observed.get(key, 0), updated, available

    def rolling_out(self, namespace: str, name: str) -> bool:
        """True while a change of the Deployment is being rolled out; False once it has settled
        (and for a Deployment that does not exist)."""
        status = self.status(namespace, name)
        return status is not None and status.rolling_out

    # -- reconcile -----------------------------------------------------------------------------
    def _sync_dirty(self) -> None:
        index: dict[tuple[str, str], list[str]] = {}
        for rs in self.world.workloads.values():
            ref = rs.meta.controller
            if rs.kind == "ReplicaSet" and ref is not None and ref.kind == "Deployment":
                index.setdefault((rs.namespace, ref.name), []).append(rs.key)
        self._index = index
        try:
            super()._sync_dirty()
        finally:
            self._index = None

    def sync(self, deployment: Workload) -> None:
        key = deployment.key
        self.observed[key] = self.generation.setdefault(key, 1)
        owned = self.owned(deployment)
        new = self.current(deployment, owned)
        old = [rs for rs in owned if rs is not new]
        next_revision = max((revision(rs) for rs in old), default=0) + 1
        if new is not None and revision(new) < next_revision:
            new = self._set_revision(new, next_revision)  # taken back: a rollback
            if any(self._size(rs) for rs in old):
                self.rollouts += 1
        if deployment.strategy == "Recreate":
            new = self._recreate(deployment, new, old, next_revision)
        else:
            new = self._rolling(deployment, new, old, next_revision)
        if new is None:
            self._updated.pop(key, None)
        else:
            self._updated[key] = new.meta.uid
        if self._after(deployment):
            self._clean_up(deployment, old)

    def _rolling(
        self, d: Workload, new: Workload | None, old: list[Workload], next_revision: int
    ) -> Workload:
        replicas = d.replicas or 0
        surge, _ = resolve_fenceposts(d.max_surge, d.max_unavailable, replicas)
        unavailable = max_unavailable(d.strategy, d.max_surge, d.max_unavailable, replicas)
        if new is None:
            pods = sum(self._size(rs) for rs in old)
            new = self._create(d, new_replicaset_replicas(replicas, surge, pods, 0), next_revision)
        elif (new.replicas or 0) > replicas:
            return self._scale(d, new, replicas)
        elif (new.replicas or 0) < replicas:
            pods = self._size(new) + sum(self._size(rs) for rs in old)
            target = new_replicaset_replicas(replicas, surge, pods, new.replicas or 0)
            if target != new.replicas:
                return self._scale(d, new, target)
        now = self.engine.now()
        new_available = self._available(new, d, now)
        old_available = [self._available(rs, d, now) for rs in old]
        sizes = old_replicaset_scale_down(
            replicas,
            unavailable,
            [OldReplicaSet(rs.replicas or 0, a) for rs, a in zip(old, old_available, strict=True)],
            all_pods=(new.replicas or 0) + sum(rs.replicas or 0 for rs in old),
            available_pods=new_available + sum(old_available),
            new_unavailable=(new.replicas or 0) - new_available,
        )
        for rs, size in zip(old, sizes, strict=True):
            if size != rs.replicas:
                self._scale(d, rs, size)
        return new

    def _recreate(
        self, d: Workload, new: Workload | None, old: list[Workload], next_revision: int
    ) -> Workload | None:
        scaled = False
        for rs in old:
            if rs.replicas:
                self._scale(d, rs, 0)
                scaled = True
        if scaled or any(self.world.pods_of(rs.meta.uid) for rs in old):
            return new  # the new pods start once every old one is gone
        if new is None:
            return self._create(d, d.replicas or 0, next_revision)
        if new.replicas != d.replicas:
            return self._scale(d, new, d.replicas or 0)
        return new

    def _after(self, deployment: Workload) -> bool:
        """Watch pods while rolling out; sync again when a Ready pod's minReadySeconds are up.
        True when the rollout is complete."""
        key = deployment.key
        status = self.status(deployment.namespace, deployment.name)
        if status is not None and status.rolling_out:
            self._moving.add(key)
        else:
            self._moving.discard(key)
            return True
        if deployment.min_ready_seconds <= 0:
            return False
        now = self.engine.now()
        pending = [
            (pod.ready_transition or now) + deployment.min_ready_seconds
            for rs in self.owned(deployment)
            for pod in self._active(rs)
            if pod.ready and not _available(pod, deployment.min_ready_seconds, now)
        ]
        if not pending:
            return False
        when = min(pending)
        timer = self._wake.get(key)
        if timer is not None and timer.active:
            if timer.when <= when:
                return False
            timer.cancel()
        self._wake[key] = self.engine.at(when, self.enqueue, key)
        return False

    def _clean_up(self, d: Workload, old: list[Workload]) -> None:
        """Delete the old ReplicaSets beyond spec.revisionHistoryLimit, lowest revision first,
        skipping any with replicas or pods (upstream's cleanupDeployment)."""
        excess = len(old) - d.revision_history_limit
        if excess <= 0:
            return
        current = self.world.workloads  # `old` as read before this sync scaled some of them
        for rs in sorted(old, key=lambda rs: (revision(rs), rs.meta.creation_timestamp or 0.0, rs.name))[
            :excess
        ]:
            latest = current.get(rs.key)
            if latest is None or latest.replicas or rs.meta.uid in self.world.owned:
                continue
            del current[rs.key]
            self.world.active.pop(rs.meta.uid, None)
            self.world.ready.pop(rs.meta.uid, None)

    # -- ReplicaSets -----------------------------------------------------------------------------
    def _create(self, d: Workload, replicas: int, number: int) -> Workload:
        digest = _hash(template_identity(d.template))
        labels = {**d.template.labels, TEMPLATE_HASH_LABEL: digest}
        prototype = d.template.prototype
        # The ReplicaSet's template: the Deployment's, labelled with the hash (its JSON stays with
        # the Deployment, which alone rewrites it).
        template = PodTemplate(
            dataclasses.replace(prototype, meta=dataclasses.replace(prototype.meta, labels=labels)),
            d.template.spec_hash,
        )
        selector = LabelSelector(
            tuple(sorted({**dict(d.selector.match_labels), TEMPLATE_HASH_LABEL: digest}.items())),
            d.selector.match_expressions,
        )
        meta = ObjectMeta(
            name=f"{d.name}-{digest}",
            namespace=d.namespace,
            uid=self.world.new_uid(),
            labels=labels,
            annotations={REVISION_ANNOTATION: str(number)},
            owner_references=(OwnerReference("Deployment", d.name, d.meta.uid, controller=True),),
            creation_timestamp=self.engine.now(),
        )
        rs = Workload("ReplicaSet", meta, selector, template, replicas=0)
        self.world.workloads[rs.key] = rs
        if self._index is not None:
            self._index.setdefault((d.namespace, d.name), []).append(rs.key)
        if number > 1:
            self.rollouts += 1
        if replicas:
            rs = self._scale(d, rs, replicas)
        return rs

    def _scale(self, d: Workload, rs: Workload, replicas: int) -> Workload:
        before = rs.replicas or 0
        rs = dataclasses.replace(rs, replicas=replicas)
        self.world.workloads[rs.key] = rs
        if self.log is not None:
            way = "up" if replicas > before else "down"
            self.log.record(
                "Deployment",
                d.meta.key,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {way} replica set {rs.name} from {before} to {replicas}",
                "deployment-controller",
            )
        self.replicasets.sync(rs)  # the ReplicaSet controller, at once (see the module doc)
        return rs

    def _set_revision(self, rs: Workload, number: int) -> Workload:
        annotations = {**rs.meta.annotations, REVISION_ANNOTATION: str(number)}
        rs = dataclasses.replace(rs, meta=dataclasses.replace(rs.meta, annotations=annotations))
        self.world.workloads[rs.key] = rs
        return rs

    def _size(self, rs: Workload) -> int:
        """An RS's pods for the surge bound: its replicas, or more while extra pods still run."""
        return max(rs.replicas or 0, self.world.active.get(rs.meta.uid, 0))

    def _active(self, rs: Workload) -> list[Pod]:
        return [p for p in self.world.pods_of(rs.meta.uid) if not p.is_terminating and not p.is_terminal]

    def _available(self, rs: Workload, d: Workload, now: float) -> int:
        if d.min_ready_seconds <= 0:
            # Available is Ready and active: the world keeps that count (a sync would otherwise
            # pass over every pod of every ReplicaSet, a seventh of a 300-node simulation).
            return self.world.ready.get(rs.meta.uid, 0)
        return sum(_available(p, d.min_ready_seconds, now) for p in self._active(rs))

    # -- watches -----------------------------------------------------------------------------
    def owns(self, pod: Pod) -> str | None:
        """The Deployment of the pod's ReplicaSet, while that Deployment is rolling out (a settled
        Deployment has nothing to do when its pods change: its ReplicaSet replaces them)."""
        ref = pod.meta.controller
        if ref is None or ref.kind != "ReplicaSet" or not self._moving:
            return None
        rs = self.world.workloads.get(f"ReplicaSet/{pod.namespace}/{ref.name}")
        owner = None if rs is None else rs.meta.controller
        if owner is None or owner.kind != "Deployment":
            return None
        key = f"Deployment/{pod.namespace}/{owner.name}"
        return key if key in self._moving else None


def template_identity(template: PodTemplate) -> str:
    """What makes two pod templates the same to the Deployment controller: labels (but
    pod-template-hash), annotations and the pod spec as written. A hex digest."""
    prototype = template.prototype
    labels = sorted((k, v) for k, v in prototype.labels.items() if k != TEMPLATE_HASH_LABEL)
    annotations = sorted(prototype.annotations.items())
    body = template.spec_hash
    if not body:  # a template built in code: the prototype's spec is all there is
        body = repr(dataclasses.replace(prototype, meta=ObjectMeta(name="")))
    text = json.dumps([labels, annotations, body], separators=(",", ":"))
    return hashlib.sha1(text.encode()).hexdigest()


def container_names(template: PodTemplate) -> list[str]:
    prototype = template.prototype
    return [c.name for c in (*prototype.init_containers, *prototype.containers)]


def revision(rs: Workload) -> int:
    text = rs.meta.annotations.get(REVISION_ANNOTATION, "")
    return int(text) if text.isdigit() else 0


def _hash(identity: str) -> str:
    return "".join(_ALPHABET[int(identity[i : i + 2], 16) % 27] for i in range(0, 20, 2))


def _available(pod: Pod, min_ready_seconds: int, now: float) -> bool:
    """Ready for min_ready_seconds, not terminating. A Ready pod with no transition time (a
    hand-written manifest's) has been Ready since before the simulation."""
    if not pod.ready or pod.is_terminating or pod.is_terminal:
        return False
    if min_ready_seconds <= 0 or pod.ready_transition is None:
        return True
    return pod.ready_transition + min_ready_seconds <= now


def _spec(workload: Workload) -> tuple:
    """The parts of a Deployment's spec whose change bumps its generation."""
    return (
        workload.replicas,
        template_identity(workload.template),
        workload.strategy,
        workload.max_surge,
        workload.max_unavailable,
        workload.min_ready_seconds,
    )
