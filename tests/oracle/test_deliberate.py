"""The deliberate classes accept a difference only for the CA versions they name (no oracle
needed): a class of 1.30 alone never excuses a difference from 1.36, which kubetide follows."""

from __future__ import annotations

from ca_oracle import CA_1_30, CA_1_36
from deliberate import at_threshold_1_30, kube_system_1_30, taint_named

SYSTEM_POD = {
    "reason": "BlockedByPod",
    "blocking_pod": "kube-system/dns",
    "pod_reason": "UnmovableKubeSystemPod",
}
AT_THRESHOLD = ({"utilization": 0.5}, {"reason": "NotUnderutilized"})
TAINT = (
    ("TaintToleration", ("node(s) had untolerated taint {dedicated: gpu}",)),
    ("TaintToleration", ("node(s) had untolerated taint(s)",)),
)


def test_a_class_of_1_30_alone_accepts_nothing_from_1_36():
    assert kube_system_1_30(CA_1_30, SYSTEM_POD) and not kube_system_1_30(CA_1_36, SYSTEM_POD)
    assert at_threshold_1_30(CA_1_30, *AT_THRESHOLD) and not at_threshold_1_30(CA_1_36, *AT_THRESHOLD)


def test_a_class_of_1_36_alone_accepts_nothing_from_1_30():
    assert taint_named(CA_1_36, *TAINT) and not taint_named(CA_1_30, *TAINT)


def test_the_threshold_class_is_the_threshold_only():
    assert not at_threshold_1_30(CA_1_30, {"utilization": 0.49}, {"reason": "NotUnderutilized"})
    assert not at_threshold_1_30(CA_1_30, {"utilization": 0.5}, {"reason": "NoPlaceToMovePods"})
