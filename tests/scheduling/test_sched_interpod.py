"""InterPodAffinity: required affinity, anti-affinity, symmetry, namespaces, match/mismatch label keys."""

from schedtools import cluster, feasible, pod, reason, zones

AFF = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(key=ZONE, labels=None, expressions=None, **extra):
    selector = {}
    if labels is not None:
        selector["matchLabels"] = labels
    if expressions is not None:
        selector["matchExpressions"] = expressions
    t = {"topologyKey": key, **extra}
    if labels is not None or expressions is not None:
        t["labelSelector"] = selector
    return t


def affinity(*terms):
    return {"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


def anti(*terms):
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}}


# -- affinity ------------------------------------------------------------------------------------


def test_affinity_to_a_zone_with_a_matching_pod():
    nodes = zones(2)
    _, checker = cluster(nodes, [(pod(labels={"app": "db"}), "n-b-0")])
    p = pod(spec=affinity(term(labels={"app": "db"})))
    assert feasible(checker, p) == ["n-b-0", "n-b-1"]
    assert reason(checker, p, "n-a-0") == AFF


def test_affinity_on_hostname_and_custom_keys():
    nodes = zones(2)
    _, checker = cluster(nodes, [(pod(labels={"app": "db"}), "n-c-1")])
    assert feasible(checker, pod(spec=affinity(term(HOST, labels={"app": "db"})))) == ["n-c-1"]
    # A key no node carries: no node can satisfy it, even the first-pod rule needs the label.
    assert feasible(checker, pod(spec=affinity(term("rack", labels={"app": "db"})))) == []


def test_first_pod_of_a_group_may_land_anywhere():
    _, checker = cluster(zones(1))
    self_affine = pod(labels={"app": "web"}, spec=affinity(term(labels={"app": "web"})))
    assert feasible(checker, self_affine) == ["n-a-0", "n-b-0", "n-c-0"]
    # ...but only if it matches its own term:
    other = pod(labels={"app": "web"}, spec=affinity(term(labels={"app": "db"})))
    assert feasible(checker, other) == []
    assert checker.explain(other) == f"0/3 nodes are available: 3 {AFF}."


def test_first_pod_rule_lapses_once_a_matching_pod_exists():
    snapshot, checker = cluster(zones(1))
    p = pod(labels={"app": "web"}, spec=affinity(term(labels={"app": "web"})))
    snapshot.add_pod(pod(labels={"app": "web"}), "n-c-0")
    assert feasible(checker, p) == ["n-c-0"]


def test_first_pod_rule_needs_the_topology_key_on_the_node():
    nodes = zones(1)
    from schedtools import node

    nodes.append(node("bare"))
    _, checker = cluster(nodes)
    p = pod(labels={"app": "web"}, spec=affinity(term(labels={"app": "web"})))
    assert reason(checker, p, "bare") == AFF


def test_affinity_terms_are_anded_and_matched_by_one_pod():
    nodes = zones(1)
    a = pod(labels={"app": "a"})
    b = pod(labels={"app": "b", "tier": "x"})
    _, checker = cluster(nodes, [(a, "n-a-0"), (b, "n-a-0")])
    both = pod(spec=affinity(term(labels={"app": "a"}), term(labels={"tier": "x"})))
    # No single pod matches both terms, and the incoming pod matches neither: nowhere.
    assert feasible(checker, both) == []


def test_null_label_selector_matches_nothing():
    _, checker = cluster(zones(1), [(pod(labels={"app": "a"}), "n-a-0")])
    p = pod(labels={"app": "a"}, spec=affinity(term()))  # no labelSelector
    assert feasible(checker, p) == []  # and it cannot match itself either
    q = pod(spec=anti(term()))
    assert len(feasible(checker, q)) == 3


def test_empty_label_selector_matches_every_pod_in_namespace():
    _, checker = cluster(zones(1), [(pod(labels={"x": "1"}), "n-b-0")])
    p = pod(spec=affinity(term(labels={})))
    assert feasible(checker, p) == ["n-b-0"]


# -- anti-affinity -------------------------------------------------------------------------------


def test_anti_affinity_by_hostname_and_zone():
    nodes = zones(2)
    _, checker = cluster(nodes, [(pod(labels={"app": "web"}), "n-a-0")])
    host = pod(spec=anti(term(HOST, labels={"app": "web"})))
    assert "n-a-0" not in feasible(checker, host)
    assert len(feasible(checker, host)) == 5
    assert reason(checker, host, "n-a-0") == ANTI
    zone = pod(spec=anti(term(ZONE, labels={"app": "web"})))
    assert feasible(checker, zone) == ["n-b-0", "n-b-1", "n-c-0", "n-c-1"]


def test_anti_affinity_ignores_nodes_without_the_key():
    from schedtools import node

    _, checker = cluster([node("bare")], [(pod(labels={"app": "web"}), "bare")])
    assert feasible(checker, pod(spec=anti(term("rack", labels={"app": "web"})))) == ["bare"]


def test_existing_pods_anti_affinity_is_symmetric():
    nodes = zones(1)
    loner = pod(labels={"app": "loner"}, spec=anti(term(ZONE, labels={"app": "web"})))
    _, checker = cluster(nodes, [(loner, "n-a-0")])
    web = pod(labels={"app": "web"})  # has no constraints of its own
    assert feasible(checker, web) == ["n-b-0", "n-c-0"]
    assert reason(checker, web, "n-a-0") == EXISTING
    assert checker.fits(web, "n-a-0").plugin == "InterPodAffinity"
    assert feasible(checker, pod(labels={"app": "db"})) == ["n-a-0", "n-b-0", "n-c-0"]


def test_symmetry_respects_the_existing_pods_namespace():
    loner = pod(namespace="team-a", labels={"app": "loner"}, spec=anti(term(HOST, labels={"app": "web"})))
    _, checker = cluster(zones(1), [(loner, "n-a-0")])
    assert reason(checker, pod(namespace="team-b", labels={"app": "web"}), "n-a-0") is None
    assert reason(checker, pod(namespace="team-a", labels={"app": "web"}), "n-a-0") == EXISTING


def test_symmetry_follows_fork_and_revert():
    snapshot, checker = cluster(zones(1))
    web = pod(labels={"app": "web"})
    assert checker.find_node(web) == "n-a-0"
    snapshot.fork()
    snapshot.add_pod(pod(spec=anti(term(HOST, labels={"app": "web"}))), "n-a-0")
    assert checker.find_node(web) == "n-b-0"
    snapshot.revert()
    assert checker.find_node(web) == "n-a-0"


# -- namespaces ----------------------------------------------------------------------------------


def test_terms_default_to_the_owners_namespace():
    _, checker = cluster(zones(1), [(pod(namespace="other", labels={"app": "db"}), "n-a-0")])
    assert feasible(checker, pod(spec=affinity(term(labels={"app": "db"})))) == []
    listed = pod(spec=affinity(term(labels={"app": "db"}, namespaces=["other"])))
    assert feasible(checker, listed) == ["n-a-0"]


def test_namespace_selector_uses_namespace_labels():
    bound = [
        (pod(namespace="prod-1", labels={"app": "db"}), "n-a-0"),
        (pod(namespace="dev-1", labels={"app": "db"}), "n-b-0"),
    ]
    namespaces = {"prod-1": {"env": "prod"}, "dev-1": {"env": "dev"}}
    _, checker = cluster(zones(1), bound, namespaces)
    p = pod(spec=affinity(term(labels={"app": "db"}, namespaceSelector={"matchLabels": {"env": "prod"}})))
    assert feasible(checker, p) == ["n-a-0"]
    # An empty namespaceSelector selects every namespace.
    every = pod(spec=anti(term(labels={"app": "db"}, namespaceSelector={})))
    assert feasible(checker, every) == ["n-c-0"]
    # namespaces and namespaceSelector are ORed.
    both = pod(
        spec=anti(
            term(
                labels={"app": "db"}, namespaces=["dev-1"], namespaceSelector={"matchLabels": {"env": "prod"}}
            )
        )
    )
    assert feasible(checker, both) == ["n-c-0"]


def test_namespace_without_manifest_has_its_name_label():
    _, checker = cluster(zones(1), [(pod(namespace="kube-system", labels={"app": "dns"}), "n-b-0")])
    sel = {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}
    p = pod(spec=affinity(term(labels={"app": "dns"}, namespaceSelector=sel)))
    assert feasible(checker, p) == ["n-b-0"]


def test_existing_anti_affinity_namespace_selector_sees_incoming_namespace_labels():
    loner = pod(
        labels={"app": "loner"},
        spec=anti(term(HOST, labels={"app": "web"}, namespaceSelector={"matchLabels": {"env": "prod"}})),
    )
    namespaces = {"shop": {"env": "prod"}, "lab": {"env": "dev"}}
    _, checker = cluster(zones(1), [(loner, "n-a-0")], namespaces)
    assert reason(checker, pod(namespace="shop", labels={"app": "web"}), "n-a-0") == EXISTING
    assert reason(checker, pod(namespace="lab", labels={"app": "web"}), "n-a-0") is None


# -- matchLabelKeys / mismatchLabelKeys ---------------------------------------------------------


def test_match_label_keys_restrict_to_the_pods_own_revision():
    bound = [(pod(labels={"app": "web", "rev": "1"}), "n-a-0")]
    _, checker = cluster(zones(1), bound)
    spec = anti(term(HOST, labels={"app": "web"}, matchLabelKeys=["rev"]))
    assert reason(checker, pod(labels={"app": "web", "rev": "2"}, spec=spec), "n-a-0") is None
    assert reason(checker, pod(labels={"app": "web", "rev": "1"}, spec=spec), "n-a-0") == ANTI
    # A key the pod does not carry is ignored.
    assert reason(checker, pod(labels={"app": "web"}, spec=spec), "n-a-0") == ANTI


def test_mismatch_label_keys_exclude_the_pods_own_value():
    bound = [
        (pod(labels={"app": "job", "tenant": "a"}), "n-a-0"),
        (pod(labels={"app": "job", "tenant": "b"}), "n-b-0"),
    ]
    _, checker = cluster(zones(1), bound)
    spec = anti(term(HOST, labels={"app": "job"}, mismatchLabelKeys=["tenant"]))
    # Keep away from other tenants' pods only.
    assert feasible(checker, pod(labels={"tenant": "a"}, spec=spec)) == ["n-a-0", "n-c-0"]


def test_match_label_keys_conflicting_with_selector_select_nothing():
    bound = [(pod(labels={"app": "web"}), "n-a-0")]
    _, checker = cluster(zones(1), bound)
    spec = anti(term(HOST, labels={"app": "web"}, matchLabelKeys=["app"]))
    assert len(feasible(checker, pod(labels={"app": "db"}, spec=spec))) == 3


def test_terminating_pods_still_count_for_affinity():
    _, checker = cluster(zones(1), [(pod(labels={"app": "web"}, deleting=True), "n-a-0")])
    assert reason(checker, pod(spec=anti(term(HOST, labels={"app": "web"}))), "n-a-0") == ANTI


def test_pods_differing_only_in_labels_do_not_share_anti_affinity_answers():
    """Unconstrained pods share a class whatever their labels; bound pods' anti-affinity must
    still be judged on each pod's own labels, and a "fits nowhere" memo must not leak."""
    from schedtools import node

    loner = pod(labels={"app": "loner"}, spec=anti(term(HOST, labels={"app": "web"})))
    snapshot, checker = cluster([node("only", labels={HOST: "only"})], [(loner, "only")])
    blocked, free = pod(labels={"app": "web"}), pod(labels={"app": "db"})
    assert checker.find_node(blocked) is None
    assert checker.best_node(blocked) is None
    assert checker.find_node(free) == "only"
    assert checker.best_node(free) == "only"
    assert checker.find_node(pod(labels={"app": "web"}, namespace="other")) == "only"
    snapshot.remove_pod(loner.uid)
    assert checker.find_node(blocked) == "only"
