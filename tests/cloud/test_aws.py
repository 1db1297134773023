"""The AWS provider against moto running as a real HTTP server on loopback: boto3 sends real
requests and parses real responses; nothing of boto3 is mocked.

Two things AWS does that moto cannot are injected into moto's own server-side models (the
server runs in this process): a capacity shortage (moto launches every desired instance at once
and records no scaling activities, so `stockout` makes it launch nothing for a group and answer
DescribeScalingActivities with a Failed activity), and throttling (`throttle` answers a call
with AWS's Throttling error from a botocore `before-send` hook, below the retry handler, so
botocore's real standard-mode retries run).
"""

from __future__ import annotations

import dataclasses
import logging
import urllib.request
from datetime import UTC, datetime

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from moto.autoscaling.models import FakeAutoScalingGroup
from moto.autoscaling.responses import AutoScalingResponse
from moto.core.responses import ActionResult
from moto.server import ThreadedMotoServer
from test_deletions_counted_once import CASES, DOOMED, min_size_verdict

from kubetide.autoscaler.clusterstate.registry import ClusterStateRegistry
from kubetide.autoscaler.inputs import LoopInputs
from kubetide.autoscaler.options import AutoscalerOptions
from kubetide.autoscaler.ports import ActionError, InstanceState, PriceError, ProviderErrorCode, TemplateError
from kubetide.autoscaler.scaleup.orchestrator import ScaleUp
from kubetide.clock import WorkTimer
from kubetide.cloud.aws import connect
from kubetide.cloud.aws.flags import ExplicitGroup, TagDiscovery
from kubetide.cloud.aws.provider import AwsCloudProvider
from kubetide.cloud.prices import bundled_table
from kubetide.errors import UserError
from kubetide.model import Node, ObjectMeta, Taint, load_documents
from kubetide.snapshot import ClusterSnapshot

REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b"]
AMI = "ami-03cf127a"  # one of the images moto ships
ENABLED = "k8s.io/cluster-autoscaler/enabled"
CLUSTER = "k8s.io/cluster-autoscaler/prod"
GI = 2**30
ICE_MESSAGE = (
    "Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have "
    "sufficient m5.xlarge capacity in the Availability Zone you requested (us-east-1a). Launching EC2 "
    "instance failed."
)


@pytest.fixture(scope="module")
def endpoint():
    # The server logs every request; after a test's captured stderr is closed, that is noise.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def session():
    # One session for the module: it caches the service models every client would load again.
    return boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )


class Aws:
    """A fresh moto account, boto3 clients for the test's own setup, and a provider factory."""

    def __init__(self, endpoint: str, session: boto3.session.Session):
        self.endpoint = endpoint
        self.session = session
        self.autoscaling = session.client("autoscaling", endpoint_url=endpoint)
        self.ec2 = session.client("ec2", endpoint_url=endpoint)
        self.now = 0.0
        self.stocked_out: dict[str, str] = {}  # group -> failure message

    def clock(self) -> float:
        return self.now

    def launch_template(self, name: str, instance_type: str = "m5.xlarge") -> dict:
        self.ec2.create_launch_template(
            LaunchTemplateName=name, LaunchTemplateData={"ImageId": AMI, "InstanceType": instance_type}
        )
        return {"LaunchTemplateName": name, "Version": "$Latest"}

    def asg(
        self, name, *, min_size=0, max_size=10, desired=0, tags=None, instance_type="m5.xlarge", **launch
    ):
        if not launch:
            launch = {"LaunchTemplate": self.launch_template(f"{name}-lt", instance_type)}
        self.autoscaling.create_auto_scaling_group(
            AutoScalingGroupName=name,
            MinSize=min_size,
            MaxSize=max_size,
            DesiredCapacity=desired,
            AvailabilityZones=ZONES,
            Tags=[
                {
                    "Key": k,
                    "Value": v,
                    "PropagateAtLaunch": False,
                    "ResourceId": name,
                    "ResourceType": "auto-scaling-group",
                }
                for k, v in (tags or {}).items()
            ],
            **launch,
        )

    def describe(self, name: str) -> dict:
        return self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
            "AutoScalingGroups"
        ][0]

    def provider(self, nodes=(), discovery=(), snapshot=None, **kwargs) -> AwsCloudProvider:
        return connect(
            list(nodes),
            list(discovery),
            session=self.session,
            endpoint_url=self.endpoint,
            snapshot=snapshot,
            **kwargs,
        )

    def tick(self, seconds: float = 61.0) -> None:
        self.now += seconds


@pytest.fixture
def aws(endpoint, session, monkeypatch):
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
    env = Aws(endpoint, session)
    launch = FakeAutoScalingGroup.replace_autoscaling_group_instances

    def launch_unless_stocked_out(group, count, tags):
        if group.name not in env.stocked_out:
            launch(group, count, tags)

    def failed_activities(response):
        name = response._get_param("AutoScalingGroupName")
        if not env.stocked_out.get(name):
            return ActionResult({"Activities": []})
        activity = {
            "ActivityId": "a-1",
            "AutoScalingGroupName": name,
            "Description": "Launching a new EC2 instance.  Status Reason: " + env.stocked_out[name],
            "Cause": "an instance was started in response to a difference between desired and actual capacity",
            "StartTime": datetime.now(UTC),
            "StatusCode": "Failed",
            "StatusMessage": env.stocked_out[name],
            "Progress": 100,
        }
        return ActionResult({"Activities": [activity]})

    monkeypatch.setattr(
        FakeAutoScalingGroup, "replace_autoscaling_group_instances", launch_unless_stocked_out
    )
    monkeypatch.setattr(AutoScalingResponse, "describe_scaling_activities", failed_activities)
    return env


def registered(instance_id: str, zone: str, *, ready: bool = True, name: str | None = None) -> Node:
    """The Node an instance registers as."""
    name = name or f"ip-{instance_id}"
    resources = {"cpu": 3920, "memory": 15 * GI, "pods": 58}
    return Node(
        ObjectMeta(name, labels={"kubernetes.io/hostname": name, "team": "web"}),
        dict(resources),
        dict(resources),
        ready=ready,
        provider_id=f"aws:///{zone}/{instance_id}",
    )


def nodes_of(aws: Aws, name: str) -> list[Node]:
    return [registered(i["InstanceId"], i["AvailabilityZone"]) for i in aws.describe(name)["Instances"]]


# -- node groups ---------------------------------------------------------------------------------


def test_discovery_by_tags_and_nodes_overrides(aws):
    aws.asg("web", min_size=1, max_size=5, desired=1, tags={ENABLED: "true", CLUSTER: "owned"})
    aws.asg("batch", min_size=0, max_size=8, tags={ENABLED: "true", CLUSTER: "owned", "team": "ml"})
    aws.asg("other-cluster", tags={ENABLED: "true", "k8s.io/cluster-autoscaler/dev": "owned"})
    aws.asg("disabled", tags={CLUSTER: "owned"})
    aws.asg("pinned", min_size=0, max_size=3)

    cloud = aws.provider(discovery=[TagDiscovery({ENABLED: "", CLUSTER: ""})])
    groups = {g.id: g for g in cloud.node_groups()}
    assert sorted(groups) == ["batch", "web"]
    assert (groups["web"].min_size, groups["web"].max_size, groups["web"].target_size()) == (1, 5, 1)
    assert (groups["batch"].min_size, groups["batch"].max_size) == (0, 8)

    by_value = aws.provider(discovery=[TagDiscovery({ENABLED: "", "team": "ml"})])
    assert [g.id for g in by_value.node_groups()] == ["batch"]

    # --nodes adds groups and overrides a discovered group's bounds.
    both = aws.provider(
        nodes=[ExplicitGroup(2, 4, "web"), ExplicitGroup(0, 2, "pinned")],
        discovery=[TagDiscovery({ENABLED: "", CLUSTER: ""})],
    )
    groups = {g.id: g for g in both.node_groups()}
    assert sorted(groups) == ["batch", "pinned", "web"]
    assert (groups["web"].min_size, groups["web"].max_size) == (2, 4)
    assert (groups["pinned"].min_size, groups["pinned"].max_size) == (0, 2)

    web_node = nodes_of(aws, "web")[0]
    assert both.node_group_for(web_node) is groups["web"]
    assert both.node_group_for(registered("i-0000000000000000", "us-east-1a")) is None
    assert both.node_group_for(Node(ObjectMeta("kwok-1"), {}, {}, provider_id="kwok://kwok-1")) is None


def test_a_missing_asg_is_a_one_line_startup_error(aws):
    aws.asg("web")
    with pytest.raises(UserError) as info:
        aws.provider(nodes=[ExplicitGroup(0, 3, "web"), ExplicitGroup(0, 3, "wbe")])
    assert (
        str(info.value)
        == "run: --cloud-provider aws: --nodes: no Auto Scaling group named wbe in region us-east-1"
    )


def test_no_region_is_a_one_line_error(monkeypatch):
    for variable in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing")
    with pytest.raises(UserError, match="no AWS region"):
        connect([ExplicitGroup(0, 1, "web")], [], session=session)


# -- scale-up ------------------------------------------------------------------------------------


def test_scale_up_sets_desired_capacity_within_max(aws):
    aws.asg("web", max_size=4, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 4, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    web.increase_size(2)
    assert aws.describe("web")["DesiredCapacity"] == 3
    assert web.target_size() == 3
    # moto launched them at once: the write invalidated the cache, so they are read back.
    assert [i.state for i in web.instances()] == [InstanceState.RUNNING] * 3
    with pytest.raises(ActionError, match="size increase too large: desired 5, max 4"):
        web.increase_size(2)
    with pytest.raises(ActionError, match="must be positive"):
        web.increase_size(0)
    assert aws.describe("web")["DesiredCapacity"] == 3


def test_capacity_not_launched_yet_is_creating_placeholders(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    aws.stocked_out["web"] = ""  # launches nothing, and no activity has failed yet
    web.increase_size(2)
    instances = web.instances()
    assert [i.state for i in instances] == [
        InstanceState.RUNNING,
        InstanceState.CREATING,
        InstanceState.CREATING,
    ]
    assert [i.id for i in instances[1:]] == [
        "aws:///us-east-1a/i-placeholder-web-1",
        "aws:///us-east-1a/i-placeholder-web-2",
    ]
    assert all(i.error is None for i in instances)


# -- scale-down ----------------------------------------------------------------------------------


def test_targeted_scale_down_terminates_the_chosen_instance(aws):
    aws.asg("web", min_size=1, max_size=5, desired=3)
    cloud = aws.provider(nodes=[ExplicitGroup(1, 5, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    nodes = nodes_of(aws, "web")
    chosen, kept = nodes[1], {nodes[0].provider_id, nodes[2].provider_id}
    web.delete_nodes([chosen])
    after = aws.describe("web")
    assert after["DesiredCapacity"] == 2
    assert {f"aws:///{i['AvailabilityZone']}/{i['InstanceId']}" for i in after["Instances"]} == kept
    assert web.target_size() == 2
    # Never below the group's min size, and never a node of another group.
    with pytest.raises(ActionError, match="min size reached"):
        web.delete_nodes([nodes[0], nodes[2]])
    with pytest.raises(ActionError, match="is not in this group"):
        web.delete_nodes([registered("i-0fffffffffffffff0", "us-east-1a")])
    assert aws.describe("web")["DesiredCapacity"] == 2


def test_decrease_target_size_drops_only_unlaunched_capacity(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    aws.stocked_out["web"] = ""
    web.increase_size(3)
    with pytest.raises(
        ActionError, match="attempt to delete existing nodes: target 4, delta -4, existing instances 1"
    ):
        web.decrease_target_size(-4)
    web.decrease_target_size(-2)
    assert aws.describe("web")["DesiredCapacity"] == 2
    with pytest.raises(ActionError, match="must be negative"):
        web.decrease_target_size(1)
    # Deleting a placeholder (UC5 deletes instances that never registered) lowers desired capacity.
    placeholder = next(i for i in web.instances() if i.state is InstanceState.CREATING)
    web.delete_nodes([Node(ObjectMeta(placeholder.id), {}, {}, provider_id=placeholder.id)])
    assert aws.describe("web")["DesiredCapacity"] == 1
    assert len(aws.describe("web")["Instances"]) == 1


# -- templates -----------------------------------------------------------------------------------


def test_scale_from_zero_template_from_instance_type_and_tags(aws):
    tags = {
        "k8s.io/cluster-autoscaler/node-template/label/team": "ml",
        "k8s.io/cluster-autoscaler/node-template/taint/dedicated": "gpu:NoSchedule",
        "k8s.io/cluster-autoscaler/node-template/taint/broken": "no-effect",
        "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage": "100Gi",
        "k8s.io/cluster-autoscaler/node-template/resources/hugepages-2Mi": "not-a-quantity",
        "k8s.io/cluster-autoscaler/node-template/resources/hugepages-1Gi": "-2Gi",
    }
    aws.asg("gpu", tags=tags, instance_type="g4dn.xlarge")
    cloud = aws.provider(nodes=[ExplicitGroup(0, 3, "gpu")], clock=aws.clock)
    (gpu,) = cloud.node_groups()
    template = gpu.template_node()
    assert template.capacity == {
        "cpu": 4000,
        "memory": 16 * GI,
        "pods": 110,
        "nvidia.com/gpu": 1,
        "ephemeral-storage": 100 * GI,
    }
    assert template.allocatable == template.capacity
    assert template.labels == {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": "g4dn.xlarge",
        "topology.kubernetes.io/region": "us-east-1",
        "topology.kubernetes.io/zone": "us-east-1a",
        "team": "ml",
    }
    assert template.taints == (Taint("dedicated", "gpu", "NoSchedule"),)


def test_template_instance_type_sources(aws):
    aws.autoscaling.create_launch_configuration(
        LaunchConfigurationName="arm-lc", ImageId=AMI, InstanceType="m6g.large"
    )
    aws.asg("from-lc", LaunchConfigurationName="arm-lc")
    aws.asg(
        "mixed",
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": aws.launch_template("mixed-lt", "m5.xlarge"),
                "Overrides": [{"InstanceType": "m6g.large"}, {"InstanceType": "m5.xlarge"}],
            }
        },
    )
    cloud = aws.provider(
        nodes=[ExplicitGroup(0, 3, "from-lc"), ExplicitGroup(0, 3, "mixed")], clock=aws.clock
    )
    for group in cloud.node_groups():
        template = group.template_node()
        assert template.labels["node.kubernetes.io/instance-type"] == "m6g.large", group.id
        assert template.labels["kubernetes.io/arch"] == "arm64"
        assert (template.capacity["cpu"], template.capacity["memory"]) == (2000, 8 * GI)


def test_a_template_aws_cannot_give_is_a_template_error(aws):
    """The port's typed error, classed as the cloud's: scale-up passes the group over and says
    why (a launch template that names no instance type, then a group deleted behind our back)."""
    aws.ec2.create_launch_template(LaunchTemplateName="bare-lt", LaunchTemplateData={"ImageId": AMI})
    aws.asg("bare", LaunchTemplate={"LaunchTemplateName": "bare-lt", "Version": "$Latest"})
    aws.asg("gone")
    cloud = aws.provider(nodes=[ExplicitGroup(0, 3, "bare"), ExplicitGroup(0, 3, "gone")], clock=aws.clock)
    bare, gone = cloud.node_groups()
    with pytest.raises(TemplateError, match="names no instance type") as info:
        bare.template_node()
    assert (info.value.group_id, info.value.code) == ("bare", ProviderErrorCode.CLOUD_PROVIDER)
    aws.autoscaling.delete_auto_scaling_group(AutoScalingGroupName="gone", ForceDelete=True)
    aws.tick()
    with pytest.raises(TemplateError, match="no longer exists"):
        gone.template_node()


# -- prices ---------------------------------------------------------------------------------------


def table_price(instance_type: str) -> float:
    guess = bundled_table().guess(instance_type)
    assert guess is not None and guess.provider == "aws"
    return guess.price


def mixed(aws: Aws, name: str, *types: str) -> None:
    aws.asg(
        name,
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": aws.launch_template(f"{name}-lt", types[0]),
                "Overrides": [{"InstanceType": t} for t in types],
            }
        },
    )


@pytest.mark.parametrize(
    ("launch", "expected"),
    [
        ({"instance_type": "m5.xlarge"}, "m5.xlarge"),  # launch template
        ({"instance_type": "g4dn.xlarge"}, "g4dn.xlarge"),
        ({"lc": "m6g.large"}, "m6g.large"),  # launch configuration
        ({"mixed": ("m6g.large", "m5.2xlarge", "c6g.large")}, "m5.2xlarge"),  # the dearest override
        ({"mixed": ("m5.2xlarge", "m6g.large")}, "m5.2xlarge"),  # whatever its place
    ],
    ids=["template", "gpu template", "launch configuration", "mixed", "mixed first"],
)
def test_a_group_is_priced_from_its_instance_types_by_the_bundled_table(aws, launch, expected):
    if "lc" in launch:
        aws.autoscaling.create_launch_configuration(
            LaunchConfigurationName="g-lc", ImageId=AMI, InstanceType=launch["lc"]
        )
        aws.asg("g", LaunchConfigurationName="g-lc")
    elif "mixed" in launch:
        mixed(aws, "g", *launch["mixed"])
    else:
        aws.asg("g", instance_type=launch["instance_type"])
    (group,) = aws.provider(nodes=[ExplicitGroup(0, 3, "g")], clock=aws.clock).node_groups()
    assert group.price_per_hour() == table_price(expected)


def test_an_unknown_instance_type_is_no_price_said_once(aws, caplog):
    """An instance type the table does not know (or a mixed policy with one among known ones, or
    one choosing by attributes) gives no price, so no replacement goes to or from the group; the
    log says so once, not every loop."""
    aws.asg("odd", instance_type="u-6tb1.112xlarge")
    mixed(aws, "partly", "m5.xlarge", "u-6tb1.112xlarge")
    aws.asg(
        "by-attributes",
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": aws.launch_template("attr-lt", "m5.xlarge"),
                "Overrides": [
                    {"InstanceType": "m5.xlarge"},
                    {"InstanceRequirements": {"VCpuCount": {"Min": 2}, "MemoryMiB": {"Min": 4096}}},
                ],
            }
        },
    )
    cloud = aws.provider(
        nodes=[ExplicitGroup(0, 3, n) for n in ("odd", "partly", "by-attributes")], clock=aws.clock
    )
    with caplog.at_level(logging.INFO, logger="kubetide.cloud.aws"):
        for _ in range(3):
            assert [g.price_per_hour() for g in cloud.node_groups()] == [None, None, None]
            aws.tick()  # a refresh between loops reads the same launch settings
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3, warnings
    assert any(w.startswith("odd: no price") and "u-6tb1.112xlarge not in" in w for w in warnings)
    assert any(w.startswith("partly: no price") for w in warnings)
    assert any(w.startswith("by-attributes: no price") and "by attributes" in w for w in warnings)


def test_a_price_aws_cannot_give_is_a_price_error(aws):
    aws.ec2.create_launch_template(LaunchTemplateName="bare-lt", LaunchTemplateData={"ImageId": AMI})
    aws.asg("bare", LaunchTemplate={"LaunchTemplateName": "bare-lt", "Version": "$Latest"})
    (bare,) = aws.provider(nodes=[ExplicitGroup(0, 3, "bare")], clock=aws.clock).node_groups()
    with pytest.raises(PriceError, match="names no instance type") as info:
        bare.price_per_hour()
    assert info.value.group_id == "bare"


def test_the_price_expander_grows_the_cheaper_asg(aws):
    """With prices, the price expander tells AWS groups apart: a 1.5-cpu pod fits a c6g.large
    ($0.068) and an m5.xlarge ($0.192); both groups are at zero, so templates come from AWS."""
    aws.asg("general", instance_type="m5.xlarge")
    aws.asg("compute", instance_type="c6g.large")
    cloud = aws.provider(
        nodes=[ExplicitGroup(0, 3, "general"), ExplicitGroup(0, 3, "compute")], clock=aws.clock
    )
    (pending,) = load_documents(
        [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default", "uid": "p"},
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {"requests": {"cpu": "1500m", "memory": "1Gi"}}}
                    ]
                },
                "status": {
                    "phase": "Pending",
                    "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
                },
            }
        ],
        "pending.yaml",
    ).pods
    for order in (["general", "compute"], ["compute", "general"]):
        groups = sorted(cloud.node_groups(), key=lambda g: order.index(g.id))
        result = ScaleUp(AutoscalerOptions(expander=("price",)), timer=WorkTimer(1e-3), seed=1).plan(
            LoopInputs(1000.0, ClusterSnapshot([]), pending=[pending]), node_groups=groups
        )
        assert {o.group_id: o.price_per_hour for o in result.options} == {
            "general": table_price("m5.xlarge"),
            "compute": table_price("c6g.large"),
        }
        assert [(i.group_id, i.delta) for i in result.increases] == [("compute", 1)]


def test_a_group_with_a_ready_node_takes_its_template_from_it(aws):
    aws.asg("web", desired=1)
    nodes = nodes_of(aws, "web")
    cloud = aws.provider(
        nodes=[ExplicitGroup(0, 3, "web")], snapshot=lambda: ClusterSnapshot(nodes), clock=aws.clock
    )
    (web,) = cloud.node_groups()
    template = web.template_node()
    assert template.allocatable == {"cpu": 3920, "memory": 15 * GI, "pods": 58}  # the kubelet's, not EC2's
    assert template.labels["team"] == "web" and "kubernetes.io/hostname" not in template.labels


# -- failures ------------------------------------------------------------------------------------


def test_failed_scaling_activity_backs_the_group_off(aws):
    """A stockout on AWS reaches the cluster state registry as the simulator's does: errored
    CREATING instances fail the scale-up, back the group off and shrink its target."""
    aws.asg("web", max_size=5, desired=1)
    nodes = nodes_of(aws, "web")
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    registry = ClusterStateRegistry(AutoscalerOptions())
    registry.update(nodes, cloud, now=0.0)

    aws.stocked_out["web"] = ICE_MESSAGE
    web.increase_size(2)
    registry.register_scale_up("web", 2, now=0.0)
    aws.tick(10)  # the next loop: the write invalidated the cache, so AWS is read again
    registry.update(nodes, cloud, now=10.0)

    errored = [i for i in web.instances() if i.error is not None]
    assert len(errored) == 2
    assert (errored[0].error.error_class, errored[0].error.code) == (
        "OutOfResources",
        "InsufficientInstanceCapacity",
    )
    assert errored[0].error.message == ICE_MESSAGE
    assert registry.is_backed_off("web", now=10.0)
    status = registry.backoff_status("web", now=10.0)
    assert status.error.code == "InsufficientInstanceCapacity" and status.until == 10.0 + 300.0
    assert [e.reason for e in registry.take_events()] == ["ScaleUpFailed"]
    assert "web" not in registry.upcoming_nodes()

    (fix,) = registry.size_fixes(now=10.0)
    assert (fix.group_id, fix.decrease, fix.reason) == ("web", 2, "InsufficientInstanceCapacity")
    web.decrease_target_size(fix.delta)
    assert aws.describe("web")["DesiredCapacity"] == 1
    assert [i.state for i in web.instances()] == [InstanceState.RUNNING]


def test_an_old_failure_does_not_fail_a_new_scale_up(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock)
    (web,) = cloud.node_groups()
    aws.stocked_out["web"] = ICE_MESSAGE
    web.increase_size(1)
    assert web.instances()[-1].error is not None
    web.decrease_target_size(-1)
    # Later, AWS has the failed activity on record, but nothing newer has failed yet.
    aws.stocked_out["web"] = ICE_MESSAGE
    activities = AutoScalingResponse.describe_scaling_activities
    frozen = datetime.now(UTC)

    def only_the_old_failure(response):
        result = activities(response)
        for activity in result.result["Activities"]:
            activity["StartTime"] = frozen.replace(year=frozen.year - 1)
        return result

    AutoScalingResponse.describe_scaling_activities = only_the_old_failure  # undone by the fixture
    web.increase_size(1)
    assert [i.error for i in web.instances()] == [None, None]


class Throttle:
    """Answers the first `times` calls of an operation with AWS's Throttling error, before the
    request leaves botocore, so its retry handler sees an ordinary throttled response."""

    BODY = (
        b'<ErrorResponse xmlns="https://autoscaling.amazonaws.com/doc/2011-01-01/"><Error><Type>Sender</Type>'
        b"<Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>r-1</RequestId></ErrorResponse>"
    )

    def __init__(self, times: int):
        self.remaining = times
        self.attempts = 0

    def __call__(self, request, **kwargs):
        self.attempts += 1
        if self.remaining == 0:
            return None  # let it through to moto
        self.remaining -= 1
        return AWSResponse(request.url, 400, {"Content-Type": "text/xml"}, _Raw(self.BODY))


class _Raw:
    def __init__(self, body: bytes):
        self.body = body

    def stream(self, **kwargs):
        yield self.body


def test_throttling_is_retried_then_a_persistent_error_is_an_action_error(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock, max_attempts=3)
    (web,) = cloud.node_groups()
    events = cloud.autoscaling.meta.events

    brief = Throttle(times=2)
    events.register("before-send.auto-scaling.SetDesiredCapacity", brief)
    web.increase_size(1)
    assert brief.attempts == 3
    assert aws.describe("web")["DesiredCapacity"] == 2
    events.unregister("before-send.auto-scaling.SetDesiredCapacity", brief)

    persistent = Throttle(times=1000)
    events.register("before-send.auto-scaling.SetDesiredCapacity", persistent)
    with pytest.raises(ActionError) as info:
        web.increase_size(1)
    assert persistent.attempts == 3
    assert "(Throttling)" in str(info.value) and "reached max retries: 2" in str(info.value)
    assert aws.describe("web")["DesiredCapacity"] == 2


def test_asg_state_is_read_once_per_refresh_interval_and_after_writes(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock)
    reads = []
    cloud.autoscaling.meta.events.register(
        "before-call.auto-scaling.DescribeAutoScalingGroups", lambda **kwargs: reads.append(1)
    )
    node = nodes_of(aws, "web")[0]
    (web,) = cloud.node_groups()
    for _ in range(3):
        web.target_size(), web.instances(), cloud.node_group_for(node)
    assert len(reads) == 0  # connect() read them
    aws.tick(61)
    web.target_size()
    web.target_size()
    assert len(reads) == 1
    aws.autoscaling.set_desired_capacity(AutoScalingGroupName="web", DesiredCapacity=3)
    assert web.target_size() == 1  # someone else's change waits for the next refresh...
    web.increase_size(1)  # ...but a write starts from what AWS has now, never lowering it
    assert len(reads) == 2
    assert aws.describe("web")["DesiredCapacity"] == 4
    assert web.target_size() == 4
    assert len(reads) == 3  # our own write invalidated the cache: read back from AWS


def test_a_failed_refresh_keeps_the_last_state(aws):
    aws.asg("web", max_size=5, desired=1)
    cloud = aws.provider(nodes=[ExplicitGroup(0, 5, "web")], clock=aws.clock, max_attempts=1)
    (web,) = cloud.node_groups()
    cloud.autoscaling.meta.events.register(
        "before-send.auto-scaling.DescribeAutoScalingGroups", Throttle(times=1000)
    )
    aws.tick(61)
    assert web.target_size() == 1
    assert [g.id for g in cloud.node_groups()] == ["web"]


# -- kubetide run --------------------------------------------------------------------------------


def test_run_builds_the_provider_from_the_usual_aws_configuration(aws, monkeypatch):
    """What `kubetide run --cloud-provider aws` calls once Kubernetes is ready: region, endpoint and
    credentials from the environment, as boto3's default chain reads them."""
    from kubetide.cloud.providers import aws_cloud_factory

    for variable, value in {
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": aws.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }.items():
        monkeypatch.setenv(variable, value)
    aws.asg("web", desired=1, tags={ENABLED: "", CLUSTER: ""})
    build = aws_cloud_factory([], [f"asg:tag={ENABLED},{CLUSTER}"], None)
    cloud = build(None, None, lambda: ClusterSnapshot())
    assert [g.id for g in cloud.node_groups()] == ["web"]

    build = aws_cloud_factory(["1:3:web", "0:2:gone"], [], None)
    with pytest.raises(
        UserError, match=r"^run: --cloud-provider aws: --nodes: no Auto Scaling group named gone"
    ):
        build(None, None, lambda: ClusterSnapshot())


# -- issue 24 item 7: a deletion counted once by the min-size check -------------------------------


@pytest.mark.parametrize(("min_size", "asked", "expected"), CASES)
@pytest.mark.parametrize("refresh_fails", [False, True])
def test_min_size_checks_count_each_deletion_once(aws, min_size, asked, expected, refresh_fails):
    """Terminated instances leave the group's target at once (ShouldDecrementDesiredCapacity); moto
    drops them from the group at once too, while AWS lists them Terminating for a while. When the
    refresh after our write fails, the cached state must show them Terminating, not InService."""
    aws.asg("web", min_size=min_size, max_size=5, desired=2)
    cloud = aws.provider(nodes=[ExplicitGroup(min_size, 5, "web")], clock=aws.clock, max_attempts=1)
    a, b = nodes_of(aws, "web")
    a = dataclasses.replace(a, taints=(DOOMED,))

    def refresh_failing():
        if refresh_fails:
            cloud.autoscaling.meta.events.register(
                "before-send.auto-scaling.DescribeAutoScalingGroups", Throttle(times=1000)
            )

    assert min_size_verdict(cloud, a, b, asked=asked, after_delete=refresh_failing) is expected
