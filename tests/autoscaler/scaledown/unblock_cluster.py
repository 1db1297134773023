"""Small clusters as kubectl dumps, `kubetide plan --json` on them, and a suggested change applied
to the dump the way a user would apply it (the dump, the groups file or a flag), for the unblock
tests: a suggestion is true when applying it makes the node removable in a fresh plan."""

from __future__ import annotations

import contextlib
import copy
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kubetide.cli.main import main

GROUP_LABEL = "kubetide.io/node-group"
OLD = "2026-11-20T00:00:00Z"
NOW = "2026-11-26T12:00:00Z"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


@dataclass
class Cluster:
    """A dump (kubectl List items), node groups (GROUPS.yaml entries) and --set flags."""

    items: list[dict] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    flags: dict[str, str] = field(default_factory=dict)

    def node(
        self, name: str, group: str = "general", cpu: str = "4", memory: str = "16Gi", **annotations: str
    ):
        meta: dict = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, GROUP_LABEL: group},
            "creationTimestamp": OLD,
        }
        if annotations:
            meta["annotations"] = dict(annotations)
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": meta,
                "spec": {"providerID": f"kubetide://{group}/{name}"},
                "status": {
                    "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                    "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": OLD}],
                },
            }
        )

    def group(self, name: str, min_size: int, max_size: int = 20) -> None:
        self.groups.append({"name": name, "minSize": min_size, "maxSize": max_size, "price": 0.1})

    def pod(
        self,
        name: str,
        node: str | None,
        cpu: str = "500m",
        *,
        app: str | None = None,
        namespace: str = "prod",
        annotations: dict | None = None,
        volumes: list | None = None,
        anti_affinity: bool = False,
        memory: str = "1Gi",
    ) -> None:
        meta: dict = {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{namespace}-{name}",
            "creationTimestamp": OLD,
        }
        if namespace == "kube-system":
            meta["creationTimestamp"] = NOW  # young: kube-system pods block for an hour
        if app is not None:
            meta["labels"] = {"app": app}
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": app,
                    "uid": f"uid-rs-{app}",
                    "controller": True,
                }
            ]
        if annotations:
            meta["annotations"] = dict(annotations)
        spec: dict = {
            "containers": [
                {"name": "c", "image": "app", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
            ],
        }
        if node is not None:  # None: pending, unschedulable so far (the scheduler may bind it)
            spec["nodeName"] = node
        if volumes:
            spec["volumes"] = volumes
        if anti_affinity and app is not None:
            spec["affinity"] = {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": app}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        self.items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": meta,
                "spec": spec,
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": OLD},
                        {"type": "Ready", "status": "True", "lastTransitionTime": OLD},
                    ],
                }
                if node is not None
                else {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "lastTransitionTime": OLD,
                        }
                    ],
                },
            }
        )

    def replicaset(
        self, app: str, replicas: int, namespace: str = "prod", *, deployment: bool = False
    ) -> None:
        """A ReplicaSet named `app` selecting app=`app`; with `deployment`, owned by a Deployment
        of the same name (RollingUpdate, the default 25% surge), as surge-before-evict needs."""
        selector = {"matchLabels": {"app": app}}
        template = {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c"}]}}
        meta: dict = {"name": app, "namespace": namespace, "uid": f"uid-rs-{app}", "creationTimestamp": OLD}
        if deployment:
            meta["ownerReferences"] = [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": app,
                    "uid": f"uid-deploy-{app}",
                    "controller": True,
                }
            ]
            self.items.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": app,
                        "namespace": namespace,
                        "uid": f"uid-deploy-{app}",
                        "creationTimestamp": OLD,
                    },
                    "spec": {"replicas": replicas, "selector": selector, "template": template},
                    "status": {
                        "replicas": replicas,
                        "readyReplicas": replicas,
                        "availableReplicas": replicas,
                    },
                }
            )
        self.items.append(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": meta,
                "spec": {"replicas": replicas, "selector": selector, "template": template},
                "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas},
            }
        )

    def pdb(self, app: str, budget: dict, *, healthy: int, expected: int, namespace: str = "prod") -> None:
        """A budget with the status the disruption controller writes for `healthy` of `expected`
        pods Ready."""
        key, value = next(iter(budget.items()))
        desired = expected - value if key == "maxUnavailable" else value
        self.items.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": app, "namespace": namespace, "uid": f"uid-pdb-{app}", "generation": 1},
                "spec": {"selector": {"matchLabels": {"app": app}}, **budget},
                "status": {
                    "disruptionsAllowed": max(0, healthy - desired),
                    "currentHealthy": healthy,
                    "desiredHealthy": desired,
                    "expectedPods": expected,
                    "observedGeneration": 1,
                },
            }
        )

    # -- plan ---------------------------------------------------------------------------------------
    def plan(self, tmp: Path) -> dict:
        return json.loads(self.plan_text(tmp, "--json"))

    def plan_text(self, tmp: Path, *more: str) -> str:
        dump, groups = tmp / "cluster.yaml", tmp / "groups.yaml"
        dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": self.items}))
        groups.write_text(yaml.safe_dump({"nodeGroups": self.groups}))
        argv = ["plan", str(dump), "--node-groups", str(groups), "--now", NOW, *more]
        for flag, value in self.flags.items():
            argv += ["--set", f"{flag}={value}"]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code == 0, err.getvalue()
        return out.getvalue()

    # -- applying a suggestion ----------------------------------------------------------------------
    def applied(self, changes: list[dict]) -> Cluster:
        """A copy of the cluster with the changes (plan --json's `unblock.changes`) made, as a user
        would make them; the disruption controller's status follows a budget's spec."""
        cluster = copy.deepcopy(self)
        for change in changes:
            cluster._apply(change)
        return cluster

    def _apply(self, change: dict) -> None:
        kind, subject, what = change["kind"], change["subject"], change["change"]
        if kind in ("safe-to-evict", "safe-to-evict-local-volumes"):
            namespace, name = subject.removeprefix("Pod ").split("/")
            pod = self._find("Pod", name, namespace)
            pod["metadata"].setdefault("annotations", {}).update(yaml.safe_load(what))
        elif kind == "pdb":
            namespace, name = subject.removeprefix("PodDisruptionBudget ").split("/")
            pdb = self._find("PodDisruptionBudget", name, namespace)
            field_name, value = what.split(" ")
            old = pdb["spec"][field_name]
            more = int(value) - old if field_name == "maxUnavailable" else old - int(value)
            pdb["spec"][field_name] = int(value)
            pdb["status"]["disruptionsAllowed"] += more
            pdb["status"]["desiredHealthy"] -= more
        elif kind == "flag":
            flag, value = what.split("=", 1)
            self.flags[flag] = value
        elif kind == "add-node":
            group = subject.removeprefix("node group ")
            template = next(
                i for i in self.items if i["kind"] == "Node" and i["metadata"]["labels"][GROUP_LABEL] == group
            )
            added = sum(
                1 for i in self.items if i["kind"] == "Node" and i["metadata"]["name"].startswith("new-")
            )
            for i in range(int(what.removeprefix("+").split()[0])):  # "+2 nodes"
                node = copy.deepcopy(template)
                name = f"new-{added + i + 1}"
                node["metadata"]["name"] = name
                node["metadata"]["labels"]["kubernetes.io/hostname"] = name
                node["spec"]["providerID"] = f"kubetide://{group}/{name}"
                # A new node is kept by scale-down-delay-after-add and its unneeded time: the window
                # in which the blocked node's pods move to it.
                node["metadata"]["annotations"] = {SCALE_DOWN_DISABLED: "true"}
                self.items.append(node)
        elif kind == "node-group-min-size":
            group = next(g for g in self.groups if g["name"] == subject.removeprefix("node group "))
            group["minSize"] = int(what.removeprefix("minSize: "))
        elif kind == "node-annotation":
            node = self._find("Node", subject.removeprefix("Node "), None)
            node["metadata"].get("annotations", {}).pop(SCALE_DOWN_DISABLED, None)
        else:
            raise AssertionError(f"unknown change kind {kind}")

    def _find(self, kind: str, name: str, namespace: str | None) -> dict:
        return next(
            i
            for i in self.items
            if i["kind"] == kind
            and i["metadata"]["name"] == name
            and i["metadata"].get("namespace") == namespace
        )
