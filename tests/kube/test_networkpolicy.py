"""deploy/'s NetworkPolicies (issue #26, item 4): each install admits, on its metrics port only,
pods labelled kubetide.io/metrics-scraper in namespaces labelled the same, and nothing else;
the API server accepts them. (Enforcement is the CNI's: the test control plane has none.)"""

from __future__ import annotations

import kubernetes
import pytest
from test_deploy_rbac import DEPLOY, one, render

from kubetide.kube.server import parse_address

SCRAPER = {"kubetide.io/metrics-scraper": "true"}
INSTALLS = [("overlays/kwok", "Deployment"), ("qos-agent", "DaemonSet")]


@pytest.mark.parametrize(("install", "workload_kind"), INSTALLS)
def test_only_labelled_prometheus_pods_reach_the_metrics_port(install, workload_kind):
    objects = render(DEPLOY / install)
    policy = one(objects, "NetworkPolicy")
    workload = one(objects, workload_kind)
    template = workload["spec"]["template"]
    spec = policy["spec"]
    # It selects the install's pods, and no other.
    assert spec["podSelector"]["matchLabels"] == workload["spec"]["selector"]["matchLabels"]
    assert spec["podSelector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    # Ingress only (egress to the API server stays open); one rule: both labels, the metrics port.
    assert spec["policyTypes"] == ["Ingress"]
    (rule,) = spec["ingress"]
    (peer,) = rule["from"]
    assert peer == {"namespaceSelector": {"matchLabels": SCRAPER}, "podSelector": {"matchLabels": SCRAPER}}
    (port,) = rule["ports"]
    assert port["protocol"] == "TCP"
    (container,) = template["spec"]["containers"]
    (named,) = [p for p in container["ports"] if p["name"] == port["port"]]
    address = next(a.split("=", 1)[1] for a in container["args"] if a.startswith("--address="))
    assert named["containerPort"] == parse_address(address)[1]  # the port the server listens on
    # The probes use that port too: the node's own traffic, which NetworkPolicy always admits.
    assert container["livenessProbe"]["httpGet"]["port"] in (port["port"], named["containerPort"])


@pytest.mark.parametrize(("install", "workload_kind"), INSTALLS)
def test_the_api_server_accepts_the_policies(kube, install, workload_kind):
    policy = one(render(DEPLOY / install), "NetworkPolicy")
    policy["metadata"]["namespace"] = kube.namespace
    api = kubernetes.client.NetworkingV1Api(kube.api_client)
    created = api.create_namespaced_network_policy(kube.namespace, policy, dry_run="All")
    assert created.spec.policy_types == ["Ingress"]
    assert created.spec.ingress[0]._from[0].namespace_selector.match_labels == SCRAPER
