"""Scale-up benchmarks: `python -m benchmarks.bench_scaleup`.

1. binpacking, the Cluster Autoscaler's own case: a template of 1000m CPU / 5000 bytes / 100 pods,
   50 000 pods of 50m / 100 bytes and 1 000 pods of 95m / 190 bytes. The lower bound is 2 595
   nodes (CPU-bound). Go CA: 2 595 nodes in 3.03 s on this machine. Target: under 0.3 s.
2. a full ScaleUp.plan on a 1 000-node cluster (5 node groups) with 30 000 running pods and
   50 000 pending pods from 50 deployments with mixed constraints. Target: under 2 s.
3. the same with 10% of the pending pods (5 deployments) carrying hostname anti-affinity and zone
   topology spread; reported as a slowdown factor over 2. A variant with hostname anti-affinity
   only (every such pod needs a node of its own, the expensive pod-by-pod path) is reported too.

Each figure is the median of a few runs; building the cluster is not timed, attaching the
PredicateChecker to the snapshot is (a loop pays for it).
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaleup.equivalence import group_pods
from kubetide.autoscaler.scaleup.estimator import BinpackingEstimator, NodeLimit
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.model import Node, ObjectMeta, OwnerReference, Pod, Taint, Toleration, Workload
from kubetide.model.node import HOSTNAME_LABEL, ZONE_LABEL
from kubetide.model.pod import Affinity, NodeSelectorTerm, PodAffinityTerm, TopologySpreadConstraint
from kubetide.model.selectors import LabelSelector, Requirement
from kubetide.model.workloads import PodTemplate
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

GIB = 2**30
GPU = "nvidia.com/gpu"


def _timed(fn, runs: int) -> tuple[float, object]:
    """Median wall time of `runs` calls (and the last result)."""
    return _timed_both(fn, runs)[0::2]


def _timed_both(fn, runs: int) -> tuple[float, float, object]:
    """Median wall and CPU (process) time: on a shared machine the CPU figure is the steadier one."""
    walls, cpus, result = [], [], None
    for _ in range(runs):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def _node(name: str, cpu: int, mem: int, pods: int, labels: dict, taints=(), **extra) -> Node:
    alloc = {"cpu": cpu, "memory": mem, "pods": pods, **extra}
    return Node(ObjectMeta(name, labels={HOSTNAME_LABEL: name, **labels}), alloc, dict(alloc), tuple(taints))


def _stamp(proto: Pod, name: str, node_name: str = "") -> Pod:
    meta = dataclasses.replace(
        proto.meta, name=name, uid=f"uid-{proto.namespace}-{name}", labels=dict(proto.labels)
    )
    if node_name:
        return dataclasses.replace(
            proto,
            meta=meta,
            node_name=node_name,
            phase="Running",
            scheduled_status="True",
            scheduled_reason="",
        )
    return dataclasses.replace(proto, meta=meta)


def _proto(name: str, cpu: int, mem: int, **spec) -> Pod:
    requests = {"cpu": cpu, "memory": mem, "pods": 1, **spec.pop("extra", {})}
    owner = OwnerReference("ReplicaSet", name, f"uid-rs-{name}", controller=True)
    meta = ObjectMeta(
        name,
        "default",
        f"uid-{name}",
        labels={"app": name},
        owner_references=(owner,),
        creation_timestamp=0.0,
    )
    return Pod(meta, requests, {}, scheduled_status="False", scheduled_reason="Unschedulable", **spec)


# -- 1. binpacking ---------------------------------------------------------------------------------


def bench_binpacking(runs: int = 5) -> dict:
    snapshot = ClusterSnapshot()
    checker = PredicateChecker(snapshot)
    template = build_template("g", _node("t", 1000, 5000, 100, {ZONE_LABEL: "a"}), [], snapshot, checker)
    small, big = _proto("small", 50, 100), _proto("big", 95, 190)
    pods = [_stamp(small, f"small-{i}") for i in range(50_000)] + [
        _stamp(big, f"big-{i}") for i in range(1_000)
    ]
    estimator = BinpackingEstimator(snapshot, checker, timer=time.perf_counter)
    limit = NodeLimit(10**6, "unlimited")
    groups = group_pods(pods)
    estimate_only, estimate_cpu, result = _timed_both(
        lambda: estimator.estimate(template, groups, limit), runs
    )
    with_grouping, grouping_cpu, _ = _timed_both(
        lambda: estimator.estimate(template, group_pods(pods), limit), runs
    )
    checker.close()
    return {
        "nodes": result.node_count,
        "estimate_s": estimate_only,
        "estimate_cpu_s": estimate_cpu,
        "with_grouping_s": with_grouping,
        "with_grouping_cpu_s": grouping_cpu,
    }


# -- 2/3. full plan --------------------------------------------------------------------------------


class _Group:
    def __init__(self, gid: str, template: Node, target: int, max_size: int, price: float):
        self.id, self._template, self.target = gid, template, target
        self.min_size, self.max_size, self._price = 0, max_size, price

    def target_size(self) -> int:
        return self.target

    def template_node(self) -> Node:
        return self._template

    def price_per_hour(self) -> float:
        return self._price


CONSTRAINED = {f"dep{d}" for d in range(45, 50)}

GROUPS = [  # id, zone, cpu, memory, extra labels, taints, extra resources, price
    ("general-a", "a", 8000, 32 * GIB, {}, (), {}, 0.38),
    ("general-b", "b", 8000, 32 * GIB, {}, (), {}, 0.38),
    ("general-c", "c", 8000, 32 * GIB, {}, (), {}, 0.38),
    ("highmem", "a", 8000, 64 * GIB, {"workload": "mem"}, (), {}, 0.50),
    (
        "gpu",
        "b",
        8000,
        32 * GIB,
        {"accelerator": "gpu"},
        (Taint(GPU, "present", "NoSchedule"),),
        {GPU: 4},
        2.50,
    ),
]


def _deployments(constrained: str) -> list[Pod]:
    """50 deployment templates; `constrained`: "", "both" or "anti" for deployments 45-49."""
    protos = []
    for d in range(50):
        name = f"dep{d:02d}"
        cpu = 100 + (d * 37) % 400  # 100m-500m
        mem = (128 + (d * 53) % 896) * 2**20  # 128-1024 MiB
        spec: dict = {}
        if d < 20:
            pass  # plain
        elif d < 30:
            spec["node_selector"] = {"workload": "mem"}
            mem *= 4
        elif d < 35:
            spec["tolerations"] = (Toleration(GPU, "Equal", "present", "NoSchedule"),)
            spec["extra"] = {GPU: 1}
        elif d < 45:
            spec["affinity"] = Affinity(
                node_required=(NodeSelectorTerm((Requirement(ZONE_LABEL, "In", ("a", "b")),)),)
            )
        elif constrained:
            selector = LabelSelector((("app", name),))
            spec["affinity"] = Affinity(anti_required=(PodAffinityTerm(selector, HOSTNAME_LABEL),))
            if constrained == "both":
                spec["topology_spread"] = (
                    TopologySpreadConstraint(1, ZONE_LABEL, "DoNotSchedule", selector),
                )
        else:
            spec["topology_spread"] = (
                TopologySpreadConstraint(1, ZONE_LABEL, "ScheduleAnyway", LabelSelector((("app", name),))),
            )
        protos.append(_proto(name, cpu, mem, **spec))
    return protos


def build_cluster(constrained: str = ""):
    nodes, running, groups = [], [], []
    for gid, zone, cpu, mem, labels, taints, extra, price in GROUPS:
        template = _node(
            f"{gid}-template",
            cpu,
            mem,
            110,
            {ZONE_LABEL: zone, "kubetide.io/node-group": gid, **labels},
            taints,
            **extra,
        )
        groups.append(_Group(gid, template, 200, 5000, price))
        for i in range(200):
            n = dataclasses.replace(
                template,
                meta=ObjectMeta(f"{gid}-{i}", labels={**template.labels, HOSTNAME_LABEL: f"{gid}-{i}"}),
            )
            nodes.append(n)
    protos = _deployments(constrained)
    # 30 running pods per node from the deployments that can run there, leaving some room.
    by_group = {
        "general": [p for i, p in enumerate(protos) if i < 20 or 35 <= i < 45 or i >= 45],
        "highmem": [p for i, p in enumerate(protos) if 20 <= i < 30],
        "gpu": [p for i, p in enumerate(protos) if 30 <= i < 35],
    }
    counter = 0
    anti_seen: set[tuple[str, str]] = set()
    for n in nodes:
        kind = "general" if n.name.startswith("general") else n.name.split("-")[0]
        candidates = by_group[kind]
        placed = 0
        k = counter
        while placed < 30:
            proto = candidates[k % len(candidates)]
            k += 1
            if proto.affinity.anti_required:
                if (proto.name, n.name) in anti_seen:
                    continue
                anti_seen.add((proto.name, n.name))
            if proto.affinity.node_required and n.labels[ZONE_LABEL] not in ("a", "b"):
                continue
            if kind == "gpu" and placed >= 4:  # four GPUs per node
                proto = by_group["general"][k % 20]
                proto = dataclasses.replace(
                    proto, tolerations=(Toleration(GPU, "Equal", "present", "NoSchedule"),)
                )
            running.append(_stamp(proto, f"{proto.name}-run-{counter}-{placed}", n.name))
            placed += 1
        counter += 1
    pending = [_stamp(proto, f"{proto.name}-{i}") for proto in protos for i in range(1000)]
    ds = _proto("logs", 100, 200 * 2**20)
    daemonsets = [
        Workload(
            "DaemonSet", ObjectMeta("logs", "kube-system", "uid-ds-logs"), LabelSelector(), PodTemplate(ds)
        )
    ]
    snapshot = ClusterSnapshot(nodes, running)
    return snapshot, pending, groups, daemonsets


def bench_plan(constrained: str = "", runs: int = 3) -> dict:
    snapshot, pending, groups, daemonsets = build_cluster(constrained)
    options = AutoscalerOptions(max_nodes_per_scaleup=10_000, balance_similar_node_groups=True)
    scale_up = ScaleUp(options, seed=0, timer=time.perf_counter)

    def run():
        return scale_up.plan(
            LoopInputs(3600.0, snapshot, pending=pending, workloads=daemonsets), node_groups=groups
        )

    seconds, cpu, plan = _timed_both(run, runs)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "pending_after_filter": len(plan.pending),
        "schedulable": len(plan.schedulable),
        "options": {o.group_id: o.node_count for o in plan.options},
        "increases": [(i.group_id, i.delta) for i in plan.increases],
        "helped": len(plan.helped),
        # pods of the constrained deployments (dep45-dep49) each option would place
        "constrained_in_options": {
            o.group_id: sum(1 for p in o.pods if p.name[:5] in CONSTRAINED) for o in plan.options
        },
    }


def main() -> None:
    binpack = bench_binpacking()
    print(
        f"binpacking: {binpack['nodes']} nodes (lower bound 2595) in {binpack['estimate_s']:.3f} s wall / "
        f"{binpack['estimate_cpu_s']:.3f} s CPU ({binpack['with_grouping_s']:.3f} s / "
        f"{binpack['with_grouping_cpu_s']:.3f} s with equivalence grouping); target < 0.3 s, Go CA 3.03 s"
    )
    plain = bench_plan("")
    print(
        f"full plan, mixed constraints: {plain['seconds']:.3f} s wall, {plain['cpu_seconds']:.3f} s CPU "
        f"(target < 2 s): {plain}"
    )
    for variant, label in (("both", "anti-affinity + zone spread"), ("anti", "hostname anti-affinity only")):
        r = bench_plan(variant)
        print(
            f"full plan, 10% {label}: {r['seconds']:.3f} s wall, {r['cpu_seconds']:.3f} s CPU, slowdown "
            f"x{r['seconds'] / plain['seconds']:.2f} wall, x{r['cpu_seconds'] / plain['cpu_seconds']:.2f} CPU: {r}"
        )


if __name__ == "__main__":
    main()
