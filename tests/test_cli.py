"""What every user sees first: help, version, and one-line errors with exit code 2."""

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
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("kubetide: error: ")
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2  # the error, then where to find help
