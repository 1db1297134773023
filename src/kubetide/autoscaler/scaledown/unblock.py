"""What would unblock a node: the smallest change that makes an unremovable node removable.

A value, not a guess: `unblocking.find_unblocks` proposes a change from the node's reason and
blocking pods, applies it to a copy of the loop's inputs, runs the planner again, and repeats
(at most `MAX_ROUNDS` times) until the node is a scale-down candidate. `removable` says whether
the changes listed were enough; when they were not, the text says more is needed.

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
    ADD_NODE = "add-node"  # one more node of a node group
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


@dataclass(frozen=True, slots=True)
class Unblock:
    """The answer for one unremovable node."""

    node: str
    changes: tuple[Change, ...] = ()
    removable: bool = False  # the planner found the node removable with all `changes` applied
    text: str = ""  # one line: the changes, or why there is nothing to change (a timer, a wait)

    @property
    def needs_more(self) -> bool:
        """Changes were found but were not enough (more than `MAX_ROUNDS` rounds needed)."""
        return bool(self.changes) and not self.removable

    def to_json(self) -> dict[str, Any]:
        return {
            "removable": self.removable,
            "text": self.text,
            "changes": [c.to_json() for c in self.changes],
        }


def unblock_text(changes: tuple[Change, ...], removable: bool) -> str:
    """One line for a list of changes: each change's words, then whether they suffice."""
    if not changes:
        return ""
    counts: dict[str, int] = {}
    for c in changes:  # the same change twice (two more nodes of a group) is said once
        counts[c.text] = counts.get(c.text, 0) + 1
    words = "; ".join(text if n == 1 else f"{text} (x{n})" for text, n in counts.items())
    if removable:
        return words if len(changes) == 1 else f"{len(changes)} changes: {words}"
    return f"{words}; and more: still not removable after {MAX_ROUNDS} rounds of changes"
