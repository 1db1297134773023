"""Issue 39 item 4: `kubetide run` reads CA's command line as CA does, booleans and all.

CA's flags are pflag's (with Go's flag package merged in): a boolean alone means true, its value
is joined (`--flag=false`) and spelled as Go's strconv.ParseBool spells it, and `--flag false` is
the flag (true) followed by a stray argument. Every boolean of CA's list (the reference TSV) and
of the flags other packages register in CA's binary is checked in every spelling. A command line
with several mistakes is refused in one line naming each of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubetide.autoscaler.ca_flags import CA_FLAGS, CA_VERSION, Treatment
from kubetide.autoscaler.options import FLAGS, treatment_of
from kubetide.cli.main import main
from kubetide.cli.run import RUN_BOOLEANS, parse_autoscaler_flags
from kubetide.errors import UserError

TSV = Path(__file__).parents[1] / "autoscaler" / "data" / f"ca-flags-{CA_VERSION}.tsv"


def _booleans() -> list[str]:
    rows = [line.split("\t") for line in TSV.read_text().splitlines()[2:] if line.strip()]
    listed = {name for name, kind, *_ in rows if kind == "bool"}
    # klog's, leader election's: registered outside flags.go, so not in the list
    registered_elsewhere = {name for name, flag in CA_FLAGS.items() if flag.kind == "bool"}
    return sorted(listed | registered_elsewhere)


BOOLEANS = _booleans()
GO_TRUE = ["1", "t", "T", "TRUE", "true", "True"]
GO_FALSE = ["0", "f", "F", "FALSE", "false", "False"]
NOT_GO_BOOLEANS = ["yes", "no", "on", "tRUE", "", "2"]


def test_the_table_covers_cas_booleans():
    assert len(BOOLEANS) > 45
    assert {"leader-elect", "write-status-configmap", "balance-similar-node-groups"} <= set(BOOLEANS)


def _read(argv: list[str]):
    """What `kubetide run` makes of `argv`: its options and its own booleans."""
    booleans: dict[str, bool] = {}
    options = parse_autoscaler_flags(argv, booleans)
    return options, booleans


def _value(name: str, options, booleans):
    if name in RUN_BOOLEANS:
        return booleans[name]
    if name in FLAGS:
        return getattr(options, FLAGS[name].name)
    return None  # neither kept nor acted on: accepted is all there is to see


@pytest.mark.parametrize("name", BOOLEANS)
def test_every_boolean_reads_as_go_reads_it(name):
    refused = treatment_of(name) is Treatment.REFUSED
    spellings = [([f"--{name}"], True)]
    spellings += [([f"--{name}={text}"], True) for text in GO_TRUE]
    spellings += [([f"--{name}={text}"], False) for text in GO_FALSE]
    for argv, meant in spellings:
        if refused and meant:
            # a feature kubetide does not have, asked for: refused, named
            with pytest.raises(UserError, match=f"^run: --{name}: refused"):
                _read(argv)
            continue
        options, booleans = _read(argv)
        value = _value(name, options, booleans)
        assert value is None or value is meant, (argv, value)
    for text in NOT_GO_BOOLEANS:
        with pytest.raises(UserError, match=f"^run: --{name}: expected true or false, got '{text}'"):
            _read([f"--{name}={text}"])
    # Go: `--flag false` is the flag, true, then a stray argument
    with pytest.raises(
        UserError, match=f"got 'false' \\(a boolean takes its value joined: --{name}=false\\)"
    ):
        _read([f"--{name}", "false"])


def test_a_boolean_alone_does_not_take_the_next_flag_as_its_value():
    options, booleans = _read(["--leader-elect", "--scale-down-enabled", "--write-status-configmap=false"])
    assert booleans == {"leader-elect": True, "write-status-configmap": False}
    assert options.scale_down_enabled is True


def test_runs_booleans_keep_cas_defaults_when_not_given():
    assert _read([])[1] == RUN_BOOLEANS


@pytest.fixture
def files(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]\n'
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    groups = tmp_path / "groups.yaml"
    groups.write_text(
        "nodeGroups:\n- name: small\n  maxSize: 3\n  template: {status: {allocatable: {cpu: '2'}}}\n"
    )
    return ["run", f"--kubeconfig={kubeconfig}", "--cloud-provider=kwok", f"--node-groups={groups}"]


@pytest.mark.parametrize(
    "flags",
    [
        ["--leader-elect", "--write-status-configmap"],
        ["--leader-elect=false", "--write-status-configmap=F"],
        ["--write-status-configmap", "--leader-elect", "--leader-elect-lease-duration=20s"],
    ],
)
def test_cas_bare_booleans_get_as_far_as_the_api_server(files, capsys, flags):
    assert main([*files, *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubetide: error: ") and "cannot reach the API server" in err, err


def test_every_refused_flag_is_named_in_one_line(files, capsys):
    flags = [
        "--leader-elect=yes",
        "--enable-provisioning-requests",
        "--scale-down-unneded-time=1m",
        "--scan-interval=soon",
        "--balance-similar-node-groups",  # good, between the bad ones
        "--write-status-configmap",
        "false",
        "--max-nodes-total",
    ]
    assert main([*files, *flags]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("kubetide: error: run: 6 flags refused: "), line
    for said in (
        "--leader-elect: expected true or false, got 'yes'",
        "--enable-provisioning-requests: refused",
        "--scale-down-unneded-time: unknown flag (did you mean scale-down-unneeded-time?)",
        "--scan-interval: invalid duration",
        "got 'false' (a boolean takes its value joined: --write-status-configmap=false)",
        "--max-nodes-total: --max-nodes-total needs a value",
    ):
        assert said in line, (said, line)
    assert "balance-similar-node-groups" not in line
