"""Issue 15 item 1: your cluster in the simulator, as it is.

A realistic EKS dump (realistic_dump.py: full metadata, managedFields, ownerReferences, three node
groups, Deployments with their ReplicaSets, a StatefulSet, DaemonSets, Jobs, a bare pod, PDBs)
is exported with `kubetide scenario from-cluster`, and the simulator must start from exactly that
cluster: the same pods with the same names, nodes and ages, the same nodes as the groups'
instances, nothing created twice. Then the load drops and the autoscaler removes nodes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from realistic_dump import GROUP_LABEL, realistic_dump

from kubetide.cli.scenario import export_scenario
from kubetide.model import load_documents
from kubetide.model.timestamps import newest_timestamp
from kubetide.sim.runtime.simulation import NoAutoscaler, Simulation
from kubetide.sim.spec.scenario import load_scenario, parse_scenario

WEB_DROP = {"at": "1m", "scale": {"kind": "Deployment", "namespace": "shop", "name": "web", "replicas": 2}}
ZERO = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


@pytest.fixture(scope="module")
def dump():
    return realistic_dump()


@pytest.fixture(scope="module")
def dump_manifests(dump):
    return load_documents([dump], "dump.yaml")


@pytest.fixture(scope="module")
def exported(dump):
    text, warnings = export_scenario([dump], "dump.yaml", name="tonight")
    return text, warnings


def scenario_from(text: str, *, events=(), duration="40m", autoscaler=None, logarithmic=True):
    document = yaml.safe_load(text)
    document["spec"]["workloadRanking"] = {"logarithmic": logarithmic}
    document["spec"]["events"] = list(events)
    document["spec"]["duration"] = duration
    if autoscaler is not None:
        document["spec"]["autoscaler"] = autoscaler
    return parse_scenario(document, "tonight.yaml", base_dir=Path("."))


def live_pods(manifests):
    """(namespace, name, node, ready) of the dump's pods that hold anything (not finished)."""
    return sorted((p.namespace, p.name, p.node_name, p.ready) for p in manifests.pods if not p.is_terminal)


def world_pods(sim):
    return sorted((p.namespace, p.name, p.node_name, p.ready) for p in sim.world.pods())


# -- the export ---------------------------------------------------------------------------------


def test_the_export_infers_the_groups_as_plan_does_and_keeps_every_object_once(exported, dump_manifests):
    text, warnings = exported
    document = yaml.safe_load(text)
    groups = {g["name"]: g for g in document["spec"]["nodeGroups"]}
    # batch_spot is not a valid scenario name: renamed, and its nodes labelled as members.
    assert set(groups) == {"general", "memory", "batch-spot"}
    assert [groups[n]["initialSize"] for n in ("general", "memory", "batch-spot")] == [6, 3, 2]
    assert groups["general"]["maxSize"] == 60 and groups["general"]["minSize"] == 0
    assert groups["batch-spot"]["template"]["spec"]["taints"] == [
        {"key": "workload", "value": "batch", "effect": "NoSchedule"}
    ]
    assert groups["general"]["template"]["status"]["allocatable"]["cpu"] == "3920m"
    assert "kubernetes.io/hostname" not in groups["general"]["template"]["metadata"]["labels"]
    # Bounds not taken from a GROUPS.yaml are said to be plan's, in a comment above the group.
    assert "# minSize 0 and maxSize 60 (10 x its nodes) are kubetide plan's bounds" in text
    assert "Not in any node group (kept, never autoscaled): ip-10-0-99-9.ec2.internal" in text

    objects = document["spec"]["objects"]
    kinds = {o["kind"] for o in objects}
    assert kinds == {"Node", "Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"} | {
        "PodDisruptionBudget",
        "PriorityClass",
        "HorizontalPodAutoscaler",
        "CronJob",
    }
    assert all("managedFields" not in o["metadata"] for o in objects)
    # Everything but the finished Job (nightly-export, Complete): it would create no pod again.
    assert (
        len(objects)
        == len(dump_manifests.nodes)
        + len(dump_manifests.pods)
        + len(dump_manifests.workloads)
        + len(dump_manifests.pdbs)
        + len(dump_manifests.priority_classes)
        + len(dump_manifests.other["HorizontalPodAutoscaler"])
        + len(dump_manifests.other["CronJob"])
        - 1
    )
    assert "nightly-export" not in {o["metadata"]["name"] for o in objects if o["kind"] == "Job"}
    batch_nodes = [
        o for o in objects if o["kind"] == "Node" and o["metadata"]["labels"].get(GROUP_LABEL) == "batch_spot"
    ]
    assert {n["metadata"]["labels"]["kubetide.io/node-group"] for n in batch_nodes} == {"batch-spot"}
    assert any("skipped unknown kinds: Service" in w for w in warnings)


# -- adoption -----------------------------------------------------------------------------------


def test_simulating_the_export_with_no_events_keeps_the_cluster_as_it_is(exported, dump_manifests):
    sim = Simulation(scenario_from(exported[0]))
    sim.setup()
    before = world_pods(sim)
    assert before == live_pods(dump_manifests)  # same pods, names, nodes, readiness
    assert sorted(n.name for n in sim.world.nodes()) == sorted(n.name for n in dump_manifests.nodes)
    # The dump's nodes are the groups' instances, not extra nodes beside them.
    for name, label in (("general", "general"), ("memory", "memory"), ("batch-spot", "batch_spot")):
        group = sim.cloud.groups[name]
        expected = sorted(n.name for n in dump_manifests.nodes if n.labels.get(GROUP_LABEL) == label)
        assert sorted(i.node_name for i in group.sim_instances()) == expected
        assert group.target_size() == len(expected)
    # Ages are kept: the dump's newest time is the scenario's start.
    newest = newest_timestamp(dump_manifests)
    dumped = {p.key: p.meta.creation_timestamp - newest for p in dump_manifests.pods}
    adopted = {p.key: p.meta.creation_timestamp - sim.engine.start for p in sim.world.pods()}
    assert adopted == {k: v for k, v in dumped.items() if k in adopted}
    assert min(adopted.values()) < -3 * 24 * 3600

    # Five minutes on (the autoscaler running, nothing for it to do yet): still the same cluster,
    # and no controller created a pod.
    sim.engine.run_until(sim.engine.start + 300)
    assert world_pods(sim) == before
    assert len(sim.world.snapshot) == len(dump_manifests.nodes)
    assert sim.replicasets.created == sim.statefulsets.created == 0
    assert sim.daemonsets.created == sim.jobs.created == 0
    # The HPA (settled at its status reading) and the CronJob (last run an hour ago) wait too.
    assert sim.hpas.hpas and sim.cronjobs.cronjobs
    assert sim.hpas.rescales == 0 and sim.cronjobs.started == 0


def test_a_load_drop_lets_the_autoscaler_remove_general_nodes(exported):
    baseline = Simulation(scenario_from(exported[0])).run().summary
    dropped = Simulation(scenario_from(exported[0], events=[WEB_DROP])).run().summary
    # Without the drop the general nodes stay (only the batch nodes go, once the Job is done).
    assert baseline["groups"]["general"]["final"] == 6
    assert baseline["scale_down"]["nodes_removed"] == 2
    assert dropped["groups"]["general"]["final"] < 6
    assert dropped["scale_down"]["drained_removed"] > 0
    for summary in (baseline, dropped):
        assert summary["nodes"]["initial"] == 12
        assert summary["invariants"] == ZERO
        assert summary["scale_up"]["events"] == 0


def test_pasted_ca_args_change_the_run_and_infrastructure_flags_are_one_warning(exported):
    args = ["--v=4", "--logtostderr", "--cloud-provider=aws", "--scale-down-unneeded-time", "3m"]
    scenario = scenario_from(exported[0], events=[WEB_DROP], autoscaler=args)
    assert scenario.warnings == [
        "tonight.yaml: spec.autoscaler: infrastructure flags ignored in the simulator: v, logtostderr, cloud-provider"
    ]
    fast = Simulation(scenario).run().summary
    default = Simulation(scenario_from(exported[0], events=[WEB_DROP])).run().summary
    assert fast["scale_down"]["first_removal_at"] < default["scale_down"]["first_removal_at"]


# -- a scenario that loads a dump as objects ------------------------------------------------------


GROUP = """\
  - name: general
    minSize: 0
    maxSize: 20
    initialSize: {initial}
    template:
      metadata: {{labels: {{eks.amazonaws.com/nodegroup: general}}}}
      status: {{allocatable: {{cpu: 3920m, memory: 15Gi, pods: "58"}}}}
"""


def write_objects_scenario(tmp_path, dump, initial: int) -> Path:
    (tmp_path / "dump.yaml").write_text(yaml.safe_dump(dump))
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "apiVersion: kubetide.io/v1alpha1\nkind: Scenario\nmetadata: {name: objects}\n"
        "spec:\n  duration: 5m\n  nodeGroups:\n"
        + GROUP.format(initial=initial)
        + "  objects:\n  - file: dump.yaml\n"
    )
    return path


def test_objects_from_a_dump_file_are_adopted_not_doubled(tmp_path, dump, dump_manifests):
    # Was: every ReplicaSet's pods twice (the Deployment's own ReplicaSet beside the dump's) and
    # the dump's nodes beside the group's.
    scenario = load_scenario(write_objects_scenario(tmp_path, dump, initial=0))
    assert [w for w in scenario.warnings if "no node group of the scenario" in w] == [
        f"{tmp_path / 'scenario.yaml'}: spec.objects: nodes labelled eks.amazonaws.com/nodegroup=memory (3), "
        "eks.amazonaws.com/nodegroup=batch_spot (2) are in no node group of the scenario: kept, never "
        "autoscaled (name a group after the label's value to make them its instances)"
    ]
    sim = Simulation(scenario, autoscaler_factory=NoAutoscaler)
    sim.setup()
    assert world_pods(sim) == live_pods(dump_manifests)
    assert len(sim.world.snapshot) == len(dump_manifests.nodes)
    general = [n.name for n in dump_manifests.nodes if n.labels.get(GROUP_LABEL) == "general"]
    assert sorted(i.node_name for i in sim.cloud.groups["general"].sim_instances()) == sorted(general)
    # Nodes of groups the scenario does not define stay plain nodes: no group manages them.
    memory = next(n for n in dump_manifests.nodes if n.labels.get(GROUP_LABEL) == "memory")
    assert sim.cloud.node_group_for(sim.world.node(memory.name)) is None
    # One ReplicaSet per Deployment: the dump's current one, scaled by the Deployment.
    web = [w for w in sim.world.workloads.values() if w.kind == "ReplicaSet" and w.name.startswith("web-")]
    assert sorted((w.name, w.replicas) for w in web) == sorted(
        (w.name, w.replicas)
        for w in dump_manifests.workloads
        if w.kind == "ReplicaSet" and w.name.startswith("web-")
    )
    # The finished Job's Succeeded pod counts as its completion: it is not run again.
    sim.engine.run_until(sim.engine.start + 60)
    assert sim.jobs.created == 0 and sim.replicasets.created == 0
    # (api: web has an HPA, which would put it back, as upstream's does, within its window)
    sim.deployments.scale("Deployment/shop/api", 4)
    sim.engine.run_until(sim.engine.start + 120)
    assert len([p for p in sim.world.pods() if p.labels.get("app") == "api" and not p.is_terminating]) == 4


def test_initial_size_tops_the_adopted_nodes_up(tmp_path, dump):
    sim = Simulation(
        load_scenario(write_objects_scenario(tmp_path, dump, initial=8)), autoscaler_factory=NoAutoscaler
    )
    sim.setup()
    group = sim.cloud.groups["general"]
    assert group.target_size() == 8
    assert sum(1 for i in group.sim_instances() if i.node_name.startswith("general-")) == 2


def test_a_running_job_pod_finishes_its_run_and_a_terminating_pod_its_grace_period(dump):
    dump = copy.deepcopy(dump)
    debug = next(o for o in dump["items"] if o["kind"] == "Pod" and o["metadata"]["name"] == "debug-shell")
    debug["metadata"]["deletionTimestamp"] = "2026-03-10T22:00:30Z"  # 30s grace, 3m19s after the start
    text, _ = export_scenario([dump], "dump.yaml", name="tonight")
    sim = Simulation(scenario_from(text, duration="20m"), autoscaler_factory=NoAutoscaler)
    sim.setup()
    start = sim.engine.start
    assert sim.world.pod(debug["metadata"]["uid"]).is_terminating
    sim.engine.run_until(start + 180)
    assert sim.world.pod(debug["metadata"]["uid"]) is not None
    sim.engine.run_until(start + 240)
    assert sim.world.pod(debug["metadata"]["uid"]) is None
    # The report pods started 11s before the dump's newest time (their readiness) and run
    # 10 minutes (jobRunDuration): they finish at 9m49s, and the Job is complete.
    sim.engine.run_until(start + 580)
    assert len([p for p in sim.world.pods() if p.labels.get("app") == "report"]) == 2
    sim.engine.run_until(start + 600)
    assert [p for p in sim.world.pods() if p.labels.get("app") == "report"] == []
    assert "Job/batch/report" in sim.jobs.completed_jobs


def test_a_deployment_whose_template_changed_rolls_out_a_new_replicaset(dump):
    dump = copy.deepcopy(dump)
    web = next(o for o in dump["items"] if o["kind"] == "Deployment" and o["metadata"]["name"] == "web")
    web["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "600m"
    text, _ = export_scenario([dump], "dump.yaml", name="tonight")
    sim = Simulation(scenario_from(text, duration="5m"), autoscaler_factory=NoAutoscaler)
    sim.setup()
    replicasets = [
        w for w in sim.world.workloads.values() if w.kind == "ReplicaSet" and w.name.startswith("web-")
    ]
    assert len(replicasets) == 3  # the two from the dump and the Deployment's new one


def test_pod_ages_drive_the_downscale_ranking_as_in_the_dump(exported):
    # The ranking prefers the newest pod (exactly, without KEP-2185's logarithmic buckets, in
    # which these three ages fall together); adopted pods keep their ages from the dump.
    scenario = scenario_from(exported[0], duration="5m", logarithmic=False)
    sim = Simulation(scenario, autoscaler_factory=NoAutoscaler)
    sim.setup()
    ages = {p.name: p.meta.creation_timestamp for p in sim.world.pods() if p.labels.get("app") == "worker"}
    sim.deployments.scale("Deployment/shop/worker", 2)
    sim.engine.run_until(sim.engine.start + 5)
    gone = [p.name for p in sim.world.pods() if p.labels.get("app") == "worker" and p.is_terminating]
    assert len(gone) == 1
    assert ages[gone[0]] == max(ages.values())


def test_the_whole_path_from_a_dump_file_to_two_settings_side_by_side(tmp_path, dump, capsys):
    """The README's three commands: dump -> `scenario from-cluster` -> `simulate --compare`,
    here with a load drop added to the exported scenario."""
    from kubetide.cli.main import main

    cluster, tonight, out = tmp_path / "cluster.yaml", tmp_path / "tonight.yaml", tmp_path / "out"
    cluster.write_text(yaml.safe_dump(dump))
    assert main(["scenario", "from-cluster", str(cluster), "--out", str(tonight)]) == 0
    document = yaml.safe_load(tonight.read_text())
    document["spec"]["events"] = [WEB_DROP]
    document["spec"]["duration"] = "40m"
    tonight.write_text(yaml.safe_dump(document))
    fast = "fast:scale-down-unneeded-time=3m,scale-down-delay-after-add=3m"
    args = ["simulate", str(tonight), "--out", str(out), "--no-report", "--json", "--compare", "ours:"]
    assert main([*args, "--compare", fast]) == 0
    capsys.readouterr()
    compared = json.loads((out / "compare.json").read_text())
    assert [s["name"] for s in compared["settings"]] == ["ours", "fast"]
    ours, quick = (json.loads((out / name / "summary.json").read_text()) for name in ("ours", "fast"))
    for summary in (ours, quick):
        assert summary["nodes"]["initial"] == 12 and summary["invariants"] == ZERO
        assert summary["scale_down"]["drained_removed"] > 0
    assert quick["scale_down"]["first_removal_at"] < ours["scale_down"]["first_removal_at"]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("source", ["realistic", "plan-cluster.yaml"])
def test_the_allow_list_changes_nothing_the_simulation_computes(source, dump, exported):
    """The export keeps only the fields the simulator reads (sim/spec/export.py): the same scenario
    with each object as the dump has it, every field kept (images, probes, env, annotations,
    managedFields...), simulates to the same summary, through a load drop (and, in the realistic
    dump, an HPA and a CronJob)."""
    if source == "realistic":
        events = [WEB_DROP]
    else:
        dump = yaml.safe_load((EXAMPLES / source).read_text())
        exported = export_scenario([dump], source, name="tonight")
        events = [
            {"at": "10m", "scale": {"kind": "Deployment", "namespace": "shop", "name": "web", "replicas": 1}}
        ]
    document = yaml.safe_load(exported[0])
    whole = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in dump["items"]}
    full = copy.deepcopy(document)
    full["spec"]["objects"] = []
    for obj in document["spec"]["objects"]:
        meta = obj["metadata"]
        original = copy.deepcopy(whole[(obj["kind"], meta.get("namespace"), meta["name"])])
        original["metadata"]["labels"] = meta.get("labels", {})  # nodes: the renamed group's label
        full["spec"]["objects"].append(original)
    for dropped in ("imagePullPolicy", "terminationMessagePath"):
        assert dropped in yaml.safe_dump(full) and dropped not in exported[0]

    summaries = []
    for text in (exported[0], yaml.safe_dump(full)):
        summary = Simulation(scenario_from(text, events=events, duration="30m")).run().summary
        del summary["wall_seconds"]
        summaries.append(summary)
    assert summaries[0] == summaries[1]
    assert summaries[0]["scale_down"]["drained_removed"] > 0  # the run did something to compare
