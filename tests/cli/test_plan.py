"""`kubetide plan`: the examples, the --json shape, every blocking reason in the human output,
timers, --set, --now, the pending-pod rule, and one-line errors with exit code 2.

Expectations are derived from the example dump's content (its pods, annotations, PDBs and
requests), which examples/plan-cluster.yaml's header lays out node by node.
"""

import json
import textwrap
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.drainability import SAFE_TO_EVICT
from kubetide.autoscaler.scaledown.planning.eligibility import SCALE_DOWN_DISABLED_ANNOTATION
from kubetide.model import load_files
from kubetide.model.reader import parse_time

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = str(EXAMPLES / "plan-cluster.yaml")
GROUPS = str(EXAMPLES / "plan-node-groups.yaml")
NOW = "2026-03-10T14:00:00Z"  # the newest timestamp in plan-cluster.yaml


@pytest.fixture
def kubetide(monkeypatch, capsys):
    monkeypatch.setattr(cli_main, "COMMANDS", ("plan",))

    def run(*argv):
        code = cli_main.main(["plan", *map(str, argv)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def dump():
    return load_files([CLUSTER])


def workload_pods(dump, node):
    """The pods on a node other than DaemonSet pods (those never block a drain)."""
    return [p for p in dump.pods if p.node_name == node and not p.is_daemonset]


def the_pod(dump, node, predicate):
    (pod,) = [p for p in workload_pods(dump, node) if predicate(p)]
    return pod.key


def plan_json(kubetide, *argv):
    code, out, err = kubetide(CLUSTER, "--json", *argv)
    assert code == 0 and err == "", err
    return json.loads(out)


# -- shape ----------------------------------------------------------------------------------------


def test_json_shape_is_exactly_the_documented_one(kubetide):
    result = plan_json(kubetide, "--node-groups", GROUPS)
    assert list(result) == ["apiVersion", "kind", "now", "now_source", "unhealthy", "scale_up", "scale_down"]
    assert (result["apiVersion"], result["kind"], result["now"]) == (
        "kubetide.io/v1alpha1",
        "PlanResult",
        NOW,
    )
    up, down = result["scale_up"], result["scale_down"]
    assert list(up) == ["pending", "options", "chosen", "not_helped", "increases", "why"]
    assert all(list(o) == ["node_group", "node_count", "pods"] for o in up["options"])
    assert list(up["chosen"]) == ["node_group", "node_count"]
    assert list(down) == [
        "nodes",
        "candidate_set",
        "risky",
        "waiting_for_budget",
        "surge_before_evict",
        "to_delete",
        "destinations",
        "estimated_seconds_to_last_removal",
        "replacement_ready_from",
        "drains",
        "unfinished",
        "held",
    ]
    assert list(down["to_delete"]) == ["empty", "drain"]
    for entry in down["nodes"].values():
        assert list(entry) == [
            "status",
            "empty",
            "utilization",
            "reason",
            "blocking_pod",
            "blocking_pods",
            "estimated_drain_seconds",
            "drain_estimate",
            "unblock",
            "node_group",
            "why",
        ]
        assert entry["why"]
        assert entry["status"] in ("removable", "unremovable", "being_deleted")
        assert entry["blocking_pod"] is None or list(entry["blocking_pod"])[:2] == ["pod", "reason"]
        assert entry["blocking_pod"] == (entry["blocking_pods"][0] if entry["blocking_pods"] else None)
        assert (entry["unblock"] is None) == (entry["status"] != "unremovable")


def test_unblock_budget_zero_answers_no_node_and_changes_nothing_else(kubetide):
    code, out, _ = kubetide(CLUSTER, "--node-groups", GROUPS, "--now", NOW, "--json")
    assert code == 0
    answered = json.loads(out)["scale_down"]
    assert any(e["unblock"] for e in answered["nodes"].values())  # the example has answers to skip
    code, out, _ = kubetide(CLUSTER, "--node-groups", GROUPS, "--now", NOW, "--json", "--unblock-budget", "0")
    assert code == 0
    unanswered = json.loads(out)["scale_down"]
    assert all(e["unblock"] is None for e in unanswered["nodes"].values())
    for entry in answered["nodes"].values():
        entry["unblock"] = None
    assert unanswered == answered


@pytest.mark.parametrize(
    ("value", "problem"),
    [("-1s", "must not be negative"), ("10", 'invalid duration "10"'), ("soon", 'invalid duration "soon"')],
)
def test_unblock_budget_refuses_what_is_not_a_duration(kubetide, capsys, value, problem):
    with pytest.raises(SystemExit) as exit_:
        kubetide(CLUSTER, f"--unblock-budget={value}")
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert not out
    line = err.splitlines()[0]  # the next line only points at --help
    assert "--unblock-budget" in line and problem in line


# -- the example, node by node -----------------------------------------------------------------------


def test_every_blocking_reason_follows_from_the_dump(kubetide, dump):
    nodes = plan_json(kubetide, "--node-groups", GROUPS)["scale_down"]["nodes"]
    now = parse_time(NOW)

    def blocked(node, pod_key, reason, pdb=None):
        assert nodes[node]["status"] == "unremovable"
        assert nodes[node]["reason"] == "BlockedByPod"
        blocking = {"pod": pod_key, "reason": reason} | ({"pdb": pdb} if pdb else {})
        assert nodes[node]["blocking_pod"] == blocking
        assert nodes[node]["blocking_pods"][0] == blocking

    pdb_names = {(p.meta.namespace, p.meta.name) for p in dump.pdbs}
    system = the_pod(dump, "general-b2", lambda p: p.namespace == "kube-system")
    (system_pod,) = [p for p in dump.pods if p.key == system]
    timeout = AutoscalerOptions().blocking_system_pod_distruption_timeout
    assert now - system_pod.meta.creation_timestamp <= timeout
    assert not any(pdb.matches(system_pod) for pdb in dump.pdbs)
    blocked("general-b2", system, "UnmovableKubeSystemPod")

    local = the_pod(dump, "general-b3", lambda p: any(v.is_local_storage for v in p.volumes))
    blocked("general-b3", local, "LocalStorageRequested")

    unsafe = the_pod(dump, "general-c1", lambda p: p.annotations.get(SAFE_TO_EVICT) == "false")
    blocked("general-c1", unsafe, "NotSafeToEvictAnnotation")

    bare = the_pod(dump, "general-c3", lambda p: p.controller is None)
    blocked("general-c3", bare, "NotReplicated")

    (checkout_pdb,) = [p for p in dump.pdbs if p.meta.name == "checkout"]
    assert checkout_pdb.disruptions_allowed == 0 and ("shop", "checkout") in pdb_names
    guarded = the_pod(dump, "general-a3", checkout_pdb.matches)
    blocked("general-a3", guarded, "NotEnoughPdb", "shop/checkout")

    (c2,) = [n for n in dump.nodes if n.name == "general-c2"]
    assert c2.annotations[SCALE_DOWN_DISABLED_ANNOTATION] == "true"
    assert nodes["general-c2"]["reason"] == "ScaleDownDisabledAnnotation"

    assert nodes["legacy-worker-1"]["reason"] == "NotAutoscaled"
    # GROUPS.yaml gives ingress minSize 1 and the dump has one ingress node.
    assert nodes["ingress-a1"]["reason"] == "NodeGroupMinSizeReached"


def test_utilization_is_requests_over_allocatable(kubetide, dump):
    nodes = plan_json(kubetide)["scale_down"]["nodes"]
    for node in dump.nodes:
        pods = [p for p in dump.pods if p.node_name == node.name]
        expected = max(
            sum(p.requests.get(r, 0) for p in pods) / node.allocatable[r] for r in ("cpu", "memory")
        )
        assert nodes[node.name]["utilization"] == pytest.approx(expected, abs=1e-4)
        if expected >= 0.5:  # the default scale-down-utilization-threshold
            assert nodes[node.name]["reason"] in ("NotUnderutilized", "NotAutoscaled")
    busy = {name for name, entry in nodes.items() if entry["reason"] == "NotUnderutilized"}
    assert busy == {"general-a1", "general-c4", "highmem-a1"}


def test_removable_nodes_and_what_would_be_deleted(kubetide, dump):
    down = plan_json(kubetide, "--node-groups", GROUPS)["scale_down"]
    assert workload_pods(dump, "general-b1") == []  # DaemonSet pods only
    assert down["nodes"]["general-b1"] == {
        "status": "removable",
        "empty": True,
        "utilization": down["nodes"]["general-b1"]["utilization"],
        "reason": None,
        "blocking_pod": None,
        "blocking_pods": [],
        "estimated_drain_seconds": None,
        "drain_estimate": None,
        "unblock": None,
        "node_group": "general",
        "why": "empty: deleted without a drain",
    }
    assert down["nodes"]["general-a2"]["status"] == "removable"
    assert not down["nodes"]["general-a2"]["empty"]
    assert sorted(down["candidate_set"]) == ["general-a2", "general-b1"]
    assert down["to_delete"] == {"empty": ["general-b1"], "drain": ["general-a2"]}
    moved = {p.key for p in workload_pods(dump, "general-a2")}
    assert set(down["destinations"]) == moved
    # Destinations are never candidates themselves.
    assert not set(down["destinations"].values()) & set(down["candidate_set"])


def test_inferred_groups_have_min_zero_so_the_ingress_pod_needs_a_home(kubetide):
    nodes = plan_json(kubetide)["scale_down"]["nodes"]
    # The ingress controller selects and tolerates only the ingress group, whose one node it is on.
    assert nodes["ingress-a1"]["reason"] == "NoPlaceToMovePods"


def test_scale_up_grows_highmem_for_the_trino_workers(kubetide, dump):
    up = plan_json(kubetide, "--node-groups", GROUPS)["scale_up"]
    pending = sorted(p.key for p in dump.pods if not p.node_name)
    assert sorted(up["pending"]) == pending
    trino = [k for k in pending if k.startswith("analytics/trino-worker-")]
    # 24Gi each; a highmem node (about 59Gi allocatable) takes two: three pods need two nodes.
    assert up["chosen"] == {"node_group": "highmem", "node_count": 2}
    assert up["options"] == [{"node_group": "highmem", "node_count": 2, "pods": trino}]
    (genome,) = set(pending) - set(trino)
    assert list(up["not_helped"]) == [genome]
    assert "Insufficient memory" in up["not_helped"][genome]


def test_human_output_answers_why_for_each_node(kubetide, dump):
    code, out, err = kubetide(CLUSTER, "--node-groups", GROUPS)
    assert code == 0 and err == ""
    assert out.splitlines()[0] == f"13 nodes, 45 bound pods; now = {NOW} (newest timestamp in the input)"
    names = {node.name for node in dump.nodes}
    rows = {line.split()[0]: line for line in out.splitlines() if line and line.split()[0] in names}
    expect = {
        "general-b2": ["BlockedByPod", "(UnmovableKubeSystemPod)", "kube-system"],
        "general-b3": ["BlockedByPod", "(LocalStorageRequested)", "local storage"],
        "general-c1": ["BlockedByPod", "(NotSafeToEvictAnnotation)", 'safe-to-evict: "false"'],
        "general-c3": ["BlockedByPod", "(NotReplicated)", "no controller"],
        "general-a3": ["BlockedByPod", "(NotEnoughPdb)", "PodDisruptionBudget"],
        "general-c2": ["ScaleDownDisabledAnnotation", "scale-down-disabled"],
        "general-a1": ["NotUnderutilized", "cpu utilization 0.65 >= threshold 0.5"],
        "highmem-a1": ["NotUnderutilized", "memory utilization"],
        "ingress-a1": ["NodeGroupMinSizeReached", "min size 1"],
        "legacy-worker-1": ["NotAutoscaled"],
        "general-b1": ["removable (empty)"],
        "general-a2": ["removable"],
    }
    for node, words in expect.items():
        for word in words:
            assert word in rows[node], (node, word)
    for node in ("general-b2", "general-b3", "general-c1", "general-c3", "general-a3"):
        blocking = next(w for w in rows[node].split() if "/" in w)
        assert blocking in {p.key for p in workload_pods(dump, node)}
    assert "would delete: general-b1 (empty), general-a2 (drain)" in out
    assert "growing highmem by 2 nodes to 3 (max 6), chosen by least-waste, for 3 pods" in out
    assert "not helped: analytics/genome-assembly-" in out


# -- timers, --now, --set -----------------------------------------------------------------------------


def test_with_timers_running_nothing_is_deleted(kubetide):
    down = plan_json(kubetide, "--no-expire-timers")["scale_down"]
    assert down["to_delete"] == {"empty": [], "drain": []}
    assert sorted(down["candidate_set"]) == ["general-a2", "general-b1"]
    for name in down["candidate_set"]:
        assert down["nodes"][name]["reason"] == "NotUnneededLongEnough"
    code, out, _ = kubetide(CLUSTER, "--no-expire-timers")
    assert code == 0 and "would delete: nothing" in out
    assert "scale-down-delay-after-add (10m)" in out  # this loop's scale-up pauses scale-down


def test_now_decides_whether_the_kube_system_pod_is_young(kubetide):
    later = "2026-03-10T15:00:00Z"  # metrics-server was created at 13:40: now older than an hour
    down = plan_json(kubetide, "--now", later)["scale_down"]
    assert down["nodes"]["general-b2"]["status"] == "removable"
    assert "general-b2" in down["to_delete"]["drain"]


def test_set_flags_change_the_plan(kubetide):
    down = plan_json(kubetide, "--set", "skip-nodes-with-local-storage=false")["scale_down"]
    assert down["nodes"]["general-b3"]["reason"] != "BlockedByPod"
    down = plan_json(kubetide, "--set", "max-scale-down-parallelism=1")["scale_down"]
    assert down["to_delete"] == {"empty": ["general-b1"], "drain": []}  # empty nodes first
    code, out, _ = kubetide(CLUSTER, "--set", "max-scale-down-parallelism=1")
    assert code == 0
    assert "waiting for the parallelism budgets: general-a2 (ScaleDownThrottled)" in out
    down = plan_json(kubetide, "--set=--scale-down-utilization-threshold=0.05")["scale_down"]
    assert down["candidate_set"] == ["general-b1"]  # 4%: the only node below 5%


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--set", "scale-down-unneded-time=5m"],
            "--set scale-down-unneded-time: unknown flag (did you mean scale-down-unneeded-time?)",
        ),
        (
            ["--set", "scale-down-unneeded-time"],
            "--set scale-down-unneeded-time: expected FLAG=VALUE (e.g. --set scale-down-unneeded-time=5m)",
        ),
        (
            ["--set", "scale-down-utilization-threshold=2"],
            "--set scale-down-utilization-threshold: must be between 0 and 1, got '2'",
        ),
        (["--set", "expander=leastwaste"], '--set expander: unknown expander "leastwaste" (did you mean'),
        (["--now", "yesterday"], "--now: expected an RFC 3339 time"),
        (["--node-groups", "missing.yaml"], "missing.yaml: no such file"),
        (["--node", "general-b22"], "--node general-b22: "),
    ],
)
def test_bad_input_is_one_line_and_exit_2(kubetide, argv, message):
    code, out, err = kubetide(CLUSTER, *argv)
    assert code == 2 and out == ""
    assert err.startswith(f"kubetide: error: {message}")
    assert err.count("\n") == 1


def test_groups_file_errors_name_the_field(kubetide, tmp_path):
    path = tmp_path / "groups.yaml"
    path.write_text("nodeGroups:\n  - name: general\n    maxSiz: 3\n")
    code, _, err = kubetide(CLUSTER, "--node-groups", path)
    assert code == 2
    assert err == f'kubetide: error: {path}: nodeGroups[0].maxSiz: unknown field (did you mean "maxSize"?)\n'
    path.write_text("nodeGroups:\n  - name: spot\n    maxSize: 3\n")
    code, _, err = kubetide(CLUSTER, "--node-groups", path)
    assert code == 2
    assert err.startswith(
        f'kubetide: error: {path}: nodeGroups[0].template: required: no node of group "spot"'
    )


def test_missing_cluster_file(kubetide, tmp_path):
    code, out, err = kubetide(tmp_path / "nope.yaml")
    assert code == 2 and out == "" and err.endswith("nope.yaml: no such file\n")


# -- the other example ---------------------------------------------------------------------------


def test_plan_works_on_the_schedule_example(kubetide):
    example = str(EXAMPLES / "cluster.yaml")
    code, out, err = kubetide(example, "--json")
    assert code == 0 and err == ""
    result = json.loads(out)
    dump = load_files([example])
    assert set(result["scale_down"]["nodes"]) == {n.name for n in dump.nodes}
    # Node groups come from eks.amazonaws.com/nodegroup: every node is autoscaled.
    assert all(e["reason"] != "NotAutoscaled" for e in result["scale_down"]["nodes"].values())
    assert "monitoring/prometheus-0" in result["scale_up"]["not_helped"]
    code, out, err = kubetide(example)
    assert (
        code == 0 and "node group general: 10 nodes, min 0, max 100 (from eks.amazonaws.com/nodegroup)" in out
    )


# -- pending pods and controllers, on small dumps --------------------------------------------------

SMALL = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {kubetide.io/node-group: g}, creationTimestamp: "2026-01-01T00:00:00Z"}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: {kubetide.io/node-group: g}, creationTimestamp: "2026-01-01T00:00:00Z"}
  status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: v1
  kind: Pod
  metadata:
    name: big
    creationTimestamp: "2026-01-01T01:00:00Z"
    ownerReferences: [{kind: ReplicaSet, name: big-5d8c7b9f6, controller: true}]
  spec:
    nodeName: n1
    containers: [{name: c, resources: {requests: {cpu: "4"}}}]
  status: {phase: Running}
"""


def pending_pod(name, cpu, condition=""):
    status = "status: {phase: Pending}"
    if condition:
        status = f"status: {{phase: Pending, conditions: [{condition}]}}"
    return textwrap.dedent(
        f"""\
        - apiVersion: v1
          kind: Pod
          metadata:
            name: {name}
            creationTimestamp: "2026-01-01T02:00:00Z"
            ownerReferences: [{{kind: ReplicaSet, name: web-5d8c7b9f6, controller: true}}]
          spec:
            containers: [{{name: c, resources: {{requests: {{cpu: "{cpu}"}}}}}}]
          {status}
        """
    )


def write_small(tmp_path, *extra):
    path = tmp_path / "cluster.yaml"
    path.write_text(SMALL + "".join(textwrap.indent(e, "") for e in extra))
    return path


def test_untried_pending_pods_fit_existing_nodes_first(kubetide, tmp_path):
    path = write_small(
        tmp_path,
        pending_pod("fits", "1"),  # no PodScheduled condition: not tried yet, fits n2
        pending_pod("too-big", "3500m", "{type: PodScheduled, status: 'False', reason: Unschedulable}"),
        pending_pod("gated", "1", "{type: PodScheduled, status: 'False', reason: SchedulingGated}"),
    )
    code, out, err = kubetide(path, "--json")
    assert code == 0
    # The dump has no ReplicaSet objects although pods name them: controller checks are off.
    assert "ReplicaSet objects the dump does not contain" in err
    result = json.loads(out)
    up, down = result["scale_up"], result["scale_down"]
    # "fits" goes to n2 (n1 is full); "too-big" then fits nowhere (3.5 > 4 - 1) and needs a node.
    assert up["pending"] == ["default/too-big"]
    assert up["chosen"] == {"node_group": "g", "node_count": 1}
    assert "default/gated" not in up["not_helped"]  # not the autoscaler's business
    # Scale-down sees "fits" on n2, where the scheduler will put it: n2 is not empty, and its pod
    # has nowhere else to go.
    assert down["nodes"]["n2"]["empty"] is False
    assert down["nodes"]["n2"]["reason"] == "NoPlaceToMovePods"
    assert down["nodes"]["n2"]["utilization"] == 0.25
    code, out, _ = kubetide(path)
    assert "1 pending pod fit existing or upcoming nodes: default/fits on n2" in out
    assert "(1 pending pod without a PodScheduled condition taken as unschedulable: default/fits)" in out


def test_controllers_in_the_dump_are_checked(kubetide, tmp_path):
    # With ReplicaSets in the dump, a pod whose ReplicaSet is not among them blocks its node.
    objects = textwrap.dedent(
        """\
        - apiVersion: apps/v1
          kind: ReplicaSet
          metadata: {name: big-5d8c7b9f6}
          spec:
            replicas: 1
            selector: {matchLabels: {app: big}}
            template:
              metadata: {labels: {app: big}}
              spec: {containers: [{name: c}]}
        - apiVersion: v1
          kind: Pod
          metadata:
            name: orphan
            ownerReferences: [{kind: ReplicaSet, name: gone-6c9d8f7b5, controller: true}]
          spec:
            nodeName: n2
            containers: [{name: c, resources: {requests: {cpu: 100m}}}]
          status: {phase: Running}
        """
    )
    code, out, err = kubetide(write_small(tmp_path, objects), "--json")
    assert code == 0 and err == ""
    n2 = json.loads(out)["scale_down"]["nodes"]["n2"]
    assert n2["blocking_pod"] == {"pod": "default/orphan", "reason": "ControllerNotFound"}


def test_an_unhealthy_cluster_is_reported(kubetide, tmp_path):
    nodes = []
    for i in range(5):
        ready = "True" if i == 0 else "False"
        nodes.append(
            textwrap.dedent(
                f"""\
                - apiVersion: v1
                  kind: Node
                  metadata: {{name: n{i}, labels: {{kubetide.io/node-group: g}}, creationTimestamp: "2026-01-01T00:00:00Z"}}
                  status:
                    allocatable: {{cpu: "4", memory: 8Gi}}
                    conditions: [{{type: Ready, status: "{ready}", lastTransitionTime: "2026-01-02T00:00:00Z"}}]
                """
            )
        )
    path = tmp_path / "cluster.yaml"
    path.write_text("apiVersion: v1\nkind: List\nitems:\n" + "".join(nodes))
    # 4 of 5 unready: more than ok-total-unready-count (3) and max-total-unready-percentage (45).
    message = "cluster unhealthy: 4 of 5 registered nodes are unready; the autoscaler would stop this loop"
    code, out, err = kubetide(path, "--json")
    assert code == 0 and message in err and json.loads(out)["scale_down"]["nodes"]
    code, out, err = kubetide(path)
    assert code == 0 and f"warning: {message}" in out


# -- readable at 100 columns, --node, summary counts -------------------------------------------


def large_dump(path: Path, copies: int) -> Path:
    """The example dump with every Node and Pod copied `copies` times under new names: a large
    cluster with every blocking reason many times over (workloads, PDBs and ConfigMaps once)."""
    import yaml

    doc = yaml.safe_load(Path(CLUSTER).read_text())
    items = []
    for item in doc["items"]:
        if item["kind"] not in ("Node", "Pod"):
            items.append(item)
            continue
        for n in range(copies):
            copy = json.loads(json.dumps(item))
            meta = copy["metadata"]
            meta["name"] = f"{meta['name']}-{n}"
            meta["uid"] = f"{meta['uid']}-{n}"
            if item["kind"] == "Node":
                meta["labels"]["kubernetes.io/hostname"] = meta["name"]
                if "providerID" in copy.get("spec", {}):
                    copy["spec"]["providerID"] += f"-{n}"
            elif copy["spec"].get("nodeName"):
                copy["spec"]["nodeName"] = f"{copy['spec']['nodeName']}-{n}"
            items.append(copy)
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def large_groups(path: Path, copies: int) -> Path:
    """plan-node-groups.yaml with room for `copies` times the nodes."""
    import yaml

    groups = yaml.safe_load(Path(GROUPS).read_text())
    for group in groups["nodeGroups"]:
        group["maxSize"] *= copies
    path.write_text(yaml.safe_dump(groups))
    return path


def words(text: str) -> list[str]:
    return text.split()


@pytest.fixture(scope="module")
def large_cluster(tmp_path_factory) -> tuple[Path, Path]:
    """The example copied 12 times (156 nodes) and its groups, written once for the module."""
    directory = tmp_path_factory.mktemp("large")
    return large_dump(directory / "large.yaml", 12), large_groups(directory / "groups.yaml", 12)


@pytest.mark.parametrize("large", [False, True], ids=["example", "156-node copy"])
def test_the_table_fits_100_columns_and_drops_no_word(kubetide, monkeypatch, request, large):
    dump_file, groups = request.getfixturevalue("large_cluster") if large else (CLUSTER, GROUPS)
    monkeypatch.setenv("COLUMNS", "1000")
    code, wide, _ = kubetide(dump_file, "--node-groups", groups)
    assert code == 0
    for columns in (100, 80, 140):
        monkeypatch.setenv("COLUMNS", str(columns))
        code, narrow, _ = kubetide(dump_file, "--node-groups", groups)
        assert code == 0
        too_long = [line for line in narrow.splitlines() if len(line) > columns]
        assert not too_long, too_long[:3]
        # The same words in the same order: wrapped between words, nothing cut or left out. A
        # narrow table puts each node's "why" under its row, so only the header's "why" goes.
        expected = words(wide)
        if len(words(narrow)) == len(expected) - 1:
            expected.remove("why")
        assert words(narrow) == expected


def test_the_summary_counts_come_first(kubetide, large_cluster):
    dump_file, groups = large_cluster
    plan = json.loads(kubetide(dump_file, "--node-groups", groups, "--json")[1])
    down, up = plan["scale_down"], plan["scale_up"]
    code, out, _ = kubetide(dump_file, "--node-groups", groups)
    assert code == 0
    lines = out.splitlines()
    summary = "\n".join(lines[1 : lines.index("Scale-up")])
    statuses = [n["status"] for n in down["nodes"].values()]
    removable = statuses.count("removable")
    empty = sum(1 for n in down["nodes"].values() if n["status"] == "removable" and n["empty"])
    deleted = len(down["to_delete"]["empty"]) + len(down["to_delete"]["drain"])
    assert (
        f"{len(statuses)} nodes: {removable} removable ({empty} empty), "
        f"{statuses.count('unremovable')} unremovable; would delete {deleted}" in summary
    )
    reasons: dict[str, int] = {}
    for node in down["nodes"].values():
        if node["status"] == "unremovable":
            reasons[node["reason"]] = reasons.get(node["reason"], 0) + 1
    flat = " ".join(summary.split())
    for reason, count in reasons.items():
        assert f"{reason} {count}" in flat, reason
    assert "BlockedByPod 60 (" in flat and "NotEnoughPdb 12" in flat
    chosen = up["chosen"]
    assert f"scale-up: {chosen['node_group']} +{chosen['node_count']};" in flat
    assert f"{len(up['not_helped'])} not helped" in flat


def test_node_flag_explains_the_chosen_nodes_in_full(kubetide, dump):
    code, out, err = kubetide(
        CLUSTER, "--node-groups", GROUPS, "--node", "general-b2", "--node", "general-a2"
    )
    assert code == 0 and err == ""
    assert "node general-b2: unremovable: BlockedByPod" in out
    assert "node general-a2: removable" in out and "would delete it now (drain)" in out
    for node in ("general-b2", "general-a2"):
        for pod in dump.pods:
            if pod.node_name == node:
                assert f"    {pod.key}" in out, pod.key
    blocker = the_pod(dump, "general-b2", lambda p: p.namespace == "kube-system")
    assert f"{blocker}: blocks the drain (UnmovableKubeSystemPod)" in out
    for pod in workload_pods(dump, "general-a2"):
        assert f"{pod.key}: would move to general-c4" in out
    # Only the chosen nodes: no table.
    assert "general-c3" not in out and not any(
        line.startswith("node ") and "status" in line for line in out.splitlines()
    )
