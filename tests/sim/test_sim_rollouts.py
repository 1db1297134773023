"""Deployment rollouts: the controller's arithmetic, table-driven, then simulated rollouts whose
invariants are checked at every pod change (sim/rollout.py, sim/deployment.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sim_helpers import advance, deployment, group, make_scenario, simulate

from kubetide.autoscaler.ports import ActionError
from kubetide.durations import rfc3339
from kubetide.errors import ManifestError
from kubetide.model import load_documents
from kubetide.model.scaled import resolve_fenceposts, scaled_value
from kubetide.model.workloads import RESTARTED_AT_ANNOTATION, rolling_out
from kubetide.sim import NoAutoscaler, Simulation
from kubetide.sim.runtime.deployment import revision
from kubetide.sim.runtime.rollout import (
    OldReplicaSet,
    RolloutStatus,
    max_unavailable,
    new_replicaset_replicas,
    old_replicaset_scale_down,
    rollout_message,
)
from kubetide.sim.runtime.world import WorldObserver
from kubetide.sim.spec import ScenarioError

KEY = "Deployment/default/web"


# -- the arithmetic ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "total", "up", "expected"),
    [
        (3, 10, True, 3),
        (3, 10, False, 3),
        ("25%", 10, True, 3),  # 2.5 up
        ("25%", 10, False, 2),  # 2.5 down
        ("25%", 4, True, 1),
        ("25%", 1, True, 1),
        ("25%", 1, False, 0),
        ("0%", 7, True, 0),
        ("100%", 7, False, 7),
        ("200%", 3, True, 6),
        ("33%", 10, True, 4),
        ("33%", 10, False, 3),
        ("50%", 0, True, 0),
    ],
)
def test_scaled_value_rounds_percentages_up_or_down(value, total, up, expected):
    assert scaled_value(value, total, round_up=up) == expected


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "expected"),
    [
        (10, "25%", "25%", (3, 2)),  # the defaults: surge rounds up, unavailable down
        (4, "25%", "25%", (1, 1)),
        (1, "25%", "25%", (1, 0)),
        (3, 2, 1, (2, 1)),
        (10, 0, "30%", (0, 3)),
        (5, "100%", 0, (5, 0)),
        (3, "0%", "25%", (0, 1)),  # both round to 0: maxUnavailable becomes 1, as upstream
        (0, "25%", "25%", (0, 1)),
        (7, "50%", "50%", (4, 3)),
    ],
)
def test_fenceposts(replicas, surge, unavailable, expected):
    assert resolve_fenceposts(surge, unavailable, replicas) == expected


@pytest.mark.parametrize(
    ("strategy", "surge", "unavailable", "replicas", "expected"),
    [
        ("RollingUpdate", "25%", "25%", 10, 2),
        ("RollingUpdate", 0, 5, 2, 2),  # never more than the replicas
        ("RollingUpdate", "25%", "25%", 0, 0),
        ("Recreate", "25%", "25%", 10, 0),
    ],
)
def test_max_unavailable(strategy, surge, unavailable, replicas, expected):
    assert max_unavailable(strategy, surge, unavailable, replicas) == expected


@pytest.mark.parametrize(
    ("replicas", "surge", "current", "new", "expected"),
    [
        (10, 3, 10, 0, 3),  # a fresh rollout: up to the surge
        (10, 3, 13, 3, 3),  # at replicas + surge: no room
        (10, 3, 11, 3, 5),  # two old pods gone: two more new ones
        (10, 3, 4, 2, 10),  # room for 9 more, but never past replicas
        (10, 0, 10, 0, 0),  # no surge: the old ones must go first
        (4, 1, 4, 4, 4),  # done
        (4, 1, 6, 6, 4),  # more than replicas: back to replicas
    ],
)
def test_new_replicaset_grows_within_the_surge(replicas, surge, current, new, expected):
    assert new_replicaset_replicas(replicas, surge, current, new) == expected


@pytest.mark.parametrize(
    ("replicas", "unavailable", "old", "new_replicas", "new_available", "expected"),
    [
        # 10 replicas, maxUnavailable 2, 3 new (not yet available): min available 8, so 2 old go.
        (10, 2, [(10, 10)], 3, 0, [8]),
        # The 3 new ones became available: 11 available, 3 over the minimum.
        (10, 2, [(8, 8)], 3, 3, [5]),
        # Unhealthy old pods go first and cost no availability: 4 unhealthy, none over the minimum.
        (10, 4, [(10, 6)], 0, 0, [6]),
        # The budget (pods - min available - new unavailable) caps that clean-up at 2.
        (10, 2, [(10, 6)], 0, 0, [8]),
        (10, 2, [(10, 6)], 3, 0, [8]),
        # Oldest first.
        (6, 1, [(3, 3), (3, 3)], 1, 1, [1, 3]),
        # maxUnavailable 0 with nothing new available: nothing may go.
        (5, 0, [(5, 5)], 1, 0, [5]),
        # Nothing old left.
        (5, 1, [(0, 0)], 5, 5, [0]),
    ],
)
def test_old_replicasets_shrink_only_as_availability_allows(
    replicas, unavailable, old, new_replicas, new_available, expected
):
    olds = [OldReplicaSet(r, a) for r, a in old]
    sizes = old_replicaset_scale_down(
        replicas,
        unavailable,
        olds,
        all_pods=new_replicas + sum(r for r, _ in old),
        available_pods=new_available + sum(a for _, a in old),
        new_unavailable=new_replicas - new_available,
    )
    assert sizes == expected


@pytest.mark.parametrize(
    ("status", "done", "message"),
    [
        ((3, 2, 1, 3, 3, 3, 3), False, "Waiting for deployment spec update to be observed..."),
        ((3, 2, 2, 4, 1, 3, 3), False, "1 out of 3 new replicas have been updated..."),
        ((3, 2, 2, 4, 3, 4, 4), False, "1 old replicas are pending termination..."),
        ((3, 2, 2, 3, 3, 3, 2), False, "2 of 3 updated replicas are available..."),
        ((3, 2, 2, 3, 3, 3, 3), True, "successfully rolled out"),
    ],
)
def test_rollout_status_as_kubectl_reads_it(status, done, message):
    s = RolloutStatus(*status)
    assert rollout_message(s) == (done, message)
    assert s.rolling_out is not done


# -- the manifest ----------------------------------------------------------------------------------
def load_deployment(**spec):
    manifest = deployment("web", 3, **spec)
    return load_documents([manifest], "web.yaml").workloads[0]


def test_strategy_fields_are_read_with_their_defaults():
    plain = load_deployment()
    assert (plain.strategy, plain.max_surge, plain.max_unavailable, plain.min_ready_seconds) == (
        "RollingUpdate",
        "25%",
        "25%",
        0,
    )
    given_ = load_deployment(
        strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": "10%"}},
        minReadySeconds=30,
    )
    assert (given_.max_surge, given_.max_unavailable, given_.min_ready_seconds) == (2, "10%", 30)
    assert load_deployment(strategy={"type": "Recreate"}).strategy == "Recreate"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}}},
            "spec.strategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0",
        ),
        (
            {"strategy": {"rollingUpdate": {"maxUnavailable": "150%"}}},
            "spec.strategy.rollingUpdate.maxUnavailable: must not be greater than 100%, got 150%",
        ),
        (
            {"strategy": {"rollingUpdate": {"maxSurge": "lots"}}},
            "spec.strategy.rollingUpdate.maxSurge: expected an integer or a percentage",
        ),
        (
            {"strategy": {"rollingUpdate": {"maxSurge": -1}}},
            "spec.strategy.rollingUpdate.maxSurge: must be non-negative, got -1",
        ),
        (
            {"strategy": {"type": "BlueGreen"}},
            'spec.strategy.type: unknown strategy "BlueGreen" (expected RollingUpdate or Recreate)',
        ),
        (
            {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}},
            "spec.strategy.rollingUpdate: may not be given when the strategy type is Recreate",
        ),
        ({"minReadySeconds": -5}, "spec.minReadySeconds: must be non-negative, got -5"),
    ],
)
def test_bad_strategies_are_refused_in_one_line(spec, message):
    with pytest.raises(ManifestError) as info:
        load_deployment(**spec)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# -- simulated rollouts --------------------------------------------------------------------------
class Invariants(WorldObserver):
    """Checks the rollout bounds after every pod change of Deployment web."""

    def __init__(self, sim: Simulation, replicas: int, surge: int, unavailable: int, min_ready: int):
        self.sim = sim
        self.max_pods = replicas + surge
        self.min_available = replicas - unavailable
        self.min_ready = min_ready
        self.checks = 0
        self.peak = 0
        self.low = replicas
        self.watching = False
        sim.world.subscribe(self)

    def _web(self):
        return [
            p
            for p in self.sim.world.pods()
            if p.labels.get("app") == "web" and not p.is_terminating and not p.is_terminal
        ]

    def check(self) -> None:
        if not self.watching:
            return
        now = self.sim.engine.now()
        pods = self._web()
        available = sum(
            1
            for p in pods
            if p.ready and (p.ready_transition is not None and p.ready_transition + self.min_ready <= now)
        )
        self.checks += 1
        self.peak = max(self.peak, len(pods))
        self.low = min(self.low, available)
        assert len(pods) <= self.max_pods, f"{len(pods)} pods > {self.max_pods} at {now}"
        assert available >= self.min_available, f"{available} available < {self.min_available} at {now}"

    def pod_added(self, pod):
        self.check()

    def pod_updated(self, old, new):
        self.check()

    def pod_removed(self, pod):
        self.check()


def web(replicas, surge=None, unavailable=None, min_ready=0, strategy="RollingUpdate", image="web:1", **kw):
    spec = {}
    if strategy == "Recreate":
        spec["strategy"] = {"type": "Recreate"}
    elif surge is not None or unavailable is not None:
        rolling = {}
        if surge is not None:
            rolling["maxSurge"] = surge
        if unavailable is not None:
            rolling["maxUnavailable"] = unavailable
        spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling}
    if min_ready:
        spec["minReadySeconds"] = min_ready
    manifest = deployment("web", replicas, **spec, **kw)
    manifest["spec"]["template"]["spec"]["containers"][0]["image"] = image
    return manifest


def rollout_sim(manifest, events, nodes=6, duration="2h"):
    scenario = make_scenario(groups=[group(size=nodes)], objects=[manifest], events=events, duration=duration)
    return simulate(scenario, NoAutoscaler)


def run_until_settled(sim, limit=3600.0, step=1.0):
    start = sim.engine.now()
    while sim.deployments.rolling_out("default", "web") and sim.engine.now() - start < limit:
        advance(sim, step)
    assert not sim.deployments.rolling_out("default", "web"), sim.deployments.status("default", "web")


def assert_all_on_the_new_template(sim):
    d = sim.world.workloads[KEY]
    owned = sim.deployments.owned(d)
    new = sim.deployments.current(d, owned)
    assert new is not None and new.replicas == d.replicas
    assert all(rs.replicas == 0 for rs in owned if rs is not new)
    pods = [p for p in sim.world.pods() if p.labels.get("app") == "web" and not p.is_terminating]
    assert len(pods) == d.replicas
    assert {p.meta.controller.uid for p in pods} <= {new.meta.uid}
    assert {p.labels["pod-template-hash"] for p in pods} <= {new.name.rsplit("-", 1)[1]}
    status = sim.deployments.status("default", "web")
    assert status.updated == status.replicas == status.available == d.replicas
    assert status.observed_generation == status.generation


def set_image(at, image, container="c"):
    return {"at": at, "setImage": {"name": "web", "images": {container: image}}}


@pytest.mark.parametrize(
    ("replicas", "surge", "unavailable", "min_ready", "bounds"),
    [
        (10, None, None, 0, (3, 2)),  # 25% / 25%
        (10, 2, 0, 10, (2, 0)),  # never below 10 available
        (10, 0, 3, 0, (0, 3)),  # no surge: never above 10 pods
        (5, "100%", 0, 5, (5, 0)),  # blue-green-like
        (3, "0%", "10%", 0, (0, 1)),  # both round to 0: one at a time
        (1, None, None, 0, (1, 0)),
    ],
)
def test_rolling_update_keeps_its_bounds_and_ends_on_the_new_template(
    replicas, surge, unavailable, min_ready, bounds
):
    sim = rollout_sim(web(replicas, surge, unavailable, min_ready), [set_image("5m", "web:2")])
    check = Invariants(sim, replicas, *bounds, min_ready)
    advance(sim, 299)
    d = sim.world.workloads[KEY]
    first = sim.deployments.current(d)
    assert not sim.deployments.rolling_out("default", "web")
    check.watching = True
    advance(sim, 1.5)  # the event has run (at 300 s); the controller has not yet
    assert sim.deployments.rolling_out("default", "web")
    status = sim.deployments.status("default", "web")
    assert status.observed_generation < status.generation
    run_until_settled(sim)
    assert check.checks > 0
    assert_all_on_the_new_template(sim)
    d = sim.world.workloads[KEY]
    new = sim.deployments.current(d)
    assert new.name != first.name and revision(new) == 2
    if surge is not None and bounds[0] > 0:
        assert check.peak == replicas + bounds[0]  # the surge was used, not just allowed
    if bounds[1] > 0 and min_ready == 0:
        assert check.low <= replicas - 1


def test_recreate_stops_every_old_pod_before_the_first_new_one():
    sim = rollout_sim(web(6, strategy="Recreate"), [set_image("5m", "web:2")])
    d = sim.world.workloads[KEY]
    old_rs = sim.deployments.current(d)
    seen = []

    class Watch(WorldObserver):
        def pod_added(self, pod):
            old_left = [p for p in sim.world.pods_of(old_rs.meta.uid)]
            seen.append(len(old_left))

    sim.world.subscribe(Watch())
    advance(sim, 300.5)
    assert sim.deployments.rolling_out("default", "web")
    run_until_settled(sim)
    assert seen and set(seen) == {0}  # no new pod while an old one (running or terminating) was there
    assert len(seen) == 6
    assert_all_on_the_new_template(sim)


def test_restart_event_rolls_out_pods_annotated_with_the_event_time():
    sim = rollout_sim(web(4), [{"at": "10m", "restart": {"kind": "Deployment", "name": "web"}}])
    advance(sim, 600.5)
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    stamp = rfc3339(sim.engine.start + 600)
    pods = [p for p in sim.world.pods() if p.labels.get("app") == "web" and not p.is_terminating]
    assert {p.annotations.get(RESTARTED_AT_ANNOTATION) for p in pods} == {stamp}
    reasons = [e["reason"] for e in sim.log.entries]
    assert "Restarted" in reasons and "ScalingReplicaSet" in reasons


def test_an_apply_of_an_image_only_change_rolls_out():
    changed = web(4, image="web:2")
    sim = rollout_sim(web(4), [{"at": "5m", "apply": [changed]}])
    first = sim.deployments.current(sim.world.workloads[KEY])
    advance(sim, 300.5)
    assert sim.deployments.rolling_out("default", "web")
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    assert sim.deployments.current(sim.world.workloads[KEY]).name != first.name


def test_an_apply_of_the_same_manifest_changes_nothing():
    sim = rollout_sim(web(4), [{"at": "5m", "apply": [web(4)]}])
    before = {p.uid for p in sim.world.pods()}
    advance(sim, 600)
    assert not sim.deployments.rolling_out("default", "web")
    assert {p.uid for p in sim.world.pods()} == before
    assert sim.deployments.rollouts == 0


def test_a_rollback_takes_the_old_replicaset_back_with_the_next_revision():
    sim = rollout_sim(web(4), [set_image("5m", "web:2"), set_image("20m", "web:1")])
    first = sim.deployments.current(sim.world.workloads[KEY])
    advance(sim, 300.5)
    run_until_settled(sim)
    advance(sim, 1200 - (sim.engine.now() - sim.engine.start) + 0.5)
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    back = sim.deployments.current(sim.world.workloads[KEY])
    assert back.name == first.name and revision(back) == 3
    assert len(sim.deployments.owned(sim.world.workloads[KEY])) == 2
    assert sim.deployments.rollouts == 2


def test_a_scale_event_of_a_settled_deployment_is_not_a_rollout():
    sim = rollout_sim(web(4), [{"at": "5m", "scale": {"kind": "Deployment", "name": "web", "replicas": 7}}])
    first = sim.deployments.current(sim.world.workloads[KEY])
    advance(sim, 330)
    assert sim.deployments.current(sim.world.workloads[KEY]) is not None
    assert len(sim.deployments.owned(sim.world.workloads[KEY])) == 1
    assert sim.world.workloads[first.key].replicas == 7
    assert sim.deployments.rollouts == 0
    assert not sim.deployments.rolling_out("default", "web")


def test_the_autoscaler_port_restarts_a_deployment():
    sim = rollout_sim(web(3), [])
    advance(sim, 60)
    sim.actions.restart_deployment("default", "web", sim.engine.now())
    assert sim.deployments.rolling_out("default", "web")
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    with pytest.raises(ActionError, match=r'deployments\.apps "nope" not found'):
        sim.actions.restart_deployment("default", "nope", sim.engine.now())


def test_rollouts_are_deterministic():
    def run():
        scenario = make_scenario(
            groups=[group(size=3)],
            objects=[web(8, 2, 1, 5)],
            events=[set_image("2m", "web:2"), {"at": "6m", "restart": {"name": "web"}}],
            duration="15m",
        )
        result = Simulation(scenario, autoscaler_factory=NoAutoscaler).run()
        summary = dict(result.summary, wall_seconds=0)
        return json.dumps([summary, result.timeline, result.events], sort_keys=True)

    first = run()
    assert first == run()
    assert '"ScalingReplicaSet"' in first


@settings(max_examples=20, suppress_health_check=[HealthCheck.too_slow])
@given(
    replicas=st.integers(1, 12),
    surge=st.one_of(st.integers(0, 4), st.sampled_from(["0%", "10%", "25%", "50%", "100%"])),
    unavailable=st.one_of(st.integers(0, 4), st.sampled_from(["0%", "10%", "25%", "50%", "100%"])),
    min_ready=st.sampled_from([0, 3, 20]),
    seed=st.integers(0, 3),
)
def test_any_rolling_update_keeps_its_bounds(replicas, surge, unavailable, min_ready, seed):
    if surge in (0, "0%") and unavailable in (0, "0%"):
        surge = 1  # both 0 is refused (tested above)
    scenario = make_scenario(
        groups=[group(size=8)],
        objects=[web(replicas, surge, unavailable, min_ready)],
        events=[set_image("1m", "web:2")],
        seed=seed,
        duration="2h",
    )
    sim = simulate(scenario, NoAutoscaler)
    s, u = resolve_fenceposts(surge, unavailable, replicas)
    check = Invariants(sim, replicas, s, min(u, replicas), min_ready)
    advance(sim, 60)
    check.watching = True
    advance(sim, 0.5)
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)


# -- scenario events ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {"at": "1m", "restart": {"name": "webb"}},
            'spec.events[0].restart.name: unknown Deployment "default/webb" (did you mean "default/web"?)',
        ),
        (
            {"at": "1m", "setImage": {"name": "web", "images": {"app": "web:2"}}},
            'spec.events[0].setImage.images: Deployment default/web has no container "app" (it has c)',
        ),
        (
            {"at": "1m", "setImage": {"name": "web", "images": {}}},
            "spec.events[0].setImage.images",
        ),
        (
            {"at": "1m", "setImage": {"name": "web", "images": {"c": " "}}},
            'the image of container "c" must not be empty',
        ),
        (
            {"at": "1m", "restart": {"kind": "StatefulSet", "name": "web"}},
            "spec.events[0].restart.kind",
        ),
        (
            {"at": "1m", "restart": {"name": "web"}, "setImage": {"name": "web", "images": {"c": "x"}}},
            "an event needs exactly one of scale, apply, delete, fault, restart or setImage "
            "(found restart, setImage)",
        ),
    ],
)
def test_bad_rollout_events_are_one_line_errors(event, message):
    with pytest.raises(ScenarioError) as info:
        make_scenario(objects=[web(2)], events=[event])
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_rollout_event_may_name_a_deployment_an_earlier_event_applies():
    scenario = make_scenario(
        events=[
            {"at": "5m", "setImage": {"name": "web", "images": {"c": "web:2"}}},
            {"at": "1m", "apply": [web(2)]},
        ]
    )
    assert [e.kind for e in scenario.events] == ["apply", "setImage"]


def test_the_cli_refuses_a_bad_rollout_event_with_exit_2(tmp_path, capsys):
    from test_sim_scenario import main

    path = tmp_path / "s.yaml"
    text = """\
apiVersion: kubetide.io/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  duration: 10m
  nodeGroups: [{name: g, maxSize: 3, initialSize: 1, template: {status: {allocatable: {cpu: "4", memory: 8Gi}}}}]
  objects:
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web}
      spec:
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec: {containers: [{name: app, image: "web:1"}]}
  events:
    - at: 1m
      setImage: {name: web, images: {application: "web:2"}}
"""
    path.write_text(text)
    assert main(["simulate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f'kubetide: error: {path}: spec.events[0].setImage.images: Deployment default/web has no container "application" (it has app)'
    ]


def test_a_budget_expects_the_deployments_replicas_during_a_rollout():
    from sim_helpers import pdb

    scenario = make_scenario(
        groups=[group(size=6)],
        objects=[web(8, 4, 0, 30), pdb("web", "web", max_unavailable="25%")],
        events=[set_image("1m", "web:2")],
    )
    sim = simulate(scenario, NoAutoscaler)
    advance(sim, 65)
    assert len(sim.deployments.owned(sim.world.workloads[KEY])) == 2
    status = sim.budgets.status(sim.budgets.states["default/web"])
    # 12 pods in two ReplicaSets (8 old + 4 surge), but the budget is about the 8 replicas.
    assert status.expected_pods == 8 and status.desired_healthy == 6


def replicaset_of(manifest, name, replicas, revision_):
    """A ReplicaSet of Deployment `manifest` with its template, as a dump has it."""
    rs = json.loads(json.dumps(manifest))
    rs["kind"] = "ReplicaSet"
    rs["metadata"]["name"] = name
    rs["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": str(revision_)}
    rs["metadata"]["ownerReferences"] = [{"kind": "Deployment", "name": "web", "controller": True}]
    rs["spec"]["replicas"] = replicas
    rs["spec"].pop("strategy", None)
    rs["spec"].pop("minReadySeconds", None)
    hash_ = name.rsplit("-", 1)[1]
    rs["spec"]["selector"]["matchLabels"]["pod-template-hash"] = hash_
    rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = hash_
    return rs


def test_a_dump_taken_mid_rollout_goes_on_rolling_out():
    old = replicaset_of(web(6, image="web:1"), "web-aaaaa", 4, 1)
    current = replicaset_of(web(6, image="web:2"), "web-bbbbb", 3, 2)
    scenario = make_scenario(groups=[group(size=6)], objects=[old, current, web(6, 1, 1, image="web:2")])
    sim = simulate(scenario, NoAutoscaler)  # set-up settles what it can at t=0
    d = sim.world.workloads[KEY]
    new = sim.deployments.current(d)
    assert new.name == "web-bbbbb"  # adopted, not created anew
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    assert [rs.name for rs in sim.deployments.owned(d)] == ["web-aaaaa", "web-bbbbb"]
    assert sim.deployments.rollouts == 0


def test_a_dump_whose_replicasets_all_have_another_template_rolls_out_a_new_one():
    old = replicaset_of(web(3, image="web:1"), "web-aaaaa", 3, 4)
    sim = simulate(make_scenario(groups=[group(size=6)], objects=[old, web(3, image="web:2")]), NoAutoscaler)
    run_until_settled(sim)
    assert_all_on_the_new_template(sim)
    new = sim.deployments.current(sim.world.workloads[KEY])
    assert new.name != "web-aaaaa" and revision(new) == 5


# -- what the autoscaler sees ------------------------------------------------------------------------
def web_in_view(sim):
    return next(w for w in sim.view.workloads() if w.key == KEY)


def test_the_view_reports_a_rollout_in_the_deployment_status():
    sim = rollout_sim(web(6, 2, 0, 10), [set_image("5m", "web:2")])
    advance(sim, 299)
    settled = web_in_view(sim)
    assert rolling_out(settled) is False
    assert (settled.generation, settled.status_observed_generation) == (1, 1)
    assert (settled.status_updated_replicas, settled.status_available_replicas) == (6, 6)
    advance(sim, 1)  # the event (at 300 s), not yet the controller
    changed = web_in_view(sim)
    assert (changed.generation, changed.status_observed_generation) == (2, 1)
    assert rolling_out(changed) is True
    advance(sim, 5)  # two surge pods, none of them Ready for 10 s yet
    moving = web_in_view(sim)
    assert moving.status_observed_generation == 2 and rolling_out(moving) is True
    assert moving.status_replicas == 8 and moving.status_updated_replicas == 2
    assert moving.status_available_replicas == 6
    run_until_settled(sim)
    done = web_in_view(sim)
    assert rolling_out(done) is False
    assert (done.status_replicas, done.status_updated_replicas, done.status_available_replicas) == (6, 6, 6)


@pytest.mark.parametrize(
    ("metadata", "status", "expected"),
    [
        (
            {"generation": 4},
            {"observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3},
            False,
        ),
        (
            {"generation": 5},
            {"observedGeneration": 4, "replicas": 3, "updatedReplicas": 3, "availableReplicas": 3},
            True,
        ),
        (
            {"generation": 4},
            {"observedGeneration": 4, "replicas": 4, "updatedReplicas": 1, "availableReplicas": 3},
            True,
        ),
        (
            {"generation": 4},
            {"observedGeneration": 4, "replicas": 3, "availableReplicas": 3},
            True,
        ),  # 0 updated: left out
        ({"generation": 4}, {}, None),  # no status: unknown
    ],
)
def test_rolling_out_reads_a_real_deployments_status(metadata, status, expected):
    manifest = deployment("web", 3)
    manifest["metadata"].update(metadata)
    manifest["status"] = status
    workload = load_documents([manifest], "web.yaml").workloads[0]
    assert rolling_out(workload) is expected


@pytest.mark.parametrize(
    ("ready", "transition", "terminating", "min_ready", "expected"),
    [
        (True, 100.0, False, 0, True),
        (True, 100.0, False, 10, True),  # Ready for exactly minReadySeconds
        (True, 101.0, False, 10, False),
        (True, None, False, 10, True),  # a hand-written pod: Ready since before the start
        (False, 50.0, False, 0, False),
        (True, 50.0, True, 0, False),
    ],
)
def test_what_counts_as_available(ready, transition, terminating, min_ready, expected):
    from kubetide.model import ObjectMeta, Pod
    from kubetide.sim.runtime.deployment import _available

    meta = ObjectMeta("p", "default", "u", deletion_timestamp=200.0 if terminating else None)
    pod = Pod(meta, {}, {}, phase="Running", ready=ready, ready_transition=transition)
    assert _available(pod, min_ready, now=110.0) is expected


class CountsAgree(WorldObserver):
    """After every pod change, the world's per-controller counts of active and of Ready active
    pods (what the Deployment controller reads instead of its pods) equal a recount."""

    def __init__(self, sim: Simulation):
        self.world = sim.world
        self.checks = 0
        sim.world.subscribe(self)

    def check(self, *_pods) -> None:
        world = self.world
        for uid in {*world.owned, *world.active, *world.ready}:
            pods = [p for p in world.pods_of(uid) if not p.is_terminating and not p.is_terminal]
            assert world.active.get(uid, 0) == len(pods), uid
            assert world.ready.get(uid, 0) == sum(p.ready for p in pods), uid
        self.checks += 1

    pod_added = pod_updated = pod_removed = check


@pytest.mark.parametrize("min_ready", [0, 10])
def test_the_counts_a_rollout_reads_agree_with_its_pods(min_ready):
    sim = rollout_sim(web(6, 2, 1, min_ready), [set_image("5m", "web:2"), set_image("20m", "web:3")])
    counts = CountsAgree(sim)
    advance(sim, 60 * 60)
    assert counts.checks > 20  # both rollouts: 6 pods replaced twice, each added, Ready, removed
    assert_all_on_the_new_template(sim)
    d = sim.world.workloads[KEY]
    assert revision(sim.deployments.current(d)) == 3


# -- old ReplicaSets: spec.revisionHistoryLimit --------------------------------------------------
def restarts(count, every=120):
    return [{"at": f"{60 + every * i}s", "restart": {"name": "web"}} for i in range(count)]


def replicasets(sim):
    return sorted(
        (w for w in sim.world.workloads.values() if w.kind == "ReplicaSet"), key=lambda rs: revision(rs)
    )


@pytest.mark.parametrize(("limit", "kept"), [(None, 10), (0, 0), (3, 3), (20, 14)])
def test_old_replicasets_beyond_the_revision_history_limit_are_deleted(limit, kept):
    manifest = web(4) if limit is None else web(4, revisionHistoryLimit=limit)
    sim = rollout_sim(manifest, restarts(14), duration="40m")
    advance(sim, 60 + 120 * 14)
    run_until_settled(sim)
    # The last old ReplicaSet may still have had a terminating pod when the rollout completed:
    # it goes at the Deployment's next sync, once its pods are gone.
    advance(sim, 60)
    sim.deployments.enqueue(KEY)
    advance(sim, 5)
    left = replicasets(sim)
    # the current ReplicaSet and the newest `kept` old ones, at 0 replicas; the oldest went first
    assert [revision(rs) for rs in left] == list(range(15 - kept, 16))
    assert all(rs.replicas == 0 for rs in left[:-1]) and left[-1].replicas == 4
    deleted = {rs.meta.uid for rs in left}
    assert all(uid in deleted for uid in sim.world.active)  # no count kept for a deleted one


def test_a_negative_revision_history_limit_is_refused():
    with pytest.raises(ManifestError, match=r"spec\.revisionHistoryLimit: must be non-negative, got -1"):
        load_documents([web(4, revisionHistoryLimit=-1)], "d.yaml")


def test_rollout_restarts_cost_the_same_work_each(monkeypatch):
    """1,000 restarts of one Deployment grew quadratically: every sync read every old ReplicaSet
    (its template identity hashed), and none was ever deleted. Counted work, not time: the syncs'
    template hashes for the second 40 restarts are about twice those for the 20 before."""
    from kubetide.sim.runtime import deployment as controller

    hashed = 0
    real = controller.template_identity

    def counting(template):
        nonlocal hashed
        hashed += 1
        return real(template)

    monkeypatch.setattr(controller, "template_identity", counting)
    work = []
    for count in (20, 40, 80):
        hashed = 0
        sim = rollout_sim(web(6), restarts(count), nodes=4, duration=f"{60 + 120 * count + 300}s")
        advance(sim, 60 + 120 * count + 300)
        work.append(hashed)
    # quadratic growth made the second difference four times the first (3.8 before the fix)
    assert work[2] - work[1] <= 2.1 * (work[1] - work[0]), work
