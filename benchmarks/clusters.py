"""Pieces of the benchmark clusters that several benchmarks share."""

from __future__ import annotations


def node_agent_daemonset() -> dict:
    """A small DaemonSet on every node, as every real cluster has (logging, CNI, metrics)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "node-agent", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": "node-agent"}},
            "template": {
                "metadata": {"labels": {"app": "node-agent"}},
                "spec": {
                    "containers": [
                        {"name": "agent", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
                    ]
                },
            },
        },
    }
