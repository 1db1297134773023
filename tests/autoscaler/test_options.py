import pytest

from kubetide.autoscaler.options import FLAGS, AutoscalerOptions, ResourceRange, parse_options
from kubetide.errors import ManifestError


def test_defaults_are_cluster_autoscaler_defaults_except_drain_parallelism():
    o = AutoscalerOptions()
    assert o.scan_interval == 10
    assert o.scale_down_unneeded_time == 600
    assert o.scale_down_unready_time == 1200
    assert o.max_scale_down_parallelism == 10
    assert o.max_drain_parallelism == 10  # CA ships 1; the design doc intends parallel drains
    assert o.cores_total == ResourceRange(0, 320000)
    assert o.expander == ("least-waste",)
    assert o.max_total_unready_percentage == 45 and o.ok_total_unready_count == 3


@pytest.mark.parametrize(
    ("flags", "attribute", "expected"),
    [
        ({"scale-down-unneeded-time": "1h30m"}, "scale_down_unneeded_time", 5400),
        ({"--scan-interval": "30s"}, "scan_interval", 30),
        ({"max-drain-parallelism": "50"}, "max_drain_parallelism", 50),
        ({"balance-similar-node-groups": "true"}, "balance_similar_node_groups", True),
        ({"balance-similar-node-groups": True}, "balance_similar_node_groups", True),
        ({"scale-down-utilization-threshold": 0.7}, "scale_down_utilization_threshold", 0.7),
        ({"cores-total": "8:64"}, "cores_total", ResourceRange(8, 64)),
        ({"expander": "priority,least-waste"}, "expander", ("priority", "least-waste")),
        ({"expendable-pods-priority-cutoff": -100}, "expendable_pods_priority_cutoff", -100),
        ({"scale-down-delay-after-delete": 0}, "scale_down_delay_after_delete", 0),
    ],
)
def test_flags_parse_in_cluster_autoscaler_syntax(flags, attribute, expected):
    assert getattr(parse_options(flags, "s.yaml"), attribute) == expected


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            {"scale-down-unneeded-tme": "10m"},
            "s.yaml: spec.autoscaler.scale-down-unneeded-tme: unknown flag (did you mean scale-down-unneeded-time?)",
        ),
        (
            {"scale-down-unneeded-time": "10 minutes"},
            's.yaml: spec.autoscaler.scale-down-unneeded-time: invalid duration "10 minutes"',
        ),
        (
            {"max-drain-parallelism": "ten"},
            "s.yaml: spec.autoscaler.max-drain-parallelism: expected an integer, got 'ten'",
        ),
        ({"max-drain-parallelism": -1}, "must be non-negative"),
        ({"expander": "least-wast"}, 'unknown expander "least-wast" (did you mean least-waste?)'),
        ({"cores-total": "64"}, 'expected "min:max" integers'),
        ({"scale-down-utilization-threshold": 1.5}, "must be between 0 and 1"),
        ({"balance-similar-node-groups": "yes please"}, "expected true or false"),
    ],
)
def test_bad_flags_name_file_and_flag(flags, message):
    with pytest.raises(ManifestError) as err:
        parse_options(flags, "s.yaml")
    assert message in str(err.value)


def test_every_flag_parses_its_own_default_text():
    """Each flag accepts a value written the way CA's --help shows defaults."""
    samples = {
        "bool": "false",
        "int": "3",
        "float": "0.5",
        "ResourceRange": "0:10",
        "tuple[str, ...]": "example.com/key",
    }
    for name, field in FLAGS.items():
        if name == "expander":
            value = "random"
        elif field.type == "float" and not name.endswith(("threshold", "percentage", "ratio")):
            value = "10s"
        elif field.type == "str":  # names and choices: the default is one
            value = field.default
        else:
            value = samples[field.type]
        parse_options({name: value}, "s.yaml")


@pytest.mark.parametrize(
    ("flag", "value"),
    [("namespace", "Kube_System"), ("namespace", "a" * 64), ("status-config-map-name", "Bad Name")],
)
def test_the_status_configmap_location_is_checked_as_the_api_server_would(flag, value):
    with pytest.raises(ManifestError, match=f"{flag}: must be a DNS-1123"):
        parse_options({flag: value}, "s.yaml")


def test_the_status_configmap_location_is_an_option():
    options = parse_options({"namespace": "kubetide", "status-config-map-name": "ct.status"}, "s.yaml")
    assert (options.namespace, options.status_config_map_name) == ("kubetide", "ct.status")
