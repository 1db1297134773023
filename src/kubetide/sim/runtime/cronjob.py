"""The CronJob controller of kube-controller-manager, on simulated time.

Each CronJob is synced at its next scheduled time (in spec.timeZone, else
spec.cluster.timeZone, kube-controller-manager's own zone) and whenever one of its Jobs finishes,
as upstream's controller (pkg/controller/cronjob) syncs it:
- the most recent scheduled time since status.lastScheduleTime (or its creation) that has not run
  is the one to start; with startingDeadlineSeconds, one more than that late is missed
  (a MissedSchedule warning) and waits for the next;
- suspended: nothing starts;
- concurrencyPolicy Forbid: nothing starts while a Job of it is active (JobAlreadyActive; the time
  is started when that Job finishes, if still within the deadline); Replace: the active Jobs are
  deleted first; Allow: Jobs run side by side;
- the Job is named `<cronjob>-<scheduled time in Unix minutes>`, as upstream names it, so a Job a
  cluster dump already holds for that time is not started twice;
- finished Jobs beyond successfulJobsHistoryLimit are deleted, oldest first. Simulated Jobs do not
  fail, so failedJobsHistoryLimit never has anything to delete.
The Jobs are run by the simulator's Job controller (sim/runtime/job.py).
"""

from __future__ import annotations

import dataclasses
import math

from kubetide.model import ObjectMeta, OwnerReference, Workload
from kubetide.model.cronjob import CronJob
from kubetide.sim.runtime.engine import Engine, Timer
from kubetide.sim.runtime.events import EventLog
from kubetide.sim.runtime.job import Jobs
from kubetide.sim.runtime.world import World

KIND = "CronJob"
SOURCE = "cronjob-controller"


class CronJobs:
    def __init__(self, engine: Engine, world: World, jobs: Jobs, log: EventLog, zone: str):
        self.engine = engine
        self.world = world
        self.jobs = jobs
        self.log = log
        self.zone = zone
        self.cronjobs: dict[str, CronJob] = {}
        self.last_schedule: dict[str, float | None] = {}
        self.timers: dict[str, Timer] = {}
        self.started = 0
        self.missed = 0
        self._live = False  # set-up done: syncs run from now on
        jobs.on_finished.append(self._job_finished)

    # -- the API server's side -----------------------------------------------------------------
    def apply(self, cronjob: CronJob) -> None:
        old = self.cronjobs.get(cronjob.key)
        if old is not None:
            cronjob = dataclasses.replace(cronjob, meta=old.meta)
        self.cronjobs[cronjob.key] = cronjob
        if cronjob.key not in self.last_schedule:
            # Never run: upstream counts from its creation (the time it is applied here, when the
            # manifest carries none).
            created = cronjob.meta.creation_timestamp
            self.last_schedule[cronjob.key] = cronjob.last_schedule_time or created or self.engine.now()
        if self._live:
            self._sync(cronjob.key)

    def delete(self, key: str) -> bool:
        """Delete with cascading garbage collection: its Jobs (and their pods) go too."""
        cronjob = self.cronjobs.pop(key, None)
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if cronjob is None:
            return False
        for job in self._jobs_of(cronjob):
            self.jobs.delete(job.key)
        return True

    def delete_namespace(self, namespace: str) -> None:
        for key in [k for k, c in self.cronjobs.items() if c.namespace == namespace]:
            self.delete(key)

    def start(self) -> None:
        self._live = True
        for key in list(self.cronjobs):
            self._sync(key)

    # -- the controller ------------------------------------------------------------------------
    def _zone(self, cronjob: CronJob) -> str:
        return cronjob.time_zone or self.zone

    def _sync(self, key: str) -> None:
        cronjob = self.cronjobs.get(key)
        if cronjob is None:
            return
        now = self.engine.now()
        zone = self._zone(cronjob)
        self._clean_history(cronjob)
        if not cronjob.suspend:
            earliest = self.last_schedule.get(key) or now
            deadline = cronjob.starting_deadline_seconds
            if deadline is not None:
                earliest = max(earliest, now - deadline)
            scheduled, count = cronjob.schedule.most_recent(earliest, now, zone)
            if count > 100:
                self.log.record(
                    KIND,
                    cronjob.meta.key,
                    "Warning",
                    "TooManyMissedTimes",
                    "too many missed start times: > 100",
                    SOURCE,
                )
            if scheduled is not None:
                self._start(cronjob, scheduled, now)
        self._arm(cronjob, now)

    def _start(self, cronjob: CronJob, scheduled: float, now: float) -> None:
        deadline = cronjob.starting_deadline_seconds
        if deadline is not None and scheduled + deadline < now:
            self.missed += 1
            self.log.record(
                KIND,
                cronjob.meta.key,
                "Warning",
                "MissedSchedule",
                f"Missed scheduled time to start a job: {scheduled:.0f}",
                SOURCE,
            )
            return
        active = [job for job in self._jobs_of(cronjob) if job.key not in self.jobs.completed_jobs]
        if active and cronjob.concurrency_policy == "Forbid":
            self.log.record(
                KIND,
                cronjob.meta.key,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
                SOURCE,
            )
            return
        if active and cronjob.concurrency_policy == "Replace":
            for job in active:
                self.jobs.delete(job.key)
                self.log.record(
                    KIND, cronjob.meta.key, "Normal", "SuccessfulDelete", f"Deleted job {job.name}", SOURCE
                )
        name = f"{cronjob.name}-{int(scheduled // 60)}"
        self.last_schedule[cronjob.key] = scheduled
        if f"Job/{cronjob.namespace}/{name}" in self.world.workloads:
            return  # already started (a Job of the dump)
        template = cronjob.job
        meta = ObjectMeta(
            name=name,
            namespace=cronjob.namespace,
            uid=self.world.new_uid(),
            labels=dict(template.meta.labels),
            annotations=dict(template.meta.annotations),
            owner_references=(OwnerReference(KIND, cronjob.name, cronjob.meta.uid, controller=True),),
            creation_timestamp=now,
        )
        self.jobs.apply(dataclasses.replace(template, meta=meta))
        self.started += 1
        self.log.record(KIND, cronjob.meta.key, "Normal", "SuccessfulCreate", f"Created job {name}", SOURCE)

    def _arm(self, cronjob: CronJob, now: float) -> None:
        timer = self.timers.pop(cronjob.key, None)
        if timer is not None:
            timer.cancel()
        if cronjob.suspend:
            return
        when = cronjob.schedule.next_after(now, self._zone(cronjob))
        if when != math.inf:  # a schedule that never fires (again) has nothing to wait for
            self.timers[cronjob.key] = self.engine.at(when, self._sync, cronjob.key)

    def _jobs_of(self, cronjob: CronJob) -> list[Workload]:
        uid = cronjob.meta.uid
        return [
            w
            for w in self.world.workloads.values()
            if w.kind == "Job"
            and w.namespace == cronjob.namespace
            and (ref := w.meta.controller) is not None
            and ref.kind == KIND
            and (ref.uid == uid or (not ref.uid and ref.name == cronjob.name))
        ]

    def _clean_history(self, cronjob: CronJob) -> None:
        finished = [job for job in self._jobs_of(cronjob) if job.key in self.jobs.completed_jobs]
        finished.sort(key=lambda job: (self.jobs.completed_jobs[job.key], job.name))
        excess = len(finished) - cronjob.successful_jobs_history_limit
        for job in finished[: max(excess, 0)]:
            self.jobs.delete(job.key)
            self.log.record(
                KIND, cronjob.meta.key, "Normal", "SuccessfulDelete", f"Deleted job {job.name}", SOURCE
            )

    def _job_finished(self, job: Workload) -> None:
        ref = job.meta.controller
        if ref is not None and ref.kind == KIND:
            key = f"{KIND}/{job.namespace}/{ref.name}"
            if key in self.cronjobs:
                self.engine.after(0.0, self._sync, key)

    def summary(self) -> dict[str, int]:
        return {"cronjobs": len(self.cronjobs), "jobs_started": self.started, "missed_schedules": self.missed}
