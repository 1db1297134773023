"""A bundled scenario at another size, the same shape: every count in it multiplied by one factor.

    python -m benchmarks.scaled_scenario examples/comparison/quarter-load.yaml --factor 20 --out /tmp/q20.yaml
    kubetide simulate /tmp/q20.yaml --no-report

docs/comparison.md publishes the three policies at about 100 and 1,000 nodes this way. Multiplied
(rounded; a count that was not zero stays at least 1): node groups' minSize / maxSize /
initialSize, Karpenter NodePools' limits and absolute disruption budgets, workloads' replicas
(Deployment, StatefulSet, ReplicaSet), Jobs' parallelism and completions, HPAs' minReplicas and
maxReplicas, PodDisruptionBudgets' absolute minAvailable / maxUnavailable (percentages already
scale), and the same fields in events (scale replicas, fault counts, applied objects). Node sizes,
prices, delays and requests stay as they are, so twenty times quarter-load is twenty copies of
its load on twenty times its nodes, not bigger nodes.

What cannot be multiplied without changing the scenario is refused in one line: bare Pods and
Nodes (copies would need names), and replica traces (spec.traces' CSV rows). Relative usage trace
paths are made absolute, so the scaled file runs from anywhere.
"""

from __future__ import annotations

import argparse
import copy
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml

from kubetide.cloud.schema import read_spec_documents
from kubetide.errors import UserError
from kubetide.model.quantity import parse_quantity
from kubetide.sim.spec import ScenarioError

WORKLOAD_COUNTS = {
    "Deployment": ("replicas",),
    "StatefulSet": ("replicas",),
    "ReplicaSet": ("replicas",),
    "Job": ("parallelism", "completions"),
    "HorizontalPodAutoscaler": ("minReplicas", "maxReplicas"),
    "PodDisruptionBudget": ("minAvailable", "maxUnavailable"),
}
UNSCALABLE_KINDS = ("Pod", "Node")
GROUP_COUNTS = ("minSize", "maxSize", "initialSize")


def scaled_count(value: Any, factor: Fraction, source: str, field: str) -> Any:
    """`value` times `factor`, rounded half up; a count that was not zero stays at least 1.
    Percentages ("10%") are returned as they are: they scale with what they are a share of."""
    if isinstance(value, str) and value.endswith("%"):
        return value
    if isinstance(value, str) and value.isdigit():  # a Karpenter budget's nodes: "2"
        return str(scaled_count(int(value), factor, source, field))
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(source, field, f"expected a whole number or a percentage, got {value!r}")
    if value == 0:
        return 0
    return max(1, int(value * factor + Fraction(1, 2)))


def scaled_scenario(data: dict, factor: Fraction, source: str, base_dir: Path) -> dict:
    """A copy of the scenario document `data` (read from `source` in `base_dir`) with every count
    multiplied by `factor`; ScenarioError naming the field for what cannot be multiplied."""
    if factor <= 0:
        raise UserError(f"--factor: must be more than 0, got {float(factor):g}")
    out = copy.deepcopy(data)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        raise ScenarioError(source, "", "spec: expected a mapping")
    if spec.get("traces"):
        raise ScenarioError(
            source, "spec.traces", "replica traces are not scaled (their CSV rows are counts)"
        )
    metadata = out.setdefault("metadata", {})
    if isinstance(metadata, dict) and "name" in metadata:
        metadata["name"] = f"{metadata['name']}-x{_factor_text(factor)}"
    for i, group in enumerate(spec.get("nodeGroups") or []):
        for key in GROUP_COUNTS:
            if key in group:
                group[key] = scaled_count(group[key], factor, source, f"spec.nodeGroups[{i}].{key}")
    for i, pool in enumerate(spec.get("nodePools") or []):
        where = f"spec.nodePools[{i}]"
        limits = pool.get("limits") or {}
        for resource, quantity in limits.items():
            limits[resource] = _scaled_quantity(quantity, factor, source, f"{where}.limits.{resource}")
        for j, budget in enumerate((pool.get("disruption") or {}).get("budgets") or []):
            if "nodes" in budget:
                budget["nodes"] = scaled_count(
                    budget["nodes"], factor, source, f"{where}.disruption.budgets[{j}].nodes"
                )
    for usage in spec.get("usage") or []:
        if isinstance(usage, dict) and isinstance(usage.get("trace"), str):
            usage["trace"] = str((base_dir / usage["trace"]).resolve())
    _scale_objects(spec.get("objects") or [], factor, source, "spec.objects")
    for i, event in enumerate(spec.get("events") or []):
        where = f"spec.events[{i}]"
        if "scale" in event and "replicas" in event["scale"]:
            event["scale"]["replicas"] = scaled_count(
                event["scale"]["replicas"], factor, source, f"{where}.scale.replicas"
            )
        if "fault" in event and "count" in event["fault"]:
            event["fault"]["count"] = scaled_count(
                event["fault"]["count"], factor, source, f"{where}.fault.count"
            )
        if "apply" in event:
            _scale_objects(event["apply"] or [], factor, source, f"{where}.apply")
    return out


def _scale_objects(objects: list, factor: Fraction, source: str, where: str) -> None:
    for i, obj in enumerate(objects):
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind in UNSCALABLE_KINDS:
            raise ScenarioError(
                source, f"{where}[{i}]", f"a {kind} cannot be multiplied (copies would need names)"
            )
        spec = obj.get("spec") if isinstance(obj, dict) else None
        if not isinstance(spec, dict):
            continue
        for key in WORKLOAD_COUNTS.get(kind, ()):
            if key in spec:
                spec[key] = scaled_count(spec[key], factor, source, f"{where}[{i}].spec.{key}")


def _scaled_quantity(quantity: Any, factor: Fraction, source: str, field: str) -> str:
    try:
        value = parse_quantity(quantity) * factor
    except ValueError as exc:
        raise ScenarioError(source, field, str(exc)) from None
    # Whole units where the result is whole (cpu "16" -> "320"), milli-units otherwise.
    return str(int(value)) if value.denominator == 1 else f"{int(value * 1000)}m"


def _factor_text(factor: Fraction) -> str:
    """The factor as a name may hold it: 20 -> "20", 0.7 -> "0-7" (no dots in a Kubernetes name)."""
    return str(factor.numerator) if factor.denominator == 1 else f"{float(factor):g}".replace(".", "-")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.scaled_scenario", description=__doc__.split("\n")[0]
    )
    parser.add_argument("scenario", type=Path)
    parser.add_argument("--factor", required=True, help="what every count is multiplied by (20, 0.7)")
    parser.add_argument("--out", required=True, type=Path, help="the scaled scenario file to write")
    args = parser.parse_args(argv)
    try:
        try:
            factor = Fraction(args.factor)
        except ValueError:
            raise UserError(f"--factor: expected a number, got {args.factor!r}") from None
        documents = read_spec_documents(args.scenario, ScenarioError)
        if len(documents) != 1 or not isinstance(documents[0], dict):
            raise ScenarioError(str(args.scenario), "", "expected one YAML document with kind: Scenario")
        data = scaled_scenario(documents[0], factor, str(args.scenario), args.scenario.parent)
        try:
            args.out.write_text(yaml.safe_dump(data, sort_keys=False))
        except OSError as exc:
            raise UserError(f"--out {args.out}: {exc.strerror}") from None
    except UserError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
