from sim_helpers import advance, deployment, make_scenario, pods_of, simulate

from kubetide.sim import NoAutoscaler


def test_initial_pods_are_running_at_time_zero():
    sim = simulate(make_scenario(objects=[deployment("web", 3)]), NoAutoscaler)
    pods = pods_of(sim, "web")
    assert len(pods) == 3
    assert all(p.phase == "Running" and p.ready and p.node_name for p in pods)
    assert sim.engine.elapsed() == 0


def test_new_pods_start_after_the_startup_delay():
    sim = simulate(
        make_scenario(objects=[deployment("web", 1)], cluster={"podStartupDelay": "5s"}), NoAutoscaler
    )
    sim.deployments.scale("Deployment/default/web", 2)
    advance(sim, 1.5)  # controller delay (1s), then the scheduler
    (new,) = [p for p in pods_of(sim, "web") if p.phase == "Pending"]
    assert new.node_name and not new.ready
    advance(sim, 3)
    assert sim.world.pod(new.uid).phase == "Pending"
    advance(sim, 3)
    started = sim.world.pod(new.uid)
    assert started.phase == "Running" and started.ready
    assert started.start_time - started.scheduled_transition == 5


def test_deletion_honours_the_grace_period():
    sim = simulate(make_scenario(objects=[deployment("web", 2, grace=60)]), NoAutoscaler)
    victim = pods_of(sim, "web")[0]
    start = sim.engine.now()
    sim.kubelets.delete(victim)
    advance(sim, 59)
    pod = sim.world.pod(victim.uid)
    assert pod is not None and pod.node_name == victim.node_name  # still bound
    assert pod.is_terminating and not pod.ready
    assert pod.meta.deletion_timestamp == start + 60  # when the grace period ends, as the API server sets it
    advance(sim, 2)
    assert sim.world.pod(victim.uid) is None


def test_an_explicit_grace_period_overrides_the_pods():
    sim = simulate(make_scenario(objects=[deployment("web", 1, grace=600)]), NoAutoscaler)
    victim = pods_of(sim, "web")[0]
    sim.kubelets.delete(victim, grace=5)
    advance(sim, 6)
    assert sim.world.pod(victim.uid) is None


def test_a_pending_pod_is_deleted_at_once():
    sim = simulate(make_scenario(objects=[deployment("big", 1, cpu="100")]), NoAutoscaler)
    (pod,) = pods_of(sim, "big")
    assert not pod.node_name
    sim.kubelets.delete(pod)
    assert sim.world.pod(pod.uid) is None
