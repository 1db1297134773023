"""plan's words for a kube-system pod say the blocking-system-pod-distruption-timeout in force."""

import json

import pytest

from kubetide.cli import main as cli_main

NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "labels": {"kubetide.io/node-group": "g"},
        "creationTimestamp": "2026-01-01T00:00:00Z",
    },
    "status": {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "coredns-1",
        "namespace": "kube-system",
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "coredns", "uid": "u", "controller": True}
        ],
    },
    "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("flags", "said"),
    [((), "younger than 1h"), (("--set", "blocking-system-pod-distruption-timeout=24h"), "younger than 24h")],
)
def test_the_timeout_in_force_is_said(tmp_path, capsys, flags, said):
    dump = tmp_path / "cluster.json"
    dump.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [NODE, POD]}))
    # 30 minutes after the pod started: it blocks under either timeout.
    code = cli_main.main(["plan", str(dump), "--now", "2026-01-01T00:30:00Z", "--json", *flags])
    out = capsys.readouterr().out
    assert code == 0
    why = json.loads(out)["scale_down"]["nodes"]["n1"]["why"]
    assert why.startswith("a kube-system pod") and said in why, why
