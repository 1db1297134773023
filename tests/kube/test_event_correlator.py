"""Issue 39 item 5: the event correlator's rules, as client-go's EventCorrelator has them, plus
one TriggeredScaleUp per pod per scale-up. EventCorrelator does no I/O: these tests need no API
server (tests/kube/test_run_events.py checks the same on the real control plane)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.events import Event
from kubetide.kube.events import (
    AGGREGATE_INTERVAL_SECONDS,
    AGGREGATED_PREFIX,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    Create,
    EventCorrelator,
)

T0 = 1_800_000_000.0


def write(correlator: EventCorrelator, event: Event, now: float | None = None):
    """Correlate `event` and report the write done, as EventRecorder does."""
    now = event.at if now is None else now
    decided = correlator.correlate(event, now)
    if isinstance(decided, Create):
        correlator.created(decided, f"e{id(decided)}", "ns", now)
    elif decided is not None:
        correlator.patched(decided, now)
    return decided


def triggered(pod: str, at: float, increases: str = "{burst 0->5 (max: 60)}") -> Event:
    return Event.triggered_scale_up(f"ns/{pod}", increases, at)


def test_a_pod_counted_by_each_loop_of_one_scale_up_gets_one_triggered_scale_up():
    correlator = EventCorrelator()
    sizes = ["0->5", "5->9", "9->12", "12->14", "14->15"]  # each loop's increase says other sizes
    decided = [
        write(correlator, triggered("web-1", T0 + 2 * i, f"{{burst {s} (max: 60)}}"))
        for i, s in enumerate(sizes)
    ]
    assert isinstance(decided[0], Create)
    assert decided[1:] == [None] * 4
    # Another pod of the same loops has its own.
    assert isinstance(write(correlator, triggered("web-2", T0 + 2)), Create)


def test_a_later_scale_up_for_the_same_pod_is_said_again():
    correlator = EventCorrelator()
    assert isinstance(write(correlator, triggered("web-1", T0)), Create)
    later = T0 + AGGREGATE_INTERVAL_SECONDS + 1  # e.g. after ScaleUpTimedOut, another group
    assert isinstance(write(correlator, triggered("web-1", later, "{other 0->1 (max: 5)}")), Create)


@settings(max_examples=60)
@given(
    st.lists(
        st.tuples(st.integers(0, 9), st.floats(0, 3 * AGGREGATE_INTERVAL_SECONDS, allow_nan=False)),
        min_size=1,
        max_size=80,
    )
)
def test_no_pod_gets_two_triggered_scale_ups_within_a_decision(said):
    # Loops in time order; each names the pods its scale-up counted.
    correlator = EventCorrelator()
    created: dict[str, list[float]] = {}
    for pod, offset in sorted(said, key=lambda item: item[1]):
        if isinstance(write(correlator, triggered(f"p{pod}", T0 + offset)), Create):
            created.setdefault(f"p{pod}", []).append(T0 + offset)
    assert set(created) == {f"p{pod}" for pod, _ in said}  # every pod counted is told once
    for times in created.values():
        assert all(b - a >= AGGREGATE_INTERVAL_SECONDS for a, b in itertools.pairwise(times))


def test_the_spam_filter_allows_25_writes_per_object_then_one_per_five_minutes():
    correlator = EventCorrelator(refresh_seconds=0)  # every repeat would be a write
    node = [Event.scale_down_failed("n1", "no place for its pods", T0) for _ in range(40)]
    decided = [write(correlator, e, T0) for e in node]
    assert sum(d is not None for d in decided) == SPAM_BURST
    # The count is kept, not lost: written once a token is back.
    assert correlator.due(T0 + SPAM_REFILL_SECONDS / 2) == []
    [entry] = correlator.due(T0 + SPAM_REFILL_SECONDS)
    assert entry.count == 40
    # Another object has a bucket of its own.
    assert isinstance(write(correlator, Event.scale_down_failed("n2", "why", T0), T0), Create)
    # A new Event beyond the bucket is dropped, and counted.
    other = Event.node_removed("n1", T0)
    assert write(correlator, other, T0 + SPAM_REFILL_SECONDS) is None
    assert correlator.spam_filtered == 1


def test_ten_similar_messages_within_ten_minutes_are_combined():
    correlator = EventCorrelator()
    decided = [
        write(correlator, Event.not_trigger_scale_up("ns/picky", f"reason {i}", T0 + i)) for i in range(12)
    ]
    creates = [d for d in decided if isinstance(d, Create)]
    assert [c.message for c in creates[:9]] == [f"reason {i}" for i in range(9)]
    assert len(creates) == 10 and creates[9].message == AGGREGATED_PREFIX + "reason 9"
    # The next similar ones go to the combined Event: its count, held for the refresh.
    assert decided[10:] == [None, None]
    [combined] = correlator.due(T0 + 12 + 300)
    assert combined.count == 3 and combined.message == AGGREGATED_PREFIX + "reason 11"


def test_the_same_event_said_again_is_a_count_not_a_new_event():
    correlator = EventCorrelator()
    event = Event.scale_down_failed("n1", "no place", T0)
    assert isinstance(write(correlator, event), Create)
    assert write(correlator, event, T0 + 10) is None  # held back until the refresh
    entry = write(correlator, event, T0 + 300)
    assert entry is not None and not isinstance(entry, Create) and entry.count == 3
