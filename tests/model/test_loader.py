import json
import textwrap

import pytest

from kubetide.errors import ManifestError
from kubetide.model import load_file, load_files
from kubetide.model.loader import load_documents, resolve_priorities


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


POD = """
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default}
spec:
  containers:
  - name: app
    resources: {requests: {cpu: 250m, memory: 64Mi}}
"""


def test_single_document(tmp_path):
    m = load_file(write(tmp_path, "pod.yaml", POD))
    assert [p.key for p in m.pods] == ["default/web-1"]
    assert m.pods[0].requests == {"cpu": 250, "memory": 64 * 2**20, "pods": 1}


def test_multi_document_and_list_and_json(tmp_path):
    multi = write(tmp_path, "multi.yaml", POD + "---\n" + POD.replace("web-1", "web-2"))
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "kind": "Node",
                "metadata": {"name": "n1"},
                "status": {"allocatable": {"cpu": "2", "pods": "10"}},
            },
            {"kind": "NodeList", "items": [{"kind": "Node", "metadata": {"name": "n2"}}]},
        ],
    }
    as_json = write(tmp_path, "list.json", json.dumps(listed))
    m = load_files([multi, as_json])
    assert [p.name for p in m.pods] == ["web-1", "web-2"]
    assert [n.name for n in m.nodes] == ["n1", "n2"]
    assert m.nodes[0].allocatable == {"cpu": 2000, "pods": 10}


def test_unknown_kinds_are_skipped_with_one_warning(tmp_path):
    text = (
        POD
        + "---\nkind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: b}\n---\nkind: Ingress\nmetadata: {name: c}\n"
    )
    m = load_file(write(tmp_path, "c.yaml", text))
    assert len(m.pods) == 1
    assert m.warnings == [f"{tmp_path / 'c.yaml'}: skipped unknown kinds: Ingress, Service (2)"]


def test_invalid_quantity_names_file_item_and_field(tmp_path):
    listed = {
        "kind": "List",
        "items": [{"kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(3)]
        + [
            {
                "kind": "Pod",
                "metadata": {"name": "web-1", "namespace": "default"},
                "spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "abc"}}}]},
            }
        ],
    }
    path = write(tmp_path, "cluster.yaml", json.dumps(listed))
    with pytest.raises(ManifestError) as err:
        load_file(path)
    assert str(err.value) == (
        f'{path}: items[3] (Pod default/web-1): spec.containers[0].resources.requests.cpu: invalid quantity "abc"'
    )


@pytest.mark.parametrize(
    ("snippet", "fragment"),
    [
        (
            "kind: Pod\nmetadata: {namespace: x}\nspec: {containers: [{name: a}]}",
            "metadata.name: required field is missing",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: []}",
            "spec.containers: a pod needs at least one container",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a}], tolerations: [{operator: Maybe}]}",
            'unknown toleration operator "Maybe"',
        ),
        (
            "kind: Node\nmetadata: {name: n}\nspec: {taints: [{key: k, effect: Sometimes}]}",
            'spec.taints[0].effect: unknown taint effect "Sometimes"',
        ),
        (
            "kind: PodDisruptionBudget\nmetadata: {name: b}\nspec: {minAvailable: 1, maxUnavailable: 1}",
            "cannot both be set",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, resources: {requests: {cpu: '-1'}}}]}",
            "must be non-negative",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: a, resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}}]}",
            "less than or equal",
        ),
        (
            "kind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: gold, containers: [{name: a}]}",
            'unknown PriorityClass "gold"',
        ),
        ("kind: Pod\nmetadata: {name: p\nspec: {}", "invalid YAML"),
        ("- just\n- a list\n", "expected a Kubernetes object"),
        ("metadata: {name: p}\n", "kind: required field is missing"),
        (
            "kind: Deployment\nmetadata: {name: d}\nspec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: c}}, spec: {containers: [{name: x}]}}}",
            "selector does not match",
        ),
    ],
)
def test_malformed_objects_raise_clear_errors(tmp_path, snippet, fragment):
    path = write(tmp_path, "bad.yaml", snippet)
    with pytest.raises(ManifestError) as err:
        load_file(path) if "priorityClassName" not in snippet else load_files([path])
    assert fragment in str(err.value)
    assert str(err.value).startswith(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(ManifestError, match="no such file"):
        load_file(tmp_path / "nope.yaml")


def test_priority_from_class_and_global_default(tmp_path):
    text = """
    kind: PriorityClass
    metadata: {name: high}
    value: 1000
    ---
    kind: PriorityClass
    metadata: {name: normal}
    value: 10
    globalDefault: true
    ---
    kind: Pod
    metadata: {name: a}
    spec: {priorityClassName: high, containers: [{name: c}]}
    ---
    kind: Pod
    metadata: {name: b}
    spec: {containers: [{name: c}]}
    ---
    kind: Pod
    metadata: {name: c}
    spec: {priority: 7, priorityClassName: high, containers: [{name: c}]}
    ---
    kind: Pod
    metadata: {name: d}
    spec: {priorityClassName: system-node-critical, containers: [{name: c}]}
    """
    m = load_files([write(tmp_path, "p.yaml", text)])
    assert [p.priority for p in m.pods] == [1000, 10, 7, 2_000_001_000]


def test_workloads_parse_templates(tmp_path):
    text = """
    kind: Deployment
    metadata: {name: web, namespace: shop}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}
    """
    m = load_file(write(tmp_path, "d.yaml", text))
    (deploy,) = m.workloads
    assert (deploy.kind, deploy.key, deploy.replicas) == ("Deployment", "Deployment/shop/web", 3)
    assert deploy.template.prototype.requests["cpu"] == 1000
    pod = deploy.template.instantiate("web-x", "shop", "uid-1", deploy.owner_reference(), created=5.0)
    assert (pod.key, pod.labels, pod.controller.kind) == ("shop/web-x", {"app": "web"}, "Deployment")


def test_priority_classes_learnt_from_admitted_pods(tmp_path):
    """kubectl dumps have no PriorityClass objects; admitted pods carry the class's value."""
    text = """
    kind: Pod
    metadata: {name: a}
    spec: {priority: 500, priorityClassName: gold, containers: [{name: c}]}
    ---
    kind: Deployment
    metadata: {name: web}
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {priorityClassName: gold, containers: [{name: c}]}
    ---
    kind: Deployment
    metadata: {name: batch}
    spec:
      selector: {matchLabels: {app: batch}}
      template:
        metadata: {labels: {app: batch}}
        spec: {priorityClassName: bronze, containers: [{name: c}]}
    """
    m = load_files([write(tmp_path, "dump.yaml", text)])
    assert [w.template.prototype.priority for w in m.workloads] == [500, 0]
    assert any("unknown PriorityClass bronze" in w for w in m.warnings)


def test_a_pod_naming_an_unknown_priority_class_is_named_with_its_field():
    pod = {
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "shop"},
        "spec": {"priorityClassName": "gold", "containers": [{"name": "a"}]},
    }
    manifests = load_documents([pod], "dump.yaml")
    with pytest.raises(ManifestError) as raised:
        resolve_priorities(manifests, "dump.yaml")
    assert str(raised.value).startswith(
        "dump.yaml: Pod shop/p: spec.priorityClassName: unknown PriorityClass"
    )
