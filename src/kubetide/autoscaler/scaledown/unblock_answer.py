"""What would unblock a node: the smallest change that makes an unremovable node removable.

A value, not a guess: `unblock_search.find_unblocks` proposes a change from the node's reason and
blocking pods, applies it to a copy of the loop's inputs, runs the planner again, and repeats
(at most `MAX_ROUNDS` times) until the node is a scale-down candidate, then drops every change
the others made unnecessary. `removable` says whether the changes listed were enough; `waiting`
that with them (or as it is) the node is unneeded and only waits for a budget or a timer, which
is not a block; when neither, the text says more is needed.

An answer changes each object or flag once, a number at the value that works (a group's min
size: the largest that lets the node go, found by planning with candidates), and lists its
changes by what a user controls (`change_rank`): the blocking pod's own fix, then budgets, node
groups and the surge, then other flags, utilization thresholds last.

A `Change` names its kind, its subject (the Kubernetes object or the flag) and the change in the
object's own terms, with one line of words; `target` and `value` are what applying it needs
(a pod UID, a PDB key, a flag name, a node group id) for the planner and for tests that apply it
to a real cluster.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

# The node annotation that carries the one-line answer on live clusters
# (`--annotate-scale-down-blockers`), so `kubectl get nodes -L` can show it.
BLOCKER_ANNOTATION = "kubetide.io/scale-down-blocker"
# Re-simulations per node: a node needing more is reported as needing more.
MAX_ROUNDS = 4


class ChangeKind(enum.StrEnum):
    """What kind of thing the change touches."""

    SAFE_TO_EVICT = "safe-to-evict"  # annotate a pod cluster-autoscaler.kubernetes.io/safe-to-evict: "true"
    LOCAL_VOLUMES = "safe-to-evict-local-volumes"  # list a pod's local volumes as safe to lose
    PDB = "pdb"  # let a PodDisruptionBudget allow more disruptions
    FLAG = "flag"  # an autoscaler flag
    ADD_NODE = "add-node"  # more nodes of a node group (`value`: how many)
    NODE_GROUP_MIN_SIZE = "node-group-min-size"  # lower a node group's min size
    NODE_ANNOTATION = "node-annotation"  # remove the node's scale-down-disabled annotation


@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    subject: str  # "Pod ns/name", "PodDisruptionBudget ns/name", "flag NAME", "node group G", "Node N"
    change: str  # the change in the object's terms, e.g. 'maxUnavailable: 2' or 'NAME=0.53'
    text: str  # one line in words
    target: str = ""  # pod UID, PDB key, flag name, node group id or node name
    value: str = ""  # the new value: flag value, annotation value, disruptions to add, new min size

    def to_json(self) -> dict[str, Any]:
        return {"kind": str(self.kind), "subject": self.subject, "change": self.change, "text": self.text}


# What a user controls first: the blocking pod's own fix, then its budget and node group
# settings, then the autoscaler's other flags, its utilization thresholds last.
_POD, _SETTINGS, _FLAGS, _THRESHOLDS = range(4)
THRESHOLD_FLAGS = frozenset({"scale-down-utilization-threshold", "scale-down-gpu-utilization-threshold"})
SURGE_FLAG = "surge-before-evict"


def change_rank(change: Change) -> int:
    """Where a change stands in an answer, by what a user controls (see `_POD`...)."""
    if change.kind in (ChangeKind.SAFE_TO_EVICT, ChangeKind.LOCAL_VOLUMES, ChangeKind.NODE_ANNOTATION):
        return _POD
    if change.kind is not ChangeKind.FLAG or change.target == SURGE_FLAG:
        return _SETTINGS  # a budget, a node group's size, or the Deployment's surge
    return _THRESHOLDS if change.target in THRESHOLD_FLAGS else _FLAGS


@dataclass(frozen=True, slots=True)
class Unblock:
    """The answer for one unremovable node."""

    node: str
    changes: tuple[Change, ...] = ()  # in `change_rank` order, each object or flag once
    removable: bool = False  # the planner found the node removable with all `changes` applied
    text: str = ""  # one line: the changes, or why there is nothing to change (a timer, a wait)
    # With `changes` applied (none: as it is), the node is unneeded and only waits: for a budget
    # to allow a disruption again (replacements becoming Ready, drains under way) or a timer.
    waiting: bool = False

    @property
    def needs_more(self) -> bool:
        """Changes were found but were not enough (more than `MAX_ROUNDS` rounds needed)."""
        return bool(self.changes) and not self.removable and not self.waiting

    @property
    def rank(self) -> tuple[int, int]:
        """Most actionable first: a verified answer, by its last change's `change_rank`; then
        answers that need more, then waits, then nodes nothing can change."""
        last = max((change_rank(c) for c in self.changes), default=_THRESHOLDS)
        if self.removable:
            return (0, last)
        if self.needs_more:
            return (1, last)
        return (2, 0) if self.waiting else (3, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "removable": self.removable,
            "waiting": self.waiting,
            "text": self.text,
            "changes": [c.to_json() for c in self.changes],
        }


def unblock_text(changes: tuple[Change, ...], removable: bool) -> str:
    """One line for a list of changes: each change's words, then whether they suffice."""
    if not changes:
        return ""
    words = "; ".join(c.text for c in changes)
    if removable:
        return words if len(changes) == 1 else f"{len(changes)} changes: {words}"
    return f"{words}; and more: still not removable after {MAX_ROUNDS} rounds of changes"
