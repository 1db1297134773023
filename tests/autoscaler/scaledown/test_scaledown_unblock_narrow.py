"""The narrowed check (narrow.py) against the whole re-plan: on random clusters, `kubetide plan`
gives every node the same answer, word for word, whether each suggested change is checked by
replaying the recorded search up to what the change alters, or by running the whole planner
again; and the narrowed check does replay (it simulates fewer removals)."""

from __future__ import annotations

import functools
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from unblock_cluster import SAFE_TO_EVICT, SCALE_DOWN_DISABLED, Cluster

from kubetide.autoscaler import explain
from kubetide.autoscaler.scaledown.explanation import narrow, unblock_search
from kubetide.autoscaler.scaledown.planning import candidates
from kubetide.autoscaler.scaledown.reasons import NodeReason
from kubetide.autoscaler.scaledown.unblock_answer import Change, ChangeKind
from kubetide.model.pod import MIRROR_ANNOTATION

APPS = ("api", "web", "db", "cache")
KINDS = ("replicated",) * 6 + ("bare", "not-safe", "kube-system", "local-storage")
BUDGETS = (
    lambda n: {"minAvailable": min(n, 1)},
    lambda n: {"minAvailable": n},
    lambda n: {"maxUnavailable": 0},
    lambda n: {"maxUnavailable": 1},
    lambda n: {"maxUnavailable": 2},
)


@st.composite
def clusters(draw) -> Cluster:
    """Several nodes sharing budgets and destinations, room tight enough that the order of the
    search matters: what the narrowed check must get right."""
    c = Cluster()
    nodes = [f"n{i}" for i in range(draw(st.integers(3, 7)))]
    c.group("general", draw(st.integers(0, len(nodes))))  # at its min size: a min size among the changes
    sizes = st.sampled_from([("1", "2Gi"), ("2", "4Gi"), ("4", "4Gi"), ("2", "8Gi")])
    for name in nodes:
        cpu, memory = draw(sizes)
        c.node(name, cpu=cpu, memory=memory)
    for i in range(draw(st.integers(1, 3))):  # room kept by its annotation, a little per node
        cpu, memory = draw(sizes)
        c.node(f"dest{i}", cpu=cpu, memory=memory, **{SCALE_DOWN_DISABLED: "true"})
    replicas = dict.fromkeys(APPS, 0)
    anti = {app: draw(st.booleans()) for app in APPS}
    for i in range(draw(st.integers(3, 20))):
        # a few pending: those that fit are bound before the plan (new pod objects in its search)
        node = draw(st.sampled_from([*nodes, None]))
        kind = draw(st.sampled_from(KINDS))
        cpu = draw(st.sampled_from(["100m", "300m", "500m", "900m"]))
        # two resources, so that where a pod lands decides what fits after it
        memory = draw(st.sampled_from(["256Mi", "1Gi", "1500Mi", "3Gi"]))
        if kind == "bare":
            c.pod(f"p{i}", node, cpu, memory=memory)
        elif kind == "kube-system":
            c.replicaset(f"sys{i}", 1, namespace="kube-system")
            c.pod(f"p{i}", node, cpu, app=f"sys{i}", namespace="kube-system", memory=memory)
        else:
            app = draw(st.sampled_from(APPS))
            replicas[app] += 1
            c.pod(
                f"{app}-{i}",
                node,
                cpu,
                app=app,
                annotations={SAFE_TO_EVICT: "false"} if kind == "not-safe" else None,
                volumes=[{"name": "scratch", "emptyDir": {}}] if kind == "local-storage" else None,
                anti_affinity=anti[app],
                memory=memory,
            )
    for app, n in replicas.items():
        if n:
            c.replicaset(app, n, deployment=draw(st.booleans()))  # a Deployment's pods may surge
            if draw(st.booleans()):
                c.pdb(app, draw(st.sampled_from(BUDGETS))(n), healthy=n, expected=n)
    c.flags["scale-down-utilization-threshold"] = draw(st.sampled_from(["0.3", "0.5", "0.7"]))
    return c


def _whole_plan(cluster: Cluster, tmp: Path) -> dict:
    """`kubetide plan` with every change checked by a whole re-plan, each planner from nothing."""
    whole = functools.partial(unblock_search.find_unblocks, narrow=False)
    asked: list[bool] = []

    def reference(*args, **kwargs):
        asked.append(True)
        return whole(*args, **kwargs)

    with mock.patch.object(explain, "find_unblocks", reference):  # the name explain() calls
        plan = cluster.plan(tmp)
    assert asked, "the reference never ran: the narrowed answers would be compared with themselves"
    return plan


class _Counted(narrow.Replay):
    made: list[narrow.Replay] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _Counted.made.append(self)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters())
def test_the_narrowed_check_gives_the_whole_replans_answers(tmp_path: Path, cluster: Cluster):
    narrowed = cluster.plan(tmp_path)
    assert narrowed == _whole_plan(cluster, tmp_path)


def _light_and_held(light: list[str], held: list[str]) -> Cluster:
    """A destination kept by its annotation, the light nodes with one ReplicaSet pod each, and the
    held nodes with one such pod and a bare pod each (which holds them)."""
    c = Cluster()
    c.group("general", 0)
    c.node("dest", cpu="16", **{SCALE_DOWN_DISABLED: "true"})
    c.replicaset("web", len(light) + len(held))
    for i, name in enumerate(light + held):
        c.node(name)
        c.pod(f"web-{i}", name, "200m", app="web")
    for i, name in enumerate(held):
        c.pod(f"debug-{i}", name, "500m")
    return c


def test_the_narrowed_check_replays_what_a_pod_annotation_leaves_alone(tmp_path: Path):
    """Three light nodes go; three heavier ones are each held by a bare pod. Each answer (annotate
    the pod) replays the three removals before the node from the recorded search, simulates the
    node itself and stops at its verdict; the search recorded is the loop's own (no second
    baseline run). (The destination, kept by its annotation, is asked
    about too: removing the annotation makes it the first node simulated, so nothing replays.)"""
    light, held = ["a0", "a1", "a2"], ["b0", "b1", "b2"]
    c = _light_and_held(light, held)
    _Counted.made = []
    baseline = mock.Mock(side_effect=AssertionError("the loop's recorded search is there to start from"))
    with (
        mock.patch.object(unblock_search, "Replay", _Counted),
        mock.patch.object(unblock_search._Search, "baseline", baseline),
    ):
        plan = c.plan(tmp_path)
    assert plan == _whole_plan(c, tmp_path)
    down = plan["scale_down"]
    assert down["candidate_set"] == light
    answers = [down["nodes"][n]["unblock"] for n in held]
    assert all(a["removable"] and [c["kind"] for c in a["changes"]] == ["safe-to-evict"] for a in answers)
    counts = {r.node: (r.simulated, r.replayed) for r in _Counted.made}
    assert [counts[n] for n in held] == [(1, len(light))] * len(held)


def test_the_checks_read_again_only_the_nodes_their_changes_touched(tmp_path: Path):
    """The planners checking changes share their per-node facts (planner.NodeFacts): after the
    first check, a check that annotates one pod works out the drains of that pod's node (and of
    the node the check before it touched), where a planner from nothing works out every eligible
    node's."""
    c = Cluster()
    c.group("general", 0)
    c.node("dest", cpu="16", **{SCALE_DOWN_DISABLED: "true"})
    held = [f"b{i}" for i in range(4)]
    c.replicaset("web", len(held))
    for i, name in enumerate(held):
        c.node(name)
        c.pod(f"web-{i}", name, "200m", app="web")
        c.pod(f"debug-{i}", name, "500m")  # bare: holds its node
    drained: list[list[str]] = []
    real = candidates.drain_node

    def counted(pods, ctx):
        pods = list(pods)
        drained[-1].extend({p.node_name for p in pods})
        return real(pods, ctx)

    def per_check(plan_with):
        def find(*args, **kwargs):
            start = len(drained)
            original = unblock_search.Planner.update

            def update(self, *a, **k):
                drained.append([])
                return original(self, *a, **k)

            with mock.patch.object(unblock_search.Planner, "update", update):
                answers = plan_with(*args, **kwargs)
            checks.extend(drained[start:])
            return answers

        return find

    results = {}
    for way, find in (
        ("narrowed", unblock_search.find_unblocks),
        ("whole", _whole(unblock_search.find_unblocks)),
    ):
        checks: list[list[str]] = []
        drained.clear()
        drained.append([])  # the loop's own planner
        with (
            mock.patch.object(candidates, "drain_node", counted),
            mock.patch.object(explain, "find_unblocks", per_check(find)),
        ):
            results[way] = c.plan(tmp_path)
        answered = [results[way]["scale_down"]["nodes"][n]["unblock"] for n in held]
        assert all(a["removable"] for a in answered), answered
        if way == "narrowed":
            first, *later = checks
            assert sorted(first) == held  # every eligible node once
            # Its own node, and the one the check before annotated: that node is back as it was,
            # but a memo keeps only what its last pass read (snapshot/memo.py).
            assert later and all(1 <= len(nodes) <= 2 for nodes in later), later
        else:
            assert all(sorted(nodes) == held for nodes in checks)
    assert results["narrowed"] == results["whole"]


def _whole(find):
    return functools.partial(find, narrow=False)


def test_a_replayed_trial_leaves_the_pointer_where_the_recorded_one_did(tmp_path: Path):
    """A node waiting for budget is simulated and undone, but its trial moved the placement
    pointer (next-fit) from y to x; the held node's pods are then placed from x. Started from y
    instead, its cpu-heavy pod would take y's last cpu and its memory-heavy pod find no node: the
    answer depends on replaying the pointer too."""
    c = Cluster()
    c.group("general", 0)
    c.flags["scale-down-utilization-threshold"] = "0.7"
    c.node("a", cpu="4", memory="4Gi")
    c.node("b", cpu="4", memory="956Mi")  # room for A, not for B
    c.node("t", cpu="2", memory="4Gi")
    c.node("x", cpu="1", memory="512Mi", **{SCALE_DOWN_DISABLED: "true"})
    c.node("y", cpu="1100m", memory="2Gi", **{SCALE_DOWN_DISABLED: "true"})  # the pointer starts here
    c.replicaset("web", 2)
    c.pdb("web", {"maxUnavailable": 1}, healthy=2, expected=2)
    c.pod("web-a", "a", "100m", app="web", memory="256Mi")  # goes first, to y, with the budget
    c.replicaset("fill", 1)
    c.pod("fill-b", "b", "900m", app="fill", memory="200Mi")  # b waits for the budget; its
    c.pod("web-b", "b", "200m", app="web", memory="256Mi")  # trial fills y and ends on x
    c.replicaset("big", 2)
    c.pod("big-cpu", "t", "1000m", app="big", memory="128Mi")
    c.pod("big-memory", "t", "100m", app="big", memory="1000Mi")
    c.pod("debug", "t", "100m", memory="64Mi")  # bare: holds t
    plan = c.plan(tmp_path)
    assert plan == _whole_plan(c, tmp_path)
    down = plan["scale_down"]
    assert down["candidate_set"] == ["a"]
    assert down["nodes"]["b"]["unblock"]["waiting"] is True
    assert down["nodes"]["t"]["unblock"]["removable"], down["nodes"]["t"]


class _Work:
    """What the answers' checks really did, counted while `find_unblocks` runs, and the work its
    timer was charged: the pods given to every removal simulated, the planner runs (each reads
    the timer once per node its search considers, simulated or replayed) and the refusals worked
    out (nowhere.py: the plan's moved pods put back, every node asked)."""

    def __init__(self) -> None:
        self.placed = self.charged = self.refusal_units = self.checks = 0
        self._inside = False

    def run(self, cluster: Cluster, tmp: Path, find=unblock_search.find_unblocks) -> dict:
        real_simulate, real_update, real_refusal = (
            candidates.simulate_removal,
            unblock_search.Planner.update,
            unblock_search.refusal,
        )

        def counted_find(*args, timer, **kwargs):
            before = timer.readings
            self._inside = True
            try:
                return find(*args, timer=timer, **kwargs)
            finally:
                self._inside = False
                self.charged += timer.readings - before

        def simulate(u, name, drain, to_move):
            if self._inside:
                self.placed += len(to_move)
            return real_simulate(u, name, drain, to_move)

        def update(planner, *args, **kwargs):
            self.checks += self._inside
            return real_update(planner, *args, **kwargs)

        def refusal(snapshot, checker, key, **kwargs):
            self.refusal_units += len(kwargs.get("destinations") or {}) + len(snapshot)
            return real_refusal(snapshot, checker, key, **kwargs)

        with (
            mock.patch.object(explain, "find_unblocks", counted_find),
            mock.patch.object(narrow, "simulate_removal", simulate),
            mock.patch.object(unblock_search, "simulate_removal", simulate),
            mock.patch.object(unblock_search.Planner, "update", update),
            mock.patch.object(unblock_search, "refusal", refusal),
        ):
            plan = cluster.plan(tmp)
        self.nodes = len(plan["scale_down"]["nodes"])
        return plan

    def at_most(self) -> int:
        """The most a check may be charged besides its pods: a reading per node considered
        (new nodes included) and the planner's own deadline."""
        return self.placed + self.refusal_units + self.checks * (self.nodes + 8)


def _full_cluster(nodes: int, pods: int) -> Cluster:
    """`nodes` nodes of `pods` small replicated pods each, half of them fuller: the light ones
    go onto the full ones' room, and then each node left needs new nodes (benchmarks.dumps
    scale_down's shape, small)."""
    c = Cluster()
    c.group("general", 0)
    c.replicaset("web", nodes * pods)
    for n in range(nodes):
        c.node(f"n{n}", cpu="4")
        for i in range(pods):
            c.pod(f"web-{n}-{i}", f"n{n}", "50m" if n < nodes // 2 else "65m", app="web", memory="64Mi")
    return c


def test_the_answers_are_charged_the_pods_their_checks_place(tmp_path: Path):
    """Each check's removals are charged per pod placed, not per node: on nodes of 30 pods the
    work charged to the answers' budget is what the simulations did (every pod placed, every
    refusal worked out, a reading per node considered), where a reading per node considered
    alone charged about a thirtieth of it."""
    work = _Work()
    plan = work.run(_full_cluster(8, 30), tmp_path)
    answers = [s["unblock"] for s in plan["scale_down"]["nodes"].values() if s.get("unblock")]
    assert any(a["changes"] and a["changes"][0]["kind"] == "add-node" for a in answers), answers
    assert work.checks and work.placed >= 30 * work.checks
    assert work.placed + work.refusal_units <= work.charged <= work.at_most()


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cluster=clusters(), whole=st.booleans())
def test_the_work_charged_tracks_the_simulations_done(tmp_path: Path, cluster: Cluster, whole: bool):
    """On random clusters, narrowed or whole: the answers' timer is charged at least a unit per
    pod a check's simulated removals were given and per refusal's pod and node, and at most that
    plus a reading per node each check's search considered (a replayed node costs that only)."""
    work = _Work()
    work.run(
        cluster, tmp_path, _whole(unblock_search.find_unblocks) if whole else unblock_search.find_unblocks
    )
    assert work.placed + work.refusal_units <= work.charged <= work.at_most()


def test_a_check_visits_only_the_removals_kept_before_the_node_its_change_alters(tmp_path: Path):
    """Three light nodes go; four heavier ones are each held by a bare pod. The check of each held
    node's answer (annotate the pod) skips the held nodes before it, which the recorded search
    already found blocked, makes the three recorded removals again and simulates the node alone."""
    light, held = ["a0", "a1", "a2"], ["b0", "b1", "b2", "b3"]
    c = _light_and_held(light, held)
    _Counted.made = []
    with mock.patch.object(unblock_search, "Replay", _Counted):
        plan = c.plan(tmp_path)
    assert plan == _whole_plan(c, tmp_path)
    checks = {r.node: (r.skipped, r.replayed, r.simulated) for r in _Counted.made}
    assert [checks[n] for n in held] == [(i, len(light), 1) for i in range(len(held))]


def test_a_threshold_check_goes_on_where_a_lower_thresholds_check_stopped(tmp_path: Path):
    """Two busy nodes, at 0.55 and 0.57 of their cpu, each answered by a higher threshold. The
    search with 0.57 visits the node at 0.55 first, as the check with 0.55 did on the same state:
    it goes on from that check's search and simulates only its own node."""
    c = Cluster()
    c.group("general", 0)
    c.flags["scale-down-utilization-threshold"] = "0.5"
    c.node("dest", cpu="16", memory="64Gi", **{SCALE_DOWN_DISABLED: "true"})
    c.replicaset("web", 3)
    c.node("a", cpu="1")
    c.pod("web-a", "a", "200m", app="web")
    for name, cpu in (("c1", "550m"), ("c2", "570m")):
        c.node(name, cpu="1")
        c.pod(f"web-{name}", name, cpu, app="web")
    _Counted.made = []
    with mock.patch.object(unblock_search, "Replay", _Counted):
        plan = c.plan(tmp_path)
    assert plan == _whole_plan(c, tmp_path)
    answers = {n: plan["scale_down"]["nodes"][n]["unblock"] for n in ("c1", "c2")}
    assert [a["changes"][0]["change"] for a in answers.values()] == [
        "scale-down-utilization-threshold=0.55",
        "scale-down-utilization-threshold=0.57",
    ], answers
    first, second = (next(r for r in _Counted.made if r.node == n) for n in ("c1", "c2"))
    assert (first.replayed, first.simulated) == (1, 1)  # a's removal made again; c1 simulated
    assert (second.replayed, second.simulated) == (2, 1)  # a's and c1's removals made again


def _flag(name: str, value: str) -> Change:
    return Change(ChangeKind.FLAG, f"flag {name}", f"{name}={value}", "", target=name, value=value)


def _threshold(value: str) -> Change:
    return _flag("scale-down-utilization-threshold", value)


# Checks in the order the narrowed search meets them, each after the ones before it filled the
# facts its planners share: thresholds both ways (an empty node at 0.6 of its cpu, DaemonSet pods
# only, goes from eligible to not and back), then flags that change what the utilization or the
# eligibility reads, a pod's annotation and a node's.
_SHARED_CHECKS: tuple[tuple[Change, ...], ...] = (
    (),
    (_threshold("0.6"),),
    (_threshold("0.55"),),
    (_threshold("0.55"), _flag("ignore-daemonsets-utilization", "true")),
    (_flag("ignore-daemonsets-utilization", "true"),),
    (_flag("ignore-mirror-pods-utilization", "true"), _threshold("0.6")),
    (_flag("scale-down-unready-enabled", "true"), _threshold("0.55")),
    (Change(ChangeKind.SAFE_TO_EVICT, "Pod prod/debug", "", "", target="uid-prod-debug", value="true"),),
    (Change(ChangeKind.NODE_ANNOTATION, "Node dest", "", "", target="dest", value=""), _threshold("0.6")),
    (_threshold("0.6"),),
    (),
)


def test_a_check_reuses_only_the_eligibility_its_changes_leave_alone(tmp_path: Path):
    """The checks' planners share each node's eligibility across thresholds (only the comparison
    redone: candidates.Checked), never across a flag the utilization or eligibility reads, nor for
    a node whose pods or object a check changed: every node's status, check after check, is the
    one a planner from nothing gives."""
    c = Cluster()
    c.group("general", 0)
    c.flags["scale-down-utilization-threshold"] = "0.5"
    c.flags["scale-down-unready-enabled"] = "false"
    c.node("dest", cpu="16", memory="64Gi", **{SCALE_DOWN_DISABLED: "true"})
    c.replicaset("web", 5)
    for name, own in (("ds", "1200m"), ("mirror", "1200m"), ("unready", "200m"), ("plain", "2000m")):
        c.node(name)
        c.pod(f"web-{name}", name, "1000m", app="web")
        c.pod(f"own-{name}", name, own)
    c.node("only-ds")
    c.pod("own-only-ds", "only-ds", "2400m")
    c.pod("debug", "plain", "100m")  # bare: holds its node until annotated safe to evict
    by_name = {item["metadata"]["name"]: item for item in c.items}
    for pod in ("own-ds", "own-only-ds"):
        by_name[pod]["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "name": "agent",
                "uid": "uid-ds",
                "controller": True,
            }
        ]
    by_name["own-mirror"]["metadata"]["annotations"] = {MIRROR_ANNOTATION: "x"}
    by_name["unready"]["status"]["conditions"][0]["status"] = "False"
    compared: list[dict] = []
    real = unblock_search.find_unblocks

    def statuses(plan) -> dict:
        return {n: (s.status, s.empty, s.utilization, s.reason, s.detail) for n, s in plan.nodes.items()}

    def compare(inputs, options, cloud, *, plan, checker, timer, **kwargs):
        args = (inputs, options, cloud, checker, timer, plan)
        shared = unblock_search._Search(*args)
        for changes in _SHARED_CHECKS:
            got = statuses(shared._plan(changes))
            assert got == statuses(unblock_search._Search(*args, narrow=False)._plan(changes)), changes
            compared.append(got)
        return real(inputs, options, cloud, plan=plan, checker=checker, timer=timer, **kwargs)

    with mock.patch.object(explain, "find_unblocks", compare):
        c.plan(tmp_path)
    assert len(compared) == len(_SHARED_CHECKS)
    # The cases do what they are for: the changes move utilizations and verdicts.
    utilization = [{n: s[2] for n, s in got.items()} for got in compared]
    assert utilization[3]["ds"] < utilization[2]["ds"] and utilization[5]["mirror"] < utilization[1]["mirror"]
    reasons = [{n: s[3] for n, s in got.items()} for got in compared]
    assert reasons[0]["only-ds"] is NodeReason.NOT_UNDERUTILIZED and reasons[1]["only-ds"] is None
    assert reasons[0]["unready"] is NodeReason.NOT_UNNEEDED_OTHER_REASON
    assert reasons[6]["unready"] is not NodeReason.NOT_UNNEEDED_OTHER_REASON
