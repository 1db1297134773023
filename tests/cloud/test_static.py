"""The static CloudProvider: groups inferred from labels or read from GROUPS.yaml, templates copied
from nodes, and a provider that records what it is asked (only a deletion changes it: its target)."""

import pytest

from kubetide.autoscaler.ports import (
    DELETION_CANDIDATE_TAINT,
    TO_BE_DELETED_TAINT,
    InstanceState,
)
from kubetide.cloud.schema import NODE_GROUP_LABEL, SpecError
from kubetide.cloud.static import (
    GROUP_LABELS,
    INFERRED_MAX_FACTOR,
    StaticCloud,
    group_key,
    load_groups_file,
    parse_groups,
    template_from_node,
)
from kubetide.model import Node, ObjectMeta, Taint

GI = 2**30


def node(name, labels=None, *, provider_id=None, taints=(), ready=True, unschedulable=False, cpu=4000):
    alloc = {"cpu": cpu, "memory": 16 * GI, "pods": 110}
    return Node(
        ObjectMeta(name, labels={"kubernetes.io/hostname": name, **(labels or {})}),
        dict(alloc),
        dict(alloc),
        taints=tuple(taints),
        unschedulable=unschedulable,
        ready=ready,
        provider_id=f"aws:///eu-west-1a/i-{name}" if provider_id is None else provider_id,
    )


# -- inference ----------------------------------------------------------------------------------


@pytest.mark.parametrize("label", GROUP_LABELS)
def test_each_provider_label_names_a_group(label):
    nodes = [node("n1", {label: "pool-a"}), node("n2", {label: "pool-a"}), node("n3", {label: "pool-b"})]
    cloud = StaticCloud.from_nodes(nodes)
    assert [g.id for g in cloud.node_groups()] == ["pool-a", "pool-b"]
    a = cloud.groups["pool-a"]
    assert a.origin == label
    assert (a.min_size, a.max_size, a.target_size()) == (0, INFERRED_MAX_FACTOR * 2, 2)
    assert cloud.node_group_for(nodes[0]) is a
    assert cloud.node_group_for(nodes[2]).id == "pool-b"
    assert group_key(nodes[0]) == (label, "pool-a")


def test_label_precedence_and_unlabelled_nodes():
    both = node(
        "n1",
        {NODE_GROUP_LABEL: "mine", "eks.amazonaws.com/nodegroup": "eks-name", "karpenter.sh/nodepool": "kp"},
    )
    gke_and_karpenter = node("n2", {"cloud.google.com/gke-nodepool": "gke", "karpenter.sh/nodepool": "kp"})
    empty_value = node("n3", {NODE_GROUP_LABEL: "", "kubernetes.azure.com/agentpool": "aks"})
    plain = node("n4")
    cloud = StaticCloud.from_nodes([both, gke_and_karpenter, empty_value, plain])
    assert [g.id for g in cloud.node_groups()] == ["mine", "gke", "aks"]
    assert cloud.node_group_for(plain) is None


def test_instances_are_the_nodes_with_a_provider_id():
    nodes = [node("n1", {NODE_GROUP_LABEL: "g"}), node("n2", {NODE_GROUP_LABEL: "g"}, provider_id="")]
    group = StaticCloud.from_nodes(nodes).groups["g"]
    assert [(i.id, i.state) for i in group.instances()] == [("aws:///eu-west-1a/i-n1", InstanceState.RUNNING)]
    assert group.target_size() == 2  # the node without providerID is still a member


def test_calls_are_recorded_and_never_fail():
    nodes = [node("n1", {NODE_GROUP_LABEL: "g"})]
    group = StaticCloud.from_nodes(nodes).groups["g"]
    group.increase_size(50)  # beyond max: a plan records, it does not refuse
    group.decrease_target_size(-1)
    assert group.target_size() == 1
    group.delete_nodes(nodes)
    assert group.calls == [("increase_size", 50), ("decrease_target_size", -1), ("delete_nodes", ["n1"])]
    # The port's contract (issue 24 item 7): a deletion leaves the target at once, and its
    # instance is DELETING while the node is still there.
    assert group.target_size() == 0
    assert [i.state for i in group.instances()] == [InstanceState.DELETING]
    assert group.price_per_hour() == 0.0


def test_template_keeps_the_group_shape_and_drops_what_belongs_to_one_node():
    source = node(
        "ip-10-0-1-2",
        {
            NODE_GROUP_LABEL: "g",
            "topology.kubernetes.io/zone": "eu-west-1a",
            "node.kubernetes.io/instance-type": "m6i.xlarge",
            "example.com/node-name": "ip-10-0-1-2",  # any label valued with the node's own name
        },
        taints=[
            Taint("dedicated", "ingress", "NoSchedule"),
            Taint(TO_BE_DELETED_TAINT, "1700000000", "NoSchedule"),
            Taint(DELETION_CANDIDATE_TAINT, "1700000000", "PreferNoSchedule"),
            Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
            Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),
            Taint("karpenter.sh/disrupted", "", "NoSchedule"),
        ],
        unschedulable=True,
        ready=False,
    )
    template = template_from_node(source, "g")
    assert template.name == "g-template"
    assert template.labels == {
        NODE_GROUP_LABEL: "g",
        "topology.kubernetes.io/zone": "eu-west-1a",
        "node.kubernetes.io/instance-type": "m6i.xlarge",
    }
    assert template.taints == (Taint("dedicated", "ingress", "NoSchedule"),)
    assert template.allocatable == source.allocatable and template.capacity == source.capacity
    assert template.ready and not template.unschedulable and template.provider_id == ""


def test_template_comes_from_a_ready_schedulable_node_not_being_deleted():
    labels = {NODE_GROUP_LABEL: "g"}
    nodes = [
        node("a-unready", labels, ready=False, cpu=1000),
        node("b-cordoned", labels, unschedulable=True, cpu=2000),
        node("c-deleted", labels, taints=[Taint(TO_BE_DELETED_TAINT, "1", "NoSchedule")], cpu=3000),
        node("d-good", labels, cpu=4000),
    ]
    assert StaticCloud.from_nodes(nodes).groups["g"].template_node().allocatable["cpu"] == 4000
    # No good node: the first one, sanitised.
    assert StaticCloud.from_nodes(nodes[:2]).groups["g"].template_node().allocatable["cpu"] == 1000


# -- GROUPS.yaml --------------------------------------------------------------------------------

GROUPS = """\
nodeGroups:
  - name: general
    minSize: 2
    maxSize: 20
    price: 0.192
  - name: batch
    maxSize: 5
    provisioningDelay: 3m   # simulator-only fields are accepted: scenario groups paste as they are
    template:
      metadata:
        labels: {workload: batch}
      spec:
        taints: [{key: dedicated, value: batch, effect: NoSchedule}]
      status:
        allocatable: {cpu: "8", memory: 32Gi}
"""


def write(tmp_path, text, name="groups.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_groups_file_defines_exactly_its_groups(tmp_path):
    path = write(tmp_path, GROUPS)
    definitions = load_groups_file(path)
    assert [(d.name, d.min_size, d.max_size, d.price) for d in definitions] == [
        ("general", 2, 20, 0.192),
        ("batch", 0, 5, 0.0),
    ]
    nodes = [
        node("n1", {"eks.amazonaws.com/nodegroup": "general"}),
        node("n2", {"eks.amazonaws.com/nodegroup": "general"}),
        node("n3", {"eks.amazonaws.com/nodegroup": "generall"}),
        node("n4"),
    ]
    cloud = StaticCloud.from_nodes(nodes, definitions)
    general, batch = cloud.node_groups()
    assert (general.id, general.min_size, general.max_size, general.target_size()) == ("general", 2, 20, 2)
    assert general.price_per_hour() == 0.192 and general.origin == "GROUPS.yaml"
    assert general.template_node().labels["eks.amazonaws.com/nodegroup"] == "general"  # copied from n1
    assert batch.target_size() == 0
    template = batch.template_node()
    assert template.labels == {
        "workload": "batch",
        NODE_GROUP_LABEL: "batch",
        "kubernetes.io/hostname": "batch-template",
    }
    assert template.allocatable == {"cpu": 8000, "memory": 32 * GI, "pods": 110}
    assert [t.key for t in template.taints] == ["dedicated"]
    # Groups GROUPS.yaml does not list are not autoscaled, with a hint for the likely typo.
    assert cloud.node_group_for(nodes[2]) is None and cloud.node_group_for(nodes[3]) is None
    assert cloud.warnings == [
        "1 node(s) carry eks.amazonaws.com/nodegroup=generall, a group "
        f'{path} does not define (did you mean "general"?): not autoscaled'
    ]


def test_bare_list_and_max_size_defaults_to_ten_times_current(tmp_path):
    definitions = parse_groups([{"name": "g", "minSize": 1}], "groups.yaml")
    nodes = [node("n1", {NODE_GROUP_LABEL: "g"}), node("n2", {NODE_GROUP_LABEL: "g"})]
    group = StaticCloud.from_nodes(nodes, definitions).groups["g"]
    assert (group.min_size, group.max_size) == (1, 20)


def test_sizes_outside_the_bounds_warn():
    nodes = [node(f"n{i}", {NODE_GROUP_LABEL: "g"}) for i in range(3)]
    cloud = StaticCloud.from_nodes(nodes, parse_groups([{"name": "g", "maxSize": 2}], "groups.yaml"))
    assert cloud.warnings == ["node group g has 3 nodes, more than its maxSize 2: it cannot grow"]
    cloud = StaticCloud.from_nodes(nodes, parse_groups([{"name": "g", "minSize": 4}], "groups.yaml"))
    assert cloud.warnings == ["node group g has 3 nodes, fewer than its minSize 4"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"nodeGroups": [{"name": "g", "maxSiz": 3}]},
            'groups.yaml: nodeGroups[0].maxSiz: unknown field (did you mean "maxSize"?)',
        ),
        ([{"name": "g", "maxSiz": 3}], 'groups.yaml: [0].maxSiz: unknown field (did you mean "maxSize"?)'),
        (
            {"nodeGroups": [{"name": "g", "minSize": 3, "maxSize": 2}]},
            "groups.yaml: nodeGroups[0]: maxSize (2) is less than minSize (3)",
        ),
        (
            {"nodeGroups": [{"name": "g", "maxSize": -1}]},
            "groups.yaml: nodeGroups[0].maxSize: Input should be greater than or equal to 0, got -1",
        ),
        (
            {"nodeGroups": [{"name": "g"}, {"name": "g"}]},
            'groups.yaml: nodeGroups[1].name: duplicate node group "g"',
        ),
        (
            {"nodeGroups": [{"name": "g", "template": {"status": {"allocatable": {"cpu": "abc"}}}}]},
            'groups.yaml: nodeGroups[0].template.status.allocatable.cpu: invalid quantity "abc"',
        ),
        (
            {"nodeGroups": [{"name": "g", "template": {"metadata": {"labels": {"a": "b"}}}}]},
            "groups.yaml: nodeGroups[0].template.status.allocatable: a node template needs allocatable cpu and memory",
        ),
        (
            {"nodeGroups": []},
            "groups.yaml: nodeGroups: List should have at least 1 item after validation, not 0",
        ),
        ({"groups": []}, 'groups.yaml: groups: unknown field (did you mean "nodeGroups"?)'),
        ("general", "groups.yaml: expected a mapping with nodeGroups, or a list of node groups"),
    ],
)
def test_groups_file_errors_name_the_field(data, message):
    with pytest.raises(SpecError) as info:
        parse_groups(data, "groups.yaml")
    assert str(info.value) == message


def test_group_without_nodes_needs_template_and_max_size():
    nodes = [node("n1", {NODE_GROUP_LABEL: "general"})]
    with pytest.raises(SpecError) as info:
        StaticCloud.from_nodes(
            nodes, parse_groups({"nodeGroups": [{"name": "generl", "maxSize": 3}]}, "g.yaml")
        )
    assert str(info.value) == (
        'g.yaml: nodeGroups[0].template: required: no node of group "generl" is in the dump to take it '
        'from (did you mean "general"?)'
    )
    template = {"status": {"allocatable": {"cpu": "2", "memory": "4Gi"}}}
    with pytest.raises(SpecError, match=r"^g.yaml: \[0\].maxSize: required: no node of group \"batch\""):
        StaticCloud.from_nodes(nodes, parse_groups([{"name": "batch", "template": template}], "g.yaml"))


def test_groups_file_read_errors(tmp_path):
    with pytest.raises(SpecError, match=r"missing.yaml: no such file$"):
        load_groups_file(tmp_path / "missing.yaml")
    path = write(tmp_path, "nodeGroups: [\n")
    with pytest.raises(SpecError, match=r"groups.yaml: line 2, column 1: invalid YAML"):
        load_groups_file(path)
    path = write(tmp_path, "nodeGroups: [{name: a}]\n---\nnodeGroups: [{name: b}]\n")
    with pytest.raises(SpecError, match="expected one YAML document with nodeGroups"):
        load_groups_file(path)
