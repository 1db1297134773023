"""Memo: facts derived from a node (or a pod), reused for as long as what they came from holds.

The autoscaler runs every loop over every node of a cluster that mostly did not change, so its
per-node facts (expendable pods, eligibility, owner counts, readiness, a pod's homeless copy) are
worth keeping between loops. Each is stored under a *version*:

- `stamp`: the snapshot's change stamp of the node (`ClusterSnapshot.stamp`), renewed by every
  change to the node or its pods, a revert's inverse changes included. Stamps come from one
  counter shared by all snapshots and are never issued twice, so a fact kept under a stamp is
  never stale;
- `tag`: one more object the fact depends on, compared by identity (the Node or Pod object,
  which are immutable, or the node group a cloud answered), for facts the stamp does not cover.

`get` answers only when both are what the fact was stored under. Entries live pass by pass: a
caller that visits its keys once per loop calls `new_pass()` first, and entries that were neither
read nor stored during a pass are dropped at the next one. That is how nodes that left the
cluster (and pods no longer simulated) leave the memo, at no cost beyond the visits themselves.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Memo(Generic[K, V]):
    __slots__ = ("_current", "_previous")

    def __init__(self) -> None:
        # key -> (stamp, tag, value); `_current` holds what this pass read or stored.
        self._current: dict[K, tuple[int, object, V]] = {}
        self._previous: dict[K, tuple[int, object, V]] = {}

    def new_pass(self) -> None:
        """Start a pass: entries not read or stored from now until the next pass are dropped."""
        self._previous, self._current = self._current, {}

    def get(self, key: K, stamp: int = 0, tag: object = None) -> V | None:
        """The value stored under `key` with this `stamp` and this very `tag`, else None."""
        # A key's first visit in a pass moves its entry over; a key is never in both dicts.
        entry = self._previous.pop(key, None)
        if entry is None:
            entry = self._current.get(key)
            if entry is None:
                return None
        else:
            self._current[key] = entry
        if entry[0] != stamp or entry[1] is not tag:
            return None
        return entry[2]

    def put(self, key: K, value: V, stamp: int = 0, tag: object = None) -> V:
        self._previous.pop(key, None)
        self._current[key] = (stamp, tag, value)
        return value

    def clear(self) -> None:
        self._current, self._previous = {}, {}
