import json

from _scaleup_helpers import GIB, FakeGroup, daemonset, node, pod, replicas, taint

from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions, ResourceRange
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.autoscaler.scaleup.skips import SkipReason
from kubetide.clock import WorkTimer
from kubetide.model import ConfigMap, ObjectMeta
from kubetide.model.node import ZONE_LABEL
from kubetide.snapshot import ClusterSnapshot


def group(gid, cpu=4000, mem=16 * GIB, zone="a", labels=None, **kwargs):
    extra = {k: kwargs.pop(k) for k in list(kwargs) if k in ("taints",)}
    template = node(
        f"{gid}-template",
        cpu=cpu,
        mem=mem,
        labels={ZONE_LABEL: zone, "kubetide.io/node-group": gid, **(labels or {})},
        **extra,
    )
    return FakeGroup(gid, template, **kwargs)


def plan(groups, pending, snapshot=None, options=None, workloads=(), priorities=None, **kwargs):
    snapshot = snapshot or ClusterSnapshot([node("n1", cpu=10)])
    before = ([n.name for n in snapshot.nodes()], snapshot.pod_count())
    inputs = LoopInputs(1000.0, snapshot, pending=pending, workloads=workloads, priorities=priorities)
    result = ScaleUp(options or AutoscalerOptions(), timer=WorkTimer(1e-3), seed=1).plan(
        inputs, node_groups=groups, **kwargs
    )
    assert ([n.name for n in snapshot.nodes()], snapshot.pod_count()) == before
    return result


def increases(result):
    return [(i.group_id, i.delta) for i in result.increases]


def test_pending_pods_grow_a_group_with_events():
    g = group("g", target=2, max_size=10)
    result = plan([g], replicas("web", 10, cpu=1000))
    assert increases(result) == [("g", 3)]  # 4 cores per node, 10 pods of 1 core
    assert len(result.helped) == 10 and not result.not_helped
    reasons = [e.reason for e in result.events]
    assert reasons.count("ScaledUpGroup") == 1 and reasons.count("TriggeredScaleUp") == 10
    scaled = next(e for e in result.events if e.reason == "ScaledUpGroup")
    assert scaled.message == "Scale-up: setting group g size to 5 instead of 2 (max: 10)"
    triggered = next(e for e in result.events if e.reason == "TriggeredScaleUp")
    assert triggered.message == "pod triggered scale-up: [{g 2->5 (max: 10)}]"
    assert triggered.kind == "Pod" and triggered.key == "default/web-0"


def test_json_shape():
    result = plan([group("g")], [pod("a", cpu=100), pod("b", cpu=100, node_selector={"x": "y"})])
    data = json.loads(json.dumps(result.to_json()))
    assert data == {
        "pending": ["default/a", "default/b"],
        "options": [{"node_group": "g", "node_count": 1, "pods": ["default/a"]}],
        "chosen": {"node_group": "g", "node_count": 1},
        "not_helped": {
            "default/b": "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector"
        },
    }
    empty = plan([group("g")], [])
    assert empty.to_json() == {"pending": [], "options": [], "chosen": None, "not_helped": {}}


def test_pods_that_fit_existing_nodes_do_not_scale_up():
    snapshot = ClusterSnapshot([node("n1", cpu=4000)])
    result = plan([group("g")], replicas("web", 3, cpu=1000), snapshot=snapshot)
    assert result.increases == [] and result.pending == []
    assert set(result.schedulable.values()) == {"n1"}


def test_upcoming_nodes_absorb_pods_and_count_against_limits():
    g = group("g", target=3, max_size=10)
    result = plan([g], replicas("web", 4, cpu=1000), upcoming={"g": 1})
    assert result.increases == [] and len(result.schedulable) == 4
    result = plan(
        [g], replicas("web", 8, cpu=1000), upcoming={"g": 1}, options=AutoscalerOptions(max_nodes_total=3)
    )  # n1 + 1 upcoming + 1 new
    assert increases(result) == [("g", 1)]


def test_backed_off_and_unhealthy_groups_are_skipped():
    a, b = group("a"), group("b")
    result = plan([a, b], [pod("p", cpu=100)], backed_off={"a"})
    assert increases(result) == [("b", 1)]
    assert {g: s.reason for g, s in result.skipped_groups.items()} == {"a": SkipReason.BACKED_OFF}
    result = plan(
        [a, b], [pod("p", cpu=100)], backed_off=lambda gid: gid == "a", healthy=lambda gid: gid != "b"
    )
    assert result.increases == []
    assert result.not_helped["default/p"] == (
        "pod didn't trigger scale-up: 1 in backoff after failed scale-up, 1 not ready for scale-up"
    )
    assert [e.reason for e in result.events] == ["NotTriggerScaleUp"]


def test_a_group_holding_never_ready_nodes_is_skipped_and_says_which():
    """UC3: a group with nodes that registered and never became Ready is passed over, healthy and
    out of backoff as it may be; the skip names the nodes. Backoff, when both hold, is said first."""
    cheap, other = group("cheap"), group("other")
    never_ready = {"cheap": ("cheap-3", "cheap-4")}
    result = plan([cheap, other], [pod("p", cpu=100)], never_ready=never_ready)
    assert increases(result) == [("other", 1)]
    skip = result.skipped_groups["cheap"]
    assert skip.reason is SkipReason.NEVER_READY and str(skip) == (
        "holding nodes that never became Ready: cheap-3, cheap-4"
    )
    result = plan([cheap], [pod("p", cpu=100)], never_ready=never_ready.get)
    assert result.increases == []
    assert (
        result.not_helped["default/p"]
        == "pod didn't trigger scale-up: 1 holding nodes that never became Ready"
    )
    result = plan([cheap], [pod("p", cpu=100)], never_ready=never_ready, backed_off={"cheap"})
    assert result.skipped_groups["cheap"].reason is SkipReason.BACKED_OFF
    assert increases(plan([cheap], [pod("p", cpu=100)], never_ready={"cheap": ()})) == [("cheap", 1)]


def test_reasons_are_counted_per_group():
    full = group("full", target=5, max_size=5)
    ssd = group("ssd", labels={"disk": "ssd"})
    hdd1, hdd2 = group("hdd1"), group("hdd2")
    p = pod("p", cpu=100, node_selector={"disk": "ssd"}, labels={})
    big = pod("big", cpu=8000)
    result = plan([full, ssd, hdd1, hdd2], [p, big])
    assert increases(result) == [("ssd", 1)]
    assert result.not_helped["default/big"] == (
        "pod didn't trigger scale-up: 1 max node group size reached, 3 Insufficient cpu"
    )


def test_group_max_caps_the_estimate():
    g = group("g", target=8, max_size=10)
    result = plan([g], replicas("web", 20, cpu=2000))
    assert increases(result) == [("g", 2)]
    assert len(result.helped) == 4
    assert set(result.not_helped.values()) == {"pod didn't trigger scale-up: 1 max node group size reached"}


def test_max_nodes_per_scaleup():
    result = plan(
        [group("g", max_size=100)],
        replicas("web", 20, cpu=4000),
        options=AutoscalerOptions(max_nodes_per_scaleup=5),
    )
    assert increases(result) == [("g", 5)]
    assert "max nodes per scale-up reached" in next(iter(result.not_helped.values()))


def test_max_nodes_total():
    snapshot = ClusterSnapshot([node(f"n{i}", cpu=1) for i in range(4)])
    result = plan(
        [group("g", max_size=100)],
        replicas("web", 20, cpu=4000),
        snapshot=snapshot,
        options=AutoscalerOptions(max_nodes_total=6),
    )
    assert increases(result) == [("g", 2)]
    result = plan(
        [group("g", max_size=100)],
        replicas("web", 2, cpu=4000),
        snapshot=snapshot,
        options=AutoscalerOptions(max_nodes_total=4),
    )
    assert {g: s.reason for g, s in result.skipped_groups.items()} == {"g": SkipReason.MAX_TOTAL_NODES}


def test_cores_total():
    # n1 has 10m; 4-core nodes; a 13-core max leaves room for 3 nodes (12.01 cores in all).
    result = plan(
        [group("g", max_size=100)],
        replicas("web", 20, cpu=4000),
        options=AutoscalerOptions(cores_total=ResourceRange(0, 13)),
    )
    assert increases(result) == [("g", 3)]
    assert "max cluster cpu limit reached" in next(iter(result.not_helped.values()))


def test_memory_total():
    snapshot = ClusterSnapshot([node("n1", cpu=100, mem=GIB)])
    result = plan(
        [group("g", max_size=100, mem=16 * GIB)],
        replicas("web", 20, cpu=4000),
        snapshot=snapshot,
        options=AutoscalerOptions(memory_total=ResourceRange(0, 50)),
    )
    assert increases(result) == [("g", 3)]  # 1 + 3*16 = 49 GiB
    assert "max cluster memory limit reached" in next(iter(result.not_helped.values()))


def test_daemonset_overhead_changes_the_count():
    pods = replicas("web", 4, cpu=1000)
    assert increases(plan([group("g")], pods)) == [("g", 1)]
    with_ds = plan([group("g")], pods, workloads=[daemonset("logs", cpu=200)])
    assert increases(with_ds) == [("g", 2)]


def test_tainted_gpu_group_never_helps_plain_pods():
    gpu = group("gpu", taints=[taint("nvidia.com/gpu", "present")])
    result = plan([gpu], [pod("p", cpu=100)])
    assert result.increases == []
    assert result.not_helped["default/p"] == (
        "pod didn't trigger scale-up: 1 node(s) had untolerated taint {nvidia.com/gpu: present}"
    )


def test_balancing_spreads_over_similar_groups():
    groups = [
        group("g-a", zone="a", target=1),
        group("g-b", zone="b", target=0),
        group("g-c", zone="c", target=2),
        group("big", cpu=8000),
    ]
    options = AutoscalerOptions(balance_similar_node_groups=True, expander=("least-nodes",))
    result = plan(groups[:3], replicas("web", 24, cpu=1000), options=options)
    # 6 nodes over sizes 1, 0, 2 -> 3, 3, 3
    assert sorted(increases(result)) == [("g-a", 2), ("g-b", 3), ("g-c", 1)]
    assert len({i.new_size for i in result.increases}) == 1
    without = plan(
        groups[:3], replicas("web", 24, cpu=1000), options=AutoscalerOptions(expander=("least-nodes",))
    )
    assert len(without.increases) == 1
    result = plan(groups, replicas("web", 8, cpu=1000), options=options)
    assert [i.group_id for i in result.increases] == ["big"]  # not similar to the zonal groups


def test_priority_expander_from_configmap():
    cm = ConfigMap(
        ObjectMeta("cluster-autoscaler-priority-expander", "kube-system"),
        {"priorities": "10:\n  - ^cheap$\n20:\n  - ^fast$\n"},
    )
    groups = [group("cheap"), group("fast"), group("other")]
    options = AutoscalerOptions(expander=("priority", "least-waste"))
    assert increases(plan(groups, [pod("p", cpu=100)], options=options, priorities=cm)) == [("fast", 1)]
    broken = plan(groups, [pod("p", cpu=100)], options=options, priorities="not: [valid")
    assert any("configuration ignored" in line for line in broken.trace)
    assert len(broken.increases) == 1


def test_young_and_expendable_pods_are_explained_without_events():
    options = AutoscalerOptions(new_pod_scale_up_delay=60)
    young = pod("young", cpu=100, created=990)
    cheap = pod("cheap", cpu=100, priority=-100)
    result = plan([group("g")], [young, cheap], options=options)
    assert result.increases == [] and result.events == []
    assert result.not_helped["default/young"].startswith("too young")
    assert result.not_helped["default/cheap"].startswith("expendable")


def test_pods_fitting_an_unchosen_option_wait_for_the_next_loop():
    a = group("a", labels={"disk": "ssd"})
    b = group("b", labels={"disk": "hdd"})
    ssd = replicas("ssd", 3, cpu=100, node_selector={"disk": "ssd"})
    hdd = pod("hdd", cpu=100, node_selector={"disk": "hdd"})
    result = plan([a, b], [*ssd, hdd], options=AutoscalerOptions(expander=("most-pods",)))
    assert increases(result) == [("a", 1)]
    assert result.not_helped == {"default/hdd": "not chosen this loop: fits node group(s) b"}
    assert "NotTriggerScaleUp" not in [e.reason for e in result.events]


def test_events_wait_for_their_group_increase():
    result = plan([group("g")], [pod("p", cpu=100)])
    assert result.describe()[0] == "scale-up: 1 pending pod(s) need a new node"
    assert [e.reason for e in result.events_after({"g"})] == ["ScaledUpGroup", "TriggeredScaleUp"]
    assert result.events_after(set()) == []  # the increase failed: nothing of it is said


def test_a_burst_is_absorbed_within_the_lower_bound_plus_one_per_group():
    import dataclasses
    import math

    from kubetide.scheduling import PredicateChecker, schedule_pods

    groups = [group("small", cpu=2000, max_size=100), group("large", cpu=8000, max_size=100)]
    snapshot = ClusterSnapshot([node("n1", cpu=10)])
    burst = [*replicas("web", 37, cpu=300), *replicas("api", 11, cpu=1100), *replicas("job", 5, cpu=1900)]
    pending = list(burst)
    added = 0
    for _round in range(5):
        result = plan(
            groups, pending, snapshot=snapshot, options=AutoscalerOptions(expander=("least-waste",))
        )
        for inc in result.increases:
            g = next(x for x in groups if x.id == inc.group_id)
            for _ in range(inc.delta):
                template = g.template_node()
                name = f"{g.id}-{g.target}"
                labels = {**template.labels, "kubernetes.io/hostname": name}
                snapshot.add_node(dataclasses.replace(template, meta=ObjectMeta(name, labels=labels)))
                g.target += 1
                added += 1
        with PredicateChecker(snapshot) as checker:
            placed = schedule_pods(snapshot, pending, checker)
        pending = [p for p in pending if placed[p.uid] is None]
        if not pending:
            break
    assert pending == []
    # Per group: no more nodes than its pods' lower bound plus one.
    for g in groups:
        names = [n.name for n in snapshot.nodes() if n.name.startswith(f"{g.id}-")]
        cpu = sum(p.requests["cpu"] for name in names for p in snapshot.pods_on(name).values())
        assert len(names) <= math.ceil(cpu / g.template_node().allocatable["cpu"]) + 1
    assert added == sum(x.target for x in groups)


def test_min_size_enforcement_and_scale_up_from_zero():
    from kubetide.autoscaler.scaleup.orchestrator import min_size_increases

    low, ok, off = (
        group("low", min_size=3, target=1),
        group("ok", min_size=1, target=2),
        group("off", min_size=2),
    )
    increases_ = min_size_increases([low, ok, off], backed_off={"off"})
    assert [(i.group_id, i.delta, i.new_size) for i in increases_] == [("low", 2, 3)]
    assert min_size_increases([low, ok, off], never_ready={"low": ("low-1",)}) == [
        min_size_increases([off])[0]
    ]  # a group holding never-Ready nodes is not raised to its min size either (UC3)
    snapshot = ClusterSnapshot([node("n1", cpu=10, ready=False)])
    result = plan(
        [group("g")], [pod("p")], snapshot=snapshot, options=AutoscalerOptions(scale_up_from_zero=False)
    )
    assert result.increases == [] and "scale-up-from-zero" in result.not_helped["default/p"]
    assert increases(plan([group("g")], [pod("p")], snapshot=snapshot)) == [("g", 1)]


def test_priorities_as_scenario_data():
    groups = [group("cheap"), group("fast")]
    options = AutoscalerOptions(expander=("priority",))
    result = plan(groups, [pod("p", cpu=100)], options=options, priorities={10: ["cheap"], 5: ["fast"]})
    assert increases(result) == [("cheap", 1)]


def test_not_trigger_scale_up_counts_each_resource_reason_of_a_group_on_its_own():
    """CA counts every reason a group gave: two groups short of cpu and memory are "2 Insufficient
    cpu, 2 Insufficient memory", not "2 Insufficient cpu, Insufficient memory"."""
    from kubetide.autoscaler.scaleup.orchestrator import not_triggered_message

    message = not_triggered_message(
        [
            "node(s) had untolerated taint {dedicated: batch}",
            "Insufficient cpu, Insufficient memory",
            "Insufficient cpu, Insufficient memory, Too many pods",
        ]
    )
    assert message == (
        "pod didn't trigger scale-up: 1 Too many pods, 1 node(s) had untolerated taint {dedicated: batch}, "
        "2 Insufficient cpu, 2 Insufficient memory"
    )
