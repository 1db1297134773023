"""What every user sees first: help, version, and one-line errors with exit code 2."""

import subprocess
import sys

import pytest

from kubetide.cli.main import main


def test_no_command_prints_help(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("kubetide ")


@pytest.mark.parametrize(
    "argv", [["--no-such-flag"], ["no-such-command"], ["schedule"], ["schedule", "x.yaml", "--frobnicate"]]
)
def test_usage_errors_are_one_line_and_exit_2(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse exits; unknown flags after a command are returned
        code = exit_.code
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("kubetide: error: ")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # the error, then where to find help


def test_python_dash_m_kubetide_is_the_command():
    out = subprocess.run(
        [sys.executable, "-m", "kubetide", "simulte"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 2
    assert out.stderr == "kubetide: error: unknown command 'simulte'; did you mean 'simulate'?\n"
