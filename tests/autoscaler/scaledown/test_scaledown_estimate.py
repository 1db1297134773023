"""The drain-time estimate: delay after taint, budget waves of replacement-to-Ready time rounded up
to the eviction retry, and the last wave's grace period."""

import dataclasses

import pytest
from scaledown_fakes import pod

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaledown.planning.estimate import DEFAULT_REPLACEMENT_READY, estimate_drain


def started(name, bound_to_ready, grace=30, restarts=0):
    """A Running pod bound at t=100 and Ready `bound_to_ready` seconds later."""
    p = pod(name, "n", grace=grace)
    return dataclasses.replace(
        p, scheduled_transition=100.0, ready_transition=100.0 + bound_to_ready, restarts=restarts
    )


# (description, pods, waves, options, seconds, wave seconds, replacement Ready, from history)
CASES = [
    (
        "one wave: delay after taint + grace",
        [pod("a", "n")],
        1,
        {},
        35.0,
        40.0,
        DEFAULT_REPLACEMENT_READY,
        False,
    ),
    (
        "grace capped by max-graceful-termination-sec",
        [pod("a", "n", grace=600)],
        1,
        {"max_graceful_termination_sec": 20},
        25.0,
        40.0,
        DEFAULT_REPLACEMENT_READY,
        False,
    ),
    (
        "three waves of the pods' own time to Ready, in 10 s retries",
        [started("a", 12), started("b", 12)],
        3,
        {},
        75.0,
        20.0,
        12.0,
        True,
    ),
    (
        "the slowest replacement gates the wave",
        [started("a", 3), started("b", 25)],
        2,
        {},
        65.0,
        30.0,
        25.0,
        True,
    ),
    (
        "a restarted pod's Ready time says nothing of a start",
        [started("a", 300, restarts=2)],
        2,
        {},
        75.0,
        40.0,
        DEFAULT_REPLACEMENT_READY,
        False,
    ),
    (
        "node-delete-delay-after-taint counts",
        [pod("a", "n", grace=0)],
        1,
        {"node_delete_delay_after_taint": 0.0},
        0.0,
        40.0,
        DEFAULT_REPLACEMENT_READY,
        False,
    ),
]


@pytest.mark.parametrize(
    ("pods", "waves", "options", "seconds", "wave", "ready", "from_history"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_estimate(pods, waves, options, seconds, wave, ready, from_history):
    e = estimate_drain(pods, waves, AutoscalerOptions(**options))
    assert (e.seconds, e.waves, e.wave_seconds, e.replacement_ready_seconds, e.from_history) == (
        seconds,
        waves,
        wave,
        ready,
        from_history,
    )


def test_the_words_say_what_the_estimate_is_made_of():
    e = estimate_drain([started("a", 12)], 3, AutoscalerOptions())
    assert e.words() == (
        "empties in about 1m15s: 3 waves of 20s (replacements Ready in 12s, the pods' readiness history)"
        " + 30s grace"
    )
    assert (
        estimate_drain([pod("a", "n")], 1, AutoscalerOptions()).words() == "empties in about 35s (30s grace)"
    )
