"""The yaml-rs fast path reads a List dump exactly as PyYAML's SafeLoader does, or declines.

yaml-rs reads YAML 1.2, the loader's reference (PyYAML) YAML 1.1, so the fast path screens every
chunk and hands PyYAML what it cannot clear. These tests hold it to the one promise that matters:
for any text, either the same objects as `yaml.load(text, CSafeLoader)` (same types too: True is
not 1) or Declined, never a result where the reference fails.
"""

import datetime
import io
import math

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.model import load_file, stream, yaml_chunks
from kubetide.model import loader as loader_module
from kubetide.model.loader import yaml_loader
from kubetide.model.stream import FIELD, ITEM, ITEMS

pytestmark = pytest.mark.skipif(not yaml_chunks.available(), reason="yaml-rs is not installed")


def typed(value):
    """A value with its types spelled out, so that True and 1, or 1 and 1.0, never compare equal."""
    if isinstance(value, dict):
        return ("map", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("seq", [typed(v) for v in value])
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    return (type(value).__name__, value)


def fast_members(text):
    """What the fast path yields for `text`, as (FIELD|ITEMS|ITEM, key, typed value); "declined"."""
    stream = io.StringIO(text)
    head = stream.read(1 << 20)
    try:
        return [
            (what, key, typed(value)) for what, key, value in yaml_chunks.members(stream, head, yaml_loader())
        ]
    except yaml_chunks.Declined:
        return "declined"


def reference_members(text):
    """The members the whole-file load sees: the root's fields, then its items; None if it fails."""
    try:
        document = yaml.load(text, Loader=yaml_loader())
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        return None
    result = []
    for key, value in document.items():
        if key == "items":
            result.append((ITEMS, None, ("NoneType", None)))
            result.extend((ITEM, index, typed(item)) for index, item in enumerate(value))
        else:
            result.append((FIELD, key, typed(value)))
    return result


def comparable(members):
    # The fast path yields ITEMS with None as its value, like model/stream.py's event path.
    return [(what, key, ("NoneType", None) if what == ITEMS else value) for what, key, value in members]


def event_members(text):
    """What model/stream.py's event path yields (the fast path's own reference); None if it does
    not stream the text."""
    try:
        members = stream.members(io.StringIO(text), yaml_loader())
        return [(what, key, typed(value)) for what, key, value in members]
    except stream.NotStreamable:
        return None


def assert_same_or_declined(text):
    """The fast path gives what the event path gives; where that does not stream the text, what
    the whole-file load gives; and never a result where PyYAML fails."""
    fast = fast_members(text)
    if fast == "declined":
        return "declined"
    events = event_members(text)
    if events is not None:
        assert fast == events
        return "read"
    reference = reference_members(text)
    assert reference is not None, f"the fast path read text PyYAML refuses:\n{text}"
    assert comparable(fast) == reference
    return "read"


def listing(items_text, indent=""):
    items_text = "".join(indent + line if line else line for line in items_text.splitlines(keepends=True))
    return f"apiVersion: v1\nitems:\n{items_text}kind: List\nmetadata:\n  resourceVersion: ''\n"


@pytest.fixture
def paths(monkeypatch):
    """Counts the items each parser was given."""
    counts = {"yaml-rs": 0, "pyyaml": 0}
    by_yaml_rs, by_pyyaml = yaml_chunks._by_yaml_rs, yaml_chunks._by_pyyaml

    def counting_yaml_rs(text):
        items = by_yaml_rs(text)
        counts["yaml-rs"] += len(items or ())
        return items

    def counting_pyyaml(text, loader):
        items = by_pyyaml(text, loader)
        counts["pyyaml"] += len(items)
        return items

    monkeypatch.setattr(yaml_chunks, "_by_yaml_rs", counting_yaml_rs)
    monkeypatch.setattr(yaml_chunks, "_by_pyyaml", counting_pyyaml)
    return counts


# -- the screen, case by case ------------------------------------------------------------------

# Plain scalars yaml-rs (YAML 1.2) and PyYAML (YAML 1.1) read differently, each placed where a
# plain scalar may stand: a value, a key, a sequence entry, in a flow collection.
DIFFERENT = [
    "yes", "No", "ON", "off", "0755", "010", "08", "0X1F", "0o17", "1:20", "-1:20", "1:20.5",
    "1e3", "1E3", "1e-3", "097370e3", "1.5e3", "-.5", "+.5", "_1", "1e400", "2026-11-01",
    "2026-11-01T00:00:00Z", "2026-11-01 10:00:00", "<<", "=",
]  # fmt: skip
# ... and ones both read alike, which need not slow anything down.
ALIKE = [
    "true", "False", "null", "~", "42", "-7", "+5", "0", "1.5", "-0.25", "128Mi", "100m", "10.0.0.1",
    "1.30.7", "v1.30.7", "node-0001", "no-schedule", "on-demand", "2026-1-1x", "0x", "12e", "inf",
]  # fmt: skip
PLACES = [
    "  metadata:\n    labels:\n      hash: {token}\n",
    "  metadata:\n    {token}: value\n",
    "  spec:\n    args:\n    - {token}\n",
    "  spec:\n    flow: {{a: {token}, b: [{token}, x]}}\n",
]


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("token", DIFFERENT)
def test_a_scalar_the_two_read_differently_is_read_by_pyyaml(token, place, paths):
    text = listing("- kind: Pod\n" + place.format(token=token) + "- kind: Node\n  metadata: {name: n}\n")
    if event_members(text) is None:  # `hash: <<` is an error to PyYAML: the event stream words it
        assert fast_members(text) == "declined"
        return
    assert assert_same_or_declined(text) == "read"
    assert paths["pyyaml"] == 1 and paths["yaml-rs"] == 1  # only the item holding it


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("token", ALIKE)
def test_a_scalar_both_read_alike_stays_on_the_fast_path(token, place, paths):
    text = listing("- kind: Pod\n" + place.format(token=token))
    assert assert_same_or_declined(text) == "read"
    assert paths == {"yaml-rs": 1, "pyyaml": 0}


@pytest.mark.parametrize(
    "item",
    [
        "- a: 'tab\there'\n",
        "- a: b\r\n",
        "- a: 'line\u2028separator'\n",
        "- a: 'next\x85line'\n",
        "- a: !!str 12\n",
        "- a: &anchor 12\n",
        "- ? complex\n  : key\n",
        "- a: 1\n  a: 2\n",  # a duplicate key: PyYAML keeps the last, yaml-rs refuses
        "- " + "k" * 1100 + ": long key\n",
        "- : empty key\n",
        "- a:\n    : empty key\n",
        "- {a: 1, : 2}\n",
        "- [a, : 2]\n",
        "- ? : x\n",
    ],
    ids=[
        "tab",
        "cr",
        "u2028",
        "nel",
        "tag",
        "anchor",
        "explicit-key",
        "duplicate-key",
        "long-key",
        "empty-key-entry",
        "empty-key-line",
        "empty-key-flow-mapping",
        "empty-key-flow-sequence",
        "empty-key-explicit",
    ],
)
def test_syntax_the_two_may_treat_apart_goes_to_pyyaml(item, paths):
    assert assert_same_or_declined(listing(item + "- b: 1\n")) in ("read", "declined")
    assert paths["yaml-rs"] <= 1  # never the suspect item


@pytest.mark.parametrize(
    "items_text",
    [
        "- a: &x {b: 1}\n- c: *x\n",  # an alias
        "- a: " + "[" * 600 + "]" * 600 + "\n",  # flow nesting past the bounds
        "- a:\n" + "".join(" " * (2 * i + 4) + "k:\n" for i in range(600)) + " " * 1206 + "v\n",  # block
    ],
    ids=["alias", "deep-flow", "deep-block"],
)
def test_aliases_and_deep_nesting_decline_to_the_event_stream(items_text):
    assert fast_members(listing(items_text)) == "declined"


@pytest.mark.parametrize(
    "item",
    [
        "- kind: CronJob\n  spec:\n    schedule: 0 * * * *\n",  # kubectl leaves it plain
        "- kind: CronJob\n  spec:\n    schedule: '*/5 * * * *'\n",
        "- kind: Pod\n  metadata:\n    annotations:\n      note: a * b, \"c *d\", 'e * f'\n",
    ],
    ids=["cron-plain", "cron-quoted", "annotations"],
)
def test_a_star_inside_a_scalar_stays_on_the_fast_path(item, paths):
    # Such a `*` is text, not an alias: no reason to decline the whole file.
    assert assert_same_or_declined(listing(item + "- kind: Node\n  metadata: {name: n}\n")) == "read"
    assert paths == {"yaml-rs": 2, "pyyaml": 0}


@pytest.mark.parametrize(
    "items_text",
    [
        "- a: &x {b: 1}\n- c: [1, *x]\n",
        "- a: &x {b: 1}\n- c: {d: *x}\n",
        "- a: &x {b: 1}\n- - *x\n",
        "- a: &x {b: 1}\n- c:\n    *x\n",
        '- a: &x {b: 1}\n- {"c":*x}\n',
        "- a: &x {b: 1}\n- c:\t*x\n",
        "- kind: CronJob\n  spec: {schedule: 0 * * * *}\n- a: &x {b: 1}\n- c: *x\n",
    ],
    ids=["flow-sequence", "flow-mapping", "block-sequence", "next-line", "json-key", "tab", "after-cron"],
)
def test_a_real_alias_anywhere_declines(items_text):
    assert fast_members(listing(items_text)) == "declined"


def test_deep_block_nesting_never_reaches_yaml_rs(tmp_path):
    # yaml-rs recurses on the machine stack: thousands of levels would kill the process.
    deep = "".join(" " * (i + 2) + "k:\n" for i in range(8000)) + " " * 8002 + "v\n"
    path = tmp_path / "deep.yaml"
    path.write_text(listing("- kind: ConfigMap\n  data:\n" + deep))
    with pytest.raises(Exception, match="nested more than"):
        load_file(path)


# -- the file's shape --------------------------------------------------------------------------


@pytest.mark.parametrize("indent", ["", "  ", "    "])
def test_indented_and_indentless_items_with_comments_and_blank_lines(indent, paths):
    items = (
        "- kind: Pod\n  # a comment inside the item\n  a: 1\n\n- kind: Pod\n  b: |\n    text\n\n    more\n"
    )
    text = listing(items, indent).replace("items:\n", "items:\n\n")
    assert assert_same_or_declined(text) == "read"
    assert paths["yaml-rs"] == 2


def test_many_chunks_give_every_item_in_order(monkeypatch, paths):
    monkeypatch.setattr(yaml_chunks, "CHUNK_CHARS", 256)
    items = "".join(
        f"- kind: Pod\n  metadata:\n    name: p{i}\n    labels: {{hash: '{i:08}'}}\n" for i in range(300)
    )
    items += "- kind: Pod\n  metadata:\n    name: odd\n    labels: {hash: 0755}\n"
    assert assert_same_or_declined(listing(items)) == "read"
    assert paths == {"yaml-rs": 300, "pyyaml": 1}


@pytest.mark.parametrize(
    "text",
    [
        "items: []\nkind: List\n",
        "kind: List\nitems:\n",
        "items:\n- a: 1\n---\nkind: List\n",
        "items:\n- a: 1\n# a comment between items at column 0\n- b: 2\nkind: List\n",
        "items:\n- a: 1\nkind: List\nitems:\n- b: 2\n",
        "apiVersion: v1\n",
    ],
    ids=["flow-items", "null-items", "two-documents", "comment-at-column-0", "items-twice", "no-items"],
)
def test_other_shapes_decline_or_read_alike(text):
    assert assert_same_or_declined(text) in ("read", "declined")


def test_a_declined_file_is_read_by_the_event_stream_with_nothing_counted_twice(tmp_path, monkeypatch):
    monkeypatch.setattr(yaml_chunks, "CHUNK_CHARS", 256)
    pods = "".join(
        f"- kind: Pod\n  metadata: {{name: p{i}, namespace: default}}\n"
        f"  spec: {{containers: [{{name: c}}], nodeName: n}}\n  status: {{phase: Running}}\n"
        for i in range(50)
    )
    path = tmp_path / "dump.yaml"
    # The anchor and alias come late: the fast path has yielded many pods when it declines.
    path.write_text(listing(pods + "- &late {kind: Namespace, metadata: {name: a}}\n- *late\n"))
    with pytest.raises(Exception, match="duplicate Namespace a"):
        load_file(path)
    path.write_text(listing(pods))
    assert [p.name for p in load_file(path).pods] == [f"p{i}" for i in range(50)]


def test_without_yaml_rs_the_event_stream_reads_the_same(tmp_path, monkeypatch):
    items = "".join(
        f"- kind: Pod\n  metadata: {{name: p{i}}}\n  spec: {{containers: [{{name: c}}]}}\n" for i in range(5)
    )
    path = tmp_path / "dump.yaml"
    path.write_text(listing(items))
    fast = load_file(path)
    monkeypatch.setattr(yaml_chunks, "yaml_rs", None)
    declined = []
    original = loader_module.stream_members

    def recording(stream, loader, fast_yaml=None):
        declined.append(fast_yaml is not None)
        return original(stream, loader, fast_yaml=fast_yaml)

    monkeypatch.setattr(loader_module, "stream_members", recording)
    assert load_file(path) == fast
    assert declined == [True, False]


# -- any text ----------------------------------------------------------------------------------

# Pieces of YAML syntax, ambiguous scalars and ordinary text, assembled into item lines at random.
PIECES = [
    "|", "|+", ">-", "|\n    text", ">\n  x\n\n  y", "|+\n    kept\n\n",
    *DIFFERENT, *ALIKE, "a", "b c", "key", "-", "- ", ": ", ":", "#", " #", "'", '"', "''", "{", "}", "[", "]",
    ",", "|", ">", "|-", ">+", "&a", "*a", "!", "?", "%", "@", "`", "\\", "\\n", "\\x41", "é", "\t", "  ",
]  # fmt: skip
line = st.tuples(st.integers(0, 6), st.lists(st.sampled_from(PIECES), min_size=1, max_size=6))
item = st.lists(line, min_size=1, max_size=6)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(item, min_size=1, max_size=4), st.sampled_from(["", "  "]), st.lists(line, max_size=2))
def test_any_text_is_read_as_pyyaml_reads_it_or_declined(items, indent, around):
    """The promise, over random text: never a result PyYAML would not give."""
    text = ""
    for lines in items:
        for number, (depth, pieces) in enumerate(lines):
            text += ("- " if number == 0 else "  " + " " * depth) + "".join(pieces) + "\n"
    outside = "".join(" " * depth + "".join(pieces) + "\n" for depth, pieces in around)
    document = listing(text, indent)
    assert_same_or_declined(document)
    assert_same_or_declined(outside + document)  # before `items:`
    assert_same_or_declined(document.replace("kind: List", outside + "kind: List"))  # after the items


scalar = st.one_of(
    st.sampled_from(DIFFERENT + ALIKE),
    st.text(max_size=12),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
    st.datetimes(timezones=st.just(datetime.UTC)),
)
value = st.recursive(
    scalar,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(DIFFERENT), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.dictionaries(st.text(max_size=8), value, max_size=4), min_size=1, max_size=4),
    st.booleans(),
    st.integers(20, 80),
)
def test_any_dump_pyyaml_writes_is_read_alike(items, flow, width):
    """Well-formed YAML of every style PyYAML writes (flow, folded, quoted, escaped, wrapped)."""
    text = yaml.safe_dump(
        {"apiVersion": "v1", "items": items, "kind": "List"}, default_flow_style=flow or None, width=width
    )
    if not text.startswith("apiVersion: v1\nitems:\n"):
        return  # flow style for the root: not kubectl's shape
    assert assert_same_or_declined(text) in ("read", "declined")
