"""cli/output.py's text layout: wrapped between words, within the width, nothing dropped."""

import pytest

from kubetide.cli.output import line_width, text_table, wrap

REASONS = [
    "a kube-system pod without a PodDisruptionBudget (skip-nodes-with-system-pods; blocks while "
    "the pod is younger than 1h)",
    "the pod uses local storage (emptyDir or hostPath) not listed in "
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes (skip-nodes-with-local-storage)",
    "",
    "empty: deleted without a drain",
]
ROWS = [(f"node-{i}", "general", f"{i}%", reason) for i, reason in enumerate(REASONS)]
HEADER = ("node", "group", "util", "why")


@pytest.mark.parametrize("width", [40, 64, 80, 100, 160, 1000])
def test_every_word_of_every_reason_in_order_and_no_line_too_long(width):
    lines = text_table(HEADER, ROWS, width)
    assert all(len(line) <= width for line in lines), [line for line in lines if len(line) > width]
    printed = " ".join(lines).split()
    expected = [word for row in (HEADER, *ROWS) for cell in row for word in cell.split()]
    if "why" not in printed:  # the narrow layout: the free text goes under its row
        expected.remove("why")
    assert "".join(printed) == "".join(expected)  # not a character lost, in order
    longest = max(len(word) for word in expected)
    if width - 4 >= longest:  # and no word cut, unless it is longer than a whole line
        assert printed == expected


@pytest.mark.parametrize(
    ("width", "side_by_side"),
    [(1000, True), (100, True), (80, False), (40, False)],
)
def test_the_free_text_goes_under_its_row_when_too_narrow_for_its_longest_word(width, side_by_side):
    lines = text_table(HEADER, ROWS, width)
    assert (lines[0].split() == list(HEADER)) == side_by_side
    assert any(line.startswith("    ") for line in lines) or width == 1000


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("one two three", 7, ["one two", "three"]),
        ("cluster-autoscaler.kubernetes.io/safe-to-evict x", 20, None),  # too long: the only cut
        ("", 10, [""]),
        ("a b", 10, ["a b"]),
    ],
)
def test_wrap_breaks_between_words(text, width, expected):
    lines = wrap(text, width)
    assert all(len(line) <= width for line in lines)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    if expected is not None:
        assert lines == expected


def test_columns_from_the_environment_win_even_in_a_pipe(monkeypatch):
    from rich.console import Console

    piped = Console(file=open("/dev/null", "w"), force_terminal=False)  # noqa: SIM115
    monkeypatch.setenv("COLUMNS", "100")
    assert line_width(piped) == 100
    monkeypatch.delenv("COLUMNS")
    assert line_width(piped) == 1000
