"""benchmarks/scaled_scenario.py: a bundled scenario at another size keeps its shape (every count
multiplied, nothing else changed), loads, and runs; what it cannot multiply is refused in one line."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from benchmarks import scaled_scenario
from hypothesis import given, settings
from hypothesis import strategies as st

from kubetide.sim import Simulation, load_scenario
from kubetide.sim.spec import ScenarioError
from kubetide.sweep.compare import Variant
from kubetide.sweep.grid import Setting

ROOT = Path(__file__).resolve().parents[1]
COMPARISON = sorted((ROOT / "examples" / "comparison").glob("*.yaml"))
HELD = {"pdb_violations": 0, "pods_lost": 0, "nodes_deleted_with_pods": 0}


def totals(data: dict) -> dict[str, int]:
    """The counts of a scenario document summed by what they count, read independently of the
    scaler: nodes at the start and at most, replicas of workloads and of scale events, PDB minimums."""
    spec = data["spec"]
    groups = spec.get("nodeGroups", [])
    objects = spec.get("objects", [])
    return {
        "initial nodes": sum(g.get("initialSize", 0) for g in groups),
        "max nodes": sum(g["maxSize"] for g in groups),
        "replicas": sum(o["spec"]["replicas"] for o in objects if "replicas" in o.get("spec", {})),
        "pdb minAvailable": sum(
            o["spec"].get("minAvailable", 0) for o in objects if o["kind"] == "PodDisruptionBudget"
        ),
        "scaled to": sum(e["scale"]["replicas"] for e in spec.get("events", []) if "scale" in e),
    }


def scaled(path: Path, factor: Fraction) -> dict:
    return scaled_scenario.scaled_scenario(yaml.safe_load(path.read_text()), factor, str(path), path.parent)


@pytest.mark.parametrize("path", COMPARISON, ids=lambda p: p.stem)
@pytest.mark.parametrize("factor", [1, 3, 7])
def test_a_whole_factor_multiplies_every_total_and_the_result_loads(path, factor, tmp_path):
    original = yaml.safe_load(path.read_text())
    data = scaled(path, Fraction(factor))
    assert totals(data) == {what: count * factor for what, count in totals(original).items()}
    # Node templates, prices, delays and the timeline stay as they are: only counts move.
    assert [g["template"] for g in data["spec"]["nodeGroups"]] == [
        g["template"] for g in original["spec"]["nodeGroups"]
    ]
    assert data["spec"].get("events") == _with_counts_of(
        original["spec"].get("events"), data["spec"].get("events")
    )
    out = tmp_path / "scaled.yaml"
    out.write_text(yaml.safe_dump(data))
    scenario = load_scenario(out)
    assert sum(g.initial_size for g in scenario.groups) == totals(original)["initial nodes"] * factor
    assert len(scenario.compare) == len(original["spec"].get("compare", []))


def _with_counts_of(events, scaled_events):
    """`events` with each scale event's replicas taken from `scaled_events`: equal to the scaled
    events exactly when nothing but the counts differs."""
    if events is None:
        return None
    merged = copy.deepcopy(events)
    for event, other in zip(merged, scaled_events, strict=True):
        if "scale" in event:
            event["scale"]["replicas"] = other["scale"]["replicas"]
    return merged


@settings(max_examples=50, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=10_000),
    factor=st.fractions(min_value=Fraction(1, 100), max_value=1000),
)
def test_a_count_is_rounded_and_one_that_was_not_zero_stays_at_least_one(count, factor):
    result = scaled_scenario.scaled_count(count, factor, "s.yaml", "spec.x")
    assert abs(result - count * factor) <= Fraction(1, 2) or (count > 0 and result == 1)
    assert (result == 0) == (count == 0)
    assert scaled_scenario.scaled_count(f"{count}%", factor, "s.yaml", "spec.x") == f"{count}%"


def test_a_small_factor_simulates_with_the_invariants_held_and_twice_the_pods(tmp_path):
    quarter = ROOT / "examples" / "comparison" / "quarter-load.yaml"
    out = tmp_path / "quarter-x2.yaml"
    out.write_text(yaml.safe_dump(scaled(quarter, Fraction(2))))
    for policy in ("cluster-autoscaler", "karpenter"):
        once, twice = (
            Simulation(Variant(policy, Setting((("policy", policy),))).apply(load_scenario(p))).run().summary
            for p in (quarter, out)
        )
        assert twice["invariants"] == HELD
        assert twice["pods"]["running_at_end"] == 2 * once["pods"]["running_at_end"]
        assert twice["groups"]["large"]["initial"] == 2 * once["groups"]["large"]["initial"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda s: s["objects"].append({"kind": "Pod", "metadata": {"name": "p"}}), "spec.objects[2]"),
        (lambda s: s.__setitem__("traces", [{"file": "t.csv"}]), "spec.traces"),
        (lambda s: s["nodeGroups"][0].__setitem__("maxSize", "ten"), "spec.nodeGroups[0].maxSize"),
    ],
    ids=["bare pod", "replica trace", "not a count"],
)
def test_what_cannot_be_multiplied_is_refused_naming_the_field(edit, field):
    path = ROOT / "examples" / "comparison" / "quarter-load.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data["spec"])
    with pytest.raises(ScenarioError) as refused:
        scaled_scenario.scaled_scenario(data, Fraction(2), str(path), path.parent)
    assert f"quarter-load.yaml: {field}:" in str(refused.value)


def test_the_command_refuses_a_bad_factor_in_one_line(tmp_path, capsys):
    path = ROOT / "examples" / "comparison" / "quarter-load.yaml"
    for factor, message in (("0", "must be more than 0"), ("two", "expected a number")):
        assert scaled_scenario.main([str(path), "--factor", factor, "--out", str(tmp_path / "x.yaml")]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"--factor: {message}" in err
    assert not (tmp_path / "x.yaml").exists()
