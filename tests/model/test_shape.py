"""The pod shape (model/shape.py): which pods the scheduler cannot tell apart, whichever parser
read them, and what its consumers (checker classes, scale-up equivalence, drain stand-ins, the
snapshot's request caches) make of it."""

import copy
import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.autoscaler.scaledown.planning.placement import _standin_key
from kubetide.autoscaler.scaleup.equivalence import group_pods
from kubetide.model.pod import parse_pod
from kubetide.model.pod_typed import convert_pod
from kubetide.model.reader import Reader
from kubetide.model.shape import PodShape, Resources
from kubetide.scheduling.classes import class_key, fit_key, static_key
from kubetide.sim.runtime.evolve import evolve

BASE = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-a", "namespace": "shop", "uid": "uid-a", "labels": {"app": "web"}},
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "web:v1",
                "ports": [{"containerPort": 8080}],
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"memory": "128Mi"}},
            }
        ],
        "nodeSelector": {"kubernetes.io/os": "linux", "disk": "ssd"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoSchedule"}],
    },
    "status": {"phase": "Pending"},
}

ZONE = "topology.kubernetes.io/zone"
WEB = {"matchLabels": {"app": "web"}}
SPREAD = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": WEB}]
SOFT_SPREAD = [{**SPREAD[0], "whenUnsatisfiable": "ScheduleAnyway"}]
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
IN_ZONE_A = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
TERM = {"labelSelector": WEB, "topologyKey": ZONE}
NODE_REQUIRED = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [IN_ZONE_A]}}}
NODE_PREFERRED = {"nodeAffinity": {PREFERRED: [{"weight": 5, "preference": IN_ZONE_A}]}}
POD_REQUIRED = {"podAffinity": {REQUIRED: [TERM]}}
ANTI_REQUIRED = {"podAntiAffinity": {REQUIRED: [TERM]}}
ANTI_PREFERRED = {"podAntiAffinity": {PREFERRED: [{"weight": 1, "podAffinityTerm": TERM}]}}


def init(cpu, **fields):
    return [{"name": "i", "resources": {"requests": {"cpu": cpu}}, **fields}]


def requesting(cpu, memory=None):
    requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
    return {"name": f"c-{cpu}", "resources": {"requests": requests}}


OTHER_META = {"name": "web-b", "namespace": "shop", "uid": "uid-b", "labels": {"app": "web"}}
OWNED = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "rs", "controller": True}]
READY = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}


def _set(data, path, value):
    target = data
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(target, dict) else target[key]
    target[path[-1]] = value


CONTAINER = ("spec", "containers", 0)
REQUESTS = (*CONTAINER, "resources", "requests")
LIMITS = (*CONTAINER, "resources", "limits")

# (what changes, path, new value, same shape?)
ROWS = [
    # -- what the scheduler reads: a different shape ------------------------------------------
    ("cpu request", (*REQUESTS, "cpu"), "300m", False),
    ("memory request", (*REQUESTS, "memory"), "65Mi", False),
    ("extended resource request", (*REQUESTS, "example.com/fpga"), "1", False),
    ("a limit without a request (defaults it)", (*LIMITS, "example.com/fpga"), "1", False),
    ("a larger init container", ("spec", "initContainers"), init("1"), False),
    ("a smaller init container", ("spec", "initContainers"), init("1m"), True),
    (
        "a sidecar (restartable init container)",
        ("spec", "initContainers"),
        init("1m", restartPolicy="Always"),
        False,
    ),
    ("pod overhead", ("spec", "overhead"), {"cpu": "10m"}, False),
    ("node selector value", ("spec", "nodeSelector", "disk"), "hdd", False),
    ("node selector order", ("spec", "nodeSelector"), {"disk": "ssd", "kubernetes.io/os": "linux"}, True),
    ("toleration", ("spec", "tolerations", 0, "value"), "db", False),
    ("required node affinity", ("spec", "affinity"), NODE_REQUIRED, False),
    ("preferred node affinity", ("spec", "affinity"), NODE_PREFERRED, False),
    ("required pod affinity", ("spec", "affinity"), POD_REQUIRED, False),
    ("required pod anti-affinity", ("spec", "affinity"), ANTI_REQUIRED, False),
    ("preferred pod anti-affinity", ("spec", "affinity"), ANTI_PREFERRED, False),
    ("hard topology spread", ("spec", "topologySpreadConstraints"), SPREAD, False),
    ("soft topology spread", ("spec", "topologySpreadConstraints"), SOFT_SPREAD, False),
    ("host port", (*CONTAINER, "ports", 0, "hostPort"), 8080, False),
    ("host network (container ports become host ports)", ("spec", "hostNetwork"), True, False),
    # -- what it does not read, or what consumers add themselves: the same shape --------------
    ("name and uid", ("metadata",), OTHER_META, True),
    ("labels (consumers add them where they matter)", ("metadata", "labels", "app"), "api", True),
    ("namespace (consumers add it)", ("metadata", "namespace"), "other", True),
    ("annotations", ("metadata", "annotations"), {"a": "b"}, True),
    ("owner (drainability reads it per pod)", ("metadata", "ownerReferences"), OWNED, True),
    ("image", (*CONTAINER, "image"), "web:v2", True),
    ("a limit above the request", (*LIMITS, "memory"), "1Gi", True),
    ("a new limit above the request", (*LIMITS, "cpu"), "2", True),
    ("volumes", ("spec", "volumes"), [{"name": "v", "emptyDir": {}}], True),
    ("priority (equivalence adds it)", ("spec", "priority"), 1000, True),
    ("scheduler name (equivalence adds it)", ("spec", "schedulerName"), "other", True),
    ("node name (classes add it; stand-ins have none)", ("spec", "nodeName"), "node-1", True),
    ("grace period", ("spec", "terminationGracePeriodSeconds"), 5, True),
    ("active deadline", ("spec", "activeDeadlineSeconds"), 60, True),
    ("status", ("status",), READY, True),
    (
        "the same requests over two containers",
        ("spec", "containers"),
        [requesting("200m", "64Mi"), requesting("50m")],
        True,
    ),
]


def parsed(data):
    """The pod from each parser (the fast one may step aside: then the Reader's only)."""
    slow = parse_pod(Reader(copy.deepcopy(data), "test.yaml"))
    fast = convert_pod(copy.deepcopy(data), "test.yaml", "")
    return [slow] if fast is None else [slow, fast]


@pytest.mark.parametrize("what, path, value, same", ROWS, ids=[row[0] for row in ROWS])
def test_which_pods_share_a_shape(what, path, value, same):
    changed = copy.deepcopy(BASE)
    _set(changed, path, value)
    for base in parsed(BASE):
        for other in parsed(changed):
            assert (base.shape == other.shape) is same, what
            assert (hash(base.shape) == hash(other.shape)) if same else True
            # Equal shapes are one object (interned), so a cache lookup is an identity check.
            assert (base.shape is other.shape) is same


def test_the_shape_describes_the_pod_it_belongs_to():
    pod = parsed(BASE)[0]
    shape = pod.shape
    assert shape.requests == Resources.of(pod.requests)
    assert dict(shape.requests.amounts) == pod.requests
    assert shape.nodes.node_selector == (("disk", "ssd"), ("kubernetes.io/os", "linux"))
    assert shape.nodes.tolerations == pod.tolerations
    assert shape.affinity == pod.affinity and shape.topology_spread == pod.topology_spread
    assert shape.host_ports == pod.host_ports == ()
    assert shape.label_free and not shape.inter_pod


def test_a_shape_built_outside_the_intern_table_still_compares_by_value():
    pod = parsed(BASE)[0]
    stray = PodShape(pod.shape._key)
    assert stray is not pod.shape and stray == pod.shape and hash(stray) == hash(pod.shape)
    assert {pod.shape: 1}[stray] == 1


def test_changing_a_shape_field_computes_the_shape_again():
    pod = parsed(BASE)[0]
    more = {**pod.requests, "cpu": 500}
    for changed in (dataclasses.replace(pod, requests=more), evolve(pod, requests=more)):
        assert changed.shape.requests.amounts["cpu"] == 500
    untolerated = evolve(pod, tolerations=())
    assert untolerated.shape.nodes.tolerations == ()
    # Changes outside the shape keep it.
    assert evolve(pod, ready=True).shape is pod.shape
    assert dataclasses.replace(pod, priority=7).shape is pod.shape
    with pytest.raises(TypeError):
        evolve(pod, shape=pod.shape)


def test_consumers_see_pods_of_one_template_as_one_whichever_parser_read_them():
    second = copy.deepcopy(BASE)
    second["metadata"].update(name="web-b", uid="uid-b")
    second["spec"]["nodeName"] = "node-2"
    readers = [parse_pod(Reader(copy.deepcopy(d), "t.yaml")) for d in (BASE, second)]
    fasts = [convert_pod(copy.deepcopy(d), "t.yaml", "") for d in (BASE, second)]
    pods = [*readers, *fasts]
    assert readers[0].requests is not readers[1].requests  # the Reader path shares no objects
    assert len(group_pods([dataclasses.replace(p, node_name="") for p in pods])) == 1
    assert len({_standin_key(p) for p in pods}) == 1
    # The checker's classes add the node name: the NodeName filter tells these two apart.
    assert len({class_key(p) for p in pods}) == len({fit_key(p) for p in pods}) == 2
    assert len({static_key(p) for p in pods}) == 2


def test_labels_enter_a_class_only_for_pods_with_inter_pod_terms_of_their_own():
    plain = parsed(BASE)[0]
    relabelled = dataclasses.replace(plain, meta=dataclasses.replace(plain.meta, labels={"app": "x"}))
    assert class_key(plain) == class_key(relabelled)
    spread = copy.deepcopy(BASE)
    _set(spread, ("spec", "topologySpreadConstraints"), SPREAD)
    a = parsed(spread)[0]
    b = dataclasses.replace(a, meta=dataclasses.replace(a.meta, labels={"app": "x"}))
    assert a.shape == b.shape and class_key(a) != class_key(b)


# -- both parsers, random manifests -----------------------------------------------------------

QUANTITIES = {
    "cpu": st.sampled_from(["0", "1m", "100m", "250m", "0.5", "1", "2"]),
    "memory": st.sampled_from(["0", "1", "64Mi", "1Gi", "1G", "100M"]),
    "example.com/fpga": st.sampled_from(["1", "2"]),
}
RESOURCES = st.dictionaries(st.sampled_from(sorted(QUANTITIES)), st.just(None), max_size=3).flatmap(
    lambda names: st.fixed_dictionaries({name: QUANTITIES[name] for name in names})
)
LABEL = st.sampled_from(["a", "b", "c"])
SELECTOR = st.fixed_dictionaries({"matchLabels": st.dictionaries(LABEL, LABEL, min_size=1, max_size=2)})
TOPOLOGY = st.sampled_from([ZONE, "kubernetes.io/hostname"])
EFFECT = st.sampled_from(["", "NoSchedule"])


@st.composite
def containers(draw, init=False):
    result = []
    for index in range(draw(st.integers(1 if not init else 0, 2))):
        container = {
            "name": f"{'i' if init else 'c'}{index}"
        }  # one namespace for both lists (the API server's rule)
        resources = {}
        requests = draw(RESOURCES)
        if requests:
            resources["requests"] = requests
        if draw(st.booleans()):
            resources["limits"] = {name: "4" if name != "memory" else "4Gi" for name in requests}
        if resources:
            container["resources"] = resources
        if draw(st.booleans()):
            container["ports"] = [{"containerPort": 80, **({"hostPort": 80} if draw(st.booleans()) else {})}]
        if init and draw(st.booleans()):
            container["restartPolicy"] = "Always"
        result.append(container)
    return result


@st.composite
def manifests(draw):
    spec = {"containers": draw(containers())}
    if draw(st.booleans()):
        spec["initContainers"] = draw(containers(init=True))
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(st.dictionaries(LABEL, LABEL, max_size=2))
    if draw(st.booleans()):
        spec["tolerations"] = draw(
            st.lists(
                st.fixed_dictionaries({"key": LABEL, "operator": st.just("Exists"), "effect": EFFECT}),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        term = {"labelSelector": draw(SELECTOR), "topologyKey": draw(TOPOLOGY)}
        kind = draw(st.sampled_from(["podAffinity", "podAntiAffinity"]))
        spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    if draw(st.booleans()):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.integers(1, 3)),
                "topologyKey": draw(TOPOLOGY),
                "whenUnsatisfiable": draw(st.sampled_from(["DoNotSchedule", "ScheduleAnyway"])),
                "labelSelector": draw(SELECTOR),
            }
        ]
    if draw(st.booleans()):
        spec["overhead"] = {"cpu": "5m"}
    if draw(st.booleans()):
        spec["hostNetwork"] = True
    if draw(st.booleans()):
        spec["nodeName"] = "node-1"
    labels = draw(st.dictionaries(LABEL, LABEL, max_size=2))
    return {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "labels": labels}, "spec": spec}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(manifests(), manifests())
def test_either_parser_gives_a_manifest_the_same_shape(first, second):
    for data in (first, second):
        pods = parsed(data)
        assert all(p.shape is pods[0].shape for p in pods)
    # ... and two manifests share a shape exactly when what the shape holds is equal.
    a, b = parsed(first)[-1], parsed(second)[-1]
    same = (
        a.requests == b.requests
        and sorted(a.node_selector.items()) == sorted(b.node_selector.items())
        and (a.affinity, a.tolerations, a.topology_spread, a.host_ports)
        == (b.affinity, b.tolerations, b.topology_spread, b.host_ports)
    )
    assert (a.shape == b.shape) is same
