"""Finding a ReplicaSet's pods and related pods in loaded manifests (used by `kubetide downscale`)."""

from __future__ import annotations

import textwrap

import pytest
import yaml

from kubetide.errors import UserError
from kubetide.model import load_documents
from kubetide.workloads.owners import find_targets, resolve_owner


def manifests(text: str):
    return load_documents(list(yaml.safe_load_all(textwrap.dedent(text))), "test.yaml")


def pod_doc(name, owner_kind, owner, template_hash=None, namespace="default", node="n1", deleting=False):
    labels = f"labels: {{pod-template-hash: '{template_hash}'}}" if template_hash else "labels: {}"
    deletion = 'deletionTimestamp: "2026-11-22T10:00:00Z"' if deleting else ""
    return f"""
---
kind: Pod
metadata:
  name: {name}
  namespace: {namespace}
  {labels}
  {deletion}
  ownerReferences: [{{kind: {owner_kind}, name: {owner}, controller: true}}]
spec: {{nodeName: {node}, containers: [{{name: c}}]}}
status: {{phase: Running}}
"""


def rs_doc(name, deployment=None, namespace="default"):
    owner = (
        f"ownerReferences: [{{kind: Deployment, name: {deployment}, controller: true}}]" if deployment else ""
    )
    return f"""
---
kind: ReplicaSet
metadata:
  name: {name}
  namespace: {namespace}
  {owner}
spec:
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c}}]}}
"""


def by_name(targets):
    return {t.name: t for t in targets}


def test_replicaset_objects_name_the_deployment():
    m = manifests(
        rs_doc("web-new", "web")
        + rs_doc("web-old", "web")
        + pod_doc("a", "ReplicaSet", "web-new")
        + pod_doc("b", "ReplicaSet", "web-new")
        + pod_doc("c", "ReplicaSet", "web-old")
        + pod_doc("d", "ReplicaSet", "web-old", deleting=True)
    )
    targets = by_name(find_targets(m))
    new = targets["web-new"]
    assert (new.deployment, new.controller.source) == ("web", "ReplicaSet object")
    assert [p.name for p in new.pods] == ["a", "b"]
    assert sorted(p.name for p in new.related) == ["a", "b", "c", "d"]
    assert new.siblings == ["web-old"]
    assert [p.name for p in targets["web-old"].inactive] == ["d"]


def test_without_objects_the_pod_template_hash_names_the_deployment():
    m = manifests(
        pod_doc("a", "ReplicaSet", "web-7f9c", "7f9c")
        + pod_doc("b", "ReplicaSet", "web-6d4b", "6d4b")
        + pod_doc("c", "ReplicaSet", "api-6d4b", "6d4b")
        + pod_doc("d", "ReplicaSet", "plain")
    )
    targets = by_name(find_targets(m))
    assert targets["web-7f9c"].deployment == "web"
    assert targets["web-7f9c"].controller.source == "pod-template-hash label"
    assert sorted(p.name for p in targets["web-7f9c"].related) == ["a", "b"]
    assert targets["api-6d4b"].deployment == "api" and targets["api-6d4b"].siblings == []
    assert targets["plain"].deployment is None and targets["plain"].related == []  # no controller: none


def test_a_replicaset_object_without_a_controller_is_standalone_even_with_the_hash_label():
    m = manifests(rs_doc("web-7f9c") + pod_doc("a", "ReplicaSet", "web-7f9c", "7f9c"))
    target = by_name(find_targets(m))["web-7f9c"]
    assert target.deployment is None


def test_replication_controllers_rank_too():
    m = manifests(pod_doc("a", "ReplicationController", "legacy") + pod_doc("b", "StatefulSet", "db"))
    assert [t.label for t in find_targets(m)] == ["ReplicationController/default/legacy"]
    assert resolve_owner(m, "rc/legacy").name == "legacy"
    assert resolve_owner(m, None).name == "legacy"


def test_same_name_in_two_namespaces_needs_the_namespace():
    m = manifests(pod_doc("a", "ReplicaSet", "web-1") + pod_doc("b", "ReplicaSet", "web-1", namespace="prod"))
    with pytest.raises(UserError, match="found in namespaces default, prod; write KIND/NAMESPACE/NAME"):
        resolve_owner(m, "ReplicaSet/web-1")
    assert resolve_owner(m, "ReplicaSet/prod/web-1").namespace == "prod"


def test_a_deployment_with_one_active_replicaset_resolves_to_it():
    m = manifests(
        rs_doc("web-new", "web")
        + rs_doc("web-old", "web")
        + pod_doc("a", "ReplicaSet", "web-new")
        + pod_doc("d", "ReplicaSet", "web-old", deleting=True)
    )
    assert resolve_owner(m, "deploy/web").name == "web-new"
    assert resolve_owner(m, None).name == "web-new"
