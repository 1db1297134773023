"""Pod cgroups as the kubelet lays them out, and what the agent reads from and writes to them.

Layouts (relative to each hierarchy's root; `<uid>` is the pod's UID, `<uid_>` the same with
dashes as underscores):

    cgroupfs driver   kubepods/pod<uid>                      Guaranteed
                      kubepods/burstable/pod<uid>            Burstable
                      kubepods/besteffort/pod<uid>           BestEffort
    systemd driver    kubepods.slice/kubepods-pod<uid_>.slice
                      kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
                      kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid_>.slice

cgroup v2 has one hierarchy (its root holds `cgroup.controllers`); v1 has one per controller:
`cpu` (quota), `cpuacct` (usage) and `memory`, mounted separately or together as `cpu,cpuacct`.

Readings, in the kubelet's own terms: cpu is cumulative nanoseconds (v2 `cpu.stat` usage_usec,
v1 `cpuacct.usage`), memory is the working set (usage minus inactive file pages: v2
`memory.current` minus `memory.stat` inactive_file, v1 `memory.usage_in_bytes` minus
`memory.stat` total_inactive_file), which is what the kubelet evicts on and metrics-server shows.

Throttling writes the pod-level CFS quota: v2 `cpu.max` ("QUOTA PERIOD", "max" for none), v1
`cpu.cfs_quota_us` (-1 for none) with `cpu.cfs_period_us`. The containers keep their own limits
one level down; the pod-level quota caps them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubetide.errors import UserError

CGROUPFS, SYSTEMD = "cgroupfs", "systemd"
DRIVERS = (CGROUPFS, SYSTEMD)
QOS_CLASSES = ("Guaranteed", "Burstable", "BestEffort")


class CgroupError(Exception):
    """A cgroup file the agent needs is missing or unreadable (the pod is gone, or not yet set up)."""


@dataclass(frozen=True, slots=True)
class PodCgroup:
    """Where one pod's cgroup is, per controller (v2: the same directory three times)."""

    version: int  # 1 or 2
    cpu: Path  # the quota files
    cpuacct: Path  # the usage counter
    memory: Path

    # -- reading -----------------------------------------------------------------------------
    def cpu_nanoseconds(self) -> int:
        """Cumulative cpu time of every process in the pod."""
        if self.version == 2:
            return _stat_field(self.cpuacct / "cpu.stat", "usage_usec") * 1000
        return _read_int(self.cpuacct / "cpuacct.usage")

    def memory_working_set(self) -> int:
        if self.version == 2:
            usage = _read_int(self.memory / "memory.current")
            inactive = _stat_field(self.memory / "memory.stat", "inactive_file", default=0)
        else:
            usage = _read_int(self.memory / "memory.usage_in_bytes")
            inactive = _stat_field(self.memory / "memory.stat", "total_inactive_file", default=0)
        return max(0, usage - inactive)

    # -- the CFS quota -----------------------------------------------------------------------
    def read_quota(self) -> str:
        """The quota file's text as it is (to put back exactly on restore)."""
        name = "cpu.max" if self.version == 2 else "cpu.cfs_quota_us"
        return _read(self.cpu / name).strip()

    def period_us(self) -> int:
        if self.version == 2:
            parts = _read(self.cpu / "cpu.max").split()
            return int(parts[1]) if len(parts) > 1 else 100_000
        return _read_int(self.cpu / "cpu.cfs_period_us")

    def write_quota_millicores(self, millicores: int) -> str:
        """Cap the pod at `millicores` of cpu; returns what was written."""
        period = self.period_us()
        # The kernel refuses quotas under 1 ms.
        quota = max(1000, millicores * period // 1000)
        text = f"{quota} {period}" if self.version == 2 else str(quota)
        self.write_quota_text(text)
        return text

    def write_quota_text(self, text: str) -> None:
        name = "cpu.max" if self.version == 2 else "cpu.cfs_quota_us"
        try:
            (self.cpu / name).write_text(text + "\n")
        except OSError as exc:
            raise CgroupError(f"cannot write {self.cpu / name}: {exc.strerror or exc}") from None


@dataclass(frozen=True, slots=True)
class CgroupLayout:
    """Where the kubelet's pod cgroups live on this node."""

    root: Path
    version: int
    driver: str

    def _hierarchy(self, controller: str) -> Path:
        if self.version == 2:
            return self.root
        for name in (controller, "cpu,cpuacct", "cpuacct,cpu"):
            if (self.root / name).is_dir():
                return self.root / name
        return self.root / controller

    def relative_paths(self, uid: str, qos_class: str) -> list[str]:
        """The pod's cgroup path for its QoS class first, then the other classes' (a pod's class
        as the model computes it could differ from the kubelet's in corner cases)."""
        order = [qos_class, *(c for c in QOS_CLASSES if c != qos_class)]
        return [_pod_path(self.driver, uid, c) for c in order if c in QOS_CLASSES]

    def pod(self, uid: str, qos_class: str) -> PodCgroup | None:
        """The pod's cgroup, None when it does not exist (yet, or any more)."""
        cpu, cpuacct, memory = (self._hierarchy(c) for c in ("cpu", "cpuacct", "memory"))
        for relative in self.relative_paths(uid, qos_class):
            if (cpuacct / relative).is_dir():
                return PodCgroup(self.version, cpu / relative, cpuacct / relative, memory / relative)
        return None


def _pod_path(driver: str, uid: str, qos_class: str) -> str:
    if driver == CGROUPFS:
        parent = "kubepods" if qos_class == "Guaranteed" else f"kubepods/{qos_class.lower()}"
        return f"{parent}/pod{uid}"
    escaped = uid.replace("-", "_")
    if qos_class == "Guaranteed":
        return f"kubepods.slice/kubepods-pod{escaped}.slice"
    tier = qos_class.lower()
    return f"kubepods.slice/kubepods-{tier}.slice/kubepods-{tier}-pod{escaped}.slice"


def detect_layout(root: Path, driver: str = "auto") -> CgroupLayout:
    """The cgroup version from the root (v2's unified root holds cgroup.controllers) and the
    driver from which top-level pod cgroup exists. A UserError (one line) when neither is found."""
    if not root.is_dir():
        raise UserError(f"--cgroup-root={root}: no such directory")
    version = 2 if (root / "cgroup.controllers").is_file() else 1
    layout = CgroupLayout(root, version, CGROUPFS)
    base = layout._hierarchy("cpuacct")
    if driver == "auto":
        found = [
            d for d, top in ((SYSTEMD, "kubepods.slice"), (CGROUPFS, "kubepods")) if (base / top).is_dir()
        ]
        if not found:
            raise UserError(
                f"--cgroup-root={root}: no kubepods or kubepods.slice under {base} "
                "(is this the host's cgroup mount? pass --cgroup-driver to skip detection)"
            )
        driver = found[0]
    elif driver not in DRIVERS:
        raise UserError(f"--cgroup-driver={driver}: expected auto, cgroupfs or systemd")
    return CgroupLayout(root, version, driver)


# -- files ------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise CgroupError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read_int(path: Path) -> int:
    text = _read(path).strip()
    try:
        return int(text)
    except ValueError:
        raise CgroupError(f"{path}: expected a number, got {text[:40]!r}") from None


def _stat_field(path: Path, name: str, default: int | None = None) -> int:
    """One `key value` line of a flat-keyed cgroup file (cpu.stat, memory.stat)."""
    for line in _read(path).splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            try:
                return int(value)
            except ValueError:
                raise CgroupError(f"{path}: {name} is not a number: {value[:40]!r}") from None
    if default is None:
        raise CgroupError(f"{path}: no {name}")
    return default
