"""Crane's NodeQOS and AvoidanceAction objects as the agent tests write them: actions without a
cool-down (each sample may act) and rules of one metric watermark each."""

from __future__ import annotations

API = "ensurance.crane.io/v1alpha1"


def avoidance_action(name: str, **spec: object) -> dict:
    return {
        "apiVersion": API,
        "kind": "AvoidanceAction",
        "metadata": {"name": name},
        "spec": {"coolDownSeconds": 0, **spec},
    }


def rule(name: str, action: str, metric: str, value: int) -> dict:
    """A NodeQOS rule: `action` when `metric` is over `value`."""
    return {"name": name, "actionName": action, "metricRule": {"name": metric, "value": value}}


def node_qos(name: str, *rules: dict) -> dict:
    return {"apiVersion": API, "kind": "NodeQOS", "metadata": {"name": name}, "spec": {"rules": list(rules)}}
