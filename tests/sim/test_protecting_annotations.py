"""Issue 37 item 4 in the simulator: annotations that protect running work.

- `karpenter.sh/do-not-disrupt: "30m"` holds a node until 30 simulated minutes after its pod
  started, then the node is an ordinary candidate (and "true" holds it for good);
- a drain that meets a pod annotated safe-to-evict "on-completion" never evicts it: it waits for
  the Job to finish and the node goes then; a Job that outlives the drain's deadline fails the
  drain, and the node goes once the Job is done.
"""

from __future__ import annotations

import pytest
from sim_helpers import deployment, group, make_scenario, workload

from kubetide.sim.runtime.simulation import Simulation

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
ON_COMPLETION = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "on-completion"}
UNNEEDED = 60.0
SCAN = 10.0


def two_nodes(annotations=None, events=(), duration="45m", **autoscaler):
    """Two nodes, a replica of `batch` on each (the scheduler spreads them): either node's pod
    fits beside the other, so one node can go once its pod may be disrupted."""
    return make_scenario(
        groups=[group(size=2, min_size=0)],
        objects=[deployment("batch", 2, cpu="1", annotations=annotations)],
        events=list(events),
        duration=duration,
        autoscaler={"scale-down-unneeded-time": "1m", "scan-interval": "10s", **autoscaler},
    )


def marked(sim):
    return [
        (e["time"], e["object"].split("/", 1)[1])
        for e in sim.log.entries
        if e["reason"] == "ScaleDown" and "marked" in e["message"]
    ]


def evicted(sim):
    return [
        e["object"].split("/")[-1]
        for e in sim.log.entries
        if e["reason"] == "ScaleDown" and "deleting pod" in e["message"]
    ]


@pytest.mark.parametrize(
    ("value", "first_mark"),
    [
        (None, UNNEEDED),  # unprotected: unneeded for a minute, then drained
        ("30m", 30 * 60 + UNNEEDED),  # protected for 30 min from the start, then a minute unneeded
        ("1h30m", None),  # still protected when the 45 min run ends
        ("true", None),
        ("30 minutes", UNNEEDED),  # invalid: read as no annotation, as Karpenter reads it
    ],
)
def test_a_do_not_disrupt_duration_holds_the_node_until_the_pods_start_plus_the_duration(value, first_mark):
    annotations = {DO_NOT_DISRUPT: value} if value is not None else None
    sim = Simulation(two_nodes(annotations))
    result = sim.run()
    marks = marked(sim)
    if first_mark is None:
        assert marks == [] and result.summary["nodes"]["final"] == 2
        return
    # The pods started at 0 (the nodes were ready): the node is unneeded from start + duration on.
    assert first_mark <= marks[0][0] < first_mark + SCAN
    assert result.summary["nodes"]["final"] == 1


def on_completion_job(node_name, run_for):
    """A Job pod annotated on-completion that lands on `node_name` while it is being drained (it
    tolerates every taint, the ToBeDeleted one included)."""
    return workload(
        "Job",
        "finish",
        None,
        cpu="100m",
        annotations={**ON_COMPLETION, "kubetide.io/run-duration": run_for},
        pod_extra={
            "nodeSelector": {"kubernetes.io/hostname": node_name},
            "tolerations": [{"operator": "Exists"}],
            "restartPolicy": "Never",
        },
    )


def drain_meeting_a_job(run_for):
    """Where and when the unprotected run starts its drain, then the same run with the Job
    landing on that node 5 s into the drain's 30 s taint delay."""
    flags = {"node-delete-delay-after-taint": "30s"}
    control = Simulation(two_nodes(duration="20m", **flags))
    control.run()
    ((at, name),) = marked(control)
    event = {"at": f"{int(at) + 5}s", "apply": [on_completion_job(name, run_for)]}
    sim = Simulation(two_nodes(events=[event], duration="20m", **flags))
    result = sim.run()
    return sim, result, at, name


def removed(sim, name):
    return [
        e["time"]
        for e in sim.log.entries
        if e["reason"] == "ScaleDown"
        and e["message"].startswith("nodes removed")
        and e["object"] == f"Node/{name}"
    ]


def test_a_drain_that_meets_an_on_completion_job_waits_for_it_and_the_node_goes_when_it_is_done():
    sim, result, at, name = drain_meeting_a_job("60s")
    (gone,) = removed(sim, name)
    # The Job started 5 s after the taint and ran 60 s; the drain's deadline was taint delay (30 s)
    # + max-pod-eviction-time (120 s) after the taint.
    assert at + 5 + 60 <= gone < at + 30 + 120
    assert not any(pod.startswith("finish") for pod in evicted(sim))
    assert result.summary["pods"]["jobs_completed"] == 1
    assert not [e for e in sim.log.entries if e["reason"] == "ScaleDownFailed"]


def test_a_job_outliving_the_drains_deadline_fails_the_drain_and_the_node_goes_once_it_is_done():
    sim, _, at, name = drain_meeting_a_job("10m")
    failed = [e for e in sim.log.entries if e["reason"] == "ScaleDownFailed"]
    assert [e["time"] for e in failed] == [at + 30 + 120]
    assert "default/finish-" in failed[0]["message"] and "on-completion" in failed[0]["message"]
    assert not any(pod.startswith("finish") for pod in evicted(sim))
    (gone,) = removed(sim, name)
    assert gone >= at + 5 + 600  # held (BlockedByOnCompletionPod) until the Job was done
