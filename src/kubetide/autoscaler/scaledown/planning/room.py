"""The candidate search's pre-check: free cpu and memory summed over every possible destination.

A node whose pods request more cpu or memory than all the nodes they could move to have free
together cannot be drained, whatever the placement; the search says so without simulating it.
That is most of the cost of a late pass, where every node left is a destination filled by the
candidates before it (issue 17: destinations may be candidates too) and each of their
simulations would move pods one by one until one finds no room.

The total is kept exactly as the search goes: a committed candidate takes its own free room out
of it (no pod may go there any more) and the requests it moved (they now fill destinations).
Nodes that take no pod for other reasons (taints, selectors) still count, so the check only ever
skips simulations that would fail; it never changes which nodes succeed.
"""

from __future__ import annotations

from collections.abc import Container, Iterable

import numpy as np

from kubetide.autoscaler.scaledown.planning.update import Received
from kubetide.model.quantity import CPU, MEMORY
from kubetide.snapshot import ClusterSnapshot

RESOURCES = (CPU, MEMORY)


class FreeRoom:
    def __init__(self, snapshot: ClusterSnapshot, skip: Container[str]):
        self.snapshot = snapshot
        self.columns = [snapshot.columns.index[r] for r in RESOURCES]
        free = np.clip(snapshot.alloc[:, self.columns] - snapshot.used[:, self.columns], 0, None)
        mask = snapshot.valid.copy()
        for node in snapshot.nodes():
            if node.name in skip:
                mask[snapshot.slot_of(node.name)] = False
        self.total = [int(v) for v in free[mask].sum(axis=0)]

    def free(self, name: str) -> list[int]:
        """What `name` has free now (never below zero), per resource."""
        slot = self.snapshot.slot_of(name)
        alloc, used = self.snapshot.alloc[slot], self.snapshot.used[slot]
        return [max(0, int(alloc[c]) - int(used[c])) for c in self.columns]

    @staticmethod
    def need(pods: Iterable[Received]) -> list[int]:
        """What the pods request together, per resource (in RESOURCES order)."""
        cpu = memory = 0
        for r in pods:
            requests = r.pod.requests
            cpu += requests.get(CPU, 0)
            memory += requests.get(MEMORY, 0)
        return [cpu, memory]

    def short(self, name: str, need: list[int]) -> tuple[str, int, int] | None:
        """(resource, requested, free elsewhere) for the first resource `name`'s pods (requesting
        `need`) cannot all find elsewhere, or None if they might fit."""
        own = self.free(name)
        for i, resource in enumerate(RESOURCES):
            elsewhere = self.total[i] - own[i]
            if need[i] > elsewhere:
                return resource, need[i], elsewhere
        return None

    def take(self, free_before: list[int], need: list[int]) -> None:
        """A candidate was committed: its room and what it moved leave the total."""
        self.total = [t - f - n for t, f, n in zip(self.total, free_before, need, strict=True)]
