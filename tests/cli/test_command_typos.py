"""Issue 27: a mistyped command names the command it meant, in one line, exit code 2."""

import pytest

from kubetide.cli.main import COMMANDS, main


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("simulte", "simulate"),
        ("pln", "plan"),
        ("downscal", "downscale"),
        ("qos_agent", "qos-agent"),
        ("shedule", "schedule"),
    ],
)
def test_a_mistyped_command_gets_a_did_you_mean(capsys, typed, meant):
    assert main([typed, "x.yaml", "--json"]) == 2
    assert capsys.readouterr().err == f"kubetide: error: unknown command '{typed}'; did you mean '{meant}'?\n"


def test_a_command_far_from_any_lists_them_all(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "kubetide: error: unknown command 'frobnicate' (commands: "
    )
    assert all(name.replace("_", "-") in err for name in COMMANDS)
