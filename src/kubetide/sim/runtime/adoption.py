"""Pods that exist when a scenario starts (spec.objects, typically a cluster dump) are adopted.

The simulation starts from the cluster as the objects describe it, not from their specs: a pod
keeps its name, UID, node, phase, readiness and age (the scenario moved its times so that the
dump's newest one is the start, sim/spec/scenario.py), and belongs to the controller its
ownerReferences name, which therefore creates no second set. Nodes are adopted by their groups
(`SimCloud.adopt`), Deployments by their newest ReplicaSet (`ReplicaSets.apply`).

What the simulator cannot keep as it is:
- a finished pod (Succeeded, Failed) holds nothing and is not kept; a Job counts its successes;
- a pod bound to a node the objects do not contain starts over as a new pending pod, as its
  controller's replacement would.
"""

from __future__ import annotations

import dataclasses

from kubetide.model import OwnerReference, Pod
from kubetide.sim.runtime.job import Jobs
from kubetide.sim.runtime.world import World


def adopt_pod(world: World, jobs: Jobs, pod: Pod, now: float) -> bool:
    """Add `pod` as it is. False when it cannot be kept (the caller creates it anew)."""
    if not pod.is_terminal and (
        pod.node_name not in world.snapshot if pod.node_name else pod.phase != "Pending"
    ):
        return False  # bound to a node that is not there, or running on none
    meta = pod.meta
    created = now if meta.creation_timestamp is None else meta.creation_timestamp
    owners = _with_uids(world, pod)
    if created != meta.creation_timestamp or owners != meta.owner_references:
        meta = dataclasses.replace(meta, creation_timestamp=created, owner_references=owners)
        pod = dataclasses.replace(pod, meta=meta)
    if pod.is_terminal:
        jobs.adopt_finished(pod)
    else:
        world.add_pod(pod)
    return True


def _with_uids(world: World, pod: Pod) -> tuple[OwnerReference, ...]:
    """Owner references with the owner's UID filled in where a hand-written manifest left it out
    (controllers find their pods by UID)."""
    refs = []
    for ref in pod.meta.owner_references:
        if not ref.uid:
            owner = world.workloads.get(f"{ref.kind}/{pod.namespace}/{ref.name}")
            if owner is not None:
                ref = dataclasses.replace(ref, uid=owner.meta.uid)
        refs.append(ref)
    return tuple(refs)
