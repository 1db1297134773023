"""`--cloud-provider aws`: node groups are EC2 Auto Scaling groups, driven with boto3.

- ``flags``: --nodes and --node-group-auto-discovery, parsed without any AWS call;
- ``provider_id``: node <-> instance through `aws:///<zone>/<instance-id>`;
- ``groups``: the ASG cache (DescribeAutoScalingGroups once per refresh, failed launches);
- ``template``: template nodes for scale-up from zero (instance type + node-template tags), and
  every instance type a group launches, for its price;
- ``provider``: the NodeGroup and CloudProvider ports.

`connect` builds the provider from the usual AWS configuration (boto3's default chain: the
AWS_REGION / AWS_DEFAULT_REGION variables, profiles, instance metadata; AWS_ENDPOINT_URL too).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import boto3
from botocore.config import Config

from kubetide.cloud.aws.flags import ExplicitGroup, TagDiscovery, parse_aws_flags
from kubetide.cloud.aws.groups import DEFAULT_REFRESH_INTERVAL, AwsError
from kubetide.cloud.aws.provider import DEFAULT_MAX_ATTEMPTS, AwsCloudProvider, AwsNodeGroup
from kubetide.errors import UserError
from kubetide.snapshot import ClusterSnapshot

__all__ = ["AwsCloudProvider", "AwsNodeGroup", "connect", "parse_aws_flags"]


def connect(
    explicit: Sequence[ExplicitGroup],
    discovery: Sequence[TagDiscovery],
    *,
    snapshot: Callable[[], ClusterSnapshot] | None = None,
    session: boto3.session.Session | None = None,
    endpoint_url: str | None = None,
    refresh_interval: float = DEFAULT_REFRESH_INTERVAL,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    clock: Callable[[], float] | None = None,
) -> AwsCloudProvider:
    """The provider, after one read of AWS that finds every ASG --nodes names.

    Raises UserError (one line) when there is no region, AWS cannot be read, or a named ASG
    does not exist.
    """
    session = session or boto3.session.Session()
    # botocore itself reads AWS_DEFAULT_REGION and profiles; AWS_REGION is what the other SDKs
    # (and the Cluster Autoscaler) read.
    region = session.region_name or os.environ.get("AWS_REGION")
    if not region:
        raise UserError("run: --cloud-provider aws: no AWS region (set AWS_REGION or a profile's region)")
    # total_max_attempts counts the first attempt (botocore's "max_attempts" counts only retries).
    config = Config(retries={"mode": "standard", "total_max_attempts": max_attempts})
    autoscaling = session.client("autoscaling", region_name=region, config=config, endpoint_url=endpoint_url)
    ec2 = session.client("ec2", region_name=region, config=config, endpoint_url=endpoint_url)
    provider = AwsCloudProvider(
        autoscaling,
        ec2,
        region,
        explicit,
        discovery,
        snapshot=snapshot,
        refresh_interval=refresh_interval,
        clock=clock,
    )
    try:
        provider.check_explicit_groups()
    except AwsError as exc:
        raise UserError(f"run: --cloud-provider aws: {exc}") from None
    return provider
