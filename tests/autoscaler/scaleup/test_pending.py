from _scaleup_helpers import pod

from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.scaleup.pending import SCALE_UP_DELAY_ANNOTATION, select_pending


def keys(selection):
    return [p.key for p in selection.pods]


def test_only_unschedulable_pods_count():
    pods = [
        pod("waiting"),
        pod("not-tried", unschedulable=False),
        pod("bound", node_name="n1"),
    ]
    assert keys(select_pending(pods, AutoscalerOptions(), now=100)) == ["default/waiting"]


def test_young_pods_wait_for_the_global_delay():
    options = AutoscalerOptions(new_pod_scale_up_delay=30)
    pods = [pod("old", created=0), pod("young", created=80), pod("exact", created=70)]
    selection = select_pending(pods, options, now=100)
    assert keys(selection) == ["default/old", "default/exact"]
    assert selection.too_young["default/young"] == "too young: created 20s ago, scale-up delay 30s"


def test_annotation_lengthens_but_never_shortens_the_delay():
    options = AutoscalerOptions(new_pod_scale_up_delay=30)
    longer = pod("longer", created=0, annotations={SCALE_UP_DELAY_ANNOTATION: "5m"})
    shorter = pod("shorter", created=90, annotations={SCALE_UP_DELAY_ANNOTATION: "1s"})
    broken = pod("broken", created=0, annotations={SCALE_UP_DELAY_ANNOTATION: "soon"})
    selection = select_pending([longer, shorter, broken], options, now=100)
    assert keys(selection) == ["default/broken"]
    assert set(selection.too_young) == {"default/longer", "default/shorter"}
    assert "below new-pod-scale-up-delay" in selection.warnings["default/shorter"]
    assert "invalid duration" in selection.warnings["default/broken"]


def test_annotation_alone_delays_with_zero_global_delay():
    p = pod("p", created=50, annotations={SCALE_UP_DELAY_ANNOTATION: "1m"})
    assert keys(select_pending([p], AutoscalerOptions(), now=100)) == []
    assert keys(select_pending([p], AutoscalerOptions(), now=110)) == ["default/p"]


def test_expendable_pods_never_trigger_scale_up():
    pods = [pod("low", priority=-11), pod("cutoff", priority=-10), pod("high", priority=1000)]
    selection = select_pending(pods, AutoscalerOptions(), now=0)
    assert keys(selection) == ["default/cutoff", "default/high"]
    assert selection.expendable["default/low"] == "expendable: priority -11 is below the cutoff -10"
