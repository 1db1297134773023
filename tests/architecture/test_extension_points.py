"""docs/architecture.md's "Where to make a change" stays true: every path it names exists, and a
new expander is what its row says (the disruption-method row is tried by
tests/autoscaler/scaledown/test_scaledown_methods.py)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from kubetide.autoscaler import options as options_module
from kubetide.autoscaler.options import parse_options
from kubetide.autoscaler.scaleup import expanders
from kubetide.errors import ManifestError
from kubetide.model import Node, ObjectMeta

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def where_to_make_a_change() -> str:
    text = DOC.read_text()
    start = text.index("## Where to make a change")
    return text[start : text.index("\n## ", start + 1)]


def named_paths(section: str) -> set[str]:
    """Backticked paths in the table (a `/` or a file suffix), placeholders (NAME) aside."""
    paths = set()
    for quoted in re.findall(r"`([^`]+)`", section):
        if " " in quoted or "NAME" in quoted or not re.fullmatch(r"[\w./-]+", quoted):
            continue
        if "/" in quoted or re.search(r"\.(py|md)$", quoted):
            paths.add(quoted)
    return paths


def test_the_table_has_a_row_per_kind_of_change():
    rows = [line for line in where_to_make_a_change().splitlines() if line.startswith("| a new ")]
    kinds = [row.split("|")[1].strip() for row in rows]
    assert kinds == [
        "a new expander",
        "a new cloud provider",
        "a new disruption method",
        "a new scenario event",
        "a new CA flag",
    ]


def test_every_path_the_table_names_exists():
    paths = named_paths(where_to_make_a_change())
    assert len(paths) >= 15  # the parse found the table's paths
    for path in sorted(paths):
        under = ROOT if path.split("/")[0] in ("tests", "docs", "deploy") else ROOT / "src" / "kubetide"
        assert (under / path).exists(), f"docs/architecture.md names {path}, which is not in the tree"


def option(group_id: str, node_count: int) -> expanders.ExpansionOption:
    template = Node(ObjectMeta(f"{group_id}-template"), {"cpu": 1000}, {"cpu": 1000})
    return expanders.ExpansionOption(group_id, node_count, (), template)


def most_nodes(options: list[expanders.ExpansionOption], ctx: expanders.ExpanderContext):
    """A test-only expander: the options adding the most nodes."""
    most = max(o.node_count for o in options)
    return [o for o in options if o.node_count == most]


def test_a_new_expander_is_a_function_and_its_name_in_two_lists(monkeypatch):
    choices = [option("small", 1), option("big", 3)]
    with pytest.raises(ManifestError, match="most-nodes"):
        parse_options({"expander": "most-nodes"}, "flags.yaml")  # not registered yet

    monkeypatch.setitem(expanders.EXPANDERS, "most-nodes", most_nodes)
    monkeypatch.setattr(options_module, "EXPANDERS", (*options_module.EXPANDERS, "most-nodes"))
    for chain, chosen in (("least-nodes", "small"), ("most-nodes", "big"), ("most-nodes,least-nodes", "big")):
        parsed = parse_options({"expander": chain}, "flags.yaml")
        ctx = expanders.ExpanderContext(random.Random(0))
        picked = expanders.choose(choices, parsed.expander, ctx)
        assert picked is not None and picked.group_id == chosen, (chain, ctx.trace)
