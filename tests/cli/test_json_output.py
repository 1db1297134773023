"""How `--json` documents are written (cli/json_output.py, docs/json-output.md)."""

from __future__ import annotations

import argparse
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubetide.cli.json_output import (
    COMPACT,
    PRETTY,
    add_json_argument,
    encode,
    print_json,
    rfc3339,
    rfc3339_all,
)

DOC = {"apiVersion": "kubetide.io/v1alpha1", "kind": "X", "pods": [{"pod": "a/b", "node": None}], "empty": []}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("files", nargs="*")
    add_json_argument(p, "an X")
    return p


@pytest.mark.parametrize(
    ("argv", "style", "files"),
    [
        ([], None, []),
        (["--json", "dump.yaml"], "auto", ["dump.yaml"]),  # --json never takes the next word
        (["dump.yaml", "--json"], "auto", ["dump.yaml"]),
        (["--json=compact", "dump.yaml"], COMPACT, ["dump.yaml"]),
        (["dump.yaml", "--json=pretty"], PRETTY, ["dump.yaml"]),
    ],
)
def test_the_json_flag_takes_a_style_only_after_an_equals_sign(argv, style, files):
    args = parser().parse_args(argv)
    assert args.json == style
    assert args.files == files


def test_an_unknown_style_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(["--json=yaml"])
    assert exit_.value.code == 2


def test_compact_is_one_line_and_pretty_is_indented_and_both_are_the_same_document():
    compact = encode(DOC, COMPACT).decode()
    pretty = encode(DOC, PRETTY).decode()
    assert compact.count("\n") == 1 and compact.endswith("\n")
    assert pretty == json.dumps(DOC, indent=2) + "\n"  # what the stdlib printed before
    assert json.loads(compact) == json.loads(pretty) == DOC


def test_auto_is_pretty_on_a_terminal_only():
    assert encode(DOC, "auto", terminal=True) == encode(DOC, PRETTY)
    assert encode(DOC, "auto", terminal=False) == encode(DOC, COMPACT)


def test_print_json_writes_after_what_was_printed_as_text(capsys):
    print("before")
    print_json(DOC, "auto")  # captured output is not a terminal: compact
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "before"
    assert json.loads(out.splitlines()[1]) == DOC


_MOMENTS = st.one_of(
    st.none(),
    st.integers(-(4 * 10**9), 4 * 10**9),  # whole seconds on both sides of NumPy's limit
    st.floats(-4e9, 4.1e9, allow_nan=False),  # fractions and whole floats
    st.sampled_from([0, 0.0, -1, 1.5, 1e9 + 1e-6, 4.0e9, 253402300799]),
)


@given(st.lists(_MOMENTS, max_size=30))
def test_writing_times_together_gives_each_ones_text(moments):
    assert rfc3339_all(moments) == [rfc3339(m) for m in moments]
