"""`schedule`, `downscale` and `qos` show what they are loading on a terminal, as `simulate` and
`sweep` do (cli/progress.py), take it off before the answer, and show nothing when piped or with
--json. The terminal runs are subprocesses whose stderr is a pseudo-terminal (test_interrupt.py's)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_interrupt import in_terminal  # a sibling module: pytest puts tests/cli on sys.path

from kubetide.cli import main as cli_main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# (argv, the stages the terminal shows, in order)
COMMANDS = [
    (
        ["schedule", str(EXAMPLES / "plan-cluster.yaml")],
        ["loading ", "plan-cluster.yaml", "placing 4 pending pods on 13 nodes"],
    ),
    (
        [
            "downscale",
            str(EXAMPLES / "downscale-pods.yaml"),
            "--owner",
            "ReplicaSet/web-7f9c8d6b5",
            "--replicas",
            "4",
            "--now",
            "2026-11-22T12:00:00Z",
        ],
        ["loading ", "downscale-pods.yaml", "ranking the pods of ReplicaSet/web-7f9c8d6b5"],
    ),
    (
        [
            "qos",
            str(EXAMPLES / "qos" / "node-state.yaml"),
            "--nodeqos",
            str(EXAMPLES / "qos" / "nodeqos.yaml"),
        ],
        ["loading ", "node-state.yaml", "one round of the QoS agent on worker-1"],
    ),
]


def _piped(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = cli_main.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("argv", "stages"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_a_terminal_sees_the_loading_then_the_same_answer_as_a_pipe(
    argv, stages, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "100")  # as in_terminal sets it
    code, stdout, terminal = in_terminal(argv, tmp_path, None)
    assert code == 0, terminal
    positions = [terminal.find(stage) for stage in stages]
    assert -1 not in positions and positions == sorted(positions), terminal
    assert terminal.rstrip().endswith("\x1b[2K")  # the spinner's line is erased before the answer

    piped_code, piped_out, piped_err = _piped(capsys, argv)
    assert piped_code == 0
    assert "loading" not in piped_err and "\x1b[" not in piped_err  # nothing drawn into a pipe
    assert piped_out == stdout  # the answer itself is the same: the spinner is on stderr only


@pytest.mark.parametrize(("argv", "stages"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_json_shows_no_spinner_even_on_a_terminal(argv, stages, tmp_path):
    code, stdout, terminal = in_terminal([*argv, "--json"], tmp_path, None)
    assert code == 0, terminal
    assert stages[0] not in terminal and "\x1b[" not in terminal
    assert stdout.lstrip().startswith("{")
