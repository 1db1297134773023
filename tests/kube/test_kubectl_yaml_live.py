"""What `kubectl get -o yaml` really prints goes through yaml-rs, and gives what PyYAML gives.

The fast path (model/yaml_chunks.py) was built for kubectl's YAML: go-yaml quotes every string a
YAML reader could take for another type. This checks it on kubectl's own output from the real
control plane, with values chosen to be ambiguous and the metadata kubectl adds itself
(managedFields, last-applied-configuration as a block scalar)."""

from __future__ import annotations

import io
import json
import re
import subprocess

import pytest
from test_deploy_rbac import kubectl

from kubetide.model import load_file, stream, yaml_chunks
from kubetide.model.loader import load_documents, parse_text, read_text, yaml_loader

pytestmark = pytest.mark.controlplane

LABEL_VALUE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
AMBIGUOUS = [
    "097370e3",
    "0755",
    "yes",
    "on",
    "1e3",
    "2026-11-01",
    "0x1F",
    "1:20",
    "null",
    "~",
    "",
    "08",
    ".5",
]


def run_kubectl(kube, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(
        [kubectl(), f"--kubeconfig={kube.control_plane.kubeconfig_path}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_kubectl_yaml_takes_the_fast_path_and_reads_as_pyyaml_reads_it(kube, tmp_path, monkeypatch):
    node = "yaml-node"
    labels = {f"ambiguous-{i}": value for i, value in enumerate(AMBIGUOUS) if LABEL_VALUE.fullmatch(value)}
    kube.create_fake_node(node, labels=labels)
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"pod-{i}",
                "namespace": kube.namespace,
                "labels": {"pod-template-hash": value} if LABEL_VALUE.fullmatch(value) else {},
                "annotations": {"note": f"line one\nline two, {value}\n", "json": json.dumps({"v": value})},
            },
            "spec": {
                "nodeName": node,
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.example/app:1.0",
                        "args": [value, f"--flag={value}"],
                        "env": [{"name": "VALUE", "value": value}],
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ],
            },
        }
        for i, value in enumerate(AMBIGUOUS)
    ]
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": kube.namespace},
        "data": {
            **{f"k{i}": value for i, value in enumerate(AMBIGUOUS)},
            "file.yaml": "items:\n- a: yes\n  managedFields: 0755\n\n\n",
            "trailing-spaces": "x  \n  y",
        },
    }
    run_kubectl(
        kube,
        "apply",
        "-f",
        "-",
        stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [*pods, config]}),
    )
    dump = tmp_path / "dump.yaml"
    dump.write_text(
        run_kubectl(
            kube, "get", "nodes,pods,configmaps", "-n", kube.namespace, "-o", "yaml", "--show-managed-fields"
        )
    )
    text = dump.read_text()
    assert "last-applied-configuration: |" in text and "managedFields:" in text

    by_pyyaml = []
    original = yaml_chunks._by_pyyaml
    monkeypatch.setattr(
        yaml_chunks, "_by_pyyaml", lambda t, loader: by_pyyaml.append(t) or original(t, loader)
    )
    head = text[: 1 << 20]
    fast = list(yaml_chunks.members(io.StringIO(text[len(head) :]), head, yaml_loader()))
    events = list(stream.members(io.StringIO(text), yaml_loader()))
    assert repr(fast) == repr(events)  # repr: True is not 1, nor "1" 1
    # kubectl quoted every ambiguous value, so every item went to yaml-rs but the ConfigMap: the
    # screen cannot tell its YAML text (`managedFields: 0755` in a block scalar) from the YAML around.
    assert len(by_pyyaml) == 1 and "kind: ConfigMap" in by_pyyaml[0], yaml_chunks.suspect_lines(
        yaml_chunks.distinct_lines(text)
    )

    loaded = load_file(dump)
    reference = load_documents(parse_text(read_text(dump), str(dump)), str(dump))
    assert loaded.nodes == reference.nodes and loaded.pods == reference.pods
    assert {p.name for p in loaded.pods} == {f"pod-{i}" for i in range(len(AMBIGUOUS))}
