"""The clusterapi cloud provider on a real control plane.

Cluster API itself is not run: the CRDs come from tests/kube/data (installed once per session and
left installed, since no other test looks at them), and `MachineController` below plays the
MachineDeployment and MachineSet controllers and an infrastructure provider: replicas become
Machines and KWOK Nodes, and when replicas drop, Machines annotated for deletion go first, as
Cluster API's MachineSet controller does.
"""

from __future__ import annotations

import logging
import secrets
import threading
from pathlib import Path

import pytest
import yaml
from controlplane import KubeTestContext, wait_until
from kubetide_process import FAST_FLAGS, Kubetide, apps, create_deployment, running, scale, wait_running

from kubetide.autoscaler.ports import ActionError, InstanceState
from kubetide.cloud.clusterapi import (
    DELETE_MACHINE_ANNOTATION,
    PRICE_ANNOTATION,
    AutoDiscovery,
    ClusterApiCloudProvider,
    parse_auto_discovery,
)
from kubetide.cloud.prices import bundled_table
from kubetide.cloud.providers import clusterapi_cloud_factory
from kubetide.errors import UserError
from kubetide.kube.client import ApiError, KubeClient, connect
from kubetide.kube.view import KubeClusterView

CRDS = Path(__file__).parent / "data" / "clusterapi-crds.yaml"
API = "cluster.x-k8s.io/v1beta1"
MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
CLUSTER = "test-cluster"


@pytest.fixture(scope="module")
def crds(control_plane) -> None:
    client = connect(str(control_plane.kubeconfig_path), qps=100, burst=100)
    for crd in yaml.safe_load_all(CRDS.read_text()):
        try:
            client.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)
        except ApiError as exc:
            if exc.status != 409:  # installed by an earlier module of this session
                raise
    for plural in ("machinedeployments", "machinesets", "machines"):
        wait_until(lambda plural=plural: _served(client, plural), timeout=30, what=f"{plural} served")
    client.close()


def _served(client: KubeClient, plural: str) -> bool:
    try:
        client.request("GET", f"/apis/{API}/{plural}")
    except ApiError:
        return False
    return True


def _path(namespace: str, plural: str, name: str = "") -> str:
    return f"/apis/{API}/namespaces/{namespace}/{plural}" + (f"/{name}" if name else "")


def _owner(obj: dict, kind: str) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref["kind"] == kind:
            return ref["name"]
    return None


class MachineController:
    """Cluster API's controllers, as much of them as the provider relies on (see the module doc).

    `deleted` records each Machine removed when replicas dropped and whether it carried the
    delete-machine annotation at that moment; `failing` names MachineSets whose Machines fail to
    provision (no Node, a failureReason), as an infrastructure stockout would make them.
    """

    def __init__(self, kube: KubeTestContext):
        self.kube = kube
        self.namespace = kube.namespace
        self.client = connect(str(kube.control_plane.kubeconfig_path), qps=1000, burst=1000)
        self.deleted: list[tuple[str, bool]] = []
        self.failing: set[str] = set()
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="machine-controller", daemon=True)

    def start(self) -> MachineController:
        self._thread.start()
        self.kube.add_cleanup(self.stop)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.reconcile()
            except ApiError as exc:  # a conflict with kubetide's writes: next round
                if exc.status != 409:
                    self.errors.append(str(exc))
            self._stop.wait(0.1)

    def _list(self, plural: str) -> list[dict]:
        return self.client.request("GET", _path(self.namespace, plural)).get("items") or []

    def reconcile(self) -> None:
        deployments = {d["metadata"]["name"]: d for d in self._list("machinedeployments")}
        sets = {s["metadata"]["name"]: s for s in self._list("machinesets")}
        for name, deployment in deployments.items():
            replicas = deployment["spec"].get("replicas", 0)
            machine_set = sets.get(f"{name}-ms")
            if machine_set is None:
                self._create_set(deployment)
            elif machine_set["spec"].get("replicas") != replicas:
                machine_set["spec"]["replicas"] = replicas
                self.client.request(
                    "PUT", _path(self.namespace, "machinesets", f"{name}-ms"), body=machine_set
                )
        sets = {s["metadata"]["name"]: s for s in self._list("machinesets")}
        machines = self._list("machines")
        for name, machine_set in sets.items():
            owner = deployments.get(_owner(machine_set, "MachineDeployment") or "")
            mine = [m for m in machines if _owner(m, "MachineSet") == name]
            self._reconcile_set(machine_set, owner or machine_set, mine)

    def _create_set(self, deployment: dict) -> None:
        meta = deployment["metadata"]
        body = {
            "apiVersion": API,
            "kind": "MachineSet",
            "metadata": {
                "name": f"{meta['name']}-ms",
                "labels": {"cluster.x-k8s.io/deployment-name": meta["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": API,
                        "kind": "MachineDeployment",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": {
                "clusterName": CLUSTER,
                "replicas": deployment["spec"].get("replicas", 0),
                "template": deployment["spec"].get("template") or {},
            },
        }
        self.client.request("POST", _path(self.namespace, "machinesets"), body=body)

    def _reconcile_set(self, machine_set: dict, source: dict, machines: list[dict]) -> None:
        wanted = machine_set["spec"].get("replicas", 0)
        if len(machines) < wanted:
            for _ in range(wanted - len(machines)):
                self._create_machine(machine_set, source)
            return
        excess = len(machines) - wanted
        if excess <= 0:
            return
        marked = [
            m for m in machines if DELETE_MACHINE_ANNOTATION in (m["metadata"].get("annotations") or {})
        ]
        newest_first = sorted(
            (m for m in machines if m not in marked),
            key=lambda m: m["metadata"]["creationTimestamp"],
            reverse=True,
        )
        for machine in (marked + newest_first)[:excess]:
            name = machine["metadata"]["name"]
            self.deleted.append((name, machine in marked))
            try:
                self.client.request("DELETE", f"/api/v1/nodes/{name}")
            except ApiError as exc:
                if exc.status != 404:
                    raise
            self.client.request("DELETE", _path(self.namespace, "machines", name))

    def _create_machine(self, machine_set: dict, source: dict) -> None:
        set_name = machine_set["metadata"]["name"]
        name = f"{set_name}-{secrets.token_hex(3)}"
        machine = self.client.request(
            "POST",
            _path(self.namespace, "machines"),
            body={
                "apiVersion": API,
                "kind": "Machine",
                "metadata": {
                    "name": name,
                    "labels": {"cluster.x-k8s.io/set-name": set_name},
                    "ownerReferences": [
                        {
                            "apiVersion": API,
                            "kind": "MachineSet",
                            "name": set_name,
                            "uid": machine_set["metadata"]["uid"],
                            "controller": True,
                        }
                    ],
                },
                "spec": {"clusterName": CLUSTER},
                "status": {"phase": "Provisioning"},
            },
        )
        if set_name in self.failing:
            machine["status"] = {
                "phase": "Failed",
                "failureReason": "InsufficientCapacity",
                "failureMessage": "no capacity in the zone",
            }
        else:
            self._create_node(name, source)
            machine["spec"]["providerID"] = f"kwok://{name}"
            machine["status"] = {"phase": "Running", "nodeRef": {"kind": "Node", "name": name}}
        self.client.request("PUT", _path(self.namespace, "machines", name), body=machine)

    def _create_node(self, name: str, source: dict) -> None:
        """A Node as the infrastructure would boot it: the template's labels, the capacity the
        scale-from-zero annotations promise (else 2 cpu, 4Gi), Cluster API's Node annotations."""
        annotations = source["metadata"].get("annotations") or {}
        labels = dict(((source["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {})
        for pair in filter(None, annotations.get(CAPACITY + "labels", "").split(",")):
            key, _, value = pair.partition("=")
            labels[key] = value
        taints = []
        for item in filter(None, annotations.get(CAPACITY + "taints", "").split(",")):
            key_value, _, effect = item.rpartition(":")
            key, _, value = key_value.partition("=")
            taints.append({"key": key, "value": value, "effect": effect})
        resources = {
            "cpu": annotations.get(CAPACITY + "cpu", "2"),
            "memory": annotations.get(CAPACITY + "memory", "4Gi"),
            "pods": "110",
        }
        self.client.request(
            "POST",
            "/api/v1/nodes",
            body={
                "metadata": {
                    "name": name,
                    "labels": {"kubernetes.io/hostname": name, **labels},
                    "annotations": {
                        "kwok.x-k8s.io/node": "fake",
                        "cluster.x-k8s.io/machine": name,
                        "cluster.x-k8s.io/cluster-namespace": self.namespace,
                    },
                },
                "spec": {"providerID": f"kwok://{name}", "taints": taints},
                "status": {"allocatable": resources, "capacity": resources},
            },
        )


def machine_deployment(
    kube: KubeTestContext,
    name: str,
    replicas: int,
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> None:
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=100)
    client.request(
        "POST",
        _path(kube.namespace, "machinedeployments"),
        body={
            "apiVersion": API,
            "kind": "MachineDeployment",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {
                "clusterName": CLUSTER,
                "replicas": replicas,
                "selector": {"matchLabels": {"cluster.x-k8s.io/deployment-name": name}},
                "template": {"metadata": {"labels": {"pool": name, **(labels or {})}}, "spec": {}},
            },
        },
    )
    client.close()


def bounds(low: int, high: int) -> dict[str, str]:
    return {MIN: str(low), MAX: str(high)}


def replicas_of(kube: KubeTestContext, plural: str, name: str) -> int:
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=100)
    try:
        return client.request("GET", _path(kube.namespace, plural, name))["spec"].get("replicas", 0)
    finally:
        client.close()


def nodes_of(kube: KubeTestContext, pool: str) -> list:
    return kube.core.list_node(label_selector=f"pool={pool}").items


# -- flags -------------------------------------------------------------------------------------------


def synced_provider(
    kube: KubeTestContext, namespace: str
) -> tuple[KubeClient, KubeClusterView, ClusterApiCloudProvider]:
    """A cluster view and the Cluster API provider discovering `namespace`, both synced."""
    client = connect(str(kube.control_plane.kubeconfig_path), qps=100, burst=200)
    view = KubeClusterView(client)
    view.start()
    cloud = ClusterApiCloudProvider(
        client, view.snapshot, parse_auto_discovery([f"clusterapi:namespace={namespace}"])
    )
    cloud.start()
    kube.add_cleanup(view.stop)
    kube.add_cleanup(cloud.stop)
    assert not view.wait_for_sync(30) and not cloud.wait_for_sync(30)
    return client, view, cloud


def test_auto_discovery_flags_and_what_the_provider_refuses_before_any_call():
    assert parse_auto_discovery(["clusterapi:namespace=blue,clusterName=prod,owner=jim"]) == [
        AutoDiscovery("blue", "prod", (("owner", "jim"),))
    ]
    for spec, message in (
        ("asg:tag=k8s.io/cluster-autoscaler/enabled", "takes clusterapi:KEY=VALUE"),
        ("clusterapi:namespace", "expected KEY=VALUE, got 'namespace'"),
    ):
        with pytest.raises(UserError, match=message):
            parse_auto_discovery([spec])
    with pytest.raises(UserError, match="--node-groups is the kwok provider's"):
        clusterapi_cloud_factory([], "groups.yaml", 1.0)


# -- the provider, driven directly -----------------------------------------------------------------


def test_node_groups_instances_templates_and_scaling_through_the_scale_subresource(kube, crds):
    controller = MachineController(kube).start()
    ns = kube.namespace
    machine_deployment(kube, "workers", 2, bounds(1, 3))
    machine_deployment(kube, "plain", 1)  # no size annotations: not autoscaled
    machine_deployment(kube, "bad", 1, {MIN: "one", MAX: "3"})  # unreadable: not autoscaled
    machine_deployment(kube, "empty", 0, bounds(0, 3))  # at zero without capacity: not a group
    machine_deployment(
        kube,
        "zero",
        0,
        {
            **bounds(0, 4),
            CAPACITY + "cpu": "4",
            CAPACITY + "memory": "8Gi",
            CAPACITY + "ephemeral-disk": "100Gi",
            CAPACITY + "gpu-type": "nvidia.com/gpu",
            CAPACITY + "gpu-count": "2",
            CAPACITY + "labels": "tier=batch,disk=ssd",
            CAPACITY + "taints": "dedicated=batch:NoSchedule",
        },
        labels={"node-role.kubernetes.io/batch": ""},
    )
    machine_deployment(kube, "stockout", 1, bounds(0, 2))
    controller.failing.add("stockout-ms")
    wait_until(lambda: len(nodes_of(kube, "workers")) == 2 and nodes_of(kube, "plain"), what="initial nodes")

    _client, view, cloud = synced_provider(kube, ns)

    groups = {g.id: g for g in cloud.node_groups()}
    workers, zero, stockout = (groups[f"MachineDeployment/{ns}/{n}"] for n in ("workers", "zero", "stockout"))
    assert set(groups) == {workers.id, zero.id, stockout.id}
    assert (workers.min_size, workers.max_size, workers.target_size()) == (1, 3, 2)
    assert (zero.min_size, zero.max_size, zero.target_size()) == (0, 4, 0)

    # Instances are the Machines, by their Nodes' providerIDs; Nodes map back to their group.
    snapshot = view.snapshot()
    worker_nodes = sorted(
        (n for n in snapshot.nodes() if n.labels.get("pool") == "workers"), key=lambda n: n.name
    )
    assert sorted(i.id for i in workers.instances()) == sorted(n.provider_id for n in worker_nodes)
    assert all(i.state is InstanceState.RUNNING for i in workers.instances())
    assert all(cloud.node_group_for(n) is workers for n in worker_nodes)
    plain_node = next(n for n in snapshot.nodes() if n.labels.get("pool") == "plain")
    assert cloud.node_group_for(plain_node) is None
    # Before the Machine fails: a placeholder for the replica, then a Provisioning Machine.
    [failed] = wait_until(
        lambda: [i for i in (cloud.node_groups(), stockout.instances())[1] if i.error is not None],
        what="the stockout group's failed Machine",
    )
    assert failed.state is InstanceState.CREATING and failed.error is not None
    assert (failed.error.code, failed.error.message) == ("InsufficientCapacity", "no capacity in the zone")

    # Templates: a Node of the group when there is one, else the capacity annotations.
    template = workers.template_node()
    assert template.labels["pool"] == "workers" and "kubernetes.io/hostname" not in template.labels
    assert template.allocatable["cpu"] == 2000
    template = zero.template_node()
    assert template.allocatable["cpu"] == 4000 and template.allocatable["memory"] == 8 * 2**30
    assert template.allocatable["ephemeral-storage"] == 100 * 2**30
    assert template.allocatable["nvidia.com/gpu"] == 2 and template.allocatable["pods"] == 110
    assert {"tier": "batch", "disk": "ssd", "kubernetes.io/os": "linux"}.items() <= template.labels.items()
    assert "node-role.kubernetes.io/batch" in template.labels  # propagated by Cluster API
    assert "pool" not in template.labels  # not a label Cluster API propagates to Nodes
    assert [(t.key, t.value, t.effect) for t in template.taints] == [("dedicated", "batch", "NoSchedule")]

    # Scale-up: the scale subresource; the target moves at once, before the informer sees it.
    with pytest.raises(ActionError, match="max 3"):
        workers.increase_size(2)
    workers.increase_size(1)
    assert workers.target_size() == 3 and replicas_of(kube, "machinedeployments", "workers") == 3
    wait_until(lambda: len(nodes_of(kube, "workers")) == 3, what="a third worker node")

    # Three Machines and their three Nodes in the view: the view can see a Machine before its
    # Node, and only a Machine with a Node counts as registered below.
    def registered() -> bool:
        view.sync()
        cloud.node_groups()
        in_view = [n for n in view.snapshot().nodes() if n.labels.get("pool") == "workers"]
        return len(workers.instances()) == 3 and len(in_view) == 3

    wait_until(registered, what="3 instances with their Nodes in the view")

    # Targeted scale-down: that Machine is annotated before replicas drop, and it is the one to go.
    with pytest.raises(ActionError, match="3 Machines have Nodes"):
        workers.decrease_target_size(-1)
    view.sync()
    cloud.node_groups()
    chosen = view.snapshot().node(nodes_of(kube, "workers")[1].metadata.name)
    workers.delete_nodes([chosen])
    assert workers.target_size() == 2
    wait_until(
        lambda: chosen.name not in {n.metadata.name for n in nodes_of(kube, "workers")}, what="chosen gone"
    )
    assert controller.deleted == [(chosen.name, True)]
    assert len(nodes_of(kube, "workers")) == 2
    view.sync()
    cloud.node_groups()
    with pytest.raises(ActionError, match="below min 1"):
        workers.delete_nodes([view.snapshot().node(n.metadata.name) for n in nodes_of(kube, "workers")])
    assert not controller.errors


# -- `kubetide run --cloud-provider=clusterapi` end to end --------------------------------------------


def run_args(kube: KubeTestContext, name: str, *flags: str) -> list[str]:
    return [
        f"--kubeconfig={kube.control_plane.kubeconfig_path}",
        "--cloud-provider=clusterapi",
        f"--node-group-auto-discovery=clusterapi:namespace={kube.namespace},clusterName={CLUSTER}",
        "--address=127.0.0.1:0",
        f"--status-config-map-name={name}-status",
        "--leader-elect=false",
        *FAST_FLAGS,
        # A new Node is unready, then empty, until KWOK and the scheduler get to it (seconds on a
        # loaded machine): it must not be taken for an unneeded one meanwhile.
        "--scale-down-unready-time=60s",
        "--scale-down-delay-after-add=5s",
        *flags,
    ]


def test_run_grows_a_machine_deployment_to_its_max_then_removes_exactly_the_chosen_machines(
    kube, crds, tmp_path
):
    controller = MachineController(kube).start()
    machine_deployment(kube, "workers", 1, bounds(1, 3))
    machine_deployment(kube, "plain", 1)  # no size annotations: never scaled
    wait_until(lambda: nodes_of(kube, "workers") and nodes_of(kube, "plain"), what="the first nodes")
    # Two 900m pods per 2-cpu node: 8 pods want 4 workers, the max annotation allows 3.
    create_deployment(kube, "web", 8, "900m", node_selector={"pool": "workers"})
    create_deployment(kube, "other", 3, "900m", node_selector={"pool": "plain"})
    kubetide = Kubetide(kube, tmp_path, *run_args(kube, "capi-run")).start()

    wait_running(kube, "web", 6, timeout=60)
    assert replicas_of(kube, "machinedeployments", "workers") == 3, kubetide.log()
    kubetide.wait_loops(3)  # more loops: neither group may grow further
    assert replicas_of(kube, "machinedeployments", "workers") == 3
    assert replicas_of(kube, "machinedeployments", "plain") == 1
    assert len(running(kube, "other")) == 2  # the third stays pending: "plain" is not autoscaled

    # The load drops to one pod: two nodes are empty and go; min 1 keeps the third.
    scale(kube, "web", 1)
    wait_until(lambda: len(nodes_of(kube, "workers")) == 1, timeout=60, what="two workers removed")
    assert replicas_of(kube, "machinedeployments", "workers") == 1, kubetide.log()
    [survivor] = nodes_of(kube, "workers")
    [pod] = running(kube, "web")
    assert pod.spec.node_name == survivor.metadata.name
    # Every Machine removed carried the delete-machine annotation when replicas dropped.
    assert len(controller.deleted) == 2 and all(marked for _, marked in controller.deleted), (
        controller.deleted
    )
    assert kubetide.terminate() == 0
    assert "Traceback" not in kubetide.log() and not controller.errors


def test_run_scales_a_machine_deployment_up_from_zero_with_its_capacity_annotations(kube, crds, tmp_path):
    MachineController(kube).start()
    annotations = {
        **bounds(0, 3),
        CAPACITY + "cpu": "2",
        CAPACITY + "memory": "4Gi",
        CAPACITY + "labels": "tier=batch",
        CAPACITY + "taints": "dedicated=batch:NoSchedule",
    }
    machine_deployment(kube, "batch", 0, annotations)
    container = {
        "name": "pause",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": "900m", "memory": "64Mi"}},
    }
    toleration = {"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"}
    apps(kube).create_namespaced_deployment(
        kube.namespace,
        {
            "metadata": {"name": "jobs"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "jobs"}},
                "template": {
                    "metadata": {"labels": {"app": "jobs"}},
                    "spec": {
                        "containers": [container],
                        "nodeSelector": {"tier": "batch"},
                        "tolerations": [toleration],
                        "terminationGracePeriodSeconds": 0,
                    },
                },
            },
        },
    )
    kubetide = Kubetide(kube, tmp_path, *run_args(kube, "capi-zero", "--scale-down-enabled=false")).start()

    placed = wait_running(kube, "jobs", 3, timeout=60)
    assert replicas_of(kube, "machinedeployments", "batch") == 2, kubetide.log()
    assert {p.spec.node_name for p in placed} == {n.metadata.name for n in nodes_of(kube, "batch")}
    assert kubetide.terminate() == 0


# -- prices ---------------------------------------------------------------------------------------


def table_price(instance_type: str) -> float:
    guess = bundled_table().guess(instance_type)
    assert guess is not None
    return guess.price


INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def test_a_group_is_priced_by_its_annotation_else_its_instance_type_in_the_bundled_table(kube, crds, caplog):
    """The annotation first (the operator's own figure, even beside a known type); else the
    table's price of the type its Nodes carry, or at zero the type its capacity labels name.
    A type the table lacks, or none, is no price; so is a malformed annotation, with one warning
    naming the object and the annotation. Each is said once, however many loops ask."""
    MachineController(kube).start()
    ns = kube.namespace
    typed = {INSTANCE_TYPE: "c6i.large"}
    machine_deployment(kube, "annotated", 1, {**bounds(0, 3), PRICE_ANNOTATION: "0.05"}, labels=typed)
    machine_deployment(kube, "from-node", 1, bounds(0, 3), labels=typed)
    at_zero = {
        CAPACITY + "cpu": "2",
        CAPACITY + "memory": "8Gi",
        CAPACITY + "labels": f"{INSTANCE_TYPE}=m6i.large",
    }
    machine_deployment(kube, "from-capacity", 0, {**bounds(0, 3), **at_zero})
    machine_deployment(kube, "unknown", 1, bounds(0, 3), labels={INSTANCE_TYPE: "quantum.huge"})
    machine_deployment(kube, "untyped", 1, bounds(0, 3))
    machine_deployment(kube, "words", 1, {**bounds(0, 3), PRICE_ANNOTATION: "cheap"}, labels=typed)
    machine_deployment(kube, "negative", 1, {**bounds(0, 3), PRICE_ANNOTATION: "-1"}, labels=typed)
    wait_until(
        lambda: all(
            nodes_of(kube, n) for n in ("annotated", "from-node", "unknown", "untyped", "words", "negative")
        ),
        what="a node in every group at one replica",
    )

    _client, _view, cloud = synced_provider(kube, ns)
    with caplog.at_level(logging.WARNING, logger="kubetide.clusterapi"):
        for _ in range(3):  # three loops
            prices = {g.name: g.price_per_hour() for g in cloud.node_groups()}
    assert prices == {
        "annotated": 0.05,
        "from-node": table_price("c6i.large"),
        "from-capacity": table_price("m6i.large"),
        "unknown": None,
        "untyped": None,
        "words": None,
        "negative": None,
    }
    warnings = sorted(r.getMessage() for r in caplog.records)
    assert len(warnings) == 4, warnings
    group = f"MachineDeployment/{ns}/"
    assert warnings[0].startswith(f"MachineDeployment {ns}/negative: annotation {PRICE_ANNOTATION}: '-1'")
    assert warnings[1].startswith(
        f"MachineDeployment {ns}/words: annotation {PRICE_ANNOTATION}: 'cheap' is not a number"
    )
    assert warnings[2].startswith(f"{group}unknown: no price (instance type quantum.huge is not in")
    assert warnings[3].startswith(
        f"{group}untyped: no price (its Nodes and capacity labels annotation name no"
    )


def test_run_replaces_a_machine_deployment_node_by_one_of_a_cheaper_priced_group(kube, crds, tmp_path):
    """Cheaper-group replacement live on Cluster API: a pod alone on a large node fits no other
    node; one node of the small group (priced from its instance type, the large one by its
    annotation) stands in for it, launched and Ready before the large node is drained."""
    MachineController(kube).start()
    machine_deployment(
        kube,
        "large",
        1,
        {**bounds(0, 2), PRICE_ANNOTATION: "1.0", CAPACITY + "cpu": "8", CAPACITY + "memory": "16Gi"},
    )
    small = {
        CAPACITY + "cpu": "2",
        CAPACITY + "memory": "4Gi",
        CAPACITY + "labels": f"{INSTANCE_TYPE}=t3.medium",
    }
    machine_deployment(kube, "small", 0, {**bounds(0, 2), **small})
    wait_until(lambda: nodes_of(kube, "large"), what="the large node")
    [large] = nodes_of(kube, "large")
    create_deployment(kube, "web", 1, "500m")
    kubetide = Kubetide(kube, tmp_path, *run_args(kube, "capi-replace")).start()

    wait_until(lambda: not nodes_of(kube, "large"), timeout=120, what="the large node replaced")
    assert replicas_of(kube, "machinedeployments", "small") == 1, kubetide.log()
    [moved] = wait_until(lambda: running(kube, "web"), timeout=30, what="web running")
    assert moved.spec.node_name == nodes_of(kube, "small")[0].metadata.name
    events = kube.core.list_event_for_all_namespaces(
        field_selector=f"involvedObject.name={large.metadata.name}"
    )
    assert any(e.reason == "ScaleDownReplacing" for e in events.items), kubetide.log()
    assert kubetide.terminate() == 0
    assert "Traceback" not in kubetide.log()
