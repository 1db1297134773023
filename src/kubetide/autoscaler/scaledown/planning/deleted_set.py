"""Step 1 of UpdateUnneededNodes: re-validate the deleted set.

The pods still on nodes being deleted must fit on other nodes (their hints first, then the
search; PDBs are charged but not checked: those evictions are under way). If one does not, no new
candidates are added this loop and the plan says why: making a shortage worse is the one thing
scale-down must not do.
"""

from __future__ import annotations

from kubetide.autoscaler.scaledown.planning.drainability import pods_needing_homes
from kubetide.autoscaler.scaledown.planning.update import Update, pod_order


def revalidate_deleted(u: Update) -> str | None:
    """Place the deleted set's pods; None when all fit, else why not."""
    snapshot, ctx, old_hints = u.snapshot, u.ctx, u.old_hints
    for name in sorted(u.deleted, key=snapshot.slot_of):
        pods = sorted(pods_needing_homes(list(snapshot.pods_on(name).values()), ctx), key=pod_order)
        hints = old_hints.get(name, {})
        moved: dict[str, str] = {}
        for pod in pods:
            ctx.pdbs.force_consume(pod)
            dest = u.mover.move(pod.uid, hints.get(pod.uid), u.skip)
            if dest is None:
                return f"pod {pod.key} of node {name} (being deleted) no longer fits on any other node"
            moved[pod.uid] = dest
            u.plan.destinations[pod.key] = dest
            u.receive(dest, pod, name)
        u.new_hints[name] = moved
    return None
