"""`kubetide scenario from-cluster`: the file it writes runs, and bad input is one line, exit 2."""

import io
import sys
from pathlib import Path

import pytest
import yaml
from cli_subcommand import subcommand

import kubetide.cli.main as cli_main
from kubetide.sim.spec.scenario import load_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLUSTER = EXAMPLES / "plan-cluster.yaml"
GROUPS = EXAMPLES / "plan-node-groups.yaml"


@pytest.fixture
def kubetide(monkeypatch, capsys):
    return subcommand("scenario", monkeypatch, capsys)


def test_from_cluster_writes_a_scenario_that_loads_with_the_groups_yaml_bounds(kubetide, tmp_path):
    out = tmp_path / "tonight.yaml"
    code, stdout, err = kubetide("from-cluster", CLUSTER, "--node-groups", GROUPS, "--out", out)
    assert code == 0, err
    assert stdout.startswith(f"wrote {out}: ")
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


def test_without_groups_yaml_prices_are_guessed_from_instance_types_and_said_to_be_guesses(
    kubetide, tmp_path
):
    out = tmp_path / "tonight.yaml"
    code, stdout, err = kubetide("from-cluster", CLUSTER, "--out", out)
    assert code == 0, err
    groups = {g.name: g for g in load_scenario(out).groups}
    # m6i.xlarge, r6i.2xlarge and c6i.large: the bundled table's AWS us-east-1 prices.
    assert {name: g.price for name, g in groups.items()} == {
        "general": 0.192,
        "highmem": 0.504,
        "ingress": 0.085,
    }
    assert {name: g.min_size for name, g in groups.items()} == {"general": 0, "highmem": 0, "ingress": 0}
    text = out.read_text()
    assert (
        "# price 0.192: a guess, m6i.xlarge's AWS us-east-1 on-demand list price (kubetide's table of" in text
    )
    lines = stdout.splitlines()
    assert lines[0] == f"wrote {out}: {CLUSTER} as it is at 2026-03-10T14:00:00Z"
    assert lines[1] == "13 nodes, 49 pods (4 pending), 14 workloads, 2 PodDisruptionBudgets"
    assert lines[2].split() == ["node", "group", "nodes", "min-max", "price/h", "from"]
    assert lines[5].split() == [
        "general",
        "10",
        "0-100",
        "$0.192",
        "bounds:",
        "plan;",
        "price:",
        "a",
        "guess",
        "from",
        "m6i.xlarge",
    ]
    assert "not in any node group (kept, never autoscaled): legacy-worker-1" in lines
    assert lines[-1] == f"next: kubetide simulate {out}"
    assert len(lines) <= 24  # one screen


def test_bounds_come_from_the_cluster_autoscalers_status_configmap_in_the_dump(kubetide, tmp_path):
    status = {
        "nodeGroups": [
            {
                "name": "eks-general-2ac6b3f0-91d4",
                "health": {"status": "Healthy", "minSize": 4, "maxSize": 30},
            },
            {"name": "highmem", "health": {"status": "Healthy", "minSize": 1, "maxSize": 3}},
        ]
    }
    configmap = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"},
        "data": {"status": yaml.safe_dump(status)},
    }
    dump = tmp_path / "dump.yaml"
    dump.write_text(CLUSTER.read_text() + "\n---\n" + yaml.safe_dump(configmap))
    out = tmp_path / "tonight.yaml"
    code, stdout, err = kubetide("from-cluster", dump, "--out", out)
    assert code == 0, err
    groups = {g.name: g for g in load_scenario(out).groups}
    bounds = {name: (g.min_size, g.max_size) for name, g in groups.items()}
    assert bounds == {"general": (4, 30), "highmem": (1, 3), "ingress": (0, 10)}
    assert "# minSize 4 and maxSize 30: the Cluster Autoscaler's status ConfigMap in the dump (its group" in (
        out.read_text()
    )
    assert "bounds: CA's status" in stdout


def test_force_replaces_the_out_file_so_the_command_runs_twice(kubetide, tmp_path):
    out = tmp_path / "tonight.yaml"
    for _ in range(2):
        code, _, err = kubetide("from-cluster", CLUSTER, "--node-groups", GROUPS, "--out", out, "--force")
        assert code == 0, err
    assert load_scenario(out).name == "plan-cluster"
    code, _, err = kubetide("from-cluster", CLUSTER, "--force")
    assert (code, err) == (2, "kubetide: error: --force: only with --out FILE (it replaces that file)\n")


def test_an_existing_out_file_is_refused_and_left_alone(kubetide, tmp_path):
    out = tmp_path / "tonight.yaml"
    out.write_text("mine\n")
    code, _, err = kubetide("from-cluster", CLUSTER, "--out", out)
    assert code == 2
    assert err == f"kubetide: error: --out {out}: the file exists (--force replaces it)\n"
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


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ("missing/tonight.yaml", "no such directory"),
        ("a-file/tonight.yaml", "is not a directory"),
    ],
)
def test_an_out_that_cannot_be_written_is_refused_before_the_dump_is_read(kubetide, tmp_path, out, message):
    (tmp_path / "a-file").write_text("")
    # The dump does not exist: the --out error coming first shows nothing was read.
    code, _, err = kubetide("from-cluster", tmp_path / "no-dump.yaml", "--out", tmp_path / out)
    assert code == 2
    assert err.count("\n") == 1 and message in err and "--out" in err, err
    assert not (tmp_path / "missing").exists()


SECRET_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "api-0", "namespace": "default", "labels": {"app": "api"}},
    "spec": {
        "nodeName": "n1",
        "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "echo s3cr3t-init"]}],
        "containers": [
            {
                "name": "api",
                "image": "api:1",
                "command": ["/api", "--password=s3cr3t-cmd"],
                "args": ["--token", "s3cr3t-arg"],
                "env": [
                    {"name": "DB_PASSWORD", "value": "s3cr3t-env"},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}},
                ],
                "resources": {"requests": {"cpu": "100m"}},
            }
        ],
    },
    "status": {"phase": "Running"},
}
SECRET_DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "containers": [
                    {
                        "name": "web",
                        "image": "web:1",
                        "args": ["s3cr3t-template"],
                        "env": [{"name": "K", "value": "s3cr3t-tpl-env"}],
                    }
                ]
            },
        },
    },
}


def secret_dump(tmp_path) -> Path:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubetide.io/node-group": "small"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    dump = tmp_path / "dump.yaml"
    dump.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node, SECRET_POD, SECRET_DEPLOYMENT]})
    )
    return dump


def test_env_command_and_args_are_dropped_by_default(kubetide, tmp_path):
    out = tmp_path / "shared.yaml"
    code, _, err = kubetide("from-cluster", secret_dump(tmp_path), "--out", out)
    assert code == 0, err
    text = out.read_text()
    assert "s3cr3t" not in text and "secretKeyRef" not in text and "DB_PASSWORD" not in text
    objects = {o["metadata"]["name"]: o for o in yaml.safe_load(text)["spec"]["objects"]}
    # What the simulator reads of a container: its name and resources.
    assert objects["api-0"]["spec"]["containers"] == [
        {"name": "api", "resources": {"requests": {"cpu": "100m"}}}
    ]
    assert objects["api-0"]["spec"]["initContainers"] == [{"name": "init"}]
    assert objects["web"]["spec"]["template"]["spec"]["containers"] == [{"name": "web"}]
    assert load_scenario(out).objects  # what is written still runs


def test_keep_env_keeps_env_names_and_values_and_nothing_else(kubetide, tmp_path):
    out = tmp_path / "private.yaml"
    code, _, err = kubetide("from-cluster", secret_dump(tmp_path), "--out", out, "--keep-env")
    assert code == 0, err
    text = out.read_text()
    for secret in ("s3cr3t-env", "s3cr3t-tpl-env", "DB_PASSWORD", "secretKeyRef"):
        assert secret in text
    for dropped in ("s3cr3t-init", "s3cr3t-cmd", "s3cr3t-arg", "s3cr3t-template", "image"):
        assert dropped not in text
    objects = {o["metadata"]["name"]: o for o in yaml.safe_load(text)["spec"]["objects"]}
    assert objects["api-0"]["spec"]["containers"][0]["env"] == SECRET_POD["spec"]["containers"][0]["env"]
    load_scenario(out)


def test_a_dump_with_aliases_exports_a_scenario_without_any(kubetide, tmp_path):
    # JSON-style flow mappings may put an alias right after the ':' of a quoted key; the loader
    # shares the aliased node, and the export writes each use out in full.
    dump = tmp_path / "aliased.yaml"
    dump.write_text(
        '{"apiVersion": "v1", "kind": "List", "items": [\n'
        '  {"kind": "Node", "metadata": {"name": "n1", "labels": &labels {"kubetide.io/node-group": "small"}},\n'
        '   "status": {"allocatable": &room {"cpu": "4", "memory": "8Gi", "pods": "110"}}},\n'
        '  {"kind": "Node", "metadata": {"name": "n2", "labels":*labels}, "status": {"allocatable":*room}}]}\n'
    )
    out = tmp_path / "aliased-scenario.yaml"
    code, _, err = kubetide("from-cluster", dump, "--out", out)
    assert code == 0, err
    text = out.read_text()
    assert "*" not in text.replace("# ", "") and "&" not in text
    assert {o["metadata"]["name"] for o in yaml.safe_load(text)["spec"]["objects"]} == {"n1", "n2"}
    load_scenario(out)


def test_a_cluster_over_the_simulators_limits_is_exported_with_a_word_on_limit(kubetide, tmp_path):
    """The export is the cluster as it is; simulate's limits are simulate's to lift (--limit)."""
    dump = tmp_path / "dump.yaml"
    big = {**SECRET_DEPLOYMENT, "spec": {**SECRET_DEPLOYMENT["spec"], "replicas": 60_000}}
    node = yaml.safe_load(secret_dump(tmp_path).read_text())["items"][0]
    dump.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [node, big]}))
    out = tmp_path / "big.yaml"
    code, _, err = kubetide("from-cluster", dump, "--out", out)
    assert code == 0, err
    assert "simulate refuses it as it is" in err and "--limit replicas=N" in err, err
    code = cli_main.main(
        ["simulate", str(out), "--duration", "1m", "--no-report", "--out", str(tmp_path / "o")]
    )
    assert code == 2
