from kubetide.sim.runtime.engine import Engine
from kubetide.sim.spec.scenario import EPOCH


def test_events_run_in_time_then_scheduling_order():
    engine = Engine(seed=1)
    seen = []
    engine.after(5, seen.append, "b")
    engine.after(1, seen.append, "a")
    engine.after(5, seen.append, "c")  # same time as "b": scheduled later, runs later
    engine.run_until(EPOCH + 10)
    assert seen == ["a", "b", "c"]
    assert engine.now() == EPOCH + 10


def test_cancelled_timers_do_nothing_and_time_stops_at_the_horizon():
    engine = Engine(seed=1)
    seen = []
    timer = engine.after(2, seen.append, "x")
    engine.after(20, seen.append, "late")
    timer.cancel()
    engine.run_until(EPOCH + 10)
    assert seen == []
    assert engine.elapsed() == 10
    engine.run_until(EPOCH + 20)
    assert seen == ["late"]


def test_events_scheduled_while_running_run_in_order():
    engine = Engine(seed=1)
    seen = []

    def first():
        seen.append(("first", engine.elapsed()))
        engine.after(0, lambda: seen.append(("chained", engine.elapsed())))

    engine.after(3, first)
    engine.run_until(EPOCH + 5)
    assert seen == [("first", 3), ("chained", 3)]


def test_random_streams_are_per_component_and_seeded():
    a = Engine(seed=7)
    b = Engine(seed=7)
    b.rng("scheduler").random()  # another component drawing first...
    assert [a.rng("cloud").random() for _ in range(3)] == [b.rng("cloud").random() for _ in range(3)]
    assert Engine(seed=8).rng("cloud").random() != Engine(seed=7).rng("cloud").random()
