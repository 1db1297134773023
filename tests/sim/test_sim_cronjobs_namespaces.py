"""CronJobs (sim/runtime/cronjob.py) and namespace termination (sim/runtime/namespaces.py) in the simulator."""

from __future__ import annotations

import pytest
from sim_helpers import deployment, group, make_scenario, simulate

from kubetide.errors import ManifestError
from kubetide.model import load_documents
from kubetide.model.cronjob import parse_schedule
from kubetide.sim.runtime.simulation import NoAutoscaler
from kubetide.sim.spec.errors import ScenarioError

# 2026-01-01T00:00:00Z, a Thursday: the simulated clock's default start.
START = 1_767_225_600.0


def cronjob(name="report", schedule="*/10 * * * *", namespace="default", run="2m", status=None, **spec):
    body = {
        "schedule": schedule,
        "jobTemplate": {
            "spec": {
                "template": {
                    "metadata": {"labels": {"app": name}, "annotations": {"kubetide.io/run-duration": run}},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                    },
                }
            }
        },
        **spec,
    }
    obj = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }
    if status is not None:
        obj["status"] = status
    return obj


def created(sim):
    return [
        (e["time"], e["message"].removeprefix("Created job "))
        for e in sim.log.entries
        if e["reason"] == "SuccessfulCreate"
    ]


def run(objects, seconds, events=(), cluster=None):
    scenario = make_scenario(
        groups=[group(size=2)], objects=objects, events=list(events), duration=f"{seconds}s", cluster=cluster
    )
    sim = simulate(scenario, NoAutoscaler)
    sim.engine.run_until(sim.engine.start + seconds)
    return sim


def test_schedule_creates_jobs_named_by_their_minute_that_the_job_controller_runs():
    sim = run([cronjob()], 1800)
    minute = int(START // 60)
    assert created(sim) == [
        (600.0, f"report-{minute + 10}"),
        (1200.0, f"report-{minute + 20}"),
        (1800.0, f"report-{minute + 30}"),
    ]
    # each ran its 2 minutes and completed (the one started at 1 800 s has not yet)
    assert len(sim.jobs.completed_jobs) == 2
    assert sim.summary(0)["cronjobs"] == {"cronjobs": 1, "jobs_started": 3, "missed_schedules": 0}


def test_time_zone():
    """0 9 * * * in Asia/Tokyo (UTC+9) is midnight UTC: the first run is one day in; in UTC,
    9 hours in."""
    tokyo = run([cronjob(schedule="0 9 * * *", timeZone="Asia/Tokyo")], 86400)
    assert [t for t, _ in created(tokyo)] == [86400.0]
    utc = run([cronjob(schedule="0 9 * * *")], 86400)
    assert [t for t, _ in created(utc)] == [9 * 3600.0]
    # the cluster's zone stands in when the CronJob names none
    tokyo_cluster = run([cronjob(schedule="0 9 * * *")], 86400, cluster={"timeZone": "Asia/Tokyo"})
    assert [t for t, _ in created(tokyo_cluster)] == [86400.0]


def test_concurrency_policies():
    """Jobs of 15 min every 10 min: Allow runs them side by side, Forbid skips a start while one
    runs (and starts the missed time when it ends), Replace deletes the running one."""
    allow = run([cronjob(run="15m")], 1800)
    assert [t for t, _ in created(allow)] == [600.0, 1200.0, 1800.0]
    forbid = run([cronjob(run="15m", concurrencyPolicy="Forbid")], 1800)
    # 600: starts; 1200: active -> skipped; the job ends at ~1 500 and the 1 200 time starts then
    times = [t for t, _ in created(forbid)]
    assert times[0] == 600.0 and 1200.0 not in times and len(times) == 2 and 1500 < times[1] < 1600
    replace = run([cronjob(run="15m", concurrencyPolicy="Replace")], 1800)
    deleted = [e for e in replace.log.entries if e["reason"] == "SuccessfulDelete"]
    assert [t for t, _ in created(replace)] == [600.0, 1200.0, 1800.0] and len(deleted) == 2


def test_starting_deadline_and_adopted_last_schedule():
    """A dump's CronJob last ran an hour before the start: its most recent missed time (0 s) starts
    at once. One at :30 missed its 23:30 run: without a deadline it starts at once; with
    startingDeadlineSeconds 60 that run is too late and the next (00:30) is the first."""
    last = "2025-12-31T23:00:00Z"
    caught_up = run([cronjob(schedule="0 * * * *", status={"lastScheduleTime": last})], 60)
    assert [t for t, _ in created(caught_up)] == [0.0]
    late = run([cronjob(schedule="30 * * * *", status={"lastScheduleTime": last})], 60)
    assert [t for t, _ in created(late)] == [0.0]
    deadline = run(
        [cronjob(schedule="30 * * * *", startingDeadlineSeconds=60, status={"lastScheduleTime": last})], 1800
    )
    assert [t for t, _ in created(deadline)] == [1800.0]
    # a suspended one does not start
    assert (
        created(run([cronjob(schedule="0 * * * *", suspend=True, status={"lastScheduleTime": last})], 60))
        == []
    )


def test_history_limit():
    """successfulJobsHistoryLimit 1: older finished Jobs are deleted."""
    sim = run([cronjob(successfulJobsHistoryLimit=1)], 3000)
    jobs = sorted(k for k in sim.world.workloads if k.startswith("Job/"))
    assert len(jobs) == 2  # the last finished one and the one running


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("* * *", "expected 5 fields"),
        ("61 * * * *", "not a valid cron schedule"),
        ("TZ=UTC 0 * * * *", "use spec.timeZone"),
        ("@fortnightly", "unknown descriptor"),
    ],
)
def test_bad_schedules_name_the_field(schedule, message):
    with pytest.raises(ManifestError) as caught:
        load_documents([cronjob(schedule=schedule)], "cj.yaml")
    assert "spec.schedule" in str(caught.value) and message in str(caught.value)


def test_bad_time_zone():
    with pytest.raises(ManifestError, match=r"spec\.timeZone.*unknown time zone"):
        load_documents([cronjob(timeZone="Mars/Olympus")], "cj.yaml")
    with pytest.raises(ScenarioError, match=r"spec\.cluster\.timeZone"):
        make_scenario(cluster={"timeZone": "Mars/Olympus"})


def test_every_descriptor():
    assert parse_schedule("@every 90s").next_after(100.0, "UTC") == 190.0


def test_namespace_termination_stops_replacements():
    """Deleting a namespace deletes its Deployments, CronJobs and pods; nothing is recreated, and
    an apply into it later is refused with a warning."""
    objects = [deployment("web", 3, namespace="shop"), deployment("api", 2), cronjob(namespace="shop")]
    events = [
        {"at": "5m", "delete": {"kind": "Namespace", "name": "shop"}},
        {
            "at": "10m",
            "apply": [{"apiVersion": "apps/v1", "kind": "Deployment", **_deployment_body("late", "shop")}],
        },
    ]
    sim = run(objects, 1800, events)
    assert not [p for p in sim.world.pods() if p.namespace == "shop"]
    assert not [k for k in sim.world.workloads if "/shop/" in k]
    assert len([p for p in sim.world.pods() if p.namespace == "default"]) == 2
    assert [t for t, _ in created(sim)] == []  # the 10-minute run never came
    assert any("namespace is terminating" in w for w in sim.warnings)


def _deployment_body(name, namespace):
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }


def test_daylight_saving_gap():
    """Europe/Paris skips 02:00-03:00 on 2026-03-29: a 02:30 schedule runs when the clock jumps
    (03:00 CEST, 01:00 UTC); the next day at 02:30 CEST (00:30 UTC)."""
    schedule = parse_schedule("30 2 * * *")
    noon_before = 1774695600.0  # 2026-03-28T11:00:00Z
    first = schedule.next_after(noon_before, "Europe/Paris")
    assert first == 1774746000.0  # 2026-03-29T01:00:00Z
    assert schedule.next_after(first, "Europe/Paris") == 1774830600.0  # 2026-03-30T00:30:00Z
