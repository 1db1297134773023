"""Where the agent's usage numbers come from: the node's /proc and the pod cgroups, or the
kubelet's summary API. Both give the same `Usage`: cpu in millicores, memory in bytes.

CPU from /proc and the cgroups is a cumulative counter, so usage is a rate between two readings:
the first sample of the node has no cpu rate (and neither has a pod's first sample). The agent
then reports the node's cpu as missing and does not act (see loop.py); a pod without a rate keeps
its memory and counts as using no cpu, as the executor treats pods without data.

Node cpu is the busy share of all cpus' ticks in /proc/stat (user..steal, without idle and
iowait) times the number of cpus: no clock is involved. Pod cpu is cgroup nanoseconds over the
monotonic time between readings. Node memory is MemTotal - MemAvailable from /proc/meminfo.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kubetide.agent.cgroups import CgroupError, CgroupLayout
from kubetide.kube.client import ApiError, KubeClient
from kubetide.model import Pod
from kubetide.model.quantity import CPU, MEMORY


@dataclass
class Usage:
    """One sample: the node's usage (cpu absent when there is no rate yet) and each pod's, by UID
    (a pod absent: nothing measured it)."""

    node: dict[str, int] = field(default_factory=dict)
    pods: dict[str, dict[str, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # readings that failed, for the log


class UsageSource(Protocol):
    node_source: str  # what measures the node's own usage, for NodeState.usage_source

    def sample(self, pods: Sequence[Pod]) -> Usage:
        """Read the node and `pods` now."""
        ...


# -- /proc ------------------------------------------------------------------------------------


def read_cpu_ticks(proc_root: Path) -> tuple[int, int, int]:
    """(busy ticks, total ticks, number of cpus) from /proc/stat's aggregate `cpu` line. guest and
    guest_nice are already counted in user and nice, so they are left out of the total."""
    text = _read(proc_root / "stat")
    busy = total = cpus = 0
    found = False
    for line in text.splitlines():
        name, *fields = line.split()
        if name == "cpu":
            ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
            ticks += [0] * (8 - len(ticks))
            total = sum(ticks)
            busy = total - ticks[3] - ticks[4]
            found = True
        elif name.startswith("cpu") and name[3:].isdigit():
            cpus += 1
    if not found or not cpus:
        raise CgroupError(f"{proc_root / 'stat'}: no cpu lines")
    return busy, total, cpus


def read_memory_used(proc_root: Path) -> int:
    """MemTotal - MemAvailable, in bytes (/proc/meminfo counts kB)."""
    values: dict[str, int] = {}
    for line in _read(proc_root / "meminfo").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024
    if "MemTotal" not in values or "MemAvailable" not in values:
        raise CgroupError(f"{proc_root / 'meminfo'}: no MemTotal or MemAvailable")
    return values["MemTotal"] - values["MemAvailable"]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CgroupError(f"cannot read {path}: {exc.strerror or exc}") from None


# -- the cgroup source ------------------------------------------------------------------------


class CgroupUsageSource:
    """Node usage from /proc, pod usage from the pod cgroups; rates between successive samples."""

    node_source = "/proc"

    def __init__(
        self, proc_root: Path, layout: CgroupLayout, monotonic: Callable[[], float] = time.monotonic
    ):
        self.proc_root = proc_root
        self.layout = layout
        self.monotonic = monotonic
        self._node_ticks: tuple[int, int] | None = None
        self._pod_cpu: dict[str, tuple[int, float]] = {}  # uid -> (cpu ns, when read)

    def sample(self, pods: Sequence[Pod]) -> Usage:
        usage = Usage()
        try:
            busy, total, cpus = read_cpu_ticks(self.proc_root)
            previous, self._node_ticks = self._node_ticks, (busy, total)
            if previous is not None and total > previous[1]:
                share = (busy - previous[0]) / (total - previous[1])
                usage.node[CPU] = round(max(0.0, share) * cpus * 1000)
            usage.node[MEMORY] = read_memory_used(self.proc_root)
        except (CgroupError, ValueError) as exc:
            usage.problems.append(str(exc))
        seen: dict[str, tuple[int, float]] = {}
        for pod in pods:
            cgroup = self.layout.pod(pod.uid, pod.qos_class)
            if cgroup is None:
                continue  # not started yet, or gone: no usage data
            try:
                nanoseconds, now = cgroup.cpu_nanoseconds(), self.monotonic()
                measured = {MEMORY: cgroup.memory_working_set()}
            except CgroupError as exc:
                usage.problems.append(f"pod {pod.key}: {exc}")
                continue
            seen[pod.uid] = (nanoseconds, now)
            before = self._pod_cpu.get(pod.uid)
            if before is not None and now > before[1] and nanoseconds >= before[0]:
                measured[CPU] = round((nanoseconds - before[0]) / (now - before[1]) / 1e6)
            usage.pods[pod.uid] = measured
        self._pod_cpu = seen  # pods that went away are forgotten
        return usage


# -- the kubelet's summary API ---------------------------------------------------------------


def parse_summary(summary: Mapping) -> Usage:
    """The kubelet's /stats/summary: usageNanoCores is already a rate (the kubelet's), so there
    is no first-sample gap; workingSetBytes is the same working set the cgroup source computes."""
    usage = Usage()
    node = summary.get("node")
    if isinstance(node, Mapping):
        _put(usage.node, node)
    pods = summary.get("pods")
    for pod in pods if isinstance(pods, list) else ():
        ref = pod.get("podRef") if isinstance(pod, Mapping) else None
        uid = ref.get("uid") if isinstance(ref, Mapping) else None
        if isinstance(uid, str) and uid:
            measured: dict[str, int] = {}
            _put(measured, pod)
            if measured:
                usage.pods[uid] = measured
    return usage


def _put(target: dict[str, int], stats: Mapping) -> None:
    """cpu and memory from one summary entry; a missing or malformed figure is left out."""
    cpu, memory = stats.get("cpu"), stats.get("memory")
    cores = cpu.get("usageNanoCores") if isinstance(cpu, Mapping) else None
    if isinstance(cores, int | float) and not isinstance(cores, bool):
        target[CPU] = round(cores / 1e6)
    working_set = memory.get("workingSetBytes") if isinstance(memory, Mapping) else None
    if isinstance(working_set, int | float) and not isinstance(working_set, bool):
        target[MEMORY] = int(working_set)


class SummaryUsageSource:
    """The kubelet's summary through the API server's node proxy (nodes/proxy permission)."""

    node_source = "the kubelet summary"

    def __init__(self, client: KubeClient, node_name: str):
        self.client = client
        self.path = f"/api/v1/nodes/{node_name}/proxy/stats/summary"

    def sample(self, pods: Sequence[Pod]) -> Usage:
        try:
            return parse_summary(self.client.request("GET", self.path, timeout=15.0))
        except ApiError as exc:
            return Usage(problems=[f"kubelet summary: {exc}"])
