"""The bundled price table: a dated guess per common instance type, by the nodes' label."""

from kubetide.cloud.prices import bundled_table, guess_group_price
from kubetide.model import load_documents


def _nodes(*types: str):
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"n{i}", "labels": {"node.kubernetes.io/instance-type": t}},
            "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
        }
        for i, t in enumerate(types)
    ]
    return load_documents(docs, "dump.yaml").nodes


def test_the_table_is_dated_and_covers_the_three_clouds():
    table = bundled_table()
    assert len(table.date) == 7 and table.date[4] == "-"  # YYYY-MM
    providers = {provider for provider, _ in table.prices.values()}
    assert providers == {"aws", "gcp", "azure"}
    assert all(price > 0 for _, price in table.prices.values())


def test_a_group_is_priced_by_its_most_common_instance_type():
    guess = guess_group_price(_nodes("m6i.xlarge", "m6i.xlarge", "m5.large"))
    assert guess is not None
    assert (guess.instance_type, guess.provider, guess.region, guess.price) == (
        "m6i.xlarge",
        "aws",
        "us-east-1",
        0.192,
    )
    assert guess.describe().startswith(
        "m6i.xlarge's AWS us-east-1 on-demand list price (kubetide's table of "
    )
    gcp = guess_group_price(_nodes("e2-standard-4"))
    azure = guess_group_price(_nodes("Standard_D4s_v5"))
    assert gcp is not None and gcp.provider == "gcp" and gcp.region == "us-central1"
    assert azure is not None and azure.provider == "azure" and azure.region == "eastus"


def test_an_unknown_or_missing_instance_type_has_no_guess():
    assert guess_group_price(_nodes("x9z.huge")) is None
    assert guess_group_price([]) is None


def test_ca_status_bounds_match_our_group_or_its_eks_auto_scaling_group():
    import yaml

    from kubetide.cloud.observed import bounds_for, observed_bounds

    status = {"nodeGroups": [{"name": "eks-general-2ac6", "health": {"minSize": 2, "maxSize": 9}}]}
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
        "data": {"status": yaml.safe_dump(status)},
    }
    observed = observed_bounds([{"apiVersion": "v1", "kind": "List", "items": [configmap]}])
    assert observed == {"eks-general-2ac6": (2, 9)}
    assert bounds_for("general", observed) == ("eks-general-2ac6", (2, 9))
    assert bounds_for("gen", observed) is None
    old_format = {**configmap, "data": {"status": "Cluster-autoscaler status at 2024...\nNodeGroups:\n"}}
    assert observed_bounds([old_format]) == {}
