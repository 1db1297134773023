"""Usage and throttling on fake /proc and cgroup trees the tests write: cgroup v1 and v2, the
cgroupfs and systemd drivers, every QoS class."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetide.agent.cgroups import CgroupLayout, detect_layout
from kubetide.agent.throttle import CgroupThrottler
from kubetide.agent.usage import CgroupUsageSource, parse_summary, read_cpu_ticks, read_memory_used
from kubetide.errors import UserError
from kubetide.model import load_documents

UID = "0b5e2d1c-aaaa-bbbb-cccc-123456789abc"
MI = 2**20


def make_pod(qos: str, uid: str = UID):
    resources = {
        "Guaranteed": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        "Burstable": {"requests": {"cpu": "500m"}},
        "BestEffort": {},
    }[qos]
    doc = {
        "kind": "Pod",
        "metadata": {"name": f"p-{qos.lower()}", "namespace": "default", "uid": uid},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": resources}]},
        "status": {"phase": "Running"},
    }
    pod = load_documents([doc], "test.yaml").pods[0]
    assert pod.qos_class == qos
    return pod


def pod_dir(driver: str, qos: str, uid: str = UID) -> str:
    escaped = uid.replace("-", "_")
    if driver == "cgroupfs":
        return f"kubepods/pod{uid}" if qos == "Guaranteed" else f"kubepods/{qos.lower()}/pod{uid}"
    if qos == "Guaranteed":
        return f"kubepods.slice/kubepods-pod{escaped}.slice"
    tier = qos.lower()
    return f"kubepods.slice/kubepods-{tier}.slice/kubepods-{tier}-pod{escaped}.slice"


class FakeNode:
    """A /proc and a cgroup tree in tmp_path, updated between samples."""

    def __init__(self, root: Path, version: int, driver: str, qos: str, cpu_mount: str = "cpu"):
        self.proc = root / "proc"
        self.cgroup = root / "cgroup"
        self.version, self.driver, self.qos = version, driver, qos
        self.proc.mkdir()
        self.cgroup.mkdir()
        relative = pod_dir(driver, qos)
        if version == 2:
            (self.cgroup / "cgroup.controllers").write_text("cpu memory\n")
            self.cpu = self.cpuacct = self.memory = self.cgroup / relative
            self.cpu.mkdir(parents=True)
            (self.cpu / "cpu.max").write_text("max 100000\n")
        else:
            cpu_root = self.cgroup / cpu_mount
            acct_root = cpu_root if "," in cpu_mount else self.cgroup / "cpuacct"
            self.cpu, self.cpuacct = cpu_root / relative, acct_root / relative
            self.memory = self.cgroup / "memory" / relative
            for d in (self.cpu, self.cpuacct, self.memory):
                d.mkdir(parents=True, exist_ok=True)
            (self.cpu / "cpu.cfs_quota_us").write_text("-1\n")
            (self.cpu / "cpu.cfs_period_us").write_text("100000\n")

    def write(self, *, busy: int, idle: int, cpu_ns: int, memory: int, inactive: int, available_kb: int):
        # 2 cpus; user nice system idle iowait irq softirq steal guest guest_nice
        self.proc.joinpath("stat").write_text(
            f"cpu  {busy} 0 0 {idle} 0 0 0 0 7 7\ncpu0 1 0 0 1 0 0 0 0 0 0\ncpu1 1 0 0 1 0 0 0 0 0 0\n"
            "intr 1 2 3\n"
        )
        self.proc.joinpath("meminfo").write_text(
            f"MemTotal:        8000000 kB\nMemFree:          100 kB\nMemAvailable:    {available_kb} kB\n"
        )
        if self.version == 2:
            (self.cpuacct / "cpu.stat").write_text(
                f"usage_usec {cpu_ns // 1000}\nuser_usec 1\nsystem_usec 1\n"
            )
            (self.memory / "memory.current").write_text(f"{memory}\n")
            (self.memory / "memory.stat").write_text(f"anon 5\ninactive_file {inactive}\nactive_file 9\n")
        else:
            (self.cpuacct / "cpuacct.usage").write_text(f"{cpu_ns}\n")
            (self.memory / "memory.usage_in_bytes").write_text(f"{memory}\n")
            (self.memory / "memory.stat").write_text(
                f"cache 1\ninactive_file 1\ntotal_inactive_file {inactive}\n"
            )


class Ticker:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


CASES = [
    (version, driver, qos, mount)
    for version in (1, 2)
    for driver in ("cgroupfs", "systemd")
    for qos in ("Guaranteed", "Burstable", "BestEffort")
    for mount in (("cpu", "cpu,cpuacct") if version == 1 else ("cpu",))
]


@pytest.mark.parametrize(("version", "driver", "qos", "mount"), CASES)
def test_usage_rates_from_proc_and_pod_cgroups(tmp_path, version, driver, qos, mount):
    node = FakeNode(tmp_path, version, driver, qos, mount)
    node.write(busy=1000, idle=1000, cpu_ns=10**9, memory=300 * MI, inactive=100 * MI, available_kb=6000000)
    layout = detect_layout(node.cgroup)
    assert (layout.version, layout.driver) == (version, driver)
    clock = Ticker()
    source = CgroupUsageSource(node.proc, layout, clock)
    pod = make_pod(qos)

    first = source.sample([pod])
    assert "cpu" not in first.node  # no rate on the first sample: the node's cpu is missing
    assert first.node["memory"] == (8000000 - 6000000) * 1024
    assert first.pods[pod.uid] == {"memory": 200 * MI}  # working set, no cpu rate yet
    assert not first.problems

    # 10 s later: the node was busy 300 of 400 ticks on 2 cpus (1.5 cores); the pod used 2.5 s of cpu.
    clock.now += 10
    node.write(
        busy=1300,
        idle=1100,
        cpu_ns=10**9 + 2_500_000_000,
        memory=500 * MI,
        inactive=50 * MI,
        available_kb=5000000,
    )
    second = source.sample([pod])
    assert second.node == {"cpu": 1500, "memory": 3000000 * 1024}
    assert second.pods[pod.uid] == {"cpu": 250, "memory": 450 * MI}


def test_a_pod_without_a_cgroup_has_no_usage_and_a_gone_pod_is_forgotten(tmp_path):
    node = FakeNode(tmp_path, 2, "systemd", "Burstable")
    node.write(busy=1, idle=1, cpu_ns=5, memory=1, inactive=0, available_kb=1)
    source = CgroupUsageSource(node.proc, detect_layout(node.cgroup), Ticker())
    stranger = make_pod("BestEffort", uid="ffffffff-0000-0000-0000-000000000000")
    assert source.sample([stranger]).pods == {}


@pytest.mark.parametrize(
    ("stat", "expected"),
    [
        ("cpu  10 20 30 40 50 60 70 80 90 100\ncpu0 1\n", (10 + 20 + 30 + 60 + 70 + 80, 360, 1)),
        ("cpu  10 0 0 5\ncpu0 1\ncpu1 1\ncpu2 1\n", (10, 15, 3)),  # an old kernel's four fields
    ],
)
def test_proc_stat_busy_and_total_ticks(tmp_path, stat, expected):
    (tmp_path / "stat").write_text(stat)
    assert read_cpu_ticks(tmp_path) == expected


def test_proc_meminfo_used_is_total_minus_available(tmp_path):
    (tmp_path / "meminfo").write_text("MemTotal: 1000 kB\nMemAvailable: 250 kB\nHugePages_Total: 0\n")
    assert read_memory_used(tmp_path) == 750 * 1024


def test_proc_problems_are_reported_not_raised(tmp_path):
    node = FakeNode(tmp_path, 1, "cgroupfs", "Burstable")
    source = CgroupUsageSource(node.proc, detect_layout(node.cgroup), Ticker())
    usage = source.sample([])
    assert usage.node == {}
    assert "stat" in usage.problems[0]


@pytest.mark.parametrize(
    ("setup", "driver", "message"),
    [
        (lambda root: None, "auto", "no kubepods or kubepods.slice"),
        (lambda root: (root / "cpuacct" / "kubepods").mkdir(parents=True), "systemd2", "--cgroup-driver"),
    ],
)
def test_layout_detection_errors_are_one_line(tmp_path, setup, driver, message):
    setup(tmp_path)
    with pytest.raises(UserError, match=message) as info:
        detect_layout(tmp_path, driver)
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="no such directory"):
        detect_layout(tmp_path / "missing")


def test_explicit_driver_skips_detection(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu\n")
    assert detect_layout(tmp_path, "systemd") == CgroupLayout(tmp_path, 2, "systemd")


@pytest.mark.parametrize("version", [1, 2])
def test_throttle_writes_the_quota_and_restore_puts_the_original_back(tmp_path, version):
    node = FakeNode(tmp_path, version, "cgroupfs", "Burstable")
    layout = detect_layout(node.cgroup)
    quota_file = node.cpu / ("cpu.max" if version == 2 else "cpu.cfs_quota_us")
    quota_file.write_text("max 50000\n" if version == 2 else "150000\n")  # the kubelet's value
    if version == 1:
        (node.cpu / "cpu.cfs_period_us").write_text("50000\n")
    pod = make_pod("Burstable")
    state = tmp_path / "state" / "throttle.json"
    throttler = CgroupThrottler(lambda p: layout.pod(p.uid, p.qos_class), state)

    throttler.throttle(pod, 800)
    assert quota_file.read_text().strip() == ("40000 50000" if version == 2 else "40000")
    throttler.throttle(pod, 200)
    assert throttler.quota(pod.uid) == 200
    # A restarted agent finds the original in the state file.
    again = CgroupThrottler(lambda p: layout.pod(p.uid, p.qos_class), state)
    assert again.quota(pod.uid) == 200
    again.restore(pod, 400)
    assert quota_file.read_text().strip() == ("20000 50000" if version == 2 else "20000")
    again.restore(pod, None)
    assert quota_file.read_text().strip() == ("max 50000" if version == 2 else "150000")
    assert again.quota(pod.uid) is None


def test_restore_all_puts_every_original_back_and_empties_the_state(tmp_path):
    node = FakeNode(tmp_path, 1, "systemd", "BestEffort")
    layout = detect_layout(node.cgroup)
    pod = make_pod("BestEffort")
    state = tmp_path / "throttle.json"
    throttler = CgroupThrottler(lambda p: layout.pod(p.uid, p.qos_class), state)
    throttler.throttle(pod, 100)
    assert (node.cpu / "cpu.cfs_quota_us").read_text().strip() == "10000"
    assert throttler.restore_all() == [pod.key]
    assert (node.cpu / "cpu.cfs_quota_us").read_text().strip() == "-1"
    assert CgroupThrottler(lambda p: None, state).throttled == {}


def test_summary_api_usage():
    summary = {
        "node": {"cpu": {"usageNanoCores": 1_234_000_000}, "memory": {"workingSetBytes": 5 * MI}},
        "pods": [
            {
                "podRef": {"name": "a", "namespace": "d", "uid": "u1"},
                "cpu": {"usageNanoCores": 250_000_000},
                "memory": {"workingSetBytes": MI},
            },
            {"podRef": {"name": "b", "namespace": "d", "uid": "u2"}},  # no stats yet
        ],
    }
    usage = parse_summary(summary)
    assert usage.node == {"cpu": 1234, "memory": 5 * MI}
    assert usage.pods == {"u1": {"cpu": 250, "memory": MI}}
