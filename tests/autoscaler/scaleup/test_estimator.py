import math

from _scaleup_helpers import anti_affinity, node, pod, replicas, taint, tolerate, zone_spread
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.scaleup.equivalence import group_pods
from kubetide.autoscaler.scaleup.estimator import TIME_LIMIT_REASON, BinpackingEstimator, NodeLimit
from kubetide.autoscaler.scaleup.template import build_template
from kubetide.clock import WorkTimer
from kubetide.model.node import ZONE_LABEL
from kubetide.scheduling import PredicateChecker
from kubetide.snapshot import ClusterSnapshot

UNLIMITED = NodeLimit(10**6, "unlimited")


def estimate(pods, template_node, limit=UNLIMITED, snapshot=None, timer=None, existing=()):
    snapshot = snapshot or ClusterSnapshot(list(existing))
    with PredicateChecker(snapshot) as checker:
        template = build_template("g", template_node, [], snapshot, checker)
        before = ([n.name for n in snapshot.nodes()], snapshot.pod_count())
        result = BinpackingEstimator(snapshot, checker, timer=timer or WorkTimer(1e-3)).estimate(
            template, group_pods(pods), limit
        )
        assert ([n.name for n in snapshot.nodes()], snapshot.pod_count()) == before
    return result


def test_binpacking_reaches_the_lower_bound():
    # A scaled-down copy of CA's benchmark: 10 pods of 95m go first (largest), one 50m pod
    # fills each of their nodes, the rest pack 20 per node.
    pods = replicas("small", 500, cpu=50, mem=100) + replicas("big", 10, cpu=95, mem=190)
    result = estimate(pods, node("t", cpu=1000, mem=5000, pods=100))
    assert result.node_count == math.ceil((500 * 50 + 10 * 95) / 1000) == 26
    assert len(result.helped) == 510 and not result.refused
    assert [p.name for p in result.helped[:10]] == [f"big-{i}" for i in range(10)]


def test_pod_count_limits_nodes():
    result = estimate(replicas("tiny", 250, cpu=1), node("t", cpu=1000, pods=100))
    assert result.node_count == 3


def test_pods_too_big_for_the_template_are_refused_with_the_scheduler_reason():
    result = estimate([pod("huge", cpu=5000, mem=10), *replicas("ok", 2, cpu=100)], node("t", cpu=4000))
    assert result.refused == {"default/huge": "Insufficient cpu"}
    assert result.node_count == 1


def test_taints_and_gpus_only_help_tolerating_pods():
    gpu_node = node("t", taints=[taint("nvidia.com/gpu", "present")], **{"nvidia.com/gpu": 2})
    plain = replicas("plain", 3, cpu=100)
    trainer = replicas(
        "train", 3, cpu=100, tolerations=[tolerate("nvidia.com/gpu", "present")], **{"nvidia.com/gpu": 1}
    )
    result = estimate([*plain, *trainer], gpu_node)
    assert {p.name for p in result.helped} == {"train-0", "train-1", "train-2"}
    assert result.node_count == 2  # two GPUs per node
    assert result.refused["default/plain-0"] == "node(s) had untolerated taint {nvidia.com/gpu: present}"
    no_gpu = estimate(trainer, node("t2", taints=[taint("nvidia.com/gpu", "present")]))
    assert no_gpu.refused["default/train-0"] == "Insufficient nvidia.com/gpu"


def test_node_selector_mismatch_reason():
    result = estimate([pod("p", node_selector={"disk": "ssd"})], node("t"))
    assert result.refused == {"default/p": "node(s) didn't match Pod's node affinity/selector"}


def test_node_limit_cuts_pods_with_its_reason():
    result = estimate(
        replicas("web", 10, cpu=1000), node("t", cpu=2000), NodeLimit(3, "max node group size reached")
    )
    assert result.node_count == 3
    assert len(result.helped) == 6
    assert set(result.refused.values()) == {"max node group size reached"}
    assert result.limited_by == "max node group size reached"


def test_zero_limit_helps_nothing():
    result = estimate(
        replicas("web", 2, cpu=100), node("t"), NodeLimit(0, "max total nodes in cluster reached")
    )
    assert result.node_count == 0
    assert set(result.refused.values()) == {"max total nodes in cluster reached"}


def test_hostname_anti_affinity_needs_one_node_per_pod():
    pods = replicas("db", 4, cpu=100, labels={"app": "db"}, affinity=anti_affinity({"app": "db"}))
    result = estimate(pods, node("t"))
    assert result.node_count == 4
    assert len(result.helped) == 4


def test_zone_spread_stops_at_the_skew():
    # Existing nodes in zones a and b (empty of the app); the template is in zone c.
    existing = [node("na", labels={ZONE_LABEL: "a"}, cpu=1), node("nb", labels={ZONE_LABEL: "b"}, cpu=1)]
    pods = replicas("web", 5, cpu=100, labels={"app": "web"}, spread=[zone_spread({"app": "web"})])
    result = estimate(pods, node("t", labels={ZONE_LABEL: "c"}), existing=existing)
    assert len(result.helped) == 1
    assert result.node_count == 1
    assert result.refused["default/web-1"] == "node(s) didn't match pod topology spread constraints"


def test_constrained_pods_see_pods_packed_arithmetically():
    # web (no constraints, larger) is packed first; the loner must not join it.
    web = replicas("web", 5, cpu=100, labels={"app": "web"})
    loner = pod("loner", cpu=50, labels={"app": "loner"}, affinity=anti_affinity({"app": "web"}))
    result = estimate([*web, loner], node("t", cpu=1000))
    assert result.node_count == 2


def test_packed_pods_respect_anti_affinity_of_constrained_pods_on_a_node():
    loner = pod("loner", cpu=500, labels={"app": "loner"}, affinity=anti_affinity({"app": "web"}))
    web = replicas("web", 5, cpu=100, labels={"app": "web"})
    result = estimate([loner, *web], node("t", cpu=1000))
    assert result.node_count == 2
    assert result.placements == [(0, 1), (1, 5)]


def test_zone_level_anti_affinity_blocks_every_copy():
    loner = pod(
        "loner", cpu=500, labels={"app": "loner"}, affinity=anti_affinity({"app": "web"}, key=ZONE_LABEL)
    )
    web = replicas("web", 3, cpu=100, labels={"app": "web"})
    result = estimate([loner, *web], node("t", cpu=1000))
    assert result.node_count == 1
    assert result.refused["default/web-0"] == "node(s) didn't satisfy existing pods anti-affinity rules"


def test_time_budget_stops_adding_nodes():
    result = estimate(
        replicas("db", 5, cpu=100, labels={"app": "db"}, affinity=anti_affinity({"app": "db"})),
        node("t"),
        timer=WorkTimer(1),  # 1 s per reading; the group budget is 10 s
    )
    assert 0 < result.node_count < 5
    assert TIME_LIMIT_REASON in result.refused.values()


# -- property: never above the limit, and every helped pod really fits ------------------------

APPS = ["a", "b", "c"]
pod_specs = st.lists(
    st.tuples(
        st.sampled_from(APPS),
        st.integers(1, 12).map(lambda x: x * 100),  # cpu
        st.integers(0, 4).map(lambda x: x * 1000),  # memory
        st.integers(1, 6),  # replicas
        st.booleans(),  # hostname anti-affinity against its own app
        st.booleans(),  # node selector the template may lack
        st.booleans(),  # zone spread against its own app
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(pod_specs, st.integers(0, 8), st.booleans())
def test_estimate_is_within_limits_and_replays(specs, max_nodes, template_has_disk):
    pods = []
    for i, (app, cpu, mem, count, anti, selector, spread) in enumerate(specs):
        pods += replicas(
            f"p{i}",
            count,
            cpu=cpu,
            mem=mem,
            labels={"app": app},
            affinity=anti_affinity({"app": app}) if anti else None,
            node_selector={"disk": "ssd"} if selector else None,
            spread=[zone_spread({"app": app}, skew=2)] if spread else (),
        )
    labels = {"disk": "ssd"} if template_has_disk else {}
    template_node = node("t", cpu=1000, mem=8000, pods=8, labels=labels)
    # Two full nodes in other zones, so zone spread has domains to balance against.
    snapshot = ClusterSnapshot(
        [node("x", cpu=0, labels={ZONE_LABEL: "x"}), node("y", cpu=0, labels={ZONE_LABEL: "y"})]
    )
    result = estimate(pods, template_node, NodeLimit(max_nodes, "cap"), snapshot=snapshot)
    assert result.node_count <= max_nodes
    assert len(result.helped) + len(result.refused) == len(pods)
    # Replay: add the nodes, bind every helped pod where the estimate put it, checking each.
    with PredicateChecker(snapshot) as checker:
        template = build_template("g", template_node, [], snapshot, checker)
        snapshot.fork()
        names = [template.copy(i).name for i in range(result.node_count)]
        for i in range(result.node_count):
            snapshot.add_node(template.copy(i))
        helped = iter(result.helped)
        for index, n in result.placements:
            for _ in range(n):
                p = next(helped)
                assert checker.fits(p, names[index]) is None, (p.key, names[index])
                snapshot.add_pod(p, names[index])
        snapshot.revert()
    if result.helped:
        cpu = sum(p.requests["cpu"] for p in result.helped)
        assert result.node_count >= math.ceil(cpu / 1000)
