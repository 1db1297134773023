"""Writes docs/why-not-scaled-down.md from real `kubetide plan` output on the bundled example.

    python docs/gen/why_not_scaled_down.py           # rewrite the guide
    python docs/gen/why_not_scaled_down.py --check   # exit 1 if the guide is not what plan says now

The words around the output are here; every node, reason, blocking pod and suggested change in
the guide is `kubetide plan`'s own (tests/cli/test_why_not_scaled_down_guide.py runs --check's
comparison, so the guide changes when plan's answers do).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path

from kubetide.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "why-not-scaled-down.md"
DUMP = "examples/plan-cluster.yaml"
GROUPS = "examples/plan-node-groups.yaml"
# A second, smaller dump: a pod that fits nowhere, and a node three pods block.
BLOCKERS = "examples/plan-blockers.yaml"
WIDTH = "100"

# Per reason: what it means and where to look, in the order the guide lists them.
REASONS: dict[str, str] = {
    "BlockedByPod": (
        "A pod on the node may not be evicted. The Cluster Autoscaler's drainability rules run per pod,"
        " in the node's pod order, and its PodDisruptionBudget check is the last rule of each pod; the"
        " first pod that fails one names the node (`blocking_pod`), and kubetide lists every other one"
        ' too (`blocking_pods`, "+N more" in the text). Each pod reason has its own fix: a bare pod'
        " (NotReplicated) needs a controller or the `safe-to-evict` annotation; a kube-system pod"
        " without a budget (UnmovableKubeSystemPod) a PodDisruptionBudget; local storage"
        " (LocalStorageRequested) the `safe-to-evict-local-volumes` annotation listing the volumes"
        " whose data may go; a budget that allows no disruption even with all its pods healthy"
        " (NotEnoughPdb) more room in the budget, or a surge: for a single replica kubetide suggests"
        ' `--surge-before-evict=true` (or the Deployment annotation `kubetide.io/surge-before-evict: "true"`)'
        " first, since a replacement started first is the fix, not a budget that lets the only pod go."
        " A budget only used up for now (by drains under way or pods not Ready yet) does not block:"
        ' the node is "waiting", and goes when the PDB allows a disruption again.'
    ),
    "NotUnderutilized": (
        "The node's requests (cpu or memory, whichever is higher, over allocatable) are above"
        " `scale-down-utilization-threshold` (0.5; exactly at it is underutilized, as in CA 1.35 on)."
        " Within 0.1 of the threshold, kubetide gives the threshold that would let it go (often with"
        " another change: its pods must still fit elsewhere), listed after every change to pods,"
        ' budgets and groups; further above it, the node is "in use, not blocked" and no threshold is'
        " suggested (a threshold near 1 would make every busy node a candidate)."
    ),
    "NoPlaceToMovePods": (
        "Some pod fits on no other node: resources, affinity, anti-affinity, taints, topology spread."
        " kubetide names the pod, the kube-scheduler filter that refuses it on the other nodes (in"
        " kube-scheduler's words, with the nodes, and the term for inter-pod affinity), and the node"
        " group one more node of which would take it."
    ),
    "NodeGroupMinSizeReached": (
        "Removing the node would take its group below `minSize`. kubetide gives the largest min size"
        " that lets the node go, found by planning with candidate values (a node whose group's other"
        " nodes take the room first needs more than one step down); where the node's pods then fit"
        " nowhere, it says so."
    ),
    "ScaleDownDisabledAnnotation": (
        'The node is annotated `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`: someone'
        " asked for it to stay. kubetide does not put its own blocker annotation on such a node."
    ),
    "NotAutoscaled": (
        "The node belongs to no node group the autoscaler manages (no group label, or a group not in"
        " GROUPS.yaml): nothing the autoscaler does will remove it."
    ),
}


def plan(*args: str, dump: tuple[str, ...] = (DUMP, "--node-groups", GROUPS)) -> str:
    """`kubetide plan` on an example, its stdout, at the guide's width."""
    out, err = io.StringIO(), io.StringIO()
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    cwd = Path.cwd()
    try:
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["plan", *dump, *args])
    finally:
        os.chdir(cwd)
        if before is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = before
    if code != 0:
        raise SystemExit(f"kubetide plan failed: {err.getvalue()}")
    return out.getvalue()


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(nodes: dict) -> list[str]:
    lines = [
        "| node | reason | blocking pods | what would unblock it | enough? |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, node in nodes.items():
        if node["status"] != "unremovable":
            continue
        pods = ", ".join(f"{b['pod']} ({b['reason']})" for b in node["blocking_pods"]) or "-"
        unblock = node["unblock"] or {}
        enough = (
            "yes"
            if unblock.get("removable")
            else "waiting"
            if unblock.get("waiting") and unblock.get("changes")
            else "no"
            if unblock.get("changes")
            else "-"
        )
        lines.append(
            f"| {name} | {node['reason']} | {cell(pods)} | {cell(unblock.get('text', '') or '-')} | {enough} |"
        )
    return lines


def render() -> str:
    nodes = json.loads(plan("--json"))["scale_down"]["nodes"]
    blockers = json.loads(plan("--json", dump=(BLOCKERS,)))["scale_down"]["nodes"]
    lines = [
        "# Why isn't my node scaled down?",
        "",
        "<!-- Generated by docs/gen/why_not_scaled_down.py from `kubetide plan` on the bundled example;",
        "     edit the generator, not this file (tests/cli/test_why_not_scaled_down_guide.py checks it). -->",
        "",
        "Ask `kubetide plan`. On a dump (`kubectl get nodes,pods,pdb,deploy,rs,sts,ds,jobs -A -o yaml`)",
        "or read-only on a live cluster (`--kubeconfig PATH`), it runs one autoscaler loop and says, for",
        "every node, whether it would go and, when not, the reason in the Cluster Autoscaler's words,",
        "every pod that blocks it (the first as CA names it), and **what would unblock it**: the",
        "smallest set of changes kubetide found that makes the node removable, each object or flag",
        "changed once, a number (a min size, a threshold) at the value that works. That change is not",
        "guessed: the planner runs again with it applied (up to four rounds of changes, re-planning only",
        "what a change can affect), and the answer says when even that was not enough. Changes are",
        "listed by what you control: the blocking pod's fix, then budgets and node groups, then the",
        "autoscaler's thresholds. A node waiting for its budget (drains under way, replacements not",
        'Ready yet) or a timer is "waiting", not blocked (with about when, if a drain of the plan',
        "uses the budget: that drain's first wave, by its estimate). The text groups the nodes with the",
        'same answer ("7 nodes (...): ..."), most actionable first.',
        "",
        "The answers' budget (`--unblock-budget`, default 10 s, at most 50 nodes; `0` for none: on",
        "thousands of nodes they can cost more than the plan itself) is counted in work, as the",
        "simulator counts it (100 us per node a planner considers and per pod a check's simulated",
        "removals place), not by the clock: the same dump",
        "gives byte-identical answers on a loaded machine and an idle one, and so does the plan itself",
        "(scale-down-simulation-timeout is work offline too). Nodes left over say so. On a running",
        "autoscaler (`kubetide run`) both keep their wall-clock meaning, as in the Cluster Autoscaler.",
        "",
        "```sh",
        f"kubetide plan {DUMP} --node-groups {GROUPS}                 # every node",
        f"kubetide plan {DUMP} --node-groups {GROUPS} --node general-a3   # one node in full",
        f"kubetide plan {DUMP} --node-groups {GROUPS} --json          # blocking_pods, unblock",
        "```",
        "",
        "On a running autoscaler, `--annotate-scale-down-blockers` puts the same line on each blocked",
        "node, and takes it off when the node is no longer blocked:",
        "",
        "```sh",
        "kubectl get nodes -L kubetide.io/scale-down-blocker",
        "```",
        "",
        "and the status ConfigMap (`kube-system/cluster-autoscaler-status`) lists the blocked nodes",
        'under `clusterWide.scaleDown.unremovable` (the first blocking pod, "+N more", what would',
        "unblock it).",
        "",
        "## The example, node by node",
        "",
        f"`kubetide plan {DUMP} --node-groups {GROUPS} --json`, reduced to the unremovable nodes:",
        "",
        *table(nodes),
        "",
        '"enough? yes": with every change listed, the planner finds the node removable; "waiting": it',
        'then only waits for its budget or a timer; "-": nothing to change (a node of no group, a node',
        "in use, a budget that comes back by itself). A change may be the node",
        "group's own: one more node of the group takes the pods and lets this one go, which is the",
        "planner's true answer when the cluster has no room elsewhere.",
        "",
        f"And `kubetide plan {BLOCKERS} --json`, a pod that fits nowhere and a node three pods block:",
        "",
        *table(blockers),
        "",
        "## Reason by reason",
        "",
    ]
    by_reason: dict[str, list[dict]] = {}
    for example in (nodes, blockers):
        for name, node in example.items():
            if node["status"] == "unremovable":
                by_reason.setdefault(node["reason"], []).append({"name": name, **node})
    for reason, words in REASONS.items():
        lines += [f"### {reason}", "", words, ""]
        for node in by_reason.get(reason, []):
            lines.append(f"- **{node['name']}**: {node['why']}")
            if node["unblock"] and node["unblock"]["text"]:
                lines.append(f"  To unblock: {node['unblock']['text']}")
        lines.append("")
    missing = set(by_reason) - set(REASONS)
    if missing:
        raise SystemExit(f"the guide has no words for {sorted(missing)}: add them to REASONS")
    lines += [
        "## One node in full",
        "",
        f"`kubetide plan {DUMP} --node-groups {GROUPS} --node general-a3` (100 columns), its scale-down part:",
        "",
        "```",
        *_scale_down_part(plan("--node", "general-a3"), "general-a3"),
        "```",
        "",
        f"`kubetide plan {BLOCKERS} --node mixed-d`: every pod that blocks it, the first as the Cluster",
        "Autoscaler names it:",
        "",
        "```",
        *_scale_down_part(plan("--node", "mixed-d", dump=(BLOCKERS,)), "mixed-d"),
        "```",
        "",
    ]
    return "\n".join(lines)


def _scale_down_part(text: str, node: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"node {node}"))
    end = next((i for i, line in enumerate(lines) if line.startswith("would delete")), len(lines))
    return lines[start:end]


def main_(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if GUIDE.read_text() != text:
            print(f"{GUIDE} is out of date: run python docs/gen/why_not_scaled_down.py", file=sys.stderr)
            return 1
        return 0
    GUIDE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main_(sys.argv[1:]))
