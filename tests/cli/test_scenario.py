"""`kubetide scenario from-cluster`: the file it writes runs, and bad input is one line, exit 2."""

import io
import sys
from pathlib import Path

import pytest
import yaml

import kubetide.cli.main as cli_main
from kubetide.sim.spec.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "plan-cluster.yaml"
GROUPS = EXAMPLES / "plan-node-groups.yaml"


@pytest.fixture
def kubetide(capsys):
    def run(*argv):
        code = cli_main.main(["scenario", *map(str, argv)])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_from_cluster_writes_a_scenario_that_loads_with_the_groups_yaml_bounds(kubetide, tmp_path):
    out = tmp_path / "tonight.yaml"
    code, stdout, err = kubetide("from-cluster", CLUSTER, "--node-groups", GROUPS, "--out", out)
    assert code == 0, err
    assert stdout == ""
    scenario = load_scenario(out)
    assert scenario.name == "plan-cluster"
    groups = {g.name: g for g in scenario.groups}
    assert set(groups) == {"general", "highmem", "ingress", "batch"}
    assert (groups["general"].min_size, groups["general"].max_size, groups["general"].price) == (3, 20, 0.214)
    assert groups["general"].initial_size == 10 and groups["batch"].initial_size == 0
    # batch has no node in the dump: its template is the one GROUPS.yaml spells out.
    assert groups["batch"].template.labels["node.kubernetes.io/instance-type"] == "c6i.2xlarge"
    text = out.read_text()
    assert "# batch: 0 node(s) in the dump (defined in GROUPS.yaml)" in text
    assert "# template from GROUPS.yaml" in text


def test_without_out_it_prints_the_scenario_and_reads_stdin_for_dash(kubetide, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CLUSTER.read_bytes())))
    code, stdout, err = kubetide("from-cluster", "-", "--duration", "2h", "--name", "tonight")
    assert code == 0, err
    document = yaml.safe_load(stdout)
    assert document["kind"] == "Scenario" and document["metadata"]["name"] == "tonight"
    assert document["spec"]["duration"] == "2h"
    assert "from <stdin>" in stdout.splitlines()[0]


def test_an_existing_out_file_is_refused_and_left_alone(kubetide, tmp_path):
    out = tmp_path / "tonight.yaml"
    out.write_text("mine\n")
    code, _, err = kubetide("from-cluster", CLUSTER, "--out", out)
    assert code == 2
    assert err.count("\n") == 1 and "the file exists" in err
    assert out.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: p.write_text("apiVersion: v1\nkind: List\nitems: []\n"), "no Node in the dump"),
        (lambda p: p.write_text(""), "no YAML or JSON document"),
        (
            lambda p: p.write_text(
                "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', memory: 4Gi}}\n"
            ),
            "no node carries a node group label",
        ),
    ],
)
def test_a_dump_that_makes_no_scenario_is_one_line(kubetide, tmp_path, setup, message):
    dump = tmp_path / "dump.yaml"
    setup(dump)
    code, stdout, err = kubetide("from-cluster", dump)
    assert code == 2
    assert err.count("\n") == 1 and message in err, err
    assert stdout == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "give a cluster dump"),
        ((CLUSTER, "--kubeconfig", "kc"), "not both"),
        ((CLUSTER, "--duration", "soon"), "--duration"),
        ((CLUSTER, "--duration", "0s"), "must be positive"),
    ],
)
def test_bad_arguments_are_one_line(kubetide, argv, message):
    code, _, err = kubetide("from-cluster", *argv)
    assert code == 2
    assert err.count("\n") == 1 and message in err, err


def test_scenario_without_a_subcommand_shows_its_help(kubetide):
    code, _, err = kubetide()
    assert code == 2
    assert "from-cluster" in err
