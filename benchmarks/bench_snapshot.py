"""ClusterSnapshot benchmarks: `python -m benchmarks.bench_snapshot` (or `python -m benchmarks snapshot`).

- add 1000 nodes, and 100 000 nodes, to an empty snapshot (node objects built beforehand);
- fork + add 30 pods + revert on a 100 000-node snapshot, mean microseconds per round trip. Go CA's
  delta snapshot: 47 microseconds on this machine. Target: under 100 microseconds. The same round
  trip is also timed with a PredicateChecker observing the snapshot, since that is how the
  simulations run (its indexes follow every change and its undo).

Each figure is the median of a few runs.
"""

from __future__ import annotations

import random
import statistics
import time

from rich.console import Console
from rich.table import Table

from kubetide.model import Node, ObjectMeta, Pod
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

FORK_TARGET_US = 100.0
GO_FORK_US = 47.0
ROUNDS = 2000


def make_nodes(count: int) -> list[Node]:
    zones = ("zone-a", "zone-b", "zone-c")
    return [
        Node(
            ObjectMeta(
                f"node-{i:06d}",
                labels={
                    "kubernetes.io/hostname": f"node-{i:06d}",
                    "topology.kubernetes.io/zone": zones[i % 3],
                },
            ),
            {"cpu": 16000, "memory": 64 * 2**30, "pods": 110},
            {},
        )
        for i in range(count)
    ]


def add_nodes(count: int, runs: int) -> float:
    nodes = make_nodes(count)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        snapshot = ClusterSnapshot()
        for node in nodes:
            snapshot.add_node(node)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def fork_add_revert(snapshot: ClusterSnapshot, nodes: list[Node], runs: int) -> float:
    """Mean microseconds for fork + 30 x add_pod + revert."""
    rng = random.Random(47)
    batches = []
    for b in range(ROUNDS):
        batch = []
        for i in range(30):
            pod = Pod(
                ObjectMeta(f"p-{b}-{i}", "default", f"uid-{b}-{i}", labels={"app": f"app-{i % 5}"}),
                {"cpu": 100, "memory": 128 * 2**20, "pods": 1},
                {},
            )
            batch.append((pod, nodes[rng.randrange(len(nodes))].name))
        batches.append(batch)
    means = []
    for _ in range(runs):
        start = time.perf_counter()
        for batch in batches:
            snapshot.fork()
            for pod, node in batch:
                snapshot.add_pod(pod, node)
            snapshot.revert()
        means.append((time.perf_counter() - start) / ROUNDS * 1e6)
    return statistics.median(means)


def main() -> None:
    console = Console(highlight=False, width=120)
    table = Table(title="ClusterSnapshot")
    for column in ("operation", "time", "Go CA", "target", "result"):
        table.add_column(column, justify="left" if column in ("operation", "result") else "right")
    table.add_row("add 1000 nodes", f"{add_nodes(1000, 5) * 1000:.1f} ms", "", "", "")
    table.add_row("add 100 000 nodes", f"{add_nodes(100_000, 3):.2f} s", "", "", "")

    nodes = make_nodes(100_000)
    snapshot = ClusterSnapshot(nodes)
    mean = fork_add_revert(snapshot, nodes, 3)
    verdict = "met" if mean < FORK_TARGET_US else "MISSED"
    table.add_row(
        "fork + add 30 pods + revert (100 000 nodes)",
        f"{mean:.1f} us",
        f"{GO_FORK_US:g} us",
        f"< {FORK_TARGET_US:g} us",
        verdict,
    )
    checker = PredicateChecker(snapshot)
    mean = fork_add_revert(snapshot, nodes, 3)
    checker.close()
    table.add_row(
        "  the same, with a PredicateChecker observing",
        f"{mean:.1f} us",
        "",
        f"< {FORK_TARGET_US:g} us",
        "met" if mean < FORK_TARGET_US else "MISSED",
    )
    console.print(table)


if __name__ == "__main__":
    main()
