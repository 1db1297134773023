import textwrap

import pytest
from sim_helpers import group, make_scenario

from kubetide.cli import main as cli_main
from kubetide.sim.spec import ScenarioError, load_scenario

GOOD = textwrap.dedent(
    """\
    apiVersion: kubetide.io/v1alpha1
    kind: Scenario
    metadata: {name: sample}
    spec:
      duration: 1h30m
      seed: 3
      autoscaler: {scale-down-unneeded-time: 5m}
      nodeGroups:
        - name: general
          maxSize: 10
          initialSize: 2
          provisioningDelay: {min: 1m, max: 2m}
          template:
            metadata: {labels: {topology.kubernetes.io/zone: zone-a}}
            status: {allocatable: {cpu: "4", memory: 16Gi}}
      objects:
        - file: workloads.yaml
      events:
        - at: 30m
          scale: {kind: Deployment, name: web, replicas: 10}
        - at: 1h
          fault: {type: nodeNotReady, nodeGroup: general, count: 1, duration: 10m}
      traces:
        - {name: web, file: web.csv}
    """
)
WORKLOADS = textwrap.dedent(
    """\
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
    """
)


@pytest.fixture
def sample(tmp_scenario):
    tmp_scenario(WORKLOADS, "workloads.yaml")
    tmp_scenario("time,replicas\n0,2\n10m,4\n3600,3\n", "web.csv")
    return tmp_scenario(GOOD)


def test_a_valid_scenario_loads_with_files_relative_to_it(sample):
    scenario = load_scenario(sample)
    assert scenario.name == "sample" and scenario.seed == 3 and scenario.duration == 5400
    assert scenario.options.scale_down_unneeded_time == 300
    assert [w.name for w in scenario.objects.workloads] == ["web"]
    group = scenario.groups[0]
    assert (
        group.initial_size == 2 and group.provisioning_delay.min == 60 and group.provisioning_delay.max == 120
    )
    assert group.template.labels["kubetide.io/node-group"] == "general"
    assert group.template.allocatable["pods"] == 110  # defaulted
    kinds = [(e.at, e.kind) for e in scenario.events]
    assert kinds == [
        (0, "scale"),
        (600, "scale"),
        (1800, "scale"),
        (3600, "fault"),
        (3600, "scale"),
    ]  # events before traces at the same time


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ("maxSize: 10", "maxSiz: 10", 'spec.nodeGroups[0].maxSiz: unknown field (did you mean "maxSize"?)'),
        ("maxSize: 10", "maxSize: -1", "spec.nodeGroups[0].maxSize: "),
        ("duration: 10m}", "duration: 10x}", 'spec.events[1].fault.duration: invalid duration "10x"'),
        ("type: nodeNotReady", "type: nodeNotRedy", "spec.events[1].fault.type: Input should be"),
        (
            'cpu: "4"',
            'cpu: "abc"',
            'spec.nodeGroups[0].template.status.allocatable.cpu: invalid quantity "abc"',
        ),
        (
            "scale-down-unneeded-time",
            "scale-down-unneded-time",
            "spec.autoscaler.scale-down-unneded-time: unknown flag (did you mean scale-down-unneeded-time?)",
        ),
        ("at: 30m", "at: 3h", "spec.events[0].at: 3h is after the end of the scenario (1h30m)"),
        (
            "nodeGroup: general",
            "nodeGroup: generl",
            'spec.events[1].fault.nodeGroup: unknown node group "generl" (did you mean "general"?)',
        ),
        (
            "{min: 1m, max: 2m}",
            "{min: 3m, max: 2m}",
            "spec.nodeGroups[0].provisioningDelay: max (2m) is less than min (3m)",
        ),
        ("kind: Scenario", "kind: Scenaro", "kind: Input should be 'Scenario'"),
        ("file: workloads.yaml", "file: missing.yaml", 'spec.objects[0].file: no such file "missing.yaml"'),
        (
            "scale: {kind",
            "scael: {kind",
            'spec.events[0]: unknown event kind "scael" (did you mean "scale"?); '
            "the kinds are scale, apply, delete, fault, restart, setImage",
        ),
    ],
)
def test_errors_name_the_file_and_the_field(sample, before, after, expected):
    sample.write_text(GOOD.replace(before, after, 1))
    with pytest.raises(ScenarioError if "unknown flag" not in expected else Exception) as info:
        load_scenario(sample)
    assert str(info.value).startswith(f"{sample}: {expected}")


def test_bad_manifest_in_an_inline_object_names_it():
    with pytest.raises(Exception) as info:
        make_scenario(
            objects=[
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "w"},
                    "spec": {"replicas": -1},
                }
            ]
        )
    assert str(info.value) == (
        "test.yaml: spec.objects[0]: Deployment w: spec.template.spec.containers: a pod needs at least one container"
    )


def test_a_fault_needs_a_node_group():
    with pytest.raises(ScenarioError, match=r"spec.events\[0\].fault: a stockout fault needs nodeGroup"):
        make_scenario(events=[{"at": "1m", "fault": {"type": "stockout"}}])


def test_an_event_needs_exactly_one_action():
    with pytest.raises(ScenarioError, match=r"spec.events\[0\]: an event needs exactly one of"):
        make_scenario(events=[{"at": "1m"}])


def test_duplicate_groups_and_bad_sizes_are_errors():
    with pytest.raises(ScenarioError, match=r"spec.nodeGroups\[1\].name: duplicate node group"):
        make_scenario(groups=[group("a"), group("a")])
    with pytest.raises(
        ScenarioError, match=r"spec.nodeGroups\[0\]: initialSize \(5\) is more than maxSize \(3\)"
    ):
        make_scenario(groups=[group("a", size=5, max_size=3)])


def main(argv):
    """The CLI with only this command registered (other commands' modules may not exist yet)."""
    saved = cli_main.COMMANDS
    cli_main.COMMANDS = ("simulate",)
    try:
        return cli_main.main(argv)
    finally:
        cli_main.COMMANDS = saved


def test_cli_reports_a_bad_scenario_in_one_line_with_exit_2(sample, capsys):
    sample.write_text(GOOD.replace("maxSize: 10", "maxSiz: 10"))
    assert main(["simulate", str(sample)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert (
        err[0]
        == f'kubetide: error: {sample}: spec.nodeGroups[0].maxSiz: unknown field (did you mean "maxSize"?)'
    )


def test_cli_reports_a_missing_scenario_file(tmp_path, capsys):
    assert main(["simulate", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err.strip() == f"kubetide: error: {tmp_path / 'nope.yaml'}: no such file"
