"""How often the estimate beats CA 1.30's placement:

    python tests/autoscaler/scaleup/measure_estimator_vs_ca.py [CASES] [SEED] [MAX_GROUPS] [MAX_PODS]

Random cases drawn as test_estimator_vs_ca's property test draws them (by default 1-5 groups of
1-12 pods on a 1000m / 4 GiB template; some with hostname anti-affinity against themselves or another
group, some with an init container larger than their container), compared with the model of
CA 1.30 in ca130_binpacking.py. Also shows kubetide's first variant alone (first fit, effective
requests: the estimator before issue 17). Deterministic for a seed; the numbers go to
BENCHMARKS.md and the estimator's docstring.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ca130_binpacking import ca130_node_count, resource_lower_bound
from test_estimator_vs_ca import GIB, TEMPLATE, estimate, stamped

from kubetide.autoscaler.scaleup import estimator
from kubetide.autoscaler.scaleup.equivalence import group_pods


def random_case(rng: random.Random, max_groups: int, max_pods: int) -> list:
    names = [f"g{i}" for i in range(rng.randint(1, max_groups))]
    pods = []
    for name in names:
        cpu = rng.randint(50, 1000)
        mem = rng.choice([0, GIB // 4, GIB, 3 * GIB])
        init_cpu = rng.choice([0, 0, rng.randint(cpu, 1000)])
        repels = rng.choice([None, None, name, rng.choice(names)])
        pods += stamped(name, rng.randint(1, max_pods), cpu, mem, init_cpu=init_cpu, repels=repels)
    return pods


def compare(cases: int, seed: int, max_groups: int = 5, max_pods: int = 12) -> dict[str, dict[str, int]]:
    rng = random.Random(seed)
    tally = {
        "kubetide": {"fewer": 0, "equal": 0, "more": 0},
        "first fit alone": {"fewer": 0, "equal": 0, "more": 0},
    }
    at_bound = 0
    for _ in range(cases):
        pods = random_case(rng, max_groups, max_pods)
        groups = group_pods(pods)
        ca = ca130_node_count(groups, TEMPLATE.allocatable)
        best = estimate(pods, TEMPLATE).node_count
        variants = estimator.VARIANTS
        estimator.VARIANTS = variants[:1]
        try:
            first_fit = estimate(pods, TEMPLATE).node_count
        finally:
            estimator.VARIANTS = variants
        at_bound += best == resource_lower_bound(groups, TEMPLATE.allocatable)
        for name, nodes in (("kubetide", best), ("first fit alone", first_fit)):
            tally[name]["fewer" if nodes < ca else "equal" if nodes == ca else "more"] += 1
    tally["kubetide"]["at lower bound"] = at_bound
    return tally


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 17
    shape = [int(a) for a in sys.argv[3:5]]
    for name, row in compare(count, seed, *shape).items():
        print(f"{name:16} vs CA 1.30 on {count} cases: {row}")
