"""Issue 17 item 5: flags Cluster Autoscaler users rely on, spelled and defaulted as CA does."""

import pytest

from kubetide.autoscaler.options import AutoscalerOptions, parse_options
from kubetide.errors import ManifestError


def test_blocking_system_pod_timeout_keeps_cas_spelling_and_one_hour_default():
    assert AutoscalerOptions().blocking_system_pod_distruption_timeout == 3600
    options = parse_options({"blocking-system-pod-distruption-timeout": "30m"}, "s.yaml")
    assert options.blocking_system_pod_distruption_timeout == 1800


@pytest.mark.parametrize(
    ("flags", "parallelism", "warned"),
    [
        # (flags given, max-scale-down-parallelism that results, a deprecation warning is given)
        ({"max-empty-bulk-delete": "3"}, 3, True),
        ({"max-scale-down-parallelism": "7"}, 7, False),
        # Both given: CA keeps max-scale-down-parallelism and the alias changes nothing.
        ({"max-empty-bulk-delete": "3", "max-scale-down-parallelism": "7"}, 7, True),
        ({"max-scale-down-parallelism": "7", "--max-empty-bulk-delete": "3"}, 7, True),
        ({}, 10, False),
    ],
)
def test_max_empty_bulk_delete_is_a_deprecated_alias_of_max_scale_down_parallelism(
    flags, parallelism, warned
):
    warnings: list[str] = []
    options = parse_options(flags, "s.yaml", warnings=warnings)
    assert options.max_scale_down_parallelism == parallelism
    if warned:
        assert len(warnings) == 1
        assert "max-empty-bulk-delete" in warnings[0] and "deprecated" in warnings[0]
        assert "max-scale-down-parallelism" in warnings[0]
    else:
        assert warnings == []


def test_a_bad_alias_value_names_the_alias():
    with pytest.raises(ManifestError) as error:
        parse_options({"max-empty-bulk-delete": "many"}, "s.yaml")
    assert error.value.field == "spec.autoscaler.max-empty-bulk-delete"


def test_the_alias_is_not_an_option_of_its_own():
    assert not hasattr(AutoscalerOptions(), "max_empty_bulk_delete")


@pytest.mark.parametrize(
    ("chain", "parsed"),
    [
        ("grpc", ("grpc",)),
        ("priority,grpc", ("priority", "grpc")),
        (" grpc , least-waste", ("grpc", "least-waste")),
    ],
)
def test_grpc_expander_chains_like_the_others(chain, parsed):
    assert parse_options({"expander": chain}, "s.yaml").expander == parsed


def test_every_accepted_expander_has_an_implementation():
    from kubetide.autoscaler import options
    from kubetide.autoscaler.scaleup import expanders

    assert set(options.EXPANDERS) == set(expanders.EXPANDERS)


EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples"


def plan(capsys, *flags):
    import kubetide.cli.main as cli_main

    args = [
        "plan",
        str(EXAMPLES / "plan-cluster.yaml"),
        "--node-groups",
        str(EXAMPLES / "plan-node-groups.yaml"),
    ]
    code = cli_main.main([*args, *flags, "--json"])
    return code, capsys.readouterr().err


def test_plan_shows_the_deprecation_as_a_warning(capsys):
    code, err = plan(capsys, "--set", "max-empty-bulk-delete=3")
    assert code == 0
    assert "kubetide: warning: --set max-empty-bulk-delete: deprecated, use max-scale-down-parallelism" in err


def test_plan_refuses_the_grpc_expander_without_its_service_in_one_line(capsys):
    code, err = plan(capsys, "--set", "expander=grpc")
    assert code == 2
    assert err.count("\n") == 1 and "--grpc-expander-url" in err


def test_a_scenario_carries_the_deprecation_warning(tmp_path):
    from kubetide.sim.spec.scenario import load_scenario

    text = (EXAMPLES / "unready" / "uc6-node-dies.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(
        text.replace("    scan-interval: 10s\n", "    scan-interval: 10s\n    max-empty-bulk-delete: 4\n")
    )
    scenario = load_scenario(path)
    assert scenario.options.max_scale_down_parallelism == 4
    assert any("spec.autoscaler.max-empty-bulk-delete: deprecated" in w for w in scenario.warnings)
