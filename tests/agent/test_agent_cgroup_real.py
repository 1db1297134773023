"""The agent's throttle code on a real cgroup v1 cpu hierarchy: a cpu-burning child in a cgroup
of its own is held to the new CFS quota (within 15%), then restored.

Runs as root where /sys/fs/cgroup/cpu is a writable cgroup v1 cpu hierarchy, and skips (saying
why) anywhere else. The burner's cgroup gets a large cpu.shares, so other load on the machine
cannot starve it below the quota: what is measured is the quota's effect, not contention.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from kubetide.agent.cgroups import PodCgroup
from kubetide.agent.throttle import CgroupThrottler
from kubetide.model import load_documents

CPU_HIERARCHY = Path("/sys/fs/cgroup/cpu")
QUOTA_MILLICORES = 200
TOLERANCE = 0.15
MEASURE_SECONDS = 2.5
TICKS = os.sysconf("SC_CLK_TCK")


def hierarchy_problem() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create a cgroup"
    if not (CPU_HIERARCHY / "cpu.cfs_quota_us").is_file():
        return f"{CPU_HIERARCHY} is not a cgroup v1 cpu hierarchy"
    if not os.access(CPU_HIERARCHY, os.W_OK):
        return f"{CPU_HIERARCHY} is not writable"
    return None


pytestmark = pytest.mark.skipif(hierarchy_problem() is not None, reason=str(hierarchy_problem()))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def measured_millicores(pid: int) -> float:
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    time.sleep(MEASURE_SECONDS)
    return (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start) * 1000


def a_pod():
    doc = {
        "kind": "Pod",
        "metadata": {"name": "burner", "namespace": "default", "uid": str(uuid.uuid4())},
        "spec": {"containers": [{"name": "c"}]},
    }
    return load_documents([doc], "test.yaml").pods[0]


def test_a_burning_process_is_held_to_the_quota_then_restored(tmp_path):
    directory = CPU_HIERARCHY / f"kubetide-test-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    burner = None
    try:
        (directory / "cpu.shares").write_text("10240\n")
        burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        (directory / "cgroup.procs").write_text(f"{burner.pid}\n")
        cgroup = PodCgroup(1, directory, directory, directory)
        pod = a_pod()
        throttler = CgroupThrottler(lambda p: cgroup if p.uid == pod.uid else None, tmp_path / "state.json")

        throttler.throttle(pod, QUOTA_MILLICORES)
        assert (directory / "cpu.cfs_quota_us").read_text().strip() == "20000"
        time.sleep(0.3)  # let the current period's budget run out
        throttled = measured_millicores(burner.pid)
        assert abs(throttled - QUOTA_MILLICORES) <= TOLERANCE * QUOTA_MILLICORES, (
            f"throttled to {QUOTA_MILLICORES}m, measured {throttled:.0f}m"
        )

        throttler.restore(pod, None)
        assert (directory / "cpu.cfs_quota_us").read_text().strip() == "-1"
        restored = measured_millicores(burner.pid)
        # A whole core when the machine is idle; well over the quota in any case.
        assert restored > 2 * QUOTA_MILLICORES, f"restored, but measured only {restored:.0f}m"
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()
        for _ in range(50):  # the kernel empties the cgroup a moment after the process is reaped
            try:
                directory.rmdir()
                break
            except OSError:
                time.sleep(0.1)
