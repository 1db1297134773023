"""CronJob (batch/v1), as `kubectl get cronjob -o yaml` prints it, and its schedule.

A schedule is what kube-controller-manager's parser (robfig/cron's standard one) takes: five
fields (minute hour day-of-month month day-of-week), a descriptor (@yearly, @annually, @monthly,
@weekly, @daily, @midnight, @hourly) or `@every <duration>`; times are computed with croniter in
the CronJob's spec.timeZone, else the controller's zone. TZ= and CRON_TZ= prefixes are refused,
as the API server refuses them.
"""

from __future__ import annotations

import math
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from kubetide.durations import parse_duration
from kubetide.model.meta import KindKeyedIdentity, ObjectMeta, parse_meta
from kubetide.model.reader import Reader
from kubetide.model.workloads import Workload, parse_workload

CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


# Where parse_schedule looks for a first firing: any fixed time does (a schedule that never fires,
# `0 0 31 2 *`, fires from no start), and decision code reads no clock.
_PROBE_START = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Schedule:
    text: str
    every: float | None = None  # @every <duration>: seconds
    # False for a date that never comes (`0 0 31 2 *`): the API server takes it, as robfig/cron
    # parses it, and the controller never starts a Job of it.
    fires: bool = True

    def next_after(self, t: float, zone: str) -> float:
        """The first scheduled time strictly after Unix time `t`, in time zone `zone`; infinity when
        there is none (a schedule that never fires, or none before the end of year 9999, where a
        `status.lastScheduleTime` of 9999-12-31 starts the search)."""
        if self.every is not None:
            return t + self.every
        if not self.fires:
            return math.inf
        from croniter import CroniterBadDateError, croniter  # here: the loader imports this module

        try:
            start = datetime.fromtimestamp(t, zoneinfo.ZoneInfo(zone))
            return float(croniter(self.text, start).get_next(float))
        except (CroniterBadDateError, OverflowError, ValueError, OSError):
            return math.inf

    def most_recent(self, after: float, until: float, zone: str) -> tuple[float | None, int]:
        """(the latest scheduled time in (after, until], how many there are, counted up to 101
        as upstream stops counting at 100)."""
        latest, count, t = None, 0, after
        while count <= 100:
            t = self.next_after(t, zone)
            if t > until:
                break
            latest, count = t, count + 1
        return latest, count


def parse_schedule(text: str) -> Schedule:
    """ValueError with the reason when kube-controller-manager would not take `text`."""
    text = text.strip()
    if text.startswith(("TZ=", "CRON_TZ=")):
        raise ValueError("TZ and CRON_TZ are not supported in schedule: use spec.timeZone")
    if text.startswith("@every "):
        seconds = parse_duration(text[len("@every ") :].strip())
        if seconds <= 0:
            raise ValueError(f'"{text}": the interval must be positive')
        return Schedule(text, every=seconds)
    if text.startswith("@"):
        if text not in DESCRIPTORS:
            raise ValueError(
                f'unknown descriptor "{text}" (expected one of {", ".join(DESCRIPTORS)}, @every)'
            )
        return Schedule(text)
    if len(text.split()) != 5:
        raise ValueError(f'"{text}": expected 5 fields (minute hour day-of-month month day-of-week)')
    from croniter import CroniterBadDateError, croniter

    if not croniter.is_valid(text):
        raise ValueError(f'"{text}" is not a valid cron schedule')
    try:
        croniter(text, _PROBE_START).get_next(float)
    except CroniterBadDateError:
        return Schedule(text, fires=False)
    return Schedule(text)


def never_fires_warning(cronjob: CronJob, source: str) -> str | None:
    """A warning for a CronJob whose schedule names a date that never comes, or None."""
    if cronjob.schedule.fires:
        return None
    return (
        f'{source}: CronJob {cronjob.meta.key}: spec.schedule "{cronjob.schedule.text}" names a date '
        "that never comes: the CronJob never starts a Job"
    )


def check_time_zone(name: str) -> None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f'unknown time zone "{name}" (an IANA name, e.g. Europe/Paris)') from None


@dataclass(frozen=True, slots=True)
class CronJob(KindKeyedIdentity):
    kind: ClassVar[str] = "CronJob"
    meta: ObjectMeta
    schedule: Schedule
    time_zone: str | None
    concurrency_policy: str
    starting_deadline_seconds: int | None
    suspend: bool
    successful_jobs_history_limit: int
    failed_jobs_history_limit: int
    job: Workload  # the Job spec.jobTemplate stamps (named after the CronJob)
    last_schedule_time: float | None = None
    last_successful_time: float | None = None


def parse_cronjob(reader: Reader) -> CronJob:
    meta = parse_meta(reader, "CronJob", namespaced=True)
    spec = reader.child("spec")
    try:
        schedule = parse_schedule(spec.str("schedule", required=True))
    except ValueError as exc:
        raise spec.error(str(exc), "schedule") from None
    zone = spec.str("timeZone")
    if zone is not None:
        try:
            check_time_zone(zone)
        except ValueError as exc:
            raise spec.error(str(exc), "timeZone") from None
    policy = spec.str("concurrencyPolicy", default="Allow")
    if policy not in CONCURRENCY_POLICIES:
        raise spec.error(f'expected Allow, Forbid or Replace, got "{policy}"', "concurrencyPolicy")
    deadline = spec.int("startingDeadlineSeconds")
    if deadline is not None and deadline < 0:
        raise spec.error(f"must be non-negative, got {deadline}", "startingDeadlineSeconds")
    limits = []
    for key, default in (("successfulJobsHistoryLimit", 3), ("failedJobsHistoryLimit", 1)):
        value = spec.int(key, default=default)
        if value < 0:
            raise spec.error(f"must be non-negative, got {value}", key)
        limits.append(value)
    template = spec.child("jobTemplate")
    template_meta = template.child("metadata")
    job_doc = {
        "kind": "Job",
        "metadata": {
            "name": meta.name,
            "namespace": meta.namespace,
            "labels": template_meta.raw("labels") or {},
            "annotations": template_meta.raw("annotations") or {},
        },
        "spec": template.raw("spec") or {},
    }
    job = parse_workload(Reader(job_doc, reader.source, reader.location, template.path), "Job")
    status = reader.child("status")
    return CronJob(
        meta=meta,
        schedule=schedule,
        time_zone=zone,
        concurrency_policy=policy,
        starting_deadline_seconds=deadline,
        suspend=spec.bool("suspend"),
        successful_jobs_history_limit=limits[0],
        failed_jobs_history_limit=limits[1],
        job=job,
        last_schedule_time=status.timestamp("lastScheduleTime"),
        last_successful_time=status.timestamp("lastSuccessfulTime"),
    )
