"""The AWS provider's flags and providerIDs: pure parsing, no AWS."""

import pytest

from kubetide.cloud.aws.flags import (
    ExplicitGroup,
    parse_aws_flags,
    parse_discovery_flag,
    parse_nodes_flag,
)
from kubetide.cloud.aws.provider_id import instance_id_of, is_placeholder, placeholder_id, provider_id
from kubetide.errors import UserError


@pytest.mark.parametrize(
    ("text", "instance"),
    [
        ("aws:///us-east-1a/i-0123456789abcdef0", "i-0123456789abcdef0"),
        ("aws:///eu-west-1c/i-0a", "i-0a"),
        ("aws:////i-0a", "i-0a"),  # an empty zone is tolerated, as CA does
        ("aws:///us-west-2-lax-1a/i-0a", "i-0a"),  # local zones have dashes
        ("aws:///us-east-1a/i-placeholder-web-3", "i-placeholder-web-3"),
        ("aws://us-east-1a/i-0a", None),  # two slashes: a host, not the AWS form
        ("aws:///us-east-1a/", None),
        ("aws:///us-east-1a/i-0a/extra", None),
        ("aws:///US-EAST-1A/i-0A", None),
        ("kwok://node-1", None),
        ("gce://project/zone/name", None),
        ("", None),
    ],
)
def test_provider_id_parsing(text, instance):
    assert instance_id_of(text) == instance


def test_provider_id_round_trip_and_placeholders():
    pid = provider_id("us-east-1a", placeholder_id("web", 2))
    assert pid == "aws:///us-east-1a/i-placeholder-web-2"
    assert is_placeholder(instance_id_of(pid))
    assert not is_placeholder("i-0123")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:10:web", ExplicitGroup(1, 10, "web")),
        ("0:0:web", ExplicitGroup(0, 0, "web")),
        ("2:5:name:with:colons", ExplicitGroup(2, 5, "name:with:colons")),
    ],
)
def test_nodes_flag(text, expected):
    assert parse_nodes_flag(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1:x:web", "MAX must be a whole number >= 0, got 'x'"),
        ("-1:3:web", "MIN must be a whole number >= 0, got '-1'"),
        ("5:3:web", "MAX (3) is less than MIN (5)"),
        ("1:3:", "the ASG name is empty"),
        ("web", "expected MIN:MAX:ASG_NAME"),
        ("1:3", "expected MIN:MAX:ASG_NAME"),
    ],
)
def test_bad_nodes_flag_is_one_line(text, message):
    with pytest.raises(UserError) as info:
        parse_nodes_flag(text)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).startswith(f"run: --nodes={text}: ")


def test_discovery_flag():
    spec = parse_discovery_flag(
        "asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/prod,team=ml"
    )
    assert spec.tags == {
        "k8s.io/cluster-autoscaler/enabled": "",
        "k8s.io/cluster-autoscaler/prod": "",
        "team": "ml",
    }


@pytest.mark.parametrize(
    "text", ["mig:namePrefix=x", "asg:name=x", "asg:tag=", "asg:tag=a,,b", "asg", "tag=k8s.io/x"]
)
def test_bad_discovery_flag(text):
    with pytest.raises(UserError, match=r"^run: --node-group-auto-discovery="):
        parse_discovery_flag(text)


def test_flags_need_a_group_source_and_unique_names():
    with pytest.raises(UserError, match="needs node groups"):
        parse_aws_flags([], [])
    with pytest.raises(UserError, match="'web' is named twice"):
        parse_aws_flags(["1:3:web", "0:2:web"], [])
    explicit, specs = parse_aws_flags(["1:3:web"], ["asg:tag=a"])
    assert explicit == [ExplicitGroup(1, 3, "web")] and specs[0].tags == {"a": ""}
