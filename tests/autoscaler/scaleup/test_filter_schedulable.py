from _scaleup_helpers import node, pod, replicas, taint

from kubetide.autoscaler.ports import TO_BE_DELETED_TAINT
from kubetide.autoscaler.scaleup.filter_schedulable import filter_schedulable
from kubetide.model import Toleration
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot


def state(snapshot):
    return [(n.name, sorted(snapshot.pods_on(n.name))) for n in snapshot.nodes()]


def run(snapshot, pods, **kwargs):
    with PredicateChecker(snapshot) as checker:
        return filter_schedulable(snapshot, checker, pods, **kwargs)


def test_pods_that_fit_are_filtered_and_the_snapshot_is_left_as_found():
    snapshot = ClusterSnapshot([node("n1", cpu=1000)], [pod("running", cpu=600, node_name="n1")])
    before = state(snapshot)
    result = run(snapshot, [pod("small", cpu=300), pod("big", cpu=500)])
    assert result.placed == {"default/small": "n1"}
    assert [p.name for p in result.pending] == ["big"]
    assert state(snapshot) == before


def test_two_pods_never_claim_the_same_space():
    snapshot = ClusterSnapshot([node("n1", cpu=1000), node("n2", cpu=500)])
    result = run(snapshot, replicas("web", 4, cpu=400))
    assert sorted(result.placed.values()) == ["n1", "n1", "n2"]
    assert len(result.pending) == 1


def test_higher_priority_pods_get_the_room_first():
    snapshot = ClusterSnapshot([node("n1", cpu=500)])
    low = pod("low", cpu=400, priority=0, created=0)
    high = pod("high", cpu=400, priority=100, created=50)
    result = run(snapshot, [low, high])
    assert result.placed == {"default/high": "n1"}
    assert [p.name for p in result.pending] == ["low"]


def test_nodes_being_deleted_are_never_used():
    dying = node("dying", cpu=4000, taints=[taint(TO_BE_DELETED_TAINT, "1")])
    snapshot = ClusterSnapshot([dying])
    tolerant = pod("tolerant", cpu=100, tolerations=[Toleration(operator="Exists")])
    result = run(snapshot, [tolerant])
    assert result.placed == {} and [p.name for p in result.pending] == ["tolerant"]


def test_upcoming_template_copies_absorb_pods():
    snapshot = ClusterSnapshot([node("n1", cpu=100)])
    snapshot.fork()
    snapshot.add_node(node("upcoming-0", cpu=1000))
    result = run(snapshot, replicas("web", 3, cpu=400))
    snapshot.revert()
    assert sorted(result.placed.values()) == ["upcoming-0", "upcoming-0"]
    assert len(result.pending) == 1


def test_keep_leaves_bindings_for_the_caller_to_revert():
    snapshot = ClusterSnapshot([node("n1", cpu=1000)])
    snapshot.fork()
    run(snapshot, [pod("p", cpu=100)], keep=True)
    assert snapshot.pod_count() == 1
    snapshot.revert()
    assert snapshot.pod_count() == 0


def test_a_failed_group_is_not_retried_but_other_groups_are():
    snapshot = ClusterSnapshot([node("n1", cpu=1000)])
    big = replicas("big", 50, cpu=2000)
    small = replicas("small", 2, cpu=100)
    result = run(snapshot, [*big, *small])
    assert len(result.pending) == 50
    assert len(result.placed) == 2
