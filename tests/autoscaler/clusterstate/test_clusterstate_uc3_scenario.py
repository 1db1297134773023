"""UC3 in the simulator with a batch small enough to keep the broken group healthy (issue 28 item 1).

The bundled examples/unready/uc3-never-ready.yaml with its batch cut to 12 pods: cheap's one new
node registers and never turns Ready. Its 1 unready node never makes cheap unhealthy (not above
ok-total-unready-count), so only the scale-up timeout can stop cheap being grown again: before
the fix, cheap was grown 4 times, one node every provisioningDelay + max-node-startup-time, and
stable was used only at minute 41. Expectations come from the scenario's own numbers.

With the same batch again after cheap's backoff has ended (issue 42 item 3), cheap, healthy and
out of backoff, still holds its never-Ready node, so it is not grown again: the second batch goes
to stable in its first loops. Before that fix cheap was grown a second time and the batch waited
for its node to register and run out max-node-startup-time.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from sim_events import increases

from kubetide.sim import Simulation, load_scenario

UC3 = Path(__file__).resolve().parents[3] / "examples" / "unready" / "uc3-never-ready.yaml"
BATCH = 12


@pytest.fixture(scope="module")
def small_batch(tmp_path_factory):
    doc = yaml.safe_load(UC3.read_text())
    (job,) = [o for e in doc["spec"]["events"] for o in e.get("apply", ()) if o["kind"] == "Job"]
    job["spec"]["parallelism"] = job["spec"]["completions"] = BATCH
    path = tmp_path_factory.mktemp("uc3") / "uc3-small-batch.yaml"
    path.write_text(yaml.safe_dump(doc))
    scenario = load_scenario(path)
    return scenario, Simulation(scenario).run()


def group(scenario, name):
    return next(g for g in scenario.groups if g.name == name)


def test_the_broken_group_is_timed_out_backed_off_and_the_working_group_takes_the_pods(small_batch):
    scenario, result = small_batch
    options = scenario.options
    cheap, stable = group(scenario, "cheap"), group(scenario, "stable")
    (batch_at,) = [e.at for e in scenario.events if e.kind == "apply"]
    (never_ready_at,) = [e.at for e in scenario.events if e.kind == "fault"]
    web = next(w for w in scenario.objects.workloads if w.name == "web")
    cpu_per_pod = web.template.prototype.requests["cpu"]
    per_node = cheap.template.allocatable["cpu"] // cpu_per_pod
    assert stable.initial_size * per_node == web.replicas  # web fills stable
    left = BATCH - cheap.initial_size * per_node  # pods no existing node holds
    needed = math.ceil(left / per_node)
    assert left > 0 and never_ready_at < batch_at

    # cheap (the price expander's choice) is grown once, and never again.
    (cheap_up,) = increases(result, "cheap")
    assert cheap_up[1] == needed and batch_at <= cheap_up[0] <= batch_at + 2 * options.scan_interval

    # Its request times out at the first loop after max-node-provision-time, once.
    (timed_out,) = [e for e in result.events if e["reason"] == "ScaleUpTimedOut"]
    assert "cheap" in timed_out["message"]
    deadline = cheap_up[0] + options.max_node_provision_time
    assert deadline < timed_out["time"] <= deadline + options.scan_interval

    # The group is backed off for initial-node-group-backoff-duration, and nothing else fails.
    groups = result.summary["node_groups"]
    assert groups["cheap"]["backoff_seconds"] == options.initial_node_group_backoff_duration
    assert groups["stable"]["backoff_seconds"] == 0.0

    # stable takes the pods in the same loop, and they all run.
    (stable_up,) = increases(result, "stable")
    assert stable_up == (timed_out["time"], needed)
    pods = result.summary["pods"]
    assert pods["max_pending"] == left and pods["pending_at_end"] == 0
    up = result.summary["scale_up"]
    assert (up["nodes_requested"], up["nodes_added"], up["nodes_failed"]) == (2 * needed, needed, needed)

    # Pending pod-seconds: the `left` pods wait from the batch until stable's node is Ready
    # (its provisioning and readiness delays after the timeout), plus a scheduler retry.
    waited = timed_out["time"] - batch_at + stable.provisioning_delay.max + stable.ready_delay.max
    assert pods["pending_pod_seconds"] <= left * (waited + 2 * options.scan_interval)
    # Growing cheap even once more would have kept them waiting for its node to register and
    # run out its startup time: the figure is below that.
    regrow = cheap.provisioning_delay.min + options.max_node_startup_time
    assert pods["pending_pod_seconds"] < left * (timed_out["time"] - batch_at + regrow)
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


# -- a second batch after cheap's backoff (issue 42 item 3) ---------------------------------------

SECOND_BATCH_AT = 25 * 60  # after cheap's request timed out and its backoff ended


@pytest.fixture(scope="module")
def second_batch(tmp_path_factory):
    """The small-batch run with the same Job again once cheap's backoff is over: cheap still holds
    its never-Ready node, so it is not grown again (the registry design's UC3)."""
    doc = yaml.safe_load(UC3.read_text())
    (event,) = [e for e in doc["spec"]["events"] if "apply" in e]
    (job,) = event["apply"]
    job["spec"]["parallelism"] = job["spec"]["completions"] = BATCH
    again = yaml.safe_load(yaml.safe_dump(event))
    again["at"] = f"{SECOND_BATCH_AT}s"
    again["apply"][0]["metadata"]["name"] = "batch-again"
    doc["spec"]["events"].append(again)
    path = tmp_path_factory.mktemp("uc3") / "uc3-second-batch.yaml"
    path.write_text(yaml.safe_dump(doc))
    scenario = load_scenario(path)
    return scenario, Simulation(scenario).run()


def test_a_batch_after_the_backoff_goes_to_the_working_group_while_the_node_never_turned_ready(second_batch):
    scenario, result = second_batch
    options = scenario.options
    cheap, stable = group(scenario, "cheap"), group(scenario, "stable")
    first_at = min(e.at for e in scenario.events if e.kind == "apply")
    web = next(w for w in scenario.objects.workloads if w.name == "web")
    per_node = cheap.template.allocatable["cpu"] // web.template.prototype.requests["cpu"]
    left = BATCH - cheap.initial_size * per_node  # of the first batch, after cheap's empty nodes
    (timed_out,) = [e for e in result.events if e["reason"] == "ScaleUpTimedOut"]
    assert timed_out["time"] + options.initial_node_group_backoff_duration < SECOND_BATCH_AT
    # The never-Ready node is still there when the second batch comes.
    removed = [e["time"] for e in result.events if e["reason"] == "DeleteNodes" and "cheap" in e["object"]]
    assert all(t > SECOND_BATCH_AT + options.scan_interval for t in removed)

    (cheap_up,) = increases(result, "cheap")  # once, for the first batch, never again
    assert cheap_up[1] == math.ceil(left / per_node)
    first, second = increases(result, "stable")
    assert first == (timed_out["time"], cheap_up[1])
    # The whole second batch needs new nodes (the first filled cheap's and stable's), at once.
    assert second[1] == math.ceil(BATCH / per_node)
    assert SECOND_BATCH_AT <= second[0] <= SECOND_BATCH_AT + 2 * options.scan_interval
    # No second request for cheap: one timeout, one backoff.
    assert (
        result.summary["node_groups"]["cheap"]["backoff_seconds"]
        == options.initial_node_group_backoff_duration
    )
    pods = result.summary["pods"]
    assert pods["pending_at_end"] == 0
    # The first batch's leftover waited for the timeout and stable's node; the second batch for
    # stable's node only (its provisioning and readiness, and a few loops).
    fast = stable.provisioning_delay.max + stable.ready_delay.max + 3 * options.scan_interval
    assert pods["pending_pod_seconds"] <= left * (timed_out["time"] - first_at + fast) + BATCH * fast
