"""spec.qos, checked: the node QoS agents' configuration and options, with the usage profiles
(spec.usage and pod annotations, spec/usage.py) they sample. runtime/qos.py runs the agents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from kubetide.cloud.schema import Duration, StrictModel
from kubetide.model import Manifests
from kubetide.qos import AgentOptions, QosConfig
from kubetide.sim.spec.errors import ScenarioError
from kubetide.sim.spec.files import read_manifests
from kubetide.sim.spec.profiles import UsageModel
from kubetide.sim.spec.usage import UsageSpec, load_usage

QOS_KINDS = ("NodeQOS", "AvoidanceAction", "PodQOS")


class QosSpec(StrictModel):
    """The node QoS agent on every node (runtime/qos.py runs it)."""

    collectInterval: Duration = Field(default=10.0, ge=1.0)
    precise: bool = True
    executeExcessPercent: int = Field(default=10, ge=0, le=100)
    compare: bool = False  # also run with the other `precise` setting; both counts in summary.json
    objects: list[dict[str, Any]] = Field(min_length=1)  # NodeQOS / AvoidanceAction, inline or {file:}


@dataclass(frozen=True)
class QosSettings:
    """spec.qos, checked: the agents' configuration, options and the pods' usage profiles."""

    config: QosConfig
    usage: UsageModel
    collect_interval: float = 10.0
    precise: bool = True
    execute_excess_percent: int = 10
    compare: bool = False
    resources: tuple[str, ...] = ()  # resources some rule watches (timeline peaks)

    def options(self) -> AgentOptions:
        return AgentOptions(precise=self.precise, execute_excess_percent=self.execute_excess_percent)


# -- loading (called by spec/scenario.py) ----------------------------------------------------


def load_qos(
    qos: QosSpec | None,
    usage_specs: list[UsageSpec],
    seed: int,
    manifests: list[tuple[str, Manifests]],
    source: str,
    base_dir: Path,
    warnings: list[str],
) -> tuple[QosSettings | None, UsageModel]:
    """spec.qos (None when there is none) and spec.usage of a validated scenario shape.
    `manifests` are (where, manifests) pairs: spec.objects and each applied event's.

    Usage profiles (spec.usage and pod annotations) are checked either way, so a mistake in one
    is reported even while the agent is off; HorizontalPodAutoscalers read them too
    (runtime/hpa.py)."""
    for where, loaded_here in manifests:
        for kind in QOS_KINDS:
            for obj in loaded_here.other.get(kind, ()):
                raise ScenarioError(source, where, f'{kind} "{obj.name}" belongs in spec.qos.objects')
    usage = load_usage(usage_specs, manifests, source, base_dir, seed, warnings)
    if qos is None:
        hpas = any(loaded_here.other.get("HorizontalPodAutoscaler") for _, loaded_here in manifests)
        if usage_specs and not hpas:
            warnings.append(
                f"{source}: spec.usage: usage profiles only matter to the node QoS agent (spec.qos) "
                "and HorizontalPodAutoscalers"
            )
        return None, usage
    where = "spec.qos.objects"
    loaded = read_manifests(qos.objects, source, where, base_dir)
    others = [
        ("Node", loaded.nodes),
        ("Pod", loaded.pods),
        ("PodDisruptionBudget", loaded.pdbs),
        ("PriorityClass", loaded.priority_classes),
        ("Namespace", loaded.namespaces),
        ("ConfigMap", loaded.configmaps),
        *((w.kind, [w]) for w in loaded.workloads),
        *((kind, objs) for kind, objs in loaded.other.items() if kind not in QOS_KINDS),
    ]
    for kind, objs in others:
        if objs:
            raise ScenarioError(
                source,
                where,
                f"only NodeQOS, AvoidanceAction and PodQOS belong here (found a {kind}; put it in spec.objects)",
            )
    warnings.extend(loaded.warnings)
    config = QosConfig.from_manifests(loaded)  # ManifestError names the file, object and field
    if not config.nodeqos:
        raise ScenarioError(source, where, "no NodeQOS: the agent would watch nothing")
    warnings.extend(config.warnings)
    resources = []
    for nodeqos in config.nodeqos:
        for rule in nodeqos.rules:
            resource = config.registry[rule.metric].resource
            if resource not in resources:
                resources.append(resource)
    settings = QosSettings(
        config=config,
        usage=usage,
        collect_interval=qos.collectInterval,
        precise=qos.precise,
        execute_excess_percent=qos.executeExcessPercent,
        compare=qos.compare,
        resources=tuple(resources),
    )
    return settings, usage
