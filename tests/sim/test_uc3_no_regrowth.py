"""UC3 over repeated batches (issue 42 item 3): a group whose new node registered and never turned
Ready is grown once, and not again while that node is there, also after the backoff of its
timed-out scale-up has ended; every later batch goes at once to the group that works.

Independent of examples/unready/: its own groups and batches. The broken group ("cheap") is the
price expander's first choice, so only the UC3 rule keeps later batches off it; its never-Ready
node stays (scale-down-unready-time is longer than the run), so the rule holds all along. Before
the fix a batch arriving after the backoff grew cheap again and waited for its node to register
and run out its startup time (and the timeout after that) before going to stable.
"""

from __future__ import annotations

import math

import yaml
from sim_events import increases
from sim_helpers import deployment, group, make_scenario

from kubetide.autoscaler.status import status_yaml
from kubetide.sim import Simulation

CPU_PER_POD = 1
NODE_CPU = 4
# Seconds into the run: the first batch grows cheap; the others come after its backoff has ended.
BATCHES = (180, 1500, 2400, 3120)
BATCH = 8  # pods per batch: two whole nodes, so no batch leaves room for the next
FLAGS = {
    "expander": "price",
    "max-node-provision-time": "10m",
    "max-node-startup-time": "8m",
    "scale-down-unready-time": "3h",  # the never-Ready node stays for the whole run
    "scale-down-unneeded-time": "10m",
}


def job(name):
    pod = {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "resources": {"requests": {"cpu": str(CPU_PER_POD), "memory": "1Gi"}}}],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "annotations": {"kubetide.io/run-duration": "3h"}},
        "spec": {"parallelism": BATCH, "completions": BATCH, "template": {"spec": pod}},
    }


def scenario():
    def priced(name, size, price):
        return group(name, size=size, cpu=str(NODE_CPU), memory="32Gi", price=price)

    return make_scenario(
        groups=[priced("cheap", 1, 0.10), priced("stable", 2, 0.19)],
        # Fills every existing node: each batch needs new nodes.
        objects=[deployment("base", 3 * NODE_CPU // CPU_PER_POD, cpu=str(CPU_PER_POD), memory="1Gi")],
        events=[
            {"at": "1m", "fault": {"type": "nodeNeverReady", "nodeGroup": "cheap"}},
            *({"at": f"{at}s", "apply": [job(f"batch-{i}")]} for i, at in enumerate(BATCHES)),
        ],
        autoscaler=FLAGS,
        duration="65m",
        seed=7,
    )


def test_a_group_with_a_never_ready_node_grows_once_and_later_batches_go_elsewhere_at_once():
    built = scenario()
    options = built.options
    cheap = next(g for g in built.groups if g.name == "cheap")
    stable = next(g for g in built.groups if g.name == "stable")
    per_batch = math.ceil(BATCH * CPU_PER_POD / NODE_CPU)
    sim = Simulation(built)
    sim.setup()
    starts = BATCHES  # event times are seconds into the run
    # The status while a later batch waits for nothing but stable: cheap says why it is left alone.
    sim.engine.run_until(sim.engine.start + starts[1] + options.scan_interval)
    cheap_status = sim.world.autoscaler_status.node_group("cheap")
    never_ready = [n.name for n in sim.world.snapshot.nodes() if n.name.startswith("cheap-") and not n.ready]
    assert len(never_ready) == per_batch
    assert cheap_status.scale_up.never_ready is not None
    assert all(name in cheap_status.scale_up.never_ready for name in never_ready)
    assert cheap_status.scale_up.status != "Backoff"  # the backoff is over; UC3 holds it
    written = yaml.safe_load(status_yaml(sim.world.autoscaler_status))
    (doc,) = [g for g in written["nodeGroups"] if g["name"] == "cheap"]
    assert "neverReady" in doc["scaleUp"]
    result = sim.run()

    # cheap grown once, for the first batch; never again.
    (cheap_up,) = increases(result, "cheap")
    assert cheap_up[1] == per_batch and starts[0] <= cheap_up[0] <= starts[0] + 2 * options.scan_interval
    # stable: the first batch after cheap's request timed out, every later one in its first loops.
    stable_ups = increases(result, "stable")
    assert [delta for _, delta in stable_ups] == [per_batch] * len(BATCHES)
    (timed_out,) = [e for e in result.events if e["reason"] == "ScaleUpTimedOut"]
    assert stable_ups[0][0] == timed_out["time"]
    for start, (at, _) in zip(starts[1:], stable_ups[1:], strict=True):
        assert start <= at <= start + 2 * options.scan_interval
    # The later batches wait about a node's provisioning and readiness each, no more.
    fast = stable.provisioning_delay.max + stable.ready_delay.max + 3 * options.scan_interval
    first_wait = timed_out["time"] - starts[0] + fast
    pods = result.summary["pods"]
    assert pods["pending_pod_seconds"] <= BATCH * (first_wait + (len(BATCHES) - 1) * fast)
    # One regrowth of cheap would have kept a batch waiting at least for its node to register and
    # run out max-node-startup-time: more than every later batch waited together.
    regrow = cheap.provisioning_delay.min + options.max_node_startup_time
    assert BATCH * regrow > BATCH * (len(BATCHES) - 1) * fast
    assert pods["pending_at_end"] == 0
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}
