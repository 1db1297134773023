"""One executor: `kubetide qos`, the simulator and `kubetide qos-agent` decide the same for the
same NodeState. The simulator builds the state (its usage profiles, one node, bare pods); the
same state then goes through `kubetide qos`'s agent call and through the node agent's sample
(its watch and usage source replaced by ones serving that state), and every decision matches."""

from __future__ import annotations

from pathlib import Path

from crane_objects import avoidance_action, node_qos, rule

from kubetide.agent.loop import NodeAgentLoop
from kubetide.agent.usage import Usage
from kubetide.cli.qos import _DryRun
from kubetide.clock import ManualClock
from kubetide.model import load_documents
from kubetide.model.quantity import CPU, MEMORY
from kubetide.qos import AgentOptions, QosAgent, QosConfig
from kubetide.qos.config import EVICT, THROTTLE_DOWN
from kubetide.sim.runtime.qos import NodeAgents
from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
from kubetide.sim.spec.scenario import parse_scenario

CRANE_OBJECTS = [
    avoidance_action("evict", eviction={"terminationGracePeriodSeconds": 0}),
    avoidance_action("throttle", throttle={"cpuThrottle": {"minCPURatio": 10, "stepCPURatio": 30}}),
    node_qos(
        "q",
        rule("evict", "evict", "cpu_total_usage", 3300),
        rule("throttle", "throttle", "cpu_total_usage", 2400),
        rule("mem", "evict", "memory_total_utilization", 40),
    ),
]
# name, priority, cpu request, cpu limit, memory request, cpu used, memory used
PODS = [
    ("batch-a", 0, "200m", None, "1Gi", "1200m", "3Gi"),
    ("batch-b", 0, "200m", "2", "1Gi", "900m", "2Gi"),
    ("web", 1000, "500m", "1", "1Gi", "700m", "1Gi"),
    ("besteffort", 0, None, None, None, "400m", "512Mi"),
    ("critical", 2_000_000_000, "100m", None, "128Mi", "300m", "256Mi"),
]


def pod_object(name, priority, cpu, limit, memory, used_cpu, used_memory):
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    resources = {"requests": requests, **({"limits": {"cpu": limit}} if limit else {})}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": name},
            # a controller: the agent evicts no bare pod without a PodQOS
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{name}-rs",
                    "uid": f"{name}-rs",
                    "controller": True,
                }
            ],
            "annotations": {"kubetide.io/usage": f'{{"cpu": "{used_cpu}", "memory": "{used_memory}"}}'},
        },
        "spec": {"priority": priority, "containers": [{"name": "c", "resources": resources}]},
    }


def simulator_state_and_decisions(monkeypatch):
    """The simulator's first sample: the NodeState it built and what its agent decided."""
    scenario = parse_scenario(
        {
            "apiVersion": "kubetide.io/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "one-executor"},
            "spec": {
                "duration": "1m",
                "seed": 1,
                "nodeGroups": [
                    {
                        "name": "n",
                        "minSize": 1,
                        "maxSize": 1,
                        "initialSize": 1,
                        "price": 0.1,
                        "template": {
                            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
                        },
                    }
                ],
                "objects": [pod_object(*p) for p in PODS],
                "qos": {"collectInterval": "10s", "objects": CRANE_OBJECTS},
            },
        },
        "one-executor.yaml",
        Path("."),
    )
    seen = []
    step = QosAgent.step

    def spy(agent, state, actuator, now=None):
        result = step(agent, state, actuator, now)
        if isinstance(actuator, NodeAgents):
            seen.append((state, result))
        return result

    monkeypatch.setattr(QosAgent, "step", spy)
    sim = Simulation(scenario, autoscaler_factory=NoAutoscaler)
    sim.setup()
    sim.engine.run_until(sim.engine.now() + 1)
    monkeypatch.undo()
    assert len(seen) == 1, "one node, one sample"
    return seen[0]


def summary(decisions):
    return [(d.kind, d.pod, d.outcome, d.quota, d.released, d.precise) for d in decisions]


class ServedState:
    """The node agent's watch and usage source, serving one NodeState."""

    node_source = "/proc"

    def __init__(self, state, crane):
        self.state, self.node_name, self.generation = state, state.name, 1
        self.objects = {"Node": [state.node], "Pod": [p.pod for p in state.pods], **crane}

    def refresh(self):
        pass

    def of(self, kind):
        return list(self.objects.get(kind, []))

    def sample(self, pods):
        by_uid = {p.pod.uid: dict(p.usage) for p in self.state.pods if p.usage is not None}
        node = {r: self.state.used(r) for r in (CPU, MEMORY)}
        return Usage(node=node, pods={p.uid: by_uid[p.uid] for p in pods if p.uid in by_uid})


class Recorder:
    def __init__(self):
        self.calls = []

    def throttle(self, pod, quota):
        self.calls.append(("throttle", pod.key, quota))

    def restore(self, pod, quota):
        self.calls.append(("restore", pod.key, quota))

    def evict(self, pod, grace):
        self.calls.append(("evict", pod.key, grace))
        return True

    def taint_node(self, node, taint):
        self.calls.append(("taint", node.name))

    def untaint_node(self, node, taint):
        self.calls.append(("untaint", node.name))


class NoThrottles:
    throttled: dict = {}

    def quota(self, uid):
        return None

    def forget_missing(self, uids):
        pass


def test_qos_the_simulator_and_the_node_agent_decide_the_same(monkeypatch):
    state, sim_result = simulator_state_and_decisions(monkeypatch)
    expected = summary(sim_result.decisions)
    # The state is one worth deciding on: evictions and throttles, precise, the critical pod spared.
    assert {d.kind for d in sim_result.decisions} == {EVICT, THROTTLE_DOWN}
    assert all(d.precise for d in sim_result.decisions)
    assert "default/critical" not in {d.pod for d in sim_result.decisions}

    manifests = load_documents(CRANE_OBJECTS, "crane.yaml")
    config = QosConfig.from_manifests(manifests)

    # `kubetide qos`: one sample of the agent through its dry-run actuator.
    cli_agent = QosAgent(config, AgentOptions(execute_excess_percent=10, one_sample=True))
    assert summary(cli_agent.step(state, _DryRun([]), now=0.0).decisions) == expected

    # `kubetide qos-agent`: a sample of the node agent's loop, acting through its port.
    served = ServedState(state, {k: list(v) for k, v in manifests.other.items()})
    recorder = Recorder()
    loop = NodeAgentLoop(served, served, NoThrottles(), recorder, None, ManualClock(100.0))
    assert "analyze only" in loop.sample().skipped and recorder.calls == []  # the first after start
    sample = loop.sample()
    assert sample.result is not None
    assert summary(sample.result.decisions) == expected
    verbs = {EVICT: "evict", THROTTLE_DOWN: "throttle"}
    assert [(c[0], c[1]) for c in recorder.calls] == [(verbs[d.kind], d.pod) for d in sim_result.decisions]
