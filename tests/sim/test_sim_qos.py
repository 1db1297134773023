"""The node QoS agent in the simulator: usage profiles, spec.qos, the actuator (quotas, evictions
through the Eviction API), reports, the watermark example (precise vs crane's old mode), and that a
scenario without spec.qos pays nothing for it."""

import dataclasses
import json
import math
from pathlib import Path

import pytest
from sim_doubles import ScaleUpDouble
from sim_helpers import advance, group, make_scenario, pdb, pods_of, simulate

from kubetide.cli import main as cli_main
from kubetide.errors import UserError
from kubetide.sim import NoAutoscaler, Simulation, load_scenario
from kubetide.sim.report.html import render, render_comparison
from kubetide.sim.report.qos import COUNT_KEYS
from kubetide.sim.runtime.qos import NodeAgents
from kubetide.sim.spec import ScenarioError
from kubetide.sim.spec.profiles import USAGE_ANNOTATION, Constant, Generator, Trace, unit_draw
from kubetide.sweep.compare import comparison, run_variants, scenario_variants
from kubetide.sweep.engines import LocalEngine

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "qos-watermark.yaml"
QOS_API = "ensurance.crane.io/v1alpha1"


# -- builders ---------------------------------------------------------------------------------


def deploy(
    name, replicas, cpu="500m", limit=None, memory="256Mi", priority=None, annotations=None, grace=None
):
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    if limit is not None:
        resources["limits"] = {"cpu": limit}
    spec = {"containers": [{"name": "c", "resources": resources}]}
    if priority is not None:
        spec["priority"] = priority
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    metadata = {"labels": {"app": name, "tier": "batch" if priority is None else "online"}}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": metadata, "spec": spec},
        },
    }


def nodeqos(
    metric="cpu_total_utilization",
    value=80,
    action="act",
    threshold=1,
    restore=1,
    selector=None,
    strategy=None,
):
    rule = {
        "name": "r",
        "actionName": action,
        "avoidanceThreshold": threshold,
        "restoreThreshold": restore,
        "metricRule": {"name": metric, "value": value},
    }
    if strategy:
        rule["strategy"] = strategy
    spec = {"rules": [rule]}
    if selector is not None:
        spec["selector"] = {"matchLabels": selector}
    return {"apiVersion": QOS_API, "kind": "NodeQOS", "metadata": {"name": "q"}, "spec": spec}


def evict_action(grace=0, cool_down=300, name="act"):
    return {
        "apiVersion": QOS_API,
        "kind": "AvoidanceAction",
        "metadata": {"name": name},
        "spec": {"coolDownSeconds": cool_down, "eviction": {"terminationGracePeriodSeconds": grace}},
    }


def throttle_action(step=20, min_ratio=0, cool_down=0, name="act"):
    return {
        "apiVersion": QOS_API,
        "kind": "AvoidanceAction",
        "metadata": {"name": name},
        "spec": {
            "coolDownSeconds": cool_down,
            "throttle": {"cpuThrottle": {"minCPURatio": min_ratio, "stepCPURatio": step}},
        },
    }


def podqos(allowed=("act",), **selectors):
    return {
        "apiVersion": QOS_API,
        "kind": "PodQOS",
        "metadata": {"name": "pq"},
        "spec": {"allowedActions": list(allowed), **selectors},
    }


def qos(*objects, **options):
    return {"collectInterval": "10s", "objects": list(objects), **options}


def hot_scenario(objects, usage, qos_objects, duration="10m", size=1, cpu="4", **spec):
    """One or more 4-cpu nodes with the agent on."""
    return make_scenario(
        groups=[group(size=size, cpu=cpu, max_size=size + 2)],
        objects=objects,
        duration=duration,
        usage=usage,
        qos=qos(*qos_objects),
        **spec,
    )


def running(sim, app):
    return [p for p in pods_of(sim, app) if p.phase == "Running" and not p.is_terminating]


def qos_events(result_or_sim, reason=None):
    entries = result_or_sim.events if hasattr(result_or_sim, "events") else result_or_sim.log.entries
    return [e for e in entries if e["source"] == "qos-agent" and (reason is None or e["reason"] == reason)]


# -- usage profiles ----------------------------------------------------------------------------


def test_constant_profiles_requests_fallback_and_limits():
    scenario = hot_scenario(
        [
            deploy("web", 1, cpu="500m"),
            deploy("capped", 1, cpu="200m", limit="1"),
            deploy("plain", 1, cpu="700m"),
        ],
        [
            {"match": {"kind": "Deployment", "name": "web"}, "cpu": "300m", "memory": "200Mi"},
            {"match": {"kind": "Deployment", "name": "capped"}, "cpu": "3"},
        ],
        [nodeqos(value=99), evict_action()],
    )
    sim = simulate(scenario)
    usage = sim.qos.usage
    (web,) = running(sim, "web")
    (capped,) = running(sim, "capped")
    (plain,) = running(sim, "plain")
    assert usage.usage(web, 0) == {"cpu": 300, "memory": 200 * 2**20}
    assert usage.usage(capped, 0)["cpu"] == 1000  # 3 cores wanted, the limit is 1
    assert usage.usage(capped, 0)["memory"] == 256 * 2**20  # no memory profile: the request
    assert usage.usage(plain, 0) == {"cpu": 700, "memory": 256 * 2**20}
    assert usage.usage(web, 0, quota=120)["cpu"] == 120  # a throttled pod uses at most its quota
    starting = dataclasses.replace(web, phase="Pending")
    assert usage.usage(starting, 0) == {"cpu": 0, "memory": 0}


def test_annotation_wins_per_resource_then_rules_in_order_and_selectors():
    annotated = deploy("api", 1, annotations={USAGE_ANNOTATION: '{"cpu": "150m"}'})
    scenario = hot_scenario(
        [annotated, deploy("batch", 1, priority=None), deploy("other", 1)],
        [
            {"match": {"kind": "Deployment", "name": "api"}, "cpu": "900m", "memory": "100Mi"},
            {"match": {"selector": {"matchLabels": {"app": "batch"}}}, "cpu": "400m"},
            {"match": {"namespace": "default"}, "cpu": "50m", "memory": "10Mi"},
        ],
        [nodeqos(value=99), evict_action()],
    )
    sim = simulate(scenario)
    usage = sim.qos.usage
    (api,) = running(sim, "api")
    (batch,) = running(sim, "batch")
    (other,) = running(sim, "other")
    assert usage.usage(api, 0) == {"cpu": 150, "memory": 100 * 2**20}  # cpu: annotation; memory: first rule
    assert usage.usage(batch, 0) == {"cpu": 400, "memory": 10 * 2**20}  # selector rule, then the catch-all
    assert usage.usage(other, 0) == {"cpu": 50, "memory": 10 * 2**20}


def test_trace_profiles_hold_each_value_until_the_next_row(tmp_scenario):
    trace_dir = tmp_scenario("", "unused.yaml").parent
    (trace_dir / "load.csv").write_text(
        "# batch load\ntime,cpu,memory\n60,100m,100Mi\n5m,900m,200Mi\n600,400m,150Mi\n"
    )
    (trace_dir / "cpu-only.csv").write_text("time,cpu\n0,1\n2m,250m\n")
    text = json.dumps(
        {
            "apiVersion": "kubetide.io/v1alpha1",
            "kind": "Scenario",
            "metadata": {"name": "trace"},
            "spec": {
                "duration": "20m",
                "nodeGroups": [group(size=1)],
                "objects": [deploy("a", 1), deploy("b", 1)],
                "usage": [
                    {"match": {"kind": "Deployment", "name": "a"}, "trace": "load.csv"},
                    {
                        "match": {"kind": "Deployment", "name": "b"},
                        "cpu": {"trace": "cpu-only.csv"},
                        "memory": "1Gi",
                    },
                ],
                "qos": qos(nodeqos(value=99), evict_action()),
            },
        }
    )
    sim = simulate(load_scenario(tmp_scenario(text)))
    (a,) = running(sim, "a")
    (b,) = running(sim, "b")
    usage = sim.qos.usage
    cpu = {t: usage.usage(a, t)["cpu"] for t in (0, 60, 299, 300, 599, 600, 5000)}
    assert cpu == {
        0: 100,
        60: 100,
        299: 100,
        300: 900,
        599: 900,
        600: 400,
        5000: 400,
    }  # before the first row: its value
    assert usage.usage(a, 300)["memory"] == 200 * 2**20
    assert [usage.usage(b, t)["cpu"] for t in (0, 119, 120)] == [1000, 1000, 250]
    assert usage.usage(b, 0)["memory"] == 2**30


def test_generator_spikes_on_time():
    spikes = Generator(base=200, spike_to=1500, every=600, duration=120, start=600)
    timeline = {t: spikes.at(t, 0) for t in (0, 599, 600, 719, 720, 1199, 1200, 1319, 1320)}
    assert timeline == {
        0: 200,
        599: 200,
        600: 1500,
        719: 1500,
        720: 200,
        1199: 200,
        1200: 1500,
        1319: 1500,
        1320: 200,
    }
    scenario = hot_scenario(
        [deploy("a", 1), deploy("b", 1)],
        [
            {
                "match": {"kind": "Deployment", "name": "a"},
                "cpu": {"base": "200m", "spikes": {"every": "10m", "to": "1500m", "for": "2m"}},
            },
            {
                "match": {"kind": "Deployment", "name": "b"},
                "cpu": {"base": "200m", "spikes": {"every": "10m", "to": "1", "for": "1m", "start": "90s"}},
            },
        ],
        [nodeqos(value=99), evict_action()],
    )
    rules = scenario.qos.usage.rules
    assert rules[0].profile.series["cpu"] == Generator(200, 1500, 600.0, 120.0, 600.0)  # start: one period in
    b = rules[1].profile.series["cpu"]
    assert [b.at(t, 0) for t in (89, 90, 149, 150, 689, 690)] == [200, 1000, 1000, 200, 200, 1000]


def test_jitter_is_seeded_bounded_and_independent_per_pod():
    profile = {"match": {"kind": "Deployment", "name": "a"}, "cpu": {"base": "1", "jitter": 0.2}}
    values = []
    for _ in range(2):
        sim = simulate(hot_scenario([deploy("a", 2)], [profile], [nodeqos(value=99), evict_action()]))
        first, second = running(sim, "a")
        values.append(
            [
                (sim.qos.usage.usage(first, t)["cpu"], sim.qos.usage.usage(second, t)["cpu"])
                for t in range(0, 600, 10)
            ]
        )
    assert values[0] == values[1]  # same seed, same draws
    flat = [v for pair in values[0] for v in pair]
    assert all(800 <= v <= 1200 for v in flat) and len(set(flat)) > 20
    assert any(x != y for x, y in values[0])  # the two pods draw independently
    assert 0 <= unit_draw(12345, 10.0) < 1


def test_profile_kinds_are_what_was_written():
    scenario = hot_scenario(
        [deploy("a", 1)],
        [{"match": {"kind": "Deployment", "name": "a"}, "cpu": "250m", "memory": {"base": "1Gi"}}],
        [nodeqos(value=99), evict_action()],
    )
    series = scenario.qos.usage.rules[0].profile.series
    assert series["cpu"] == Constant(250) and series["memory"] == Generator(2**30)
    assert isinstance(Trace((0.0,), (1,)).at(-5, 0), int)


# -- validation ------------------------------------------------------------------------------

GOOD_QOS = qos(nodeqos(), evict_action())


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            [
                {
                    "match": {"kind": "Deployment", "name": "web"},
                    "cpu": {"base": "1", "spikes": {"evry": "1m", "to": "2", "for": "1m"}},
                }
            ],
            r'test.yaml: spec.usage\[0\].cpu.spikes.evry: unknown field \(did you mean "every"\?\)',
        ),
        (
            [{"match": {"kind": "Deployment", "name": "web"}, "cpu": "lots"}],
            r'test.yaml: spec.usage\[0\].cpu: invalid quantity "lots"',
        ),
        (
            [
                {
                    "match": {"kind": "Deployment", "name": "web"},
                    "memory": {"base": "1Gi", "spikes": {"every": "1m", "to": "2Gi", "for": "2m"}},
                }
            ],
            r"spec.usage\[0\].memory.spikes.for: a spike \(2m\) cannot last longer than its period \(1m\)",
        ),
        (
            [{"match": {"kind": "Deployment", "name": "web"}, "cpu": {"base": "1", "jitter": 1.5}}],
            r"spec.usage\[0\].cpu.jitter: must be a fraction",
        ),
        (
            [
                {
                    "match": {"kind": "Deployment", "name": "web"},
                    "cpu": {"spikes": {"every": "1m", "to": "2", "for": "1m"}},
                }
            ],
            r"spec.usage\[0\].cpu.base: required field is missing",
        ),
        (
            [{"match": {"kind": "Deployment", "name": "wbe"}, "cpu": "1"}],
            r'spec.usage\[0\].match.name: no Deployment "wbe" in spec.objects or spec.events \(did you mean "web"\?\)',
        ),
        ([{"match": {"name": "web"}, "cpu": "1"}], r"spec.usage\[0\].match.name: a name needs a kind"),
        (
            [{"match": {"kind": "Deployment", "name": "web"}}],
            r"spec.usage\[0\]: a usage profile needs cpu, memory or trace",
        ),
        (
            [{"match": {"kind": "Deployment", "name": "web"}, "trace": "nowhere.csv"}],
            r'spec.usage\[0\].trace: no such file "nowhere.csv"',
        ),
        ([{"match": {"kind": "Deploymnet", "name": "web"}, "cpu": "1"}], r"spec.usage\[0\].match.kind"),
        ([{"mach": {}, "cpu": "1"}], r'spec.usage\[0\].mach: unknown field \(did you mean "match"\?\)'),
    ],
)
def test_usage_errors_name_the_field(usage, message):
    with pytest.raises(ScenarioError, match=message):
        make_scenario(objects=[deploy("web", 1)], usage=usage, qos=GOOD_QOS)


def test_bad_annotations_name_the_workload():
    bad = deploy("web", 1, annotations={USAGE_ANNOTATION: '{"cpu": {"base": "1", "spike": {}}}'})
    with pytest.raises(
        ScenarioError,
        match=r"spec.objects: Deployment default/web: spec.template.metadata.annotations\[kubetide.io/usage\].cpu.spike: unknown field",
    ):
        make_scenario(objects=[bad], qos=GOOD_QOS)
    broken = deploy("web", 1, annotations={USAGE_ANNOTATION: "{cpu: [1"})
    with pytest.raises(ScenarioError, match=r"annotations\[kubetide.io/usage\]: not a JSON or YAML mapping"):
        make_scenario(objects=[broken])  # checked even while the agent is off


def test_trace_file_errors_name_the_file_and_line(tmp_scenario):
    base = tmp_scenario("", "unused.yaml").parent
    usage = [{"match": {"kind": "Deployment", "name": "web"}, "trace": "t.csv"}]
    cases = {
        "time,cpu\n60,1\n30,2\n": r"t.csv: line 3: time: 30 is not after the previous row's",
        "time,gpu\n0,1\n": r't.csv: line 1: unknown column "gpu"',
        "0,1,2\n": r"t.csv: line 1: expected a header",
        "time,cpu\n0,1,2\n": r"t.csv: line 2: expected 2 columns",
        "time,cpu\n0,many\n": r't.csv: line 2: cpu: invalid quantity "many"',
        "time,cpu\n": r"t.csv: no rows",
    }
    for text, message in cases.items():
        (base / "t.csv").write_text(text)
        with pytest.raises(ScenarioError, match=message):
            make_scenario(objects=[deploy("web", 1)], usage=usage, qos=GOOD_QOS)
    # a per-resource trace needs that column
    (base / "t.csv").write_text("time,memory\n0,1Gi\n")
    with pytest.raises(ScenarioError, match=r'spec.usage\[0\].cpu.trace: t.csv has no "cpu" column'):
        make_scenario(
            objects=[deploy("web", 1)],
            usage=[{"match": {"kind": "Deployment", "name": "web"}, "cpu": {"trace": "t.csv"}}],
            qos=GOOD_QOS,
        )


@pytest.fixture(autouse=True)
def _scenario_dir(request, tmp_path, monkeypatch):
    """make_scenario resolves files against the working directory: run each test in its tmp dir."""
    if "tmp_scenario" in request.fixturenames:
        monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize(
    ("spec_qos", "message"),
    [
        (
            qos(nodeqos(), evict_action(), deploy("x", 1)),
            r"spec.qos.objects: only NodeQOS, AvoidanceAction and PodQOS belong here \(found a Deployment",
        ),
        (qos(evict_action()), r"spec.qos.objects: no NodeQOS"),
        (
            qos(nodeqos(action="evcit"), evict_action()),
            r'spec.qos.objects\[0\]: NodeQOS q: spec.rules\[0\].actionName: unknown AvoidanceAction "evcit"',
        ),
        (qos(nodeqos(value=120), evict_action()), r"metricRule.value: cpu_total_utilization is a percentage"),
        (
            qos(
                nodeqos(), evict_action(), podqos(scopeSelector={"matchExpressions": [{"scopeName": "Zone"}]})
            ),
            r"spec.qos.objects\[2\]: PodQOS pq: spec.scopeSelector.matchExpressions\[0\].scopeName: unknown scopeName",
        ),
        (
            qos(nodeqos(), evict_action(), podqos(allowed=("evcit",))),
            r'spec.qos.objects\[2\]: PodQOS pq: spec.allowedActions\[0\]: unknown AvoidanceAction "evcit"',
        ),
        ({"collectInterval": "0s", "objects": GOOD_QOS["objects"]}, r"spec.qos.collectInterval: "),
        (
            {"precice": False, "objects": GOOD_QOS["objects"]},
            r'spec.qos.precice: unknown field \(did you mean "precise"\?\)',
        ),
        ({"objects": []}, r"spec.qos.objects"),
        ({"executeExcessPercent": -1, "objects": GOOD_QOS["objects"]}, r"spec.qos.executeExcessPercent"),
    ],
)
def test_qos_errors_name_the_field(spec_qos, message):
    with pytest.raises(UserError, match=message):
        make_scenario(objects=[deploy("web", 1)], qos=spec_qos)


def test_nodeqos_outside_spec_qos_is_an_error():
    with pytest.raises(ScenarioError, match=r'spec.objects: NodeQOS "q" belongs in spec.qos.objects'):
        make_scenario(objects=[deploy("web", 1), nodeqos()], qos=GOOD_QOS)


def test_usage_without_qos_warns_and_builds_nothing():
    scenario = make_scenario(
        objects=[deploy("web", 1)], usage=[{"match": {"kind": "Deployment", "name": "web"}, "cpu": "1"}]
    )
    assert scenario.qos is None
    assert any("spec.usage" in w and "spec.qos" in w for w in scenario.warnings)


def test_cli_exits_2_with_the_field(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    data = {
        "apiVersion": "kubetide.io/v1alpha1",
        "kind": "Scenario",
        "metadata": {"name": "bad"},
        "spec": {
            "duration": "5m",
            "nodeGroups": [group()],
            "objects": [deploy("web", 1)],
            "usage": [
                {
                    "match": {"kind": "Deployment", "name": "web"},
                    "cpu": {"base": "1", "spikes": {"every": "-1m", "to": "2", "for": "1m"}},
                }
            ],
            "qos": GOOD_QOS,
        },
    }
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(data))
    assert cli_main.main(["simulate", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "spec.usage[0].cpu.spikes.every" in err
    assert not (tmp_path / "out").exists()


# -- the actuator --------------------------------------------------------------------------


def test_throttled_pods_use_at_most_their_quota_and_are_restored():
    # 4 cores; watermark 3000m of cpu_total_usage. web uses 1000m; two batch pods spike from 500m to
    # 1800m (limit 2) from t=60s for 3 minutes: 4600m, so the agent throttles the batch pods.
    spike = {"base": "500m", "spikes": {"every": "10m", "to": "1800m", "for": "3m", "start": "60s"}}
    scenario = hot_scenario(
        [deploy("web", 1, cpu="1", priority=1000), deploy("batch", 2, cpu="200m", limit="2")],
        [
            {"match": {"kind": "Deployment", "name": "web"}, "cpu": "1"},
            {"match": {"kind": "Deployment", "name": "batch"}, "cpu": spike},
        ],
        [nodeqos(metric="cpu_total_usage", value=3000, restore=6), throttle_action(step=20)],
        duration="8m",
    )
    sim = simulate(scenario, NoAutoscaler)
    advance(sim, 60 + 5)  # one sample into the spike
    assert sim.qos.c.throttles == 2
    batch = running(sim, "batch")
    throttled = [p for p in batch if p.uid in sim.qos.quotas]
    assert len(throttled) == 2  # both batch pods, and never the web pod
    t = sim.engine.elapsed()
    for pod in throttled:
        quota = sim.qos.quotas[pod.uid]
        assert quota < 1800
        assert sim.qos.usage.usage(pod, t, quota)["cpu"] == quota  # wants 1800m, gets its quota
    # 20% steps get the node under the watermark by throttling alone, a few samples later
    advance(sim, 30)
    node = next(iter(sim.world.snapshot.nodes()))
    used = sum(
        sim.qos.usage.usage(p, sim.engine.elapsed(), sim.qos.quotas.get(p.uid))["cpu"]
        for p in sim.world.snapshot.pods_on(node.name).values()
    )
    assert used <= 3000 and not sim.qos.over
    # after the spike (t=4m) the quotas are given back, step by step
    result = sim.run()
    assert result.summary["qos"]["restores"] > 0 and result.summary["qos"]["evictions"] == 0
    assert {e["reason"] for e in qos_events(result)} >= {
        "AvoidanceTriggered",
        "AvoidanceThrottle",
        "AvoidanceRestore",
        "RestoreTriggered",
    }
    throttles = qos_events(result, "AvoidanceThrottle")
    assert all(e["object"].startswith("Pod/default/batch-") and e["quota"] is not None for e in throttles)


def test_evictions_go_through_the_eviction_api_and_pdbs_refuse_them():
    # 2 x 1800m on 4 cores is 90%, over 80%; a PDB keeps both pods: every eviction is refused.
    scenario = hot_scenario(
        [deploy("batch", 2, cpu="1"), pdb("batch", "batch", min_available=2)],
        [{"match": {"kind": "Deployment", "name": "batch"}, "cpu": "1800m"}],
        [nodeqos(), evict_action(grace=0, cool_down=300)],
        duration="2m",
    )
    sim = simulate(scenario, NoAutoscaler)
    before = {p.uid for p in running(sim, "batch")}
    result = sim.run()
    qos_summary = result.summary["qos"]
    samples = int(120 / 10) + 1
    # a refusal releases nothing, so the agent tries the next pod, and no coolDown starts: both
    # pods are asked for again every sample
    assert qos_summary["evictions"] == 0 and qos_summary["evictions_refused"] == 2 * samples
    assert {p.uid for p in running(sim, "batch")} == before
    refused = qos_events(result, "AvoidanceEvictRefused")
    assert refused and refused[0]["type"] == "Warning" and "refused" in refused[0]["message"]
    # the autoscaler's eviction counters are its own
    assert result.summary["evictions"] == 0 and result.summary["evictions_refused"] == 0
    assert (
        qos_summary["seconds_over_watermark"] == 120
    )  # 12 full intervals, the last sample at the end adds 0


def test_evicted_pods_are_recreated_and_rescheduled():
    # 3 x 1300m = 3900m of 4000m (97.5%): the gap to 80% is 700m, 770m with the margin: one eviction.
    scenario = hot_scenario(
        [deploy("batch", 3, cpu="1")],
        [{"match": {"kind": "Deployment", "name": "batch"}, "cpu": "1300m"}],
        [nodeqos(), evict_action(grace=5, cool_down=3600)],
        duration="3m",
    )
    sim = simulate(scenario, ScaleUpDouble)
    first = {p.key for p in running(sim, "batch")}
    advance(sim, 1)
    assert sim.qos.c.evictions == 1
    (evicted,) = [p for p in pods_of(sim, "batch") if p.is_terminating]
    assert evicted.key in first
    advance(sim, 60)
    now = running(sim, "batch")
    assert len(now) == 3 and evicted.key not in {p.key for p in now}  # a new pod took its place
    events = qos_events(sim, "AvoidanceEvict")
    assert len(events) == 1 and events[0]["object"] == f"Pod/{evicted.key}" and events[0]["released"] == 1300
    assert events[0]["gap"] == 770


def test_evictions_can_trigger_a_scale_up():
    # The evicted pod terminates for 2 minutes holding its request, so its replacement fits nowhere
    # and the autoscaler adds a node for it.
    scenario = hot_scenario(
        [deploy("batch", 4, cpu="1")],
        [{"match": {"kind": "Deployment", "name": "batch"}, "cpu": "950m"}],
        [nodeqos(), evict_action(grace=120, cool_down=3600)],
        duration="5m",
    )
    result = Simulation(scenario).run()  # kubetide's autoscaler
    assert result.summary["qos"]["evictions"] == 1
    assert result.summary["scale_up"]["nodes_added"] == 1
    assert result.summary["pods"]["pending_at_end"] == 0 and result.summary["nodes"]["final"] == 2


def test_preview_rules_record_and_never_act():
    scenario = hot_scenario(
        [deploy("batch", 2, cpu="1")],
        [{"match": {"kind": "Deployment", "name": "batch"}, "cpu": "1800m"}],
        [nodeqos(strategy="Preview"), evict_action()],
        duration="1m",
    )
    result = simulate(scenario, NoAutoscaler).run()
    q = result.summary["qos"]
    assert q["evictions"] == 0 and q["seconds_over_watermark"] == 0
    previews = qos_events(result, "AvoidancePreview")
    assert previews and all("would be evicted" in e["message"] for e in previews)


def test_podqos_in_spec_qos_limits_which_pods_are_evicted():
    # web uses the most cpu, but only the `batch` tier may be evicted: the agent takes a batch pod.
    scenario = hot_scenario(
        [deploy("web", 1, cpu="1", priority=0), deploy("batch", 2, cpu="1")],
        [
            {"match": {"kind": "Deployment", "name": "web"}, "cpu": "1900m"},
            {"match": {"kind": "Deployment", "name": "batch"}, "cpu": "800m"},
        ],
        [nodeqos(), evict_action(cool_down=3600), podqos(labelSelector={"matchLabels": {"tier": "batch"}})],
        duration="1m",
    )
    assert [q.name for q in scenario.qos.config.podqos] == ["pq"]
    result = simulate(scenario, NoAutoscaler).run()
    evicted = [e["object"] for e in qos_events(result, "AvoidanceEvict")]
    assert len(evicted) == 1 and evicted[0].startswith("Pod/default/batch-")


def disable_scheduling_action(cool_down=0):
    return {
        "apiVersion": QOS_API,
        "kind": "AvoidanceAction",
        "metadata": {"name": "act"},
        "spec": {"coolDownSeconds": cool_down},
    }


def test_disable_scheduling_taints_the_node_and_the_scheduler_respects_it():
    # 3500m of 4 cores is over 80%: the node is tainted at the first sample. `late` asks for a pod
    # at 30 s: it stays pending while the taint is on. At 2m the hot pod cools down; one quiet
    # sample (restoreThreshold 1) lifts the taint and the pending pod is scheduled.
    scenario = hot_scenario(
        [deploy("hot", 1, cpu="1"), deploy("late", 0, cpu="100m")],
        [
            {
                "match": {"kind": "Deployment", "name": "hot"},
                "cpu": {"base": "200m", "spikes": {"every": "1h", "to": "3500m", "for": "2m", "start": "0s"}},
            }
        ],
        [nodeqos(), disable_scheduling_action()],
        duration="4m",
        events=[
            {
                "at": "30s",
                "scale": {"kind": "Deployment", "namespace": "default", "name": "late", "replicas": 1},
            }
        ],
    )
    sim = simulate(scenario, NoAutoscaler)
    advance(sim, 1)
    (node,) = sim.world.nodes()
    assert [t.key for t in node.taints] == ["ensurance.crane.io/analyzed-pressure"]
    assert node.taints[0].effect == "NoSchedule"
    advance(sim, 60)
    (late,) = pods_of(sim, "late")
    assert not late.node_name  # the taint keeps it off the only node
    advance(sim, 80)
    (node,) = sim.world.nodes()
    assert node.taints == ()
    result = sim.run()
    (late,) = pods_of(sim, "late")
    assert late.node_name == node.name
    assert result.summary["qos"]["scheduling_disabled"] == 1
    assert [e["reason"] for e in qos_events(result) if e["object"].startswith("Node/")] == [
        "AvoidanceTriggered",
        "DisableScheduling",
        "RestoreTriggered",
        "RestoreScheduling",
    ]


def test_nodeqos_selectors_choose_the_nodes():
    scenario = hot_scenario(
        [deploy("batch", 2, cpu="1")],
        [{"match": {"kind": "Deployment", "name": "batch"}, "cpu": "1800m"}],
        [nodeqos(selector={"pool": "gpu"}), evict_action()],
        duration="1m",
    )
    sim = simulate(scenario, NoAutoscaler)
    result = sim.run()
    assert sim.qos.agents == {} and result.summary["qos"]["evictions"] == 0 and not qos_events(result)


# -- reports -------------------------------------------------------------------------------


# A bare pod is evicted only when a PodQOS selects it for eviction.
HOG_MAY_BE_EVICTED = {
    "apiVersion": QOS_API,
    "kind": "PodQOS",
    "metadata": {"name": "hog"},
    "spec": {"allowedActions": ["act"], "labelSelector": {"matchLabels": {"app": "hog"}}},
}


def test_summary_timeline_events_and_report():
    # 2 x 1300m of steady service plus a 1300m bare pod (nothing recreates it): 97.5% of 4 cores.
    # The gap to 80% is 700m (770m with the margin): evicting the bare pod, which a PodQOS
    # selects for eviction, closes it for good.
    hog = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hog", "namespace": "default", "labels": {"app": "hog"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
    scenario = hot_scenario(
        [deploy("steady", 2, cpu="1", priority=1000), hog],
        [{"match": {"kind": "Pod", "name": "hog"}, "cpu": "1300m"}, {"match": {}, "cpu": "1300m"}],
        [nodeqos(threshold=2), evict_action(grace=5, cool_down=3600), HOG_MAY_BE_EVICTED],
        duration="2m",
    )
    result = simulate(scenario, NoAutoscaler).run()
    q = result.summary["qos"]
    assert list(q) == [*COUNT_KEYS, "precise"]
    assert q["evictions"] == 1 and q["over_evictions"] == 0 and q["throttles"] == q["restores"] == 0
    # samples at 0 and 10 s are over, the second one evicts, the pod is gone at 15 s: 20 s over
    assert q["seconds_over_watermark"] == 20
    assert q["nodes_over_watermark_at_end"] == 0 and q["precise"] is True
    row = result.timeline[-1]
    assert {k: row[k] for k in row if k.startswith("qos_")} == {
        "qos_nodes_over_watermark": 0,
        "qos_evictions_total": 1,
        "qos_throttles_total": 0,
        "qos_throttled_pods": 0,
        "qos_peak_cpu_pct": 65.0,
    }
    assert [r["qos_nodes_over_watermark"] for r in result.timeline[:3]] == [1, 1, 0]
    assert [r["qos_peak_cpu_pct"] for r in result.timeline[:3]] == [97.5, 97.5, 65.0]
    (evicted,) = qos_events(result, "AvoidanceEvict")
    assert evicted["object"] == "Pod/default/hog" and evicted["time"] == 10
    assert result.summary["events"]["AvoidanceTriggered"] == 1
    assert result.summary["events"]["RestoreTriggered"] == 1  # restoreThreshold 1: at 20 s
    page = render(result)
    assert "Node QoS agent" in page and "node-seconds over a watermark" in page


# -- the example: precise vs crane's old mode ------------------------------------------------


def example_numbers(scenario):
    """What the example's own numbers say precise mode must do (see its header)."""
    settings = scenario.qos
    (nodeqos_,) = settings.config.nodeqos
    (rule,) = nodeqos_.rules
    assert rule.metric == "cpu_total_utilization"
    cpu = scenario.groups[0].template.allocatable["cpu"]
    watermark = cpu * rule.watermark / 100
    workloads = {w.name: w for w in scenario.objects.workloads}
    batch_profile = next(r for r in settings.usage.rules if r.name == "batch").profile.series["cpu"]
    web = workloads["web"]
    web_cpu = (
        settings.usage.annotations[web.template.prototype.annotations[USAGE_ANNOTATION]].series["cpu"].value
    )
    daemon = workloads["node-exporter"].template.prototype.requests["cpu"]  # no profile: its request
    batch = workloads["batch"].replicas
    spiking = daemon + web.replicas * web_cpu + batch * batch_profile.spike_to
    gap = (spiking - watermark) * (100 + settings.execute_excess_percent) / 100
    (web_pdb,) = scenario.objects.pdbs
    return {
        "spike": batch_profile,
        "watermark_pct": float(rule.watermark),
        "precise_evictions": math.ceil(gap / batch_profile.spike_to),
        "all_first_round": batch + web.replicas - web_pdb.min_available,
        "after_precise": spiking - math.ceil(gap / batch_profile.spike_to) * batch_profile.spike_to,
        "watermark": watermark,
    }


def run_example(precise, duration=None):
    scenario = load_scenario(EXAMPLE)
    scenario = dataclasses.replace(
        scenario, qos=dataclasses.replace(scenario.qos, precise=precise, compare=False)
    )
    if duration is not None:
        scenario = scenario.with_duration(duration)
    return scenario, Simulation(scenario).run()


@pytest.fixture(scope="module")
def example_runs():
    return {precise: run_example(precise) for precise in (True, False)}


def test_the_example_is_numbered_as_its_header_says():
    numbers = example_numbers(load_scenario(EXAMPLE))
    assert numbers["precise_evictions"] == 3 and numbers["all_first_round"] == 9
    assert numbers["after_precise"] < numbers["watermark"]


def test_precise_mode_evicts_only_what_closes_the_gap(example_runs):
    scenario, result = example_runs[True]
    numbers = example_numbers(scenario)
    q = result.summary["qos"]
    assert q["evictions"] == numbers["precise_evictions"] and q["over_evictions"] == 0
    assert q["evictions_refused"] == 0
    evicted = qos_events(result, "AvoidanceEvict")
    assert all("/batch-" in e["object"] for e in evicted)  # the service is never touched
    assert result.summary["scale_up"]["nodes_added"] >= 1  # the replacements needed a node
    assert result.summary["invariants"] == {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


def test_old_mode_evicts_everything_it_can_and_more(example_runs):
    scenario, result = example_runs[False]
    numbers = example_numbers(scenario)
    q = result.summary["qos"]
    first_spike = [e for e in qos_events(result, "AvoidanceEvict") if e["time"] < numbers["spike"].start + 60]
    first_node = {e["node"] for e in first_spike[: numbers["all_first_round"]]}
    assert len(first_node) == 1  # every batch pod and one web replica of the hot node, in one round
    assert q["evictions"] >= numbers["all_first_round"] and q["evictions_refused"] >= 1  # the web PDB
    assert q["over_evictions"] > 0
    assert q["evictions"] > example_runs[True][1].summary["qos"]["evictions"]


@pytest.mark.parametrize("precise", [True, False])
def test_both_modes_end_back_under_the_watermark(example_runs, precise):
    scenario, result = example_runs[precise]
    numbers = example_numbers(scenario)
    spike = numbers["spike"]
    assert result.summary["qos"]["nodes_over_watermark_at_end"] == 0
    # the last spike of the run: no node goes over the watermark any more
    last = spike.start + spike.every * math.floor(
        (scenario.duration - spike.start - spike.duration) / spike.every
    )
    assert last > spike.start
    during = [row for row in result.timeline if last <= row["time"] < last + spike.duration]
    assert during and all(row["qos_nodes_over_watermark"] == 0 for row in during)
    assert max(row["qos_peak_cpu_pct"] for row in during) <= numbers["watermark_pct"]


def test_compare_puts_both_counts_side_by_side(example_runs, tmp_path):
    scenario = load_scenario(EXAMPLE)  # the example sets spec.qos.compare: two variants
    variants = scenario_variants(scenario)
    assert [(v.name, v.qos_precise) for v in variants] == [("precise", True), ("all", False)]
    results = run_variants(scenario, None, variants, tmp_path, LocalEngine(2))  # in two processes
    data = comparison(scenario, scenario.seed, results)
    columns = {entry["name"]: entry["qos"] for entry in data["settings"]}
    for (_, result), precise in zip(results, (True, False), strict=True):
        assert result.timeline == example_runs[precise][1].timeline  # each mode's run is the lone run
        assert result.events == example_runs[precise][1].events
    for precise, mode in ((True, "precise"), (False, "all")):
        alone = example_runs[precise][1].summary
        assert {k: columns[mode][k] for k in COUNT_KEYS} == {k: alone["qos"][k] for k in COUNT_KEYS}
        assert columns[mode]["nodes_added"] == alone["scale_up"]["nodes_added"]
    assert columns["precise"]["evictions"] < columns["all"]["evictions"]
    page = render_comparison(data, [result for _, result in results])
    assert "crane&#x27;s old mode" in page or "crane's old mode" in page
    assert "precise: precise" not in page and "all: all" not in page  # headings say each mode once


def test_cli_prints_both_modes(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("simulate",))
    assert cli_main.main(["simulate", str(EXAMPLE), "--out", str(tmp_path), "--json", "--no-report"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [entry["name"] for entry in printed["settings"]] == ["precise", "all"]
    assert all(set(COUNT_KEYS) <= set(entry["qos"]) for entry in printed["settings"])
    for mode in ("precise", "all"):
        header = (tmp_path / mode / "timeline.csv").read_text().splitlines()[0]
        assert header.endswith(
            "qos_nodes_over_watermark,qos_evictions_total,qos_throttles_total,qos_throttled_pods,qos_peak_cpu_pct"
        )


def test_runs_are_deterministic():
    def strip(result):
        summary = dict(result.summary)
        summary.pop("wall_seconds")
        return summary, result.timeline, result.events

    first = run_example(True, duration=20 * 60)[1]
    second = run_example(True, duration=20 * 60)[1]
    assert strip(first) == strip(second)


# -- no cost without spec.qos ----------------------------------------------------------------


def test_no_qos_section_builds_and_schedules_nothing(monkeypatch):
    def boom(*args, **kwargs):
        raise AssertionError("NodeAgents built without spec.qos")

    monkeypatch.setattr(NodeAgents, "__init__", boom)
    scenario = make_scenario(objects=[deploy("web", 2)], duration="5m")
    assert scenario.qos is None
    sim = simulate(scenario, NoAutoscaler)
    result = sim.run()
    assert sim.qos is None and "qos" not in result.summary
    assert not any(k.startswith("qos_") for k in result.timeline[0])


def test_the_agent_costs_only_its_own_samples():
    """The same cluster with an agent that selects no node: the only extra engine events are the
    agent's samples, and nothing else about the run changes."""
    objects = [deploy("web", 3)]
    plain = simulate(make_scenario(objects=objects, duration="10m"), NoAutoscaler)
    idle = simulate(
        make_scenario(
            objects=objects, duration="10m", qos=qos(nodeqos(selector={"pool": "none"}), evict_action())
        ),
        NoAutoscaler,
    )
    a, b = plain.run(), idle.run()
    samples = int(600 / 10) + 1
    assert idle.engine.events_run - plain.engine.events_run == samples == idle.qos.samples
    for summary in (a.summary, b.summary):
        summary.pop("wall_seconds")
    b.summary.pop("qos")
    assert a.summary == b.summary and a.events == b.events
