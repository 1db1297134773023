"""Job controller: keep `parallelism` pods running until `completions` have succeeded.

Each pod runs for its `kubetide.io/run-duration` annotation (pod template first, then the Job's own
metadata), or the scenario's `spec.cluster.jobRunDuration`, then Succeeded. A pod deleted or evicted
before it finished is replaced (it counts as neither success nor failure here). Without
`completions`, the Job is complete when any pod succeeds, as in Kubernetes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from kubetide.durations import parse_duration
from kubetide.model import Pod, Workload
from kubetide.sim.runtime.controller import Controller
from kubetide.sim.runtime.engine import Engine
from kubetide.sim.runtime.kubelet import Kubelets
from kubetide.sim.runtime.world import World
from kubetide.sim.spec.scenario import RUN_DURATION_ANNOTATION, ClusterSpec


class Jobs(Controller):
    scaled_field = "parallelism"
    kind = "Job"

    def __init__(self, engine: Engine, world: World, cluster: ClusterSpec, kubelets: Kubelets):
        super().__init__(engine, world, cluster, kubelets)
        self.succeeded: dict[str, int] = {}  # Job UID -> succeeded pods
        self.completed_jobs: dict[str, float] = {}  # Job key -> completion time
        self.on_finished: list[Callable[[Workload], None]] = []  # the CronJob controller listens

    def apply(self, workload: Workload) -> None:
        super().apply(workload)
        stored = self.world.workloads[workload.key]
        text = stored.meta.annotations.get(RUN_DURATION_ANNOTATION)
        if text:
            with contextlib.suppress(ValueError):
                self.kubelets.run_durations[stored.meta.uid] = parse_duration(text)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        if new.phase == "Succeeded" and old.phase != "Succeeded":
            ref = new.meta.controller
            if ref is not None and ref.kind == "Job":
                self.succeeded[ref.uid] = self.succeeded.get(ref.uid, 0) + 1
        super().pod_updated(old, new)

    def adopt_finished(self, pod: Pod) -> None:
        """A pod that finished before the scenario started (sim/adoption.py): a success counts
        towards its Job's completions, as the Job's status would."""
        ref = pod.meta.controller
        if pod.phase == "Succeeded" and ref is not None and ref.kind == "Job":
            self.succeeded[ref.uid] = self.succeeded.get(ref.uid, 0) + 1

    def status(self, job: Workload) -> tuple[int, int]:
        """(active pods, succeeded pods)."""
        return len(self.active_pods(job)), self.succeeded.get(job.meta.uid, 0)

    def sync(self, job: Workload) -> None:
        if job.key in self.completed_jobs:
            return
        active = self.active_pods(job)
        succeeded = self.succeeded.get(job.meta.uid, 0)
        if job.completions is None:
            done = succeeded > 0
            wanted = 0 if done else (job.parallelism or 0)
        else:
            done = succeeded >= job.completions
            wanted = min(job.parallelism or 0, job.completions - succeeded)
        if done:
            self.completed_jobs[job.key] = self.engine.now()
            for hook in self.on_finished:
                hook(job)
            return
        for _ in range(wanted - len(active)):
            self.create_pod(job, self.generate_name(job.name))
        if len(active) > wanted:  # parallelism lowered: the newest pods go
            active.sort(key=lambda p: (p.meta.creation_timestamp or 0.0, p.name))
            for pod in active[wanted:]:
                self.kubelets.delete(pod)
