"""Leader election: the pure rules on a fake clock, then two electors on a real API server."""

from __future__ import annotations

import threading
import time

import pytest

from kubetide.kube.client import ApiError, ApiUnreachable, connect
from kubetide.kube.leader import Candidate, LeaderElector, LeaseRecord
from kubetide.model.reader import parse_time

STAMP = "2026-11-24T01:00:00.000000Z"


def other(holder="other", duration=15, renew="2026-11-24T00:59:58.000000Z", transitions=3):
    return LeaseRecord(holder, duration, "2026-11-24T00:00:00.000000Z", renew, transitions)


# -- the rules ------------------------------------------------------------------------------------


def test_no_lease_yet_creates_one_naming_this_replica():
    record = Candidate("me", 15, 10).next_record(None, 100.0, STAMP)
    assert record == LeaseRecord("me", 15, STAMP, STAMP, 0)


def test_a_held_lease_is_taken_only_after_it_stayed_unchanged_for_its_duration_on_our_clock():
    candidate = Candidate("me", 15, 10)
    # The holder's renewTime is a day old by its own clock: skew, not expiry. Only our clock counts.
    stale = other(renew="2026-11-23T01:00:00.000000Z")
    assert candidate.next_record(stale, 100.0, STAMP) is None
    assert candidate.next_record(stale, 114.9, STAMP) is None
    taken = candidate.next_record(stale, 115.0, STAMP)
    assert taken == LeaseRecord("me", 15, STAMP, STAMP, 4)  # a new holder: one more transition


def test_every_renewal_the_holder_writes_restarts_the_wait():
    candidate = Candidate("me", 15, 10)
    assert candidate.next_record(other(renew="a"), 100.0, STAMP) is None
    assert candidate.next_record(other(renew="b"), 110.0, STAMP) is None
    assert candidate.next_record(other(renew="b"), 124.9, STAMP) is None
    assert candidate.next_record(other(renew="b"), 125.0, STAMP) is not None


def test_the_wait_is_the_duration_the_record_states():
    candidate = Candidate("me", 15, 10)
    assert candidate.next_record(other(duration=40), 0.0, STAMP) is None
    assert candidate.next_record(other(duration=40), 39.0, STAMP) is None
    assert candidate.next_record(other(duration=40), 40.0, STAMP) is not None


def test_a_released_lease_is_taken_at_once():
    released = LeaseRecord("", 1, STAMP, STAMP, 3)
    assert Candidate("me", 15, 10).next_record(released, 0.0, STAMP) == LeaseRecord("me", 15, STAMP, STAMP, 4)


def test_renewing_keeps_the_acquire_time_and_the_transitions():
    candidate = Candidate("me", 15, 10)
    mine = LeaseRecord("me", 15, "acquired", "renewed", 7)
    assert candidate.next_record(mine, 0.0, STAMP) == LeaseRecord("me", 15, "acquired", STAMP, 7)


def test_leading_lasts_renew_deadline_after_the_last_write_was_sent():
    candidate = Candidate("me", 15, 10)
    assert not candidate.is_leader(0.0)
    candidate.written(LeaseRecord("me", 15, STAMP, STAMP, 0), sent_at=50.0)
    assert candidate.is_leader(50.0) and candidate.is_leader(59.9)
    assert not candidate.is_leader(60.0)
    candidate.written(LeaseRecord("me", 15, STAMP, STAMP, 0), sent_at=58.0)
    assert candidate.is_leader(67.9)


def test_seeing_another_holder_ends_leading_at_once():
    candidate = Candidate("me", 15, 10)
    candidate.written(LeaseRecord("me", 15, STAMP, STAMP, 0), sent_at=0.0)
    assert candidate.next_record(other(), 1.0, STAMP) is None
    assert not candidate.is_leader(1.0)


def test_only_the_holder_releases_and_it_stops_leading_first():
    candidate = Candidate("me", 15, 10)
    assert candidate.release_record(STAMP) is None
    candidate.written(LeaseRecord("me", 15, "acquired", "renewed", 2), sent_at=0.0)
    assert candidate.release_record(STAMP) == LeaseRecord("", 1, STAMP, STAMP, 2)
    candidate.step_down()
    assert not candidate.is_leader(0.0)


@pytest.mark.parametrize("delay", [0.0, 0.3, 4.0])
def test_a_leader_that_cannot_renew_stops_before_anyone_may_take_over(delay):
    """A writes at t=0 (sent); B reads the record `delay` later. Whatever happens to A afterwards
    (crash, partition), A stops leading at 10 and B may take over no earlier than 15 + delay."""
    leader, waiting = Candidate("a", 15, 10), Candidate("b", 15, 10)
    record = leader.next_record(None, 0.0, STAMP)
    leader.written(record, sent_at=0.0)
    waiting.next_record(record, delay, STAMP)
    steps = [i / 10 for i in range(400)]
    stopped = next(t for t in steps if not leader.is_leader(t))
    taken = next(t for t in steps if t >= delay and waiting.next_record(record, t, STAMP) is not None)
    assert stopped == 10.0 and taken == pytest.approx(15.0 + delay)
    assert stopped + 5.0 <= taken


def test_the_durations_must_be_ordered():
    with pytest.raises(ValueError, match="renew deadline"):
        Candidate("me", 10, 10)
    with pytest.raises(ValueError, match="retry period"):
        LeaderElector(object(), "ns", "lease", "me", lease_duration=15, renew_deadline=2, retry_period=2)


# -- against a real API server --------------------------------------------------------------------

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 3.0, 2.0, 0.5


class Wire:
    """The real client, with a way to cut it (a partition) and to do something just before the
    next PUT goes out (to make the API server answer a real 409)."""

    def __init__(self, client):
        self.client = client
        self.cut = False
        self.before_put = None
        self.statuses: list[int] = []

    def request(self, method, path, **kwargs):
        if self.cut:
            raise ApiUnreachable("cut by the test")
        if method == "PUT" and self.before_put is not None:
            action, self.before_put = self.before_put, None
            action()
        try:
            return self.client.request(method, path, **kwargs)
        except ApiError as exc:
            self.statuses.append(exc.status)
            raise


@pytest.fixture
def electors(control_plane, kube, request):
    """A factory of electors on one Lease in the test's namespace; every thread is stopped at the end."""
    name = "cluster-autoscaler"
    stops: list[threading.Event] = []
    threads: list[threading.Thread] = []

    def make(identity: str, *, start: bool = True):
        wire = Wire(connect(str(control_plane.kubeconfig_path), qps=100, burst=100))
        elector = LeaderElector(
            wire,
            kube.namespace,
            name,
            identity,
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        )
        stop = threading.Event()
        if start:
            threads.append(elector.run_in_background(stop))
        stops.append(stop)
        return elector, wire, stop

    make.lease = lambda: connect(str(control_plane.kubeconfig_path)).request(
        "GET", f"/apis/coordination.k8s.io/v1/namespaces/{kube.namespace}/leases/{name}"
    )
    yield make
    for stop in stops:
        stop.set()
    for thread in threads:
        thread.join(timeout=10)


def wait_for(condition, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def leaders(*electors):
    return [e for e in electors if e.is_leader()]


def sample_leaders(electors, seconds):
    """Who leads, sampled every 20 ms for `seconds`."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen.append(tuple(e.identity for e in leaders(*electors)))
        time.sleep(0.02)
    return seen


@pytest.mark.controlplane
def test_two_electors_exactly_one_leads(electors):
    (a, _, _), (b, _, _) = electors("a"), electors("b")
    (leader,) = wait_for(lambda: leaders(a, b), 10, "a leader")
    seen = sample_leaders([a, b], 3 * LEASE_DURATION)  # across many renewals
    assert set(seen) == {(leader.identity,)}
    spec = electors.lease()["spec"]
    assert spec["holderIdentity"] == leader.identity and spec["leaseDurationSeconds"] == 3
    stop_event = threading.Event()
    stop_event.set()
    assert leader.wait_until_leader(threading.Event()) is True
    follower = b if leader is a else a
    assert follower.wait_until_leader(stop_event) is False


@pytest.mark.controlplane
def test_a_cut_off_leader_stops_before_the_other_takes_over_after_the_lease_duration(electors):
    first, first_wire, _ = electors("first")
    wait_for(first.is_leader, 10, "the first elector to lead")
    second, _, _ = electors("second")
    time.sleep(2 * RETRY_PERIOD)  # the second has seen the lease and is waiting
    assert leaders(first, second) == [first]

    cut_at = time.monotonic()
    first_wire.cut = True  # a partition or a crash: no more renewals, no release
    stopped_at = wait_for(
        lambda: not first.is_leader() and time.monotonic(), 2 * RENEW_DEADLINE, "first stops"
    )
    taken_at = wait_for(lambda: second.is_leader() and time.monotonic(), 3 * LEASE_DURATION, "second leads")
    assert stopped_at <= taken_at  # never two leaders: the cut-off one stopped first
    # The second saw the first's last renewal at most one retry period before the cut.
    assert taken_at - cut_at >= LEASE_DURATION - RETRY_PERIOD
    assert taken_at - stopped_at >= LEASE_DURATION - RENEW_DEADLINE - RETRY_PERIOD
    assert electors.lease()["spec"]["holderIdentity"] == "second"
    assert electors.lease()["spec"]["leaseTransitions"] == 1


@pytest.mark.controlplane
def test_a_replica_that_lost_the_lease_campaigns_again_as_a_follower(electors):
    first, first_wire, _ = electors("first")
    wait_for(first.is_leader, 10, "the first elector to lead")
    second, _, second_stop = electors("second")
    first_wire.cut = True
    wait_for(second.is_leader, 3 * LEASE_DURATION, "second leads")
    first_wire.cut = False  # the partition heals: the first sees the second's lease and waits
    assert set(sample_leaders([first, second], 2 * LEASE_DURATION)) == {("second",)}
    second_stop.set()
    wait_for(first.is_leader, LEASE_DURATION, "first leads again")


@pytest.mark.controlplane
def test_a_released_lease_is_taken_over_within_a_retry_period(electors):
    first, _, first_stop = electors("first")
    wait_for(first.is_leader, 10, "the first elector to lead")
    second, _, _ = electors("second")
    time.sleep(2 * RETRY_PERIOD)

    held = electors.lease()["spec"]
    first_stop.set()  # a graceful stop: the thread releases the lease
    assert not first.is_leader() or wait_for(
        lambda: not first.is_leader(), RETRY_PERIOD + 1, "first steps down"
    )
    wait_for(second.is_leader, 3 * LEASE_DURATION, "second leads")
    taken = electors.lease()["spec"]
    assert taken["holderIdentity"] == "second"
    # Taken from the release, not after the first's lease ran out: the second acquired it sooner
    # after the first's last renewal than a lease duration (the lease's own times, not ours).
    since_renewal = parse_time(taken["acquireTime"]) - parse_time(held["renewTime"])
    assert 0 <= since_renewal < LEASE_DURATION, (held, taken)
    assert first.release() is False  # the thread released it already: nothing left to give up


@pytest.mark.controlplane
def test_two_candidates_write_the_same_free_lease_and_the_later_gets_409(electors):
    first, _, _ = electors("first", start=False)
    second, second_wire, _ = electors("second", start=False)
    assert first.try_acquire_or_renew()  # creates the Lease
    assert first.release()  # now free: both may take it at once
    # The second reads the free lease; just before its write, the first takes it.
    second_wire.before_put = lambda: first.try_acquire_or_renew()
    assert second.try_acquire_or_renew() is False
    assert second_wire.statuses == [409]
    assert first.is_leader() and not second.is_leader()
    # The next attempt re-reads: the lease is the first's now, and valid.
    assert second.try_acquire_or_renew() is False and not second.is_leader()
    assert electors.lease()["spec"]["holderIdentity"] == "first"


@pytest.mark.controlplane
def test_a_renewal_that_meets_a_conflict_re_reads_and_renews(electors, kube):
    leader, wire, _ = electors("leader", start=False)
    assert leader.try_acquire_or_renew()
    assert wire.statuses == [404]  # there was no Lease: it was created
    wire.statuses.clear()
    # Someone else changes the object (not the election fields): our resourceVersion is stale.
    wire.before_put = lambda: wire.client.request(
        "PATCH",
        f"/apis/coordination.k8s.io/v1/namespaces/{kube.namespace}/leases/cluster-autoscaler",
        body={"metadata": {"labels": {"touched": "yes"}}},
        content_type="application/merge-patch+json",
    )
    assert leader.try_acquire_or_renew() is False and wire.statuses == [409]
    assert leader.is_leader()  # still within the renew deadline
    assert leader.try_acquire_or_renew()
    lease = electors.lease()
    assert lease["spec"]["holderIdentity"] == "leader" and lease["metadata"]["labels"] == {"touched": "yes"}


@pytest.mark.controlplane
def test_never_two_leaders_across_an_api_server_restart(control_plane, electors):
    (a, _, _), (b, _, _) = electors("a"), electors("b")
    wait_for(lambda: leaders(a, b), 10, "a leader")
    seen: list[tuple[str, ...]] = []
    done = threading.Event()

    def sample():
        while not done.is_set():
            seen.append(tuple(e.identity for e in leaders(a, b)))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        control_plane.restart_apiserver()
        wait_for(lambda: leaders(a, b), 3 * LEASE_DURATION, "a leader after the restart")
    finally:
        done.set()
        sampler.join()
    assert all(len(leading) <= 1 for leading in seen)
    assert len(leaders(a, b)) == 1
