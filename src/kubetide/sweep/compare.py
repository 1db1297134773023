"""One scenario and seed under several settings, side by side: `simulate --compare`, spec.compare.

A `Variant` is a named setting: autoscaler flags over the scenario's spec.autoscaler (a sweep
`Setting`, validated by the same flag parser) and, for the node QoS agent, spec.qos.precise. Each
variant's run is exactly `Simulation(variant.apply(scenario), seed, explain_unremovable=True).run()`, which is what
`kubetide simulate --set FLAG=VALUE ...` runs for those flags alone, so a compared run's files are
byte-identical to the lone run's (but for summary.json's wall_seconds).

Where the variants come from, first match wins: `--compare NAME:FLAG=VALUE,...` on the command
line, the scenario's spec.compare, or spec.qos.compare (the agent's precise mode against crane's
old act-on-every-candidate mode: the variants `precise` and `all`).

The runs are independent, so they run in parallel: one sweep LocalEngine task per variant, each
writing its own directory.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubetide import API_VERSION
from kubetide.errors import UserError
from kubetide.sim.report.columns import METRICS
from kubetide.sweep.grid import Setting, check_flags, with_options

if TYPE_CHECKING:
    from kubetide.sim.runtime.simulation import SimulationResult
    from kubetide.sim.spec.scenario import CompareEntry, Scenario

# Also the run's directory under --out: no dots, so never compare.json or report.html.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Variant:
    name: str
    setting: Setting
    qos_precise: bool | None = None  # spec.qos.precise for this run; None: the scenario's

    def apply(self, scenario: Scenario) -> Scenario:
        """The scenario with this variant's flags over its spec.autoscaler (and its qos mode)."""
        scenario = with_options(scenario, self.setting)
        if self.qos_precise is not None and scenario.qos is not None:
            qos = dataclasses.replace(scenario.qos, precise=self.qos_precise, compare=False)
            scenario = dataclasses.replace(scenario, qos=qos)
        return scenario


def parse_set(items: Sequence[str], base: Any, warnings: list[str] | None = None) -> Setting:
    """`--set FLAG=VALUE` items (`--set --flag=value` too) into one Setting, checked against `base`
    (the scenario's AutoscalerOptions) with the parser of spec.autoscaler; what the user should
    be told of the flags (check_flags) goes to `warnings`."""
    flags: dict[str, str] = {}
    for item in items:
        name, value = _flag(item, "--set ", "--set scale-down-unneeded-time=5m")
        flags[name] = value  # the last one wins, as on a command line
    setting = Setting(tuple(flags.items()))
    said = check_flags(setting.flags, base, "--set ")
    if warnings is not None:
        warnings += said
    return setting


def parse_compare(items: Sequence[str], base: Any, warnings: list[str] | None = None) -> list[Variant]:
    """`--compare NAME:FLAG=VALUE,FLAG=VALUE` items into variants. A piece without `=` belongs to
    the value before it, so `expander=priority,least-waste` stays one value. `NAME:` alone is the
    scenario's own setting. What the user should be told of the flags goes to `warnings`, once
    per flag whichever variants give it."""
    variants = []
    warned: set[str] = set()
    for item in items:
        name, sep, rest = item.partition(":")
        name = name.strip()
        if not sep or not NAME_PATTERN.match(name):
            raise UserError(
                f"--compare {item}: expected NAME:FLAG=VALUE,... with NAME letters, digits, '-' or '_' "
                "(e.g. --compare fast:scale-down-unneeded-time=2m)"
            )
        pieces: list[str] = []
        for piece in rest.split(","):
            if pieces and "=" not in piece:
                pieces[-1] += "," + piece
            elif piece.strip():
                pieces.append(piece)
        prefix = f"--compare {name}:"
        flags = dict(_flag(piece, prefix, "--compare fast:scale-down-unneeded-time=2m") for piece in pieces)
        setting = Setting(tuple(flags.items()))
        said = check_flags(setting.flags, base, prefix)
        for flag, _ in setting.flags:
            if flag not in warned:
                warned.add(flag)
                if warnings is not None:
                    warnings += [w for w in said if w.startswith(f"{prefix}{flag}:")]
        variants.append(Variant(name, setting))
    _unique(variants, "--compare")
    return variants


def scenario_variants(scenario: Scenario) -> list[Variant]:
    """The scenario's own comparison: spec.compare, else spec.qos.compare's two modes, else none."""
    if scenario.compare:
        return [Variant(entry.name, _entry_setting(entry), entry.qos_precise) for entry in scenario.compare]
    if scenario.qos is not None and scenario.qos.compare:
        return [Variant("precise", Setting(()), True), Variant("all", Setting(()), False)]
    return []


def sweep_settings(
    scenario: Scenario, grid: Mapping[str, Sequence[str]], no_compare: bool
) -> list[Setting] | None:
    """What `kubetide sweep` runs for a scenario with spec.compare: each entry's flags as one of
    its settings, every one over every seed (a sweep names settings by their flags, so the entries'
    names are not kept). None when the sweep runs its --grid: no spec.compare, or --no-compare.
    A sweep varies autoscaler flags only, so an entry choosing the QoS agent's mode (or
    spec.qos.compare) is refused, as is --grid beside spec.compare (which of the two to sweep is
    the user's choice)."""
    if no_compare:
        return None
    if scenario.qos is not None and scenario.qos.compare:
        raise UserError(
            f"{scenario.source}: spec.qos.compare: a sweep varies autoscaler flags only; compare the QoS "
            "agent's modes with `kubetide simulate`, or add --no-compare to sweep spec.qos.precise's mode"
        )
    if not scenario.compare:
        return None
    if grid:
        raise UserError(
            f"--grid: {scenario.source} has spec.compare ({len(scenario.compare)} settings); a sweep runs "
            "either those (without --grid) or the grid (add --no-compare)"
        )
    for index, entry in enumerate(scenario.compare):
        if entry.qos_precise is not None:
            raise UserError(
                f"{scenario.source}: spec.compare[{index}].qos: a sweep varies autoscaler flags only; "
                "compare the QoS agent's modes with `kubetide simulate`, or sweep with --no-compare"
            )
    return list(dict.fromkeys(_entry_setting(entry) for entry in scenario.compare))


def _entry_setting(entry: CompareEntry) -> Setting:
    """A spec.compare entry's flags as a Setting of text values, as --compare gives them (so that
    compare.json and sweep.json show `"4"` and `"false"` whether the YAML said 4 or "4")."""
    return Setting(tuple((name, _flag_text(value)) for name, value in entry.autoscaler.items()))


def _flag_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(_flag_text(item) for item in value)
    return str(value)


def run_variants(
    scenario: Any,
    seed: int | None,
    variants: Sequence[Variant],
    out_dir: Path,
    engine: Any,
    on_progress: Callable[[str, float], None] | None = None,
    on_done: Callable[[str], None] | None = None,
) -> list[tuple[Variant, Any]]:
    """Each variant's SimulationResult, in order, its files written to out_dir/<name>/. The runs
    are the `engine`'s tasks (a LocalEngine: in parallel on its workers, or in this process with
    one), one per variant. `on_progress(name, simulated seconds)` is called in this process as each
    run advances (the runs send it through a queue from wherever they run), `on_done(name)` as each
    run's directory is complete."""
    from kubetide.sim.runtime.simulation import SimulationResult

    updates: Any = None
    relay = None
    if on_progress is not None:
        updates = multiprocessing.Queue()
        relay = threading.Thread(target=_relay, args=(updates, on_progress), daemon=True)
        relay.start()
    done = {}
    try:
        for variant, fields, error in engine.map(run_variant, (scenario, seed, out_dir, updates), variants):
            if error is not None:
                raise error
            done[variant.name] = SimulationResult(scenario=variant.apply(scenario), **fields)
            if on_done is not None:
                on_done(variant.name)
    finally:
        if relay is not None:
            updates.put(None)
            relay.join()
    return [(variant, done[variant.name]) for variant in variants]


def partial_dir(out_dir: Path, name: str) -> Path:
    """Where a variant's files are written before they are complete (a dot: never a variant)."""
    return out_dir / f".{name}.partial"


def _relay(updates: Any, on_progress: Callable[[str, float], None]) -> None:
    while (update := updates.get()) is not None:
        on_progress(*update)


def run_variant(shared: tuple[Any, int | None, Path, Any], variant: Variant) -> dict[str, Any]:
    """One variant's run, as `simulate --set` would run it alone, and its files (an engine task).
    The SimulationResult comes back as its fields but the scenario, which need not pickle
    (spec.qos holds functions); run_variants puts the variant's scenario back."""
    from kubetide.sim.report.output import write_outputs
    from kubetide.sim.runtime.simulation import Simulation

    scenario, seed, out_dir, updates = shared
    progress = None if updates is None else (lambda elapsed: updates.put((variant.name, elapsed)))
    result = Simulation(variant.apply(scenario), seed=seed, explain_unremovable=True).run(progress=progress)
    # Written beside, then moved into place: an interrupted run leaves no half-written directory.
    partial = partial_dir(out_dir, variant.name)
    shutil.rmtree(partial, ignore_errors=True)
    write_outputs(result, partial, report=False)
    final = out_dir / variant.name
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return {
        field.name: getattr(result, field.name)
        for field in dataclasses.fields(result)
        if field.name != "scenario"
    }


def metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """One run's column of the comparison, read from its summary.json."""
    values: dict[str, Any] = {}
    for key, _, path in METRICS:
        value: Any = summary
        for part in path:
            value = value[part]
        values[key] = value
    values["disruption"] = summary["disruption"]
    values["invariants"] = dict(summary["invariants"])
    return values


# "converged" after a load change: the node count within this fraction of the final one, for good
CONVERGED_WITHIN = 0.05


def converge_seconds(result: SimulationResult) -> float | None:
    """From the last load change (the ledger's) until the node count is within 5% of its final
    value for the rest of the run, as sampled after each loop; None without a timeline."""
    rows = result.timeline
    if not rows:
        return None
    final = rows[-1]["nodes_total"]
    settled = rows[-1]["time"]
    for row in reversed(rows):
        if abs(row["nodes_total"] - final) > CONVERGED_WITHIN * final:
            break
        settled = row["time"]
    return round(max(0.0, settled - result.summary["disruption"]["last_load_change_at"]), 3)


def policy_metrics(result: SimulationResult) -> dict[str, Any]:
    """What a comparison of policies adds to a setting (compare.json's `policy`): which autoscaler
    ran, the median pod's wait, churn (nodes removed within 30 minutes of joining) and the time to
    converge after the last load change."""
    summary = result.summary
    return {
        "autoscaler": summary["autoscaler"],
        "pending_seconds_p50": result.pending_seconds_p50,
        "churned_nodes": summary["disruption"]["churned_nodes"],
        "converge_seconds": converge_seconds(result),
    }


def compares_policies(variants: Sequence[Variant]) -> bool:
    return any(name == "policy" for variant in variants for name, _ in variant.setting.flags)


def comparison(
    scenario: Scenario, seed: int, results: Sequence[tuple[Variant, SimulationResult]]
) -> dict[str, Any]:
    """compare.json: the settings in order, each with its flags, directory and metrics (and the
    QoS agent's counts when the scenario runs it; this was summary.json's qos.comparison; and,
    when a setting chooses the policy, `policy_metrics`)."""
    from kubetide.sim.report.qos import mode_counts

    policies = compares_policies([variant for variant, _ in results])
    settings = []
    for variant, result in results:
        entry: dict[str, Any] = {
            "name": variant.name,
            "flags": dict(variant.setting.flags),
            "dir": variant.name,
            "metrics": metrics(result.summary),
        }
        if variant.qos_precise is not None:
            entry["qos_precise"] = variant.qos_precise
        if "qos" in result.summary:
            entry["qos"] = mode_counts(result.summary)
        if policies:
            entry["policy"] = policy_metrics(result)
        settings.append(entry)
    return {
        "apiVersion": API_VERSION,
        "kind": "Comparison",
        "scenario": scenario.name,
        "seed": seed,
        "simulated_seconds": round(scenario.duration, 3),
        "settings": settings,
    }


def _flag(item: str, prefix: str, example: str) -> tuple[str, str]:
    name, sep, value = item.strip().partition("=")
    name = name.strip().removeprefix("--")
    if not sep or not name or not value.strip():
        raise UserError(f"{prefix}{item.strip()}: expected FLAG=VALUE (e.g. {example})")
    return name, value.strip()


def _unique(variants: Sequence[Variant], where: str) -> None:
    seen: set[str] = set()
    for variant in variants:
        if variant.name in seen:
            raise UserError(f"{where} {variant.name}: the name is given twice")
        seen.add(variant.name)
