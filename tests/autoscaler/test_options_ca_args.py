"""Issue 15 item 3: paste the Cluster Autoscaler's container `args:` into spec.autoscaler."""

import pytest

from kubetide.autoscaler.ca_flags import CA_FLAGS, Treatment
from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.errors import ManifestError

DEPLOYMENT_ARGS = [
    "./cluster-autoscaler",
    "--v=4",
    "--stderrthreshold=info",
    "--cloud-provider=aws",
    "--skip-nodes-with-local-storage=false",
    "--expander",
    "least-waste",
    "--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/tonight",
    "--balance-similar-node-groups",
    "--logtostderr",
    "--scale-down-unneeded-time=5m",
    "-scale-down-delay-after-add=2m",
    "--leader-elect=false",
    "--nodes=1:10:asg-general",
    "--nodes=0:3:asg-gpu",
]


def parse(flags, ignored=None):
    return parse_options(flags, "s.yaml", "spec.autoscaler", ignored=ignored)


def test_a_pasted_args_list_sets_the_flags_and_names_the_ignored_ones_once():
    ignored: list[str] = []
    options = parse(DEPLOYMENT_ARGS, ignored)
    assert options.skip_nodes_with_local_storage is False
    assert options.expander == ("least-waste",)
    assert options.balance_similar_node_groups is True  # a boolean alone means true
    assert options.scale_down_unneeded_time == 300
    assert options.scale_down_delay_after_add == 120  # Go's single-dash spelling
    assert ignored == [
        "v",
        "stderrthreshold",
        "cloud-provider",
        "node-group-auto-discovery",
        "logtostderr",
        "leader-elect",
        "nodes",
    ]


def test_the_list_and_the_map_give_the_same_options():
    as_list = [
        "--scale-down-utilization-threshold=0.6",
        "--max-node-provision-time",
        "10m",
        "--scan-interval=20s",
    ]
    as_map = {
        "scale-down-utilization-threshold": 0.6,
        "max-node-provision-time": "10m",
        "scan-interval": "20s",
    }
    assert parse(as_list) == parse(as_map) != AutoscalerOptions()


def test_a_later_repetition_wins_as_in_go():
    assert parse(["--scan-interval=20s", "--scan-interval=30s"]).scan_interval == 30


def test_deprecated_alias_in_a_list_still_warns():
    warnings: list[str] = []
    options = parse_options(["--max-empty-bulk-delete=4"], "s.yaml", "spec.autoscaler", warnings=warnings)
    assert options.max_scale_down_parallelism == 4
    assert warnings == [
        "spec.autoscaler.max-empty-bulk-delete: deprecated, use max-scale-down-parallelism (set to 4)"
    ]


@pytest.mark.parametrize(
    ("args", "field", "message"),
    [
        (
            # A flag is named by its name, not by an index counted from ./cluster-autoscaler.
            ["./cluster-autoscaler", "--v=4", "--scale-down-unneded-time=5m"],
            "spec.autoscaler.scale-down-unneded-time",
            "did you mean scale-down-unneeded-time?",
        ),
        (["--expander"], "spec.autoscaler.expander", "--expander needs a value"),
        (["scale-down-unneeded-time=5m"], "spec.autoscaler[0]", "expected a --flag=value string"),
        (["--v=4", 5], "spec.autoscaler[1]", "expected a --flag=value string, got 5"),
        (["--scan-interval=soon"], "spec.autoscaler.scan-interval", "soon"),
        (["--cloud-provider=aws", "./cluster-autoscaler"], "spec.autoscaler[1]", "expected a --flag=value"),
    ],
)
def test_bad_args_name_their_item(args, field, message):
    with pytest.raises(ManifestError) as error:
        parse(args, ignored=[])
    assert error.value.field == field
    assert message in error.value.message


def test_infrastructure_flags_are_ignored_with_a_warning_where_nobody_collects_them():
    # `plan --set`, `run` and sweeps do not pass `ignored`: the flag is still accepted, as in an
    # args list, and the warning says it changes nothing; a typo of one is still caught.
    warnings: list[str] = []
    options = parse_options({"cloud-provider": "aws", "v": "4"}, "--set", field="", warnings=warnings)
    assert options == AutoscalerOptions()
    assert [w.split(":")[0] for w in warnings] == ["cloud-provider", "v"]
    assert all("ignored, an infrastructure flag" in w for w in warnings)
    with pytest.raises(ManifestError) as error:
        parse_options({"cloud-providr": "aws"}, "--set", field="")
    assert error.value.message == "unknown flag (did you mean cloud-provider?)"


def test_no_infrastructure_flag_is_a_decision_flag():
    from kubetide.autoscaler.options import FLAGS

    infrastructure = {name for name, flag in CA_FLAGS.items() if flag.treatment is Treatment.INFRASTRUCTURE}
    assert infrastructure and not infrastructure & set(FLAGS)


def test_a_scenario_takes_the_args_list_and_warns_in_one_line(tmp_path):
    from kubetide.sim.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        """\
apiVersion: kubetide.io/v1alpha1
kind: Scenario
metadata: {name: args}
spec:
  duration: 10m
  autoscaler: ["--v=4", "--logtostderr", "--scale-down-unneeded-time=5m", "--expander", "least-waste",
               "--cloud-provider=aws", "--nodes=1:10:general", "--kubeconfig=/etc/kubeconfig"]
  nodeGroups:
  - name: general
    maxSize: 5
    template: {status: {allocatable: {cpu: "4", memory: 16Gi}}}
"""
    )
    scenario = load_scenario(path)
    assert scenario.options.scale_down_unneeded_time == 300
    assert scenario.warnings == [
        f"{path}: spec.autoscaler: infrastructure flags ignored in the simulator: "
        "v, logtostderr, cloud-provider, nodes, kubeconfig"
    ]
    path.write_text(path.read_text().replace("--expander", "--expandr"))
    with pytest.raises(ManifestError) as error:
        load_scenario(path)
    assert str(error.value) == f"{path}: spec.autoscaler.expandr: unknown flag (did you mean expander?)"


def test_a_scenario_autoscaler_that_is_neither_map_nor_list_is_one_clear_error(tmp_path):
    from kubetide.errors import UserError
    from kubetide.sim.spec.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: kubetide.io/v1alpha1\nkind: Scenario\nmetadata: {name: args}\nspec:\n"
        "  duration: 10m\n  autoscaler: --v=4\n  nodeGroups:\n  - name: general\n    maxSize: 5\n"
        "    template: {status: {allocatable: {cpu: '4', memory: 16Gi}}}\n"
    )
    with pytest.raises(UserError) as error:
        load_scenario(path)
    assert str(error.value) == (
        f"{path}: spec.autoscaler: expected a map of flags (scan-interval: 10s) or a list of args "
        "(- --scan-interval=10s)"
    )
