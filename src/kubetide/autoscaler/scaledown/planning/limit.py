"""How many unneeded nodes a loop's candidate search looks for (CA's unneededNodesLimit).

Since the parallel-drain planner (its default since CA 1.27; the legacy scale-down went in CA 1.31,
kubernetes/autoscaler#7219), the Cluster Autoscaler stops simulating node removals once it has found enough removable
nodes for what max-scale-down-parallelism can delete before their unneeded time is up:

    N     = max-scale-down-parallelism
    limit = min(unneeded nodes from last loop + N + N,   N * (U // I) + N)

where U is scale-down-unneeded-time (at least I) and I the shortest interval seen between two
planner updates (CA starts it at U). Every loop at most N nodes go, so N more than last loop's set
plus a buffer of N keep the deletions fed; and no more than a node group could delete in U/I loops
is worth knowing. Nodes met once the limit is reached are not simulated this loop.

scale-down-non-empty-candidates-count, scale-down-candidates-pool-ratio and
scale-down-candidates-pool-min-count bounded the legacy scale-down's search only (CA 1.30 with
--parallel-drain=false; CA 1.31+ reads them nowhere): this limit is what bounds the planner's
search, CA's and kubetide's (docs/ca-flags.md).

kubetide's difference: a node already in the unneeded set (a candidate or waiting for budget last
loop) is always simulated, limit or not, so it keeps its unneeded time (docs/differences.md); CA
orders those first, and drops those the limit cuts off.
"""

from __future__ import annotations

import math


class UnneededLimit:
    """The shortest update interval seen so far, and the limit it gives (see the module)."""

    def __init__(self) -> None:
        self.last_update = -math.inf
        self.shortest_interval = math.inf  # CA's minUpdateInterval, before U caps it

    def observe(self, now: float) -> None:
        """One planner update at `now` (simulated time: decisions never read the wall clock)."""
        interval = now - self.last_update
        if 0 < interval < self.shortest_interval:
            self.shortest_interval = interval
        self.last_update = max(self.last_update, now)

    def limit(self, parallelism: int, unneeded_time: float, unneeded_count: int) -> int:
        return unneeded_nodes_limit(parallelism, unneeded_time, unneeded_count, self.shortest_interval)


def unneeded_nodes_limit(
    parallelism: int, unneeded_time: float, unneeded_count: int, shortest_interval: float
) -> int:
    """CA's unneededNodesLimit: how many removable nodes a search looks for (module docstring)."""
    n = max(0, parallelism)
    # CA divides durations in whole nanoseconds; its minUpdateInterval starts at
    # scale-down-unneeded-time (1 ns when that is 0). Non-positive intervals (two updates at
    # one instant) are not observed, so the division is always defined.
    unneeded_ns = max(0, round(unneeded_time * 1e9))
    interval_ns = max(1, unneeded_ns if math.isinf(shortest_interval) else round(shortest_interval * 1e9))
    interval_ns = min(interval_ns, max(1, unneeded_ns))
    u = max(unneeded_ns, interval_ns)
    upper_bound = n * (u // interval_ns) + n
    return min(unneeded_count + n + n, upper_bound)
