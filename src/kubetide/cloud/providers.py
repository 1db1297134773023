"""Cloud providers that `kubetide run` builds from flags, checked before any call to the cloud.

`aws_cloud_factory` validates the AWS provider's flags (and that boto3 is installed) at once and
returns the factory `run` calls once the Kubernetes side is ready: it reads AWS for the first
time there, and a --nodes group that does not exist is a one-line error.
`clusterapi_cloud_factory` likewise checks the clusterapi provider's flags; its factory starts
the Cluster API informers and fills their caches.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

from kubetide.autoscaler.ports import CloudProvider
from kubetide.errors import UserError
from kubetide.snapshot import ClusterSnapshot

CloudFactory = Callable[[Any, Any, Callable[[], ClusterSnapshot]], CloudProvider]


def aws_cloud_factory(
    nodes: Sequence[str], discovery: Sequence[str], node_groups: str | None
) -> CloudFactory:
    """Raises UserError for bad flags, without contacting AWS."""
    if node_groups:
        raise UserError(
            "run: --node-groups is the kwok provider's; --cloud-provider=aws takes "
            "--nodes=MIN:MAX:ASG_NAME or --node-group-auto-discovery=asg:tag=..."
        )
    if importlib.util.find_spec("boto3") is None:
        raise UserError("run: --cloud-provider=aws needs boto3: pip install 'kubetide[aws]'")
    from kubetide.cloud.aws import connect, parse_aws_flags

    explicit, specs = parse_aws_flags(nodes, discovery)

    def build(args: Any, client: Any, snapshot: Callable[[], ClusterSnapshot]) -> CloudProvider:
        return connect(explicit, specs, snapshot=snapshot)

    return build


def clusterapi_cloud_factory(
    discovery: Sequence[str], node_groups: str | None, sync_timeout: float
) -> CloudFactory:
    """Raises UserError for bad flags, without contacting the API server. The factory lists the
    Cluster API objects and waits for its caches before returning the provider."""
    if node_groups:
        raise UserError(
            "run: --node-groups is the kwok provider's; --cloud-provider=clusterapi finds node groups "
            "by their size annotations (narrowed by --node-group-auto-discovery=clusterapi:...)"
        )
    from kubetide.cloud.clusterapi import ClusterApiCloudProvider, parse_auto_discovery

    parse_auto_discovery(discovery)

    def build(args: Any, client: Any, snapshot: Callable[[], ClusterSnapshot]) -> CloudProvider:
        return ClusterApiCloudProvider.started(client, snapshot, discovery, sync_timeout)

    return build
