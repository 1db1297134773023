"""Settings for the whole suite.

Hypothesis's default 200 ms deadline per example is a wall-clock assertion: on a shared 2-core
machine a first example that imports NumPy, or any example during a load spike, fails it while
the property holds. The suite asserts behaviour, never time, so the deadline is off everywhere."""

from hypothesis import settings

settings.register_profile("kubetide", deadline=None)
settings.load_profile("kubetide")
