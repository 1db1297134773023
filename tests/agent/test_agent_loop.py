"""The node agent's sample without an API server: what it does without a cpu rate, on its first
sample, in a dry run, when a crane object is broken, and when the NodeQOS goes away while pods
are throttled."""

from __future__ import annotations

import pytest
from crane_objects import avoidance_action, node_qos, rule
from test_agent_usage import UID, FakeNode, make_pod

from kubetide.agent.cgroups import detect_layout
from kubetide.agent.loop import NodeAgentLoop
from kubetide.agent.throttle import CgroupThrottler
from kubetide.agent.usage import Usage
from kubetide.clock import ManualClock
from kubetide.model import load_documents
from kubetide.qos.config import THROTTLE_DOWN
from kubetide.qos.executor import DONE, PREVIEW

THROTTLE = [
    avoidance_action("throttle", throttle={"cpuThrottle": {"stepCPURatio": 50}}),
    node_qos("q", rule("cpu", "throttle", "cpu_total_usage", 1000)),
]


def node():
    doc = {
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi"}, "allocatable": {"cpu": "2", "memory": "8Gi"}},
    }
    return load_documents([doc], "node.yaml").nodes[0]


def crane(objects):
    return {kind: list(items) for kind, items in load_documents(objects, "crane.yaml").other.items()}


class Served:
    """The loop's watch and usage source: fixed objects, usage set by the test."""

    node_source = "/proc"

    def __init__(self, pods, objects):
        self.node_name, self.generation = "n1", 1
        self.objects = {"Node": [node()], "Pod": list(pods), **objects}
        self.usage = Usage()

    def refresh(self):
        pass

    def of(self, kind):
        return list(self.objects.get(kind, []))

    def replace_crane(self, objects):
        self.objects = {k: v for k, v in self.objects.items() if k in ("Node", "Pod")} | objects
        self.generation += 1

    def sample(self, pods):
        return self.usage


class Recorder:
    def __init__(self, throttler):
        self.throttler, self.calls = throttler, []

    def throttle(self, pod, quota):
        self.calls.append(("throttle", quota))
        self.throttler.throttle(pod, quota)

    def restore(self, pod, quota):
        self.calls.append(("restore", quota))
        self.throttler.restore(pod, quota)

    def evict(self, pod, grace):
        self.calls.append(("evict", pod.key))
        return True

    def taint_node(self, node, taint):
        self.calls.append(("taint", node.name))

    def untaint_node(self, node, taint):
        self.calls.append(("untaint", node.name))


def make_loop(tmp_path, *, dry_run=False):
    host = FakeNode(tmp_path, 2, "systemd", "Burstable")
    quota_file = host.cpu / "cpu.max"
    layout = detect_layout(host.cgroup)
    throttler = CgroupThrottler(lambda p: layout.pod(p.uid, p.qos_class), tmp_path / "state.json")
    pod = make_pod("Burstable")
    served = Served([pod], crane(THROTTLE))
    recorder = Recorder(throttler)
    loop = NodeAgentLoop(served, served, throttler, None if dry_run else recorder, None, ManualClock(10.0))
    return loop, served, recorder, quota_file


def test_without_a_node_cpu_rate_nothing_is_analyzed_or_done(tmp_path):
    loop, served, recorder, _quota_file = make_loop(tmp_path)
    served.usage = Usage(node={"memory": 1}, pods={UID: {"memory": 1}})  # the first sample
    sample = loop.sample()
    assert sample.result is None and "no cpu rate" in sample.skipped
    assert loop.agent.analyzer.rules == {} and recorder.calls == []
    assert "kubetide_qos_agent_samples_without_rate_total 1.0" in loop.metrics.exposition()[0].decode()


def started(tmp_path, *, dry_run=False):
    """A loop over the watermark whose first (analyze-only) sample is behind it."""
    loop, served, recorder, quota_file = make_loop(tmp_path, dry_run=dry_run)
    served.usage = Usage(node={"cpu": 1700, "memory": 1}, pods={UID: {"cpu": 1600, "memory": 1}})
    first = loop.sample()
    assert first.skipped == "first sample after start: analyze only"
    return loop, served, recorder, quota_file


@pytest.mark.parametrize("dry_run", [False, True], ids=["acting", "dry-run"])
def test_the_first_sample_after_start_is_analyze_only(tmp_path, dry_run):
    loop, served, recorder, quota_file = make_loop(tmp_path, dry_run=dry_run)
    served.usage = Usage(node={"cpu": 1700, "memory": 1}, pods={UID: {"cpu": 1600, "memory": 1}})
    first = loop.sample()
    assert first.result is not None and "analyze only" in first.skipped
    assert [(d.kind, d.quota, d.outcome) for d in first.result.decisions] == [(THROTTLE_DOWN, 800, PREVIEW)]
    assert recorder.calls == [] and quota_file.read_text().strip() == "max 100000"
    assert 'kubetide_qos_agent_actions_total{action="throttle"} 0.0' in loop.metrics.exposition()[0].decode()
    assert loop.agent.analyzer.last_acted == {}  # no cooldown started by what was not done
    second = loop.sample()
    assert second.skipped == "" and second.result is not None
    assert [d.outcome for d in second.result.decisions] == [DONE]
    assert quota_file.read_text().strip() == ("max 100000" if dry_run else "80000 100000")


def test_a_sample_without_a_rate_does_not_use_up_the_analyze_only_one(tmp_path):
    loop, served, recorder, _quota_file = make_loop(tmp_path)
    served.usage = Usage(node={"memory": 1}, pods={UID: {"memory": 1}})
    assert loop.sample().result is None
    served.usage = Usage(node={"cpu": 1700, "memory": 1}, pods={UID: {"cpu": 1600, "memory": 1}})
    assert "analyze only" in loop.sample().skipped and recorder.calls == []
    loop.sample()
    assert recorder.calls == [("throttle", 800)]


def test_a_dry_run_decides_and_changes_nothing(tmp_path):
    loop, _served, recorder, quota_file = started(tmp_path, dry_run=True)
    sample = loop.sample()
    assert sample.result is not None
    assert [(d.kind, d.quota, d.outcome) for d in sample.result.decisions] == [(THROTTLE_DOWN, 800, DONE)]
    assert quota_file.read_text().strip() == "max 100000" and recorder.calls == []
    # Counted as what a dry run decided, never as carried out.
    metrics = loop.metrics.exposition()[0].decode()
    assert 'kubetide_qos_agent_dry_run_actions_total{action="throttle"} 1.0' in metrics
    assert 'kubetide_qos_agent_actions_total{action="throttle"} 0.0' in metrics


def test_a_broken_crane_object_keeps_the_previous_configuration(tmp_path):
    loop, served, _recorder, _quota_file = started(tmp_path)
    loop.sample()
    broken = [THROTTLE[1]]  # the NodeQOS without its AvoidanceAction: an unknown actionName
    served.replace_crane(crane(broken))
    loop.sample()
    assert [q.name for q in loop.agent.config.nodeqos] == ["q"]
    assert "throttle" in loop.agent.config.actions


def test_throttled_pods_are_restored_when_no_nodeqos_selects_the_node(tmp_path):
    loop, served, _recorder, quota_file = started(tmp_path)
    loop.sample()
    assert quota_file.read_text().strip() == "80000 100000"
    served.replace_crane(crane([THROTTLE[0]]))  # the NodeQOS is deleted
    loop.sample()
    assert quota_file.read_text().strip() == "max 100000"
    assert loop.throttler.throttled == {}


class Events:
    def __init__(self):
        self.recorded = []

    def record(self, event):
        self.recorded.append(event)


def test_a_rule_on_an_unknown_metric_is_skipped_with_an_event_and_the_others_apply(tmp_path):
    """One mistyped metric used to reject the whole set: after a fresh start nothing was enforced."""
    loop, served, recorder, quota_file = make_loop(tmp_path)
    events = loop.events = Events()
    typo = rule("typo", "throttle", "cpu_total_utilisation", 50)
    nodeqos = node_qos("q", typo, *THROTTLE[1]["spec"]["rules"])
    served.replace_crane(crane([THROTTLE[0], nodeqos]))
    served.usage = Usage(node={"cpu": 1700, "memory": 1}, pods={UID: {"cpu": 1600, "memory": 1}})
    loop.sample()  # analyze only
    assert [r.name for r in loop.agent.config.nodeqos[0].rules] == ["cpu"]
    (event,) = [e for e in events.recorded if e.kind == "NodeQOS"]
    assert (event.key, event.type.value, event.reason) == ("q", "Warning", "UnknownMetric")
    assert (
        'unknown metric "cpu_total_utilisation"' in event.message and 'rule "typo" skipped' in event.message
    )
    loop.sample()
    assert recorder.calls == [("throttle", 800)] and quota_file.read_text().strip() == "80000 100000"


def test_the_agent_says_once_when_the_node_usage_falls_back_to_its_pods(tmp_path, caplog):
    loop, served, _recorder, _quota_file = make_loop(tmp_path)
    measured = Usage(node={"cpu": 900, "memory": 2**30}, pods={UID: {"cpu": 100, "memory": 1}})
    no_memory = Usage(node={"cpu": 900}, pods={UID: {"cpu": 100, "memory": 1}})  # /proc/meminfo failed
    caplog.set_level("INFO", logger="kubetide.agent")
    for usage in (measured, no_memory, no_memory, measured):
        served.usage = usage
        loop.sample()
    said = [r.getMessage() for r in caplog.records if "node " in r.getMessage() and "usage" in r.getMessage()]
    assert said == [
        "node memory usage not measured by /proc: using the sum of its pods' usage (misses what runs outside pods)",
        "node usage measured by /proc again",
    ]
