"""UC3 in the simulator with a batch small enough to keep the broken group healthy (issue 28 item 1).

The bundled examples/unready/uc3-never-ready.yaml with its batch cut to 12 pods: cheap's one new
node registers and never turns Ready. Its 1 unready node never makes cheap unhealthy (not above
ok-total-unready-count), so only the scale-up timeout can stop cheap being grown again: before
the fix, cheap was grown 4 times, one node every provisioningDelay + max-node-startup-time, and
stable was used only at minute 41. Expectations come from the scenario's own numbers.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import yaml

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


def increases(result, name) -> list[tuple[float, int]]:
    found = []
    for e in result.events:
        if e["reason"] == "IncreaseSize" and e["object"] == f"NodeGroup/{name}":
            before, after = map(int, re.search(r"(\d+) -> (\d+)", e["message"]).groups())
            found.append((e["time"], after - before))
    return found


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
