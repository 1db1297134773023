import dataclasses

from _scaleup_helpers import anti_affinity, pod, replicas, zone_spread

from kubetide.autoscaler.scaleup.equivalence import group_pods, has_inter_pod_constraints
from kubetide.model.pod import Container, HostPort


def test_replicas_of_one_template_form_one_group():
    web = replicas("web", 5, cpu=200, labels={"app": "web"})
    db = replicas("db", 3, cpu=500, labels={"app": "db"})
    groups = group_pods([*web, *db])
    assert [len(g) for g in groups] == [5, 3]
    assert groups[0].exemplar.name == "web-0"


def test_equal_specs_from_different_objects_are_equivalent():
    a = pod("a", cpu=100, labels={"app": "x"})
    b = pod("b", cpu=100, labels={"app": "x"})
    assert len(group_pods([a, b])) == 1


def test_any_scheduling_difference_splits_groups():
    base = pod("a", cpu=100, labels={"app": "x"})
    others = [
        pod("cpu", cpu=101, labels={"app": "x"}),
        pod("label", cpu=100, labels={"app": "y"}),
        pod("ns", cpu=100, labels={"app": "x"}, namespace="other"),
        pod("sel", cpu=100, labels={"app": "x"}, node_selector={"disk": "ssd"}),
        pod("prio", cpu=100, labels={"app": "x"}, priority=5),
    ]
    assert len(group_pods([base, *others])) == 6


def test_statefulset_pod_name_labels_do_not_split():
    a = pod("s-0", labels={"app": "s", "statefulset.kubernetes.io/pod-name": "s-0"})
    b = pod("s-1", labels={"app": "s", "statefulset.kubernetes.io/pod-name": "s-1"})
    assert len(group_pods([a, b])) == 1


def test_inter_pod_constraints_are_flagged():
    assert not has_inter_pod_constraints(pod("plain"))
    assert has_inter_pod_constraints(pod("anti", affinity=anti_affinity({"app": "x"})))
    assert has_inter_pod_constraints(pod("spread", spread=[zone_spread({"app": "x"})]))
    soft = dataclasses.replace(zone_spread({"app": "x"}), when_unsatisfiable="ScheduleAnyway")
    assert not has_inter_pod_constraints(pod("soft", spread=[soft]))
    ported = dataclasses.replace(pod("ported"), containers=(Container("c", {}, {}, (HostPort(80),)),))
    assert has_inter_pod_constraints(ported)
