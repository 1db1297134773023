"""The fuzzer's short budget (issue 13): a few hundred mutated examples through the CLI, each in
a forked child with time and memory limits, must all exit 0 or 2 with one clear line.

The long budget is `python -m benchmarks.fuzz` (docs/fuzzing.md)."""

from benchmarks import fuzz

INPUTS = 300
NEW_KIND_INPUTS = 80
SEED = 13  # fixed: the suite runs the same inputs every time
TIMEOUT = 60.0


def test_mutated_examples_never_break_the_cli():
    cases = fuzz.generate(INPUTS, SEED)
    assert len(cases) == INPUTS
    assert_no_failures(cases)


def test_mutated_new_kinds_never_break_the_cli():
    """The newer kinds on their own (issue 36): CronJobs, HPAs, usage traces and rollout events
    given values of their own domains, and the Dask and gRPC expander addresses replaced."""
    cases = fuzz.generate(NEW_KIND_INPUTS, SEED, fuzz.NEW_KIND_SEEDS)
    mutations = " ".join(m for case in cases for m in case.mutations)
    for field in ("schedule", "metrics", "--scheduler-address", "grpc-expander-url", "broken CSV"):
        assert field in mutations, f"no {field} mutation among {NEW_KIND_INPUTS} inputs"
    assert_no_failures(cases)


def assert_no_failures(cases: list[fuzz.Case]) -> None:
    failures = []

    def record(case, result):
        kind, why = fuzz.outcome(case, result)
        if kind in fuzz.FAILURES:
            failures.append(f"{kind}: kubetide {' '.join(case.argv)} [{case.describe()}]: {why}")

    fuzz.run_cases(cases, jobs=2, timeout=TIMEOUT, on_result=record)
    assert not failures, "\n".join(failures)


def test_the_same_seed_makes_the_same_inputs():
    first, second = fuzz.generate(20, SEED), fuzz.generate(20, SEED)
    assert [(c.argv, c.files, c.mutations) for c in first] == [(c.argv, c.files, c.mutations) for c in second]
