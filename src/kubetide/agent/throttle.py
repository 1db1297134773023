"""CPU throttling of pods on this node: the pod cgroup's CFS quota, and putting it back.

Before the first write to a pod's cgroup the quota file's text is kept as it was (the kubelet's
value: the sum of the containers' limits, or none), so restoring writes back exactly that.

Where the originals are kept across restarts: a local state file (JSON, on a hostPath), not a pod
annotation. The original is a fact about this node's cgroup, read and written only here; a pod
annotation would need `patch` on every pod of the cluster (RBAC cannot limit it to one node's
pods) and an API write per throttle step, and a lost write would leave a pod throttled with
nothing saying so. The file is rewritten (atomically) after every change, read at start, and
emptied when SIGTERM restores every throttled pod. It survives the agent's pod being replaced,
as long as it sits on the host (deploy/qos-agent mounts /var/lib/kubetide-qos-agent).

The file is trusted no further than --cgroup-root: an entry whose cgroup directory is not an
absolute path, names `..`, or resolves (symlinks followed) outside the cgroup root is logged and
dropped at load, so a tampered or stale file cannot make the agent write quota text elsewhere
on the host when it restores.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from kubetide.agent.cgroups import CgroupError, PodCgroup
from kubetide.errors import UserError
from kubetide.model import Pod

log = logging.getLogger("kubetide.agent")


@dataclass(frozen=True, slots=True)
class Throttled:
    pod: str  # namespace/name, for people
    cpu_dir: str  # the pod cgroup's cpu directory
    version: int
    original: str  # the quota file's text before the agent's first write
    quota: int  # millicores the agent set last


class CgroupThrottler:
    """Sets and restores pods' CFS quotas. `find` locates a pod's cgroup (None: not there)."""

    def __init__(
        self,
        find: Callable[[Pod], PodCgroup | None],
        state_file: Path | None = None,
        *,
        cgroup_root: Path | None = None,
    ):
        """`cgroup_root`: where every restored cgroup directory must lie (None: not checked,
        for tests that keep no state across a restart)."""
        self.find = find
        self.state_file = state_file
        self.cgroup_root = cgroup_root
        self.throttled: dict[str, Throttled] = {}  # pod UID -> what the agent did to it
        if state_file is not None:
            self._load(state_file)

    def quota(self, uid: str) -> int | None:
        """The quota the agent holds the pod at (millicores), None when it is not throttled."""
        entry = self.throttled.get(uid)
        return None if entry is None else entry.quota

    def throttle(self, pod: Pod, millicores: int) -> None:
        entry = self.throttled.get(pod.uid)
        cgroup = self._cgroup(pod, entry)
        original = entry.original if entry is not None else cgroup.read_quota()
        cgroup.write_quota_millicores(millicores)
        self.throttled[pod.uid] = Throttled(pod.key, str(cgroup.cpu), cgroup.version, original, millicores)
        self._save()

    def restore(self, pod: Pod, millicores: int | None) -> None:
        """Raise the quota to `millicores`; None puts back the kubelet's original."""
        entry = self.throttled.get(pod.uid)
        if entry is None:
            return
        cgroup = self._cgroup(pod, entry)
        if millicores is None:
            cgroup.write_quota_text(entry.original)
            del self.throttled[pod.uid]
        else:
            cgroup.write_quota_millicores(millicores)
            self.throttled[pod.uid] = Throttled(
                entry.pod, entry.cpu_dir, entry.version, entry.original, millicores
            )
        self._save()

    def restore_all(self) -> list[str]:
        """Put every throttled pod's original quota back (SIGTERM); returns the pods restored.
        A pod whose cgroup is gone needs nothing and is dropped."""
        restored = []
        for uid, entry in list(self.throttled.items()):
            cgroup = _at(entry)
            if cgroup.cpu.is_dir():
                try:
                    cgroup.write_quota_text(entry.original)
                    restored.append(entry.pod)
                except CgroupError as exc:
                    log.warning("pod %s not restored: %s", entry.pod, exc)
                    continue
            del self.throttled[uid]
        self._save()
        return restored

    def forget_missing(self, uids: set[str]) -> None:
        """Drop pods no longer on the node (their cgroups went with them)."""
        gone = [uid for uid in self.throttled if uid not in uids]
        for uid in gone:
            del self.throttled[uid]
        if gone:
            self._save()

    def _cgroup(self, pod: Pod, entry: Throttled | None) -> PodCgroup:
        if entry is not None:
            return _at(entry)
        cgroup = self.find(pod)
        if cgroup is None:
            raise CgroupError(f"pod {pod.key}: no cgroup for uid {pod.uid}")
        return cgroup

    # -- the state file ----------------------------------------------------------------------
    def _load(self, path: Path) -> None:
        if not path.exists():
            return
        try:
            data = json.loads(path.read_text())
            loaded = {uid: Throttled(**entry) for uid, entry in data.items()}
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise UserError(
                f"--state-file={path}: unreadable ({exc}); move it away to start afresh"
            ) from None
        for uid, entry in loaded.items():
            problem = self._outside_root(entry.cpu_dir)
            if problem:
                log.warning("--state-file=%s: pod %s skipped: %s", path, entry.pod, problem)
                continue
            self.throttled[uid] = entry

    def _outside_root(self, cpu_dir: object) -> str | None:
        """Why a stored cgroup directory may not be written to (None: it lies under the root)."""
        if self.cgroup_root is None:
            return None
        if not isinstance(cpu_dir, str):
            return f"cpu_dir {cpu_dir!r} is not a path"
        stored = Path(cpu_dir)
        if not stored.is_absolute() or ".." in stored.parts:
            return f"cpu_dir {cpu_dir} is not an absolute path without '..'"
        root = self.cgroup_root.resolve()
        if not stored.resolve().is_relative_to(root):
            return f"cpu_dir {cpu_dir} is outside --cgroup-root={self.cgroup_root}"
        return None

    def _save(self) -> None:
        if self.state_file is None:
            return
        partial = self.state_file.with_name(f".{self.state_file.name}.partial")
        try:
            self.state_file.parent.mkdir(parents=True, exist_ok=True)
            partial.write_text(json.dumps({uid: asdict(e) for uid, e in self.throttled.items()}, indent=1))
            os.replace(partial, self.state_file)
        except OSError as exc:
            # Throttling goes on; only a restart in between would lose the originals.
            log.warning("state file %s not written: %s", self.state_file, exc)


def _at(entry: Throttled) -> PodCgroup:
    cpu = Path(entry.cpu_dir)
    return PodCgroup(entry.version, cpu, cpu, cpu)
