"""Rule 8 and --blocking-system-pod-distruption-timeout: a kube-system pod without a PDB blocks
its node until it is strictly older than the timeout (the reference; CA 1.33's rule)."""

import pytest
from scaledown_fakes import pod, workload

from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.autoscaler.scaledown.planning.drainability import (
    DrainContext,
    DrainRules,
    Outcome,
    index_workloads,
    verdict,
)
from kubetide.autoscaler.scaledown.planning.pdb import PdbTracker
from kubetide.autoscaler.scaledown.reasons import PodReason

NOW = 100_000.0
WORKLOADS = index_workloads([workload("ReplicaSet", "rs", 3, namespace="kube-system")])


def judge(age: float | None, options: AutoscalerOptions):
    created = None if age is None else NOW - age
    system_pod = pod("dns", namespace="kube-system", created=created)
    tracker = PdbTracker([], [system_pod], WORKLOADS)
    return verdict(system_pod, DrainContext(DrainRules.from_options(options), tracker, NOW, WORKLOADS))


@pytest.mark.parametrize(
    ("flags", "age", "blocks"),
    [
        ({}, 60, True),
        ({}, 3599, True),
        ({}, 3600, True),  # exactly the timeout: not older than it, still blocks
        ({}, 3600.5, False),
        ({}, 3601, False),
        ({}, None, True),  # no creation time: counts as young
        ({"blocking-system-pod-distruption-timeout": "10m"}, 600, True),
        ({"blocking-system-pod-distruption-timeout": "10m"}, 601, False),
        ({"blocking-system-pod-distruption-timeout": "2h"}, 3601, True),
        ({"blocking-system-pod-distruption-timeout": "2h"}, 7201, False),
        ({"blocking-system-pod-distruption-timeout": "0s"}, 1, False),
        (
            {"blocking-system-pod-distruption-timeout": "2h", "skip-nodes-with-system-pods": "false"},
            60,
            False,
        ),
    ],
)
def test_kube_system_pod_blocks_until_strictly_older_than_the_timeout(flags, age, blocks):
    result = judge(age, parse_options(flags, "s.yaml"))
    if blocks:
        assert (result.outcome, result.reason) == (Outcome.BLOCK, PodReason.UNMOVABLE_KUBE_SYSTEM_POD)
    else:
        assert result.outcome is Outcome.MOVE
