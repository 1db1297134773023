"""Objects the API server takes but whose controller never acts as written (issue 36): a CronJob
whose schedule names a date that never comes, an HPA whose metrics the simulator has no source
for. Each is one warning naming the object; schedules that do fire, however rarely, are not."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from kubetide.model import load_documents
from kubetide.model.cronjob import parse_schedule
from kubetide.model.timestamps import LATEST_TIME
from kubetide.model.warnings import controller_warnings

RESOURCE = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}},
}
PODS = {
    "type": "Pods",
    "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}
EXTERNAL = {
    "type": "External",
    "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "3"}},
}
STORAGE = {
    "type": "Resource",
    "resource": {"name": "ephemeral-storage", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
}


def hpa(*metrics: dict) -> dict:
    spec: dict = {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5}
    if metrics:
        spec["metrics"] = list(metrics)
    return {"kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"}, "spec": spec}


def cronjob(schedule: str) -> dict:
    pod = {"restartPolicy": "Never", "containers": [{"name": "c"}]}
    return {
        "kind": "CronJob",
        "metadata": {"name": "report", "namespace": "shop"},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": pod}}}},
    }


def warnings_of(obj: dict) -> list[str]:
    return controller_warnings([("spec.objects", load_documents([obj], "s.yaml"))], "s.yaml")


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (hpa(), None),  # no metrics: cpu at 80%, as the API server defaults it
        (hpa(RESOURCE), None),
        (hpa(PODS), "the simulator has no source for Pods metrics: it never scales Deployment shop/web"),
        (
            hpa(EXTERNAL, PODS),
            "the simulator has no source for External and Pods metrics: it never scales Deployment shop/web",
        ),
        (hpa(STORAGE), "no source for Resource ephemeral-storage metrics: it never scales"),
        (hpa(RESOURCE, PODS), "it scales Deployment shop/web up on its Resource metrics but never down"),
        (cronjob("0 0 31 2 *"), 'spec.schedule "0 0 31 2 *" names a date that never comes'),
        (cronjob("0 0 30 2 *"), "names a date that never comes"),
        (cronjob("0 0 31 4,6,9,11 *"), "names a date that never comes"),
        (cronjob("0 0 29 2 *"), None),  # every fourth year
        (cronjob("0 0 31 2 1"), None),  # day-of-month or day-of-week: every Monday
        (cronjob("@yearly"), None),
        (cronjob("@every 90m"), None),
    ],
)
def test_a_controller_that_never_acts_is_one_warning_naming_it(obj, expected):
    found = warnings_of(obj)
    if expected is None:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0], found
        assert found[0].startswith(f"s.yaml: spec.objects: {obj['kind']} shop/")


def test_a_schedule_with_no_next_time_is_infinitely_far():
    never = parse_schedule("0 0 31 2 *")
    assert not never.fires and never.next_after(0.0, "UTC") == math.inf
    hourly = parse_schedule("0 * * * *")
    start = datetime(2026, 11, 1, 0, 30, tzinfo=UTC).timestamp()
    assert hourly.next_after(start, "UTC") == start + 1800
    # From the last second of year 9999 there is no next hour: not an OverflowError.
    assert hourly.next_after(LATEST_TIME, "UTC") == math.inf
    assert hourly.most_recent(LATEST_TIME, LATEST_TIME + 10, "Europe/Paris") == (None, 0)
