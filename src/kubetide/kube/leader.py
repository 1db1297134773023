"""Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics.

Only the leader acts; the others wait. The rules that make "a replica that loses the lease stops
acting before another can gain it" hold without trusting anyone's wall clock:

- A candidate measures a holder's lease from when *it* last saw the Lease record change, on its
  own monotonic clock, never from the renewTime the holder wrote (clocks of two machines may
  disagree by more than a lease). It may take the lease once the record has stayed unchanged for
  leaseDurationSeconds, or at once when the holder is empty (released).
- The leader renews every retry period and counts as leader only while its last successful write
  is younger than the renew deadline, timed from when that write was *sent*: a candidate can only
  have seen the record after it was committed, hence after it was sent, so the leader stops
  (renew deadline) before any candidate may take over (lease duration): 5 s earlier at the
  defaults, which only clocks running at very different rates could eat up.
- Every write carries the resourceVersion it was based on: a 409 Conflict means someone else
  wrote in between, and the next attempt re-reads.
- On a graceful stop the leader releases the lease (empty holder, leaseDurationSeconds 1, as
  client-go's ReleaseOnCancel), so another replica takes over within a retry period instead of a
  lease duration.

`Candidate` is those rules as a pure state machine over (record, monotonic now); `LeaderElector`
does the API calls around it in a daemon thread. Retries are not jittered: there are a few
replicas, and a hand-over after a release should take at most one retry period.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kubetide.kube.client import ApiError, KubeClient

log = logging.getLogger("kubetide.kube")

CONFLICT = 409
NOT_FOUND = 404


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """The election fields of a Lease's spec. Times are kept as the API wrote them: they are for
    people reading the Lease, never for deciding."""

    holder: str  # "" when released
    lease_duration_seconds: int
    acquire_time: str | None
    renew_time: str | None
    transitions: int

    @classmethod
    def from_spec(cls, spec: dict) -> LeaseRecord:
        return cls(
            holder=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict:
        return {
            "holderIdentity": self.holder,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.transitions,
        }


class Candidate:
    """One replica's view of the election: what to write next, and whether it leads.

    `now` is always this replica's monotonic clock; `stamp` is the wall-clock text written into
    acquireTime/renewTime for people to read.
    """

    def __init__(self, identity: str, lease_duration: float, renew_deadline: float):
        if not 0 < renew_deadline < lease_duration:
            raise ValueError(
                f"need 0 < renew deadline ({renew_deadline}) < lease duration ({lease_duration})"
            )
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.observed: LeaseRecord | None = None
        self.observed_at: float | None = None
        self.renewed_at: float | None = None  # when the last successful write was sent

    def next_record(self, current: LeaseRecord | None, now: float, stamp: str) -> LeaseRecord | None:
        """The record to write to acquire or renew, given the one just read (None: there is no
        Lease yet) at `now`; None when another holder's lease is still valid."""
        if current is None:
            return LeaseRecord(self.identity, self._seconds(), stamp, stamp, 0)
        if current != self.observed:
            self.observed, self.observed_at = current, now
        if current.holder and current.holder != self.identity and not self._expired(now):
            return None
        if current.holder == self.identity:
            acquired, transitions = current.acquire_time, current.transitions
        else:
            acquired, transitions = stamp, current.transitions + 1
        return LeaseRecord(self.identity, self._seconds(), acquired, stamp, transitions)

    def written(self, record: LeaseRecord, sent_at: float) -> None:
        """`record` was written by a request sent at `sent_at`."""
        self.observed, self.observed_at = record, sent_at
        self.renewed_at = sent_at

    def is_leader(self, now: float) -> bool:
        return (
            self.renewed_at is not None
            and now - self.renewed_at < self.renew_deadline
            and self.observed is not None
            and self.observed.holder == self.identity
        )

    def release_record(self, stamp: str) -> LeaseRecord | None:
        """What to write to give the lease up, or None when this replica does not hold it."""
        if self.observed is None or self.observed.holder != self.identity:
            return None
        return LeaseRecord("", 1, stamp, stamp, self.observed.transitions)

    def step_down(self) -> None:
        """Stop counting as leader, before anything is sent to give the lease up."""
        self.renewed_at = None

    def _seconds(self) -> int:
        # Whole seconds in the API; rounding up only makes candidates wait longer.
        return math.ceil(self.lease_duration)

    def _expired(self, now: float) -> bool:
        # The record's own duration, as client-go reads it: a released lease says 1 s.
        assert self.observed_at is not None and self.observed is not None
        return now >= self.observed_at + self.observed.lease_duration_seconds


class LeaderElector:
    """Campaigns for the Lease `namespace`/`name` in a daemon thread (`run_in_background`) and
    answers `is_leader()` for the code that writes. After losing the lease it campaigns again."""

    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        if not 0 < retry_period < renew_deadline:
            raise ValueError(f"need 0 < retry period ({retry_period}) < renew deadline ({renew_deadline})")
        self.client = client
        self.namespace, self.name, self.identity = namespace, name, identity
        self.retry_period = retry_period
        self.candidate = Candidate(identity, lease_duration, renew_deadline)
        self._monotonic, self._wall = monotonic, wall
        self._path = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
        self._written: dict | None = None  # the Lease as this replica last wrote it
        # One request at a time: a release must not cross a renewal in flight.
        self._io = threading.Lock()
        self._state = threading.Lock()

    # -- what the autoscaler asks ---------------------------------------------------------------
    def is_leader(self) -> bool:
        with self._state:
            return self.candidate.is_leader(self._monotonic())

    def wait_until_leader(self, stop: threading.Event) -> bool:
        """Block until this replica leads (True) or `stop` is set (False)."""
        while not stop.is_set():
            if self.is_leader():
                return True
            stop.wait(0.05)
        return False

    def run_in_background(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(target=self.run, args=(stop,), name="leader-election", daemon=True)
        thread.start()
        return thread

    def run(self, stop: threading.Event) -> None:
        """Acquire, renew until the lease is lost (then campaign again) or `stop` is set (then
        release it)."""
        while not stop.is_set():
            if not self._attempt():
                stop.wait(self.retry_period)
                continue
            log.info("lease %s/%s acquired by %s", self.namespace, self.name, self.identity)
            while not stop.wait(self.retry_period) and self.is_leader():
                self._attempt()
            if stop.is_set():
                break
            log.warning(
                "lease %s/%s lost: taken over, or not renewed within %gs",
                self.namespace,
                self.name,
                self.candidate.renew_deadline,
            )
        self.release()

    def release(self) -> bool:
        """Give the lease up if this replica holds it; True when the API took the release. The
        replica stops counting as leader first, whatever the API answers. For shutting down: the
        election thread does it itself once `stop` is set (a second call does nothing), and a
        request in flight is waited for (at most its timeout)."""
        with self._io:
            with self._state:
                record = self.candidate.release_record(self._stamp())
                self.candidate.step_down()
                written, self._written = self._written, None
            if record is None or written is None:
                return False
            try:
                self._update(written, record, timeout=self.retry_period)
            except ApiError as exc:
                # 409: someone else wrote meanwhile, so there is nothing of ours left to release.
                log.info("lease %s/%s not released: %s", self.namespace, self.name, exc)
                return False
            log.info("lease %s/%s released by %s", self.namespace, self.name, self.identity)
            return True

    # -- one attempt ----------------------------------------------------------------------------
    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except Exception:
            # A Lease kubetide cannot read, or a bug: logged, and tried again next period. A dead
            # election thread would leave the replica unable to lead (or to stop leading) for good.
            log.exception("lease %s/%s: attempt failed", self.namespace, self.name)
            return False

    def try_acquire_or_renew(self) -> bool:
        """Read the Lease, and write it when this replica may hold it. True on a successful write."""
        with self._io:
            try:
                lease = self.client.request(
                    "GET", f"{self._path}/{self.name}", timeout=self._request_timeout()
                )
            except ApiError as exc:
                if exc.status != NOT_FOUND:
                    log.warning("lease %s/%s: cannot read it: %s", self.namespace, self.name, exc)
                    return False
                lease = None
            with self._state:
                # Observed after the read returned: never earlier than the write that made it.
                current = LeaseRecord.from_spec(lease.get("spec") or {}) if lease is not None else None
                record = self.candidate.next_record(current, self._monotonic(), self._stamp())
            if record is None:
                return False
            # Read before the client's rate limiter may hold the request back: earlier is the safe side.
            sent_at = self._monotonic()
            try:
                if lease is None:
                    answer = self.client.request(
                        "POST",
                        self._path,
                        body={
                            "apiVersion": "coordination.k8s.io/v1",
                            "kind": "Lease",
                            "metadata": {"name": self.name, "namespace": self.namespace},
                            "spec": record.to_spec(),
                        },
                        timeout=self._request_timeout(),
                    )
                else:
                    answer = self._update(lease, record, timeout=self._request_timeout())
            except ApiError as exc:
                if exc.status == CONFLICT:
                    log.debug("lease %s/%s: written by someone else meanwhile", self.namespace, self.name)
                else:
                    log.warning("lease %s/%s: cannot write it: %s", self.namespace, self.name, exc)
                return False
            with self._state:
                self.candidate.written(record, sent_at)
                self._written = answer
            return True

    def _update(self, lease: dict, record: LeaseRecord, *, timeout: float) -> dict:
        """PUT `lease` (as read or last written) with the record in its spec. Its resourceVersion
        makes the write conditional (409 if anyone wrote since); the rest of the object, labels
        and spec fields other than the election's, is written back as it was."""
        body = {**lease, "spec": {**(lease.get("spec") or {}), **record.to_spec()}}
        return self.client.request("PUT", f"{self._path}/{self.name}", body=body, timeout=timeout)

    def _request_timeout(self) -> float:
        """A leader's request must not outlive its renew deadline (it would renew nothing);
        a candidate's is bounded by the same length."""
        with self._state:
            now = self._monotonic()
            candidate = self.candidate
            if not candidate.is_leader(now):
                return candidate.renew_deadline
            assert candidate.renewed_at is not None
            return max(0.1, candidate.renewed_at + candidate.renew_deadline - now)

    def _stamp(self) -> str:
        """metav1.MicroTime: RFC 3339 in UTC with microseconds."""
        return datetime.fromtimestamp(self._wall(), UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
