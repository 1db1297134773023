import itertools

from sim_helpers import advance, deployment, group, make_scenario, pods_of, simulate, workload

from kubetide.sim import NoAutoscaler


def test_replicaset_replaces_an_evicted_pod_after_the_controller_delay():
    sim = simulate(make_scenario(objects=[deployment("web", 3)]), NoAutoscaler)
    victim = pods_of(sim, "web")[0]
    sim.actions.evict(victim, 30)
    advance(sim, 0.5)
    assert len([p for p in pods_of(sim, "web") if not p.is_terminating]) == 2  # not yet
    advance(sim, 1)
    active = [p for p in pods_of(sim, "web") if not p.is_terminating]
    assert len(active) == 3 and victim.uid not in {p.uid for p in active}
    advance(sim, 10)
    assert all(p.phase == "Running" for p in active for p in [sim.world.pod(p.uid)])
    # Deployment pods belong to the Deployment's ReplicaSet, labelled with the template hash.
    owner = active[0].meta.controller
    assert owner.kind == "ReplicaSet" and owner.name.startswith("web-")
    assert "pod-template-hash" in active[0].labels


def test_replicaset_replaces_pods_lost_with_their_node():
    sim = simulate(make_scenario(groups=[group(size=3)], objects=[deployment("web", 6)]), NoAutoscaler)
    node = pods_of(sim, "web")[0].node_name
    lost = [p.uid for p in pods_of(sim, "web") if p.node_name == node]
    sim.world.remove_node(node)
    advance(sim, 12)
    pods = pods_of(sim, "web")
    assert len(pods) == 6 and not {p.uid for p in pods} & set(lost)
    assert all(p.phase == "Running" for p in pods)


def test_scale_down_deletes_unscheduled_pods_first():
    # Room for 4 one-cpu pods: scaling 3 -> 6 leaves two pending; 6 -> 4 deletes those two.
    sim = simulate(
        make_scenario(groups=[group(size=1, cpu="4")], objects=[deployment("web", 3, cpu="1")]), NoAutoscaler
    )
    sim.deployments.scale("Deployment/default/web", 6)
    advance(sim, 15)
    assert sum(1 for p in pods_of(sim, "web") if not p.node_name) == 2
    sim.deployments.scale("Deployment/default/web", 4)
    advance(sim, 2)
    remaining = pods_of(sim, "web")
    assert len(remaining) == 4 and all(p.node_name for p in remaining)
    assert sim.replicasets.deleted == 2


def test_statefulset_creates_in_ordinal_order_each_after_the_previous_is_ready():
    sts = workload("StatefulSet", "db", 3)
    sim = simulate(make_scenario(events=[{"at": "1m", "apply": [sts]}]), NoAutoscaler)
    advance(sim, 61.5)
    assert [p.name for p in pods_of(sim, "db")] == ["db-0"]
    advance(sim, 60)
    pods = pods_of(sim, "db")
    assert [p.name for p in pods] == ["db-0", "db-1", "db-2"]
    for before, after in itertools.pairwise(pods):
        assert after.meta.creation_timestamp >= before.ready_transition
    assert pods[2].labels["statefulset.kubernetes.io/pod-name"] == "db-2"


def test_statefulset_scales_down_highest_ordinal_first_and_reuses_names():
    sim = simulate(make_scenario(objects=[workload("StatefulSet", "db", 3, grace=10)]), NoAutoscaler)
    assert [p.name for p in pods_of(sim, "db")] == ["db-0", "db-1", "db-2"]
    sim.statefulsets.scale("StatefulSet/default/db", 1)
    advance(sim, 2)
    terminating = [p.name for p in pods_of(sim, "db") if p.is_terminating]
    assert terminating == ["db-2"]  # one at a time, highest first
    advance(sim, 12)
    assert [p.name for p in pods_of(sim, "db") if p.is_terminating] == ["db-1"]
    advance(sim, 12)
    assert [p.name for p in pods_of(sim, "db")] == ["db-0"]
    # An evicted member comes back under the same name once the old pod is gone.
    old = pods_of(sim, "db")[0]
    sim.actions.evict(old, 10)
    advance(sim, 5)
    assert [p.uid for p in pods_of(sim, "db")] == [old.uid]
    advance(sim, 8)
    (new,) = pods_of(sim, "db")
    assert new.name == "db-0" and new.uid != old.uid


def test_daemonset_runs_on_every_matching_node_including_new_ones():
    ds = workload("DaemonSet", "agent", cpu="100m")
    picky = workload("DaemonSet", "gpu-agent", cpu="100m", pod_extra={"nodeSelector": {"gpu": "true"}})
    sim = simulate(make_scenario(groups=[group(size=2)], objects=[ds, picky, deployment("big", 3, cpu="3")]))
    assert len(pods_of(sim, "agent")) == 2 and not pods_of(sim, "gpu-agent")
    # A pod that fits nowhere makes the test autoscaler add a node; the agent follows it there.
    advance(sim, 120)
    nodes = {n.name for n in sim.world.nodes()}
    assert len(nodes) == 3
    advance(sim, 15)
    agents = pods_of(sim, "agent")
    assert {p.node_name for p in agents} == nodes
    assert all(p.phase == "Running" for p in agents)


def test_daemonset_respects_taints():
    tainted = group(
        "tainted",
        size=1,
        template={
            "spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi"}},
        },
    )
    tolerant = workload(
        "DaemonSet",
        "tolerant",
        cpu="100m",
        pod_extra={"tolerations": [{"key": "dedicated", "operator": "Exists"}]},
    )
    sim = simulate(
        make_scenario(
            groups=[group(size=1), tainted], objects=[workload("DaemonSet", "agent", cpu="100m"), tolerant]
        ),
        NoAutoscaler,
    )
    assert {p.node_name.split("-")[0] for p in pods_of(sim, "agent")} == {"general"}
    assert len(pods_of(sim, "tolerant")) == 2


def test_job_pods_run_their_duration_then_succeed_until_completions():
    job = workload(
        "Job", "report", annotations={"kubetide.io/run-duration": "5m"}, parallelism=2, completions=4
    )
    job["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    sim = simulate(make_scenario(objects=[job]), NoAutoscaler)
    first = {p.uid for p in pods_of(sim, "report")}
    assert len(first) == 2
    advance(sim, 299)
    assert {p.uid for p in pods_of(sim, "report")} == first
    advance(sim, 2)
    assert not {p.uid for p in pods_of(sim, "report")} & first  # succeeded and gone
    assert sim.jobs.succeeded[next(iter(sim.world.workloads.values())).meta.uid] == 2
    advance(sim, 12)
    assert len(pods_of(sim, "report")) == 2  # the second wave
    advance(sim, 300)
    assert not pods_of(sim, "report")
    assert "Job/default/report" in sim.jobs.completed_jobs


def test_job_run_duration_falls_back_to_the_scenario():
    job = workload("Job", "quick", parallelism=1)
    sim = simulate(make_scenario(objects=[job], cluster={"jobRunDuration": "2m"}), NoAutoscaler)
    advance(sim, 121)
    assert not pods_of(sim, "quick")
    assert sim.jobs.completed_jobs["Job/default/quick"] == sim.engine.start + 121  # + controller delay


def test_bare_pods_are_not_replaced():
    bare = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "solo", "labels": {"app": "solo"}},
        "spec": {"containers": [{"name": "c"}]},
    }
    sim = simulate(make_scenario(objects=[bare]), NoAutoscaler)
    (pod,) = pods_of(sim, "solo")
    assert pod.phase == "Running"
    sim.actions.evict(pod, 0)
    advance(sim, 30)
    assert not pods_of(sim, "solo")


def test_scenario_scale_apply_and_delete_events():
    events = [
        {"at": "1m", "scale": {"kind": "Deployment", "name": "web", "replicas": 5}},
        {"at": "2m", "apply": [deployment("api", 2)]},
        {"at": "3m", "delete": {"kind": "Deployment", "name": "web"}},
        {"at": "4m", "scale": {"kind": "Deployment", "name": "nope", "replicas": 1}},
    ]
    sim = simulate(make_scenario(objects=[deployment("web", 2)], events=events), NoAutoscaler)
    advance(sim, 75)
    assert len(pods_of(sim, "web")) == 5
    advance(sim, 60)
    assert len(pods_of(sim, "api")) == 2
    advance(sim, 60)
    assert all(p.is_terminating for p in pods_of(sim, "web"))
    advance(sim, 60)
    assert not pods_of(sim, "web")
    assert sim.warnings == ["test.yaml: spec.events[3]: no Deployment default/nope at 240s; event ignored"]


def test_lowering_job_parallelism_deletes_the_newest_pods():
    job = workload("Job", "crunch", parallelism=4, annotations={"kubetide.io/run-duration": "1h"})
    sim = simulate(make_scenario(objects=[job], duration="2h"), NoAutoscaler)
    assert len(pods_of(sim, "crunch")) == 4
    sim.jobs.scale("Job/default/crunch", 1)
    advance(sim, 2)
    assert sum(1 for p in pods_of(sim, "crunch") if not p.is_terminating) == 1


def test_the_view_reports_workload_status():
    sim = simulate(make_scenario(objects=[deployment("web", 3)]), NoAutoscaler)

    def status():
        return {w.key: (w.status_replicas, w.status_ready_replicas) for w in sim.view.workloads()}

    (rs_key,) = [k for k in status() if k.startswith("ReplicaSet/")]
    assert status() == {"Deployment/default/web": (3, 3), rs_key: (3, 3)}
    sim.actions.evict(pods_of(sim, "web")[0], 30)
    assert status()["Deployment/default/web"] == (2, 2)
    advance(sim, 1.5)
    assert status()["Deployment/default/web"] == (3, 2)  # replacement created, not Ready yet
    advance(sim, 10)
    assert status()["Deployment/default/web"] == (3, 3)
