"""What every command does with its inputs: `-` is standard input, a file of the wrong kind or an
empty one is one line and exit code 2, an --out that cannot be written is one line too, and
`kubetide --version` loads none of the heavy libraries."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubetide.cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = EXAMPLES / "plan-cluster.yaml"
GROUPS = EXAMPLES / "plan-node-groups.yaml"
PODS = EXAMPLES / "downscale-pods.yaml"
NODE_STATE = EXAMPLES / "qos" / "node-state.yaml"
NODEQOS = EXAMPLES / "qos" / "nodeqos.yaml"
SCENARIO = ROOT / "tests" / "sweep" / "small.yaml"
DOWNSCALE = ["--owner", "ReplicaSet/web-7f9c8d6b5", "--replicas", "4", "--now", "2026-11-22T12:00:00Z"]


@pytest.fixture
def kubetide(monkeypatch, capsys):
    """Run the CLI in-process with `stdin` (bytes) as standard input: (exit code, stdout, stderr)."""

    def run(*argv, stdin: bytes = b""):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        code = cli_main.main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def one_error_line(code: int, err: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("kubetide: error: ")
    return err


# -- `-` is standard input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "piped"),
    [
        (["plan", "-", "--node-groups", GROUPS, "--json"], CLUSTER),
        (["plan", CLUSTER, "--node-groups", "-", "--json"], GROUPS),
        (["schedule", "-", "--json"], CLUSTER),
        (["downscale", "-", *DOWNSCALE, "--json"], PODS),
        (["qos", "-", "--nodeqos", NODEQOS, "--json"], NODE_STATE),
        (["qos", NODE_STATE, "--nodeqos", "-", "--json"], NODEQOS),
    ],
    ids=["plan", "plan --node-groups", "schedule", "downscale", "qos", "qos --nodeqos"],
)
def test_dash_reads_standard_input_as_the_file_would_be_read(kubetide, argv, piped):
    code, from_stdin, err = kubetide(*argv, stdin=piped.read_bytes())
    assert code == 0, err
    as_file = [piped if a == "-" else a for a in argv]
    code, from_file, _ = kubetide(*as_file)
    assert code == 0
    assert json.loads(from_stdin) == json.loads(from_file)


@pytest.mark.parametrize("command", ["simulate", "sweep"])
def test_a_scenario_can_be_piped_to_simulate_and_sweep(kubetide, tmp_path, command):
    extra = ["--seed-list", "1", "--workers", "1"] if command == "sweep" else ["--no-report"]
    argv = [command, "-", "--duration", "10m", "--json", *extra]
    code, out, err = kubetide(*argv, "--out", tmp_path / "stdin", stdin=SCENARIO.read_bytes())
    assert code == 0, err
    code, expected, _ = kubetide(*[SCENARIO if a == "-" else a for a in argv], "--out", tmp_path / "file")
    assert code == 0
    piped, from_file = json.loads(out), json.loads(expected)
    if command == "simulate":  # the same run (wall-clock timings aside)
        same = ("scenario", "seed", "nodes", "pods", "cost", "scale_up", "scale_down", "invariants")
        assert {k: piped[k] for k in same} == {k: from_file[k] for k in same}
    else:
        assert [s["metrics"] for s in piped["settings"]] == [s["metrics"] for s in from_file["settings"]]


def test_standard_input_cannot_be_given_twice(kubetide):
    code, _, err = kubetide("plan", "-", "--node-groups", "-", stdin=CLUSTER.read_bytes())
    assert "can be read only once" in one_error_line(code, err)


def test_empty_standard_input_is_named(kubetide):
    code, _, err = kubetide("schedule", "-", stdin=b"")
    assert "<stdin>: no YAML or JSON document" in one_error_line(code, err)


# -- a file of the wrong kind ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["plan", SCENARIO], "small.yaml: is a Scenario, not a cluster dump"),
        (["schedule", NODEQOS], "nodeqos.yaml: holds AvoidanceAction, NodeQOS objects, not a cluster dump"),
        (["schedule", SCENARIO], "run it with `kubetide simulate`"),
        (["schedule", CLUSTER, SCENARIO], "small.yaml: is a Scenario"),
        (["downscale", SCENARIO, "--replicas", "1"], "small.yaml: is a Scenario, not pods"),
        (["downscale", NODEQOS, "--replicas", "1"], "NodeQOS objects go to `kubetide qos --nodeqos`"),
        (["qos", SCENARIO], "small.yaml: is a Scenario, not a node-state file"),
        (["qos", NODE_STATE, "--nodeqos", CLUSTER], "plan-cluster.yaml: is a cluster dump (DaemonSet"),
        (["simulate", CLUSTER], "plan-cluster.yaml: is a cluster dump (DaemonSet, Job, Node, Pod"),
        (["simulate", NODEQOS], "nodeqos.yaml: holds AvoidanceAction, NodeQOS objects, not a Scenario"),
        (["sweep", CLUSTER], "plan-cluster.yaml: is a cluster dump"),
        (["plan", CLUSTER, "--node-groups", SCENARIO], "small.yaml: is a Scenario, not node groups"),
        (["plan", CLUSTER, "--node-groups", CLUSTER], "plan-cluster.yaml: is a cluster dump"),
    ],
    ids=lambda value: " ".join(Path(str(a)).name for a in value) if isinstance(value, list) else None,
)
def test_a_file_of_the_wrong_kind_is_one_line_naming_what_it_is(kubetide, argv, says):
    code, out, err = kubetide(*argv)
    assert says in one_error_line(code, err)
    assert out == ""


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "{empty}"],
        ["schedule", "{empty}"],
        ["downscale", "{empty}", "--replicas", "1"],
        ["qos", "{empty}"],
        ["qos", NODE_STATE, "--nodeqos", "{empty}"],
        ["simulate", "{empty}"],
        ["sweep", "{empty}"],
        ["plan", CLUSTER, "--node-groups", "{empty}"],
    ],
    ids=lambda argv: " ".join(Path(str(a)).name for a in argv),
)
def test_an_empty_file_is_one_line(kubetide, tmp_path, argv):
    empty = tmp_path / "empty.yaml"
    empty.write_text("\n# nothing here\n")
    code, _, err = kubetide(*[str(a).format(empty=empty) for a in argv])
    assert f"{empty}: no YAML or JSON document" in one_error_line(code, err)


@pytest.mark.parametrize("through", ["file", "stdin"])
@pytest.mark.parametrize(
    ("argv", "twice", "says"),
    [
        (["simulate", "{input}"], SCENARIO, "expected one YAML document with kind: Scenario"),
        (["plan", CLUSTER, "--node-groups", "{input}"], GROUPS, "expected one YAML document with nodeGroups"),
    ],
    ids=["simulate", "plan --node-groups"],
)
def test_two_documents_in_a_spec_file_are_one_line_from_a_file_or_stdin(
    kubetide, tmp_path, through, argv, twice, says
):
    text = twice.read_text()
    doubled = f"{text}\n---\n{text}".encode()
    path = tmp_path / "twice.yaml"
    path.write_bytes(doubled)
    source = str(path) if through == "file" else "<stdin>"
    target = str(path) if through == "file" else "-"
    code, _, err = kubetide(*[str(a).format(input=target) for a in argv], stdin=doubled)
    assert one_error_line(code, err) == f"kubetide: error: {source}: {says}\n"


def test_an_empty_list_is_an_empty_dump_not_a_wrong_kind(kubetide, tmp_path):
    """kubectl prints `kind: List` with no items for a namespace without pods: that is a dump."""
    empty = tmp_path / "no-pods.yaml"
    empty.write_text("apiVersion: v1\nkind: List\nitems: []\n")
    code, _, err = kubetide("schedule", CLUSTER, empty, "--json")
    assert code == 0, err
    code, _, err = kubetide("plan", empty)
    assert code == 0, err


# -- --out -------------------------------------------------------------------------------------------


def test_simulate_out_with_a_directory_where_a_file_goes_is_one_line(kubetide, tmp_path):
    (tmp_path / "summary.json").mkdir()
    code, _, err = kubetide("simulate", SCENARIO, "--duration", "5m", "--no-report", "--out", tmp_path)
    assert f"--out {tmp_path}: cannot write there: {tmp_path}/summary.json is a directory" in one_error_line(
        code, err
    )


def test_sweep_out_with_a_file_where_a_directory_goes_is_one_line(kubetide, tmp_path):
    (tmp_path / "runs").write_text("not a directory\n")
    code, _, err = kubetide(
        "sweep", SCENARIO, "--seed-list", "1", "--workers", "1", "--duration", "5m", "--out", tmp_path
    )
    assert f"{tmp_path}/runs exists and is not a directory" in one_error_line(code, err)


@pytest.mark.parametrize("command", ["simulate", "sweep"])
@pytest.mark.parametrize("out", ["{file}", "/dev/null/out"], ids=["an existing file", "under a device"])
def test_out_that_is_not_a_writable_directory_is_one_line(kubetide, tmp_path, command, out):
    existing = tmp_path / "taken.txt"
    existing.write_text("x\n")
    target = out.format(file=existing)
    code, _, err = kubetide(command, SCENARIO, "--duration", "5m", "--out", target)
    assert f"--out {target}: cannot write there" in one_error_line(code, err)
    assert existing.read_text() == "x\n"


# -- startup ------------------------------------------------------------------------------------------


def _python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return done.stdout


HEAVY = ("numpy", "pydantic", "plotly", "kubernetes", "rich", "yaml")


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_heavy_library(argv):
    loaded = _python(
        "import sys\n"
        "from kubetide.cli.main import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))\n"
    )
    assert loaded.splitlines()[-1] == "[]"


def test_the_help_lists_every_command_as_its_module_describes_it():
    """`kubetide --help` (no command module imported) reads exactly as with every module loaded."""
    assert set(cli_main.SUMMARIES) == set(cli_main.COMMANDS)
    assert cli_main.build_parser("").format_help() == cli_main.build_parser().format_help()


def test_loaded_manifests_are_frozen_out_of_the_collectors_passes_and_collection_goes_on():
    """A command's loaded objects live as long as it does: later cycle-collector passes skip them."""
    import gc

    from kubetide.cli.inputs import CLUSTER_KINDS, load_manifests

    gc.unfreeze()
    try:
        manifests = load_manifests(
            "plan", ([str(Path("examples/plan-cluster.yaml"))], CLUSTER_KINDS, "a dump")
        )
        assert manifests.pods
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()  # only the load itself runs without collector passes
    finally:
        gc.unfreeze()


@pytest.mark.parametrize("dump_format", ["json", "yaml"])
def test_a_list_dump_file_is_streamed_not_decoded_whole(tmp_path, monkeypatch, dump_format):
    """The commands read a kubectl List an item at a time (model/stream.py), so memory holds the
    objects kept rather than the whole document: the whole-file decoder is never called for it,
    and a List of the wrong kind is still the one-line error."""
    import yaml

    import kubetide.cli.inputs as inputs

    def whole_file(*_):
        raise AssertionError("the whole-file decoder was used for a List dump")

    dump = yaml.safe_load(Path("examples/plan-cluster.yaml").read_text())
    path = tmp_path / f"cluster.{dump_format}"
    # Through JSON first: no shared objects, so PyYAML writes no anchors (kubectl writes none).
    text = json.dumps(dump)
    path.write_text(text if dump_format == "json" else yaml.safe_dump(json.loads(text)))
    monkeypatch.setattr(inputs, "parse_text", whole_file)
    streamed = inputs.load_manifests("plan", ([str(path)], inputs.CLUSTER_KINDS, "a cluster dump"))
    monkeypatch.undo()
    expected = inputs.load_documents([dump], str(path))
    assert [p.key for p in streamed.pods] == [p.key for p in expected.pods]
    assert [n.name for n in streamed.nodes] == [n.name for n in expected.nodes]

    nodeqos = tmp_path / "nodeqos.json"
    nodeqos.write_text(
        json.dumps(
            {
                "kind": "List",
                "items": [
                    {
                        "apiVersion": "ensurance.crane.io/v1alpha1",
                        "kind": "NodeQOS",
                        "metadata": {"name": "a"},
                        "spec": {},
                    }
                ],
            }
        )
    )
    with pytest.raises(inputs.UserError, match=r"nodeqos.json: .*NodeQOS.*, not a cluster dump"):
        inputs.load_manifests("plan", ([str(nodeqos)], inputs.CLUSTER_KINDS, "a cluster dump"))


# -- a size cap on every read ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "/dev/zero"], "/dev/zero: not a text file (a NUL byte at byte 0)"),
        (["schedule", "/dev/urandom"], "/dev/urandom: not"),
        (["downscale", "/dev/zero", *DOWNSCALE], "/dev/zero: not a text file"),
        (["qos", "/dev/zero"], "/dev/zero: not a text file"),
        (["simulate", "/dev/zero"], "/dev/zero: not a text file"),
        (["plan", CLUSTER, "--node-groups", "/dev/urandom"], "/dev/urandom: not"),
    ],
)
def test_devices_that_never_end_are_one_line_at_once(kubetide, argv, message):
    code, _, err = kubetide(*argv)
    assert message in one_error_line(code, err)


def test_standard_input_that_is_not_text_is_one_line(kubetide):
    code, _, err = kubetide("plan", "-", stdin=b"kind: List\n\0\0\0")
    assert "<stdin>: not a text file (a NUL byte at byte 11)" in one_error_line(code, err)
    code, _, err = kubetide("plan", "-", stdin=b"kind: \xff")
    assert "<stdin>: not UTF-8 text (byte 6)" in one_error_line(code, err)


@pytest.mark.parametrize("through", ["file", "pipe", "stdin"])
def test_an_input_over_the_cap_is_one_line_naming_the_cap(kubetide, monkeypatch, tmp_path, through):
    monkeypatch.setenv("KUBETIDE_MAX_INPUT_BYTES", "1000")
    text = CLUSTER.read_bytes()
    assert len(text) > 1000
    if through == "file":
        code, _, err = kubetide("plan", CLUSTER)
    elif through == "stdin":
        code, _, err = kubetide("plan", "-", stdin=text)
    else:
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        writer = subprocess.Popen(["sh", "-c", f"cat {CLUSTER} > {fifo}"])
        code, _, err = kubetide("plan", fifo)
        writer.kill()
        writer.wait()
    assert "larger than 1,000 bytes, the input size limit (set KUBETIDE_MAX_INPUT_BYTES" in one_error_line(
        code, err
    )


def test_under_the_cap_a_pipe_reads_as_a_file_does(kubetide, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {CLUSTER} > {fifo}"])
    piped = kubetide("plan", fifo, "--node-groups", GROUPS, "--json")
    writer.wait()
    direct = kubetide("plan", CLUSTER, "--node-groups", GROUPS, "--json")
    assert piped[0] == direct[0] == 0
    assert piped[1] == direct[1]


@pytest.mark.parametrize("value", ["lots", "0", "-5", "99999999999999999999"])
def test_a_bad_cap_is_one_line_naming_the_variable(kubetide, monkeypatch, value):
    monkeypatch.setenv("KUBETIDE_MAX_INPUT_BYTES", value)
    code, _, err = kubetide("plan", CLUSTER)
    assert "KUBETIDE_MAX_INPUT_BYTES=" in one_error_line(code, err)


def test_a_trace_file_is_capped_too(kubetide, tmp_path):
    scenario = ROOT / "examples" / "morning-burst.yaml"
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "frontend-morning.csv").symlink_to("/dev/zero")
    (tmp_path / "s.yaml").write_text(scenario.read_text())
    code, _, err = kubetide("simulate", tmp_path / "s.yaml")
    assert "frontend-morning.csv" in one_error_line(code, err) and "not a text file" in err
