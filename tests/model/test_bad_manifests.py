"""Bad dumps the fuzz campaign (issue 13) found: each ends in one ManifestError naming the file,
the object and the field, before anything is built from it."""

import json

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubetide.errors import ManifestError
from kubetide.model import load_files
from kubetide.model.bounds import MAX_NESTING, check_text, surely_within_bounds

NODE = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}}


def pod(name="web-1", namespace="default", cpu="100m", **spec):
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec},
    }


def job(**spec):
    template = {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}
    return {"kind": "Job", "metadata": {"name": "j"}, "spec": {"template": template, **spec}}


def as_list(*items):
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)})


def load_error(tmp_path, *texts: str | bytes) -> str:
    paths = []
    for index, text in enumerate(texts):
        path = tmp_path / f"f{index}.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        paths.append(path)
    with pytest.raises(ManifestError) as error:
        load_files(paths)
    message = str(error.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        # quantities over int64 milli-units overflowed the snapshot's arrays
        (
            [{**NODE, "status": {"allocatable": {"cpu": "1e100"}}}],
            "items[0] (Node n1): status.allocatable.cpu: ",
        ),
        ([pod(cpu="99999999999999999999")], "items[0] (Pod default/web-1): spec.containers[0].resources"),
        ([pod(cpu="9999999999Ei")], "too large: Kubernetes keeps quantities in int64 milli-units"),
        # each container fits, their sum does not
        (
            [
                {
                    **pod(),
                    "spec": {
                        "containers": [
                            {"name": n, "resources": {"requests": {"cpu": "9000000000000000"}}} for n in "ab"
                        ]
                    },
                }
            ],
            "spec: the pod's cpu requests add up to more than",
        ),
        # each pod fits, the node they are bound to does not
        (
            [
                NODE,
                pod("a", cpu="9000000000000000", nodeName="n1"),
                pod("b", cpu="9000000000000000", nodeName="n1"),
            ],
            "items[2] (Pod default/b): spec: the cpu requests of the pods bound to node n1 add up",
        ),
        # duplicates name both places
        ([NODE, NODE], "f0.yaml: items[1] (Node n1): duplicate Node n1 (also in "),
        ([pod(), {**pod(), "metadata": {"name": "web-1", "uid": "other"}}], "duplicate Pod default/web-1"),
        # nonsense the loader used to accept
        ([{**NODE, "metadata": {"name": ""}}], "items[0] (Node): metadata.name: must not be empty"),
        ([job(completions=-1)], "spec.completions: must be non-negative, got -1"),
        ([job(parallelism=-3)], "spec.parallelism: must be non-negative, got -3"),
        (
            [pod(priority=2**63)],
            "spec.priority: 9223372036854775808 is out of range for an integer field (int64)",
        ),
        ([pod(terminationGracePeriodSeconds=True)], "expected an integer, got True"),
        ([pod(activeDeadlineSeconds=0)], "spec.activeDeadlineSeconds: must be positive, got 0"),
    ],
)
def test_bad_objects_are_refused_naming_the_object_and_field(tmp_path, items, expected):
    assert expected in load_error(tmp_path, as_list(*items))


def test_the_same_dump_given_twice_is_a_duplicate_naming_both_files(tmp_path):
    dump = as_list(NODE)
    assert load_error(tmp_path, dump, dump) == (
        f"{tmp_path}/f1.yaml: items[0] (Node n1): duplicate Node n1 (also in {tmp_path}/f0.yaml: items[0] (Node n1))"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "f0.yaml: no YAML or JSON document in the file (is it empty?)"),
        ("  \n\n# only a comment\n", "f0.yaml: no YAML or JSON document in the file"),
        ("---\n---\n", "f0.yaml: no YAML or JSON document in the file"),
        (b"kind: Pod\nmetadata: {name: \xff\xfe}\n", "f0.yaml: not UTF-8 text (byte 27)"),
        ("[" * 1000 + "]" * 1000, f"f0.yaml: nested more than {MAX_NESTING} levels deep"),
        # libyaml's C composer killed the process with SIGSEGV on this
        ("x: " + "[" * 100_000 + "]" * 100_000, f"line 1, column {MAX_NESTING + 3}: nested more than"),
        ("- " * 100_000 + "x", "nested more than"),
        ("x: " + "{a: " * 600 + "1" + "}" * 600, "nested more than"),
        ("spec: " + "1" * 5000, "f0.yaml: invalid YAML: "),
    ],
)
def test_bad_texts_are_refused_before_the_loader_builds_them(tmp_path, text, expected):
    assert expected in load_error(tmp_path, text)


class _RefusesEarly(yaml.SafeLoader):
    """A parser that gives up before kubetide's limit with a message of its own, as libyaml does
    from PyYAML 6.0.4 on (depth 1,000, its scanner reading ahead of the events)."""

    def get_event(self):
        event = super().get_event()
        if isinstance(event, yaml.CollectionStartEvent) and event.start_mark.column > 50:
            raise yaml.parser.ParserError(None, None, "exceeded maximum nesting depth", event.start_mark)
        return event


@pytest.mark.parametrize(
    "loader", [_RefusesEarly, yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)]
)
def test_nesting_is_refused_with_kubetide_s_limit_whichever_parser_refuses_first(loader):
    text = "x: " + "[" * 2 * MAX_NESTING + "]" * 2 * MAX_NESTING
    with pytest.raises(ManifestError) as refused:
        check_text(text, "deep.yaml", loader)
    assert (
        str(refused.value)
        == f"deep.yaml: line 1, column {MAX_NESTING + 3}: nested more than {MAX_NESTING} levels deep"
    )


def test_a_syntax_error_is_left_to_the_loader_to_report():
    check_text("x: [1, 2\ny: }", "bad.yaml", _RefusesEarly)  # no ManifestError: the loader words it


def test_an_alias_bomb_of_nested_lists_is_refused_by_its_expanded_size(tmp_path):
    # 1 KB that stands for 10^7 pods: each level is a List of ten aliases to the level below.
    levels = ["a0: &a0 {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}"]
    for level in range(1, 8):
        items = ", ".join([f"*a{level - 1}"] * 10)
        levels.append(f"a{level}: &a{level} {{kind: List, items: [{items}]}}")
    text = "kind: List\nitems: [*a7]\nanchors:\n" + "\n".join("  " + line for line in levels)
    assert "aliases expand the document more than" in load_error(tmp_path, text)


def test_a_file_that_is_a_directory_is_named(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(ManifestError, match="dir: is a directory, not a file"):
        load_files([tmp_path / "dir"])


def test_nested_depth_within_the_bound_still_loads(tmp_path):
    # A real dump's shape with aliases (yaml.dump shares equal subtrees) goes through the
    # event check and loads as before.
    text = "kind: List\nitems:\n- &node {kind: Node, metadata: {name: n1}}\n- {kind: Node, metadata: {name: n2}}\n"
    assert [n.name for n in load_files([_write(tmp_path, text)]).nodes] == ["n1", "n2"]


def _write(tmp_path, text):
    path = tmp_path / "ok.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    ['{"a":*x}', 'x: &x 1\ny: {"a":*x}', "[&x 1, *x]", "a: *x", "- *x"],
)
def test_the_alias_screen_sees_every_alias_a_flow_mapping_can_hold(text):
    assert not surely_within_bounds(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: [1,\t*x]",  # libyaml takes a tab after `,` and `:` as a separator
        "a: &x 1\nb:\t*x",
        "- &x 1\n-   *x",
        "? &x a\n? *x\n",
        "--- *x",
        "a: &x 1\nb:\n  *x",
        "a: &x 1\rb: *x",
        "a: &x 1\u2028*x : 2",
        "\ufeff*x",
        "{&x a: 1, *x : 2}",
        "[&x 1] *x",
        "a: 'q' *x",
        "{?*x : 1}",  # a flow collection's explicit key needs no space after the `?`
        "[a, ?*x]",
    ],
)
def test_the_alias_screen_sees_an_alias_wherever_a_node_starts(text):
    assert not surely_within_bounds(text)


@pytest.mark.parametrize(
    "text",
    [
        "spec:\n  schedule: 0 * * * *\n",  # a CronJob as kubectl writes it
        "spec:\n  schedule: 5 4 * * sun\n",
        "- schedule: '*/5 * * * *'\n",
        'a: "*/5 * * * *"\n',
        "metadata:\n  annotations:\n    note: run at * every hour, 2 * 3\n",
        "a: [x * y, 'p *q']\n",
        "a: 'one *two* three'\n",
        "a: b*c\n",
    ],
)
def test_a_star_inside_a_scalar_is_no_alias(text):
    assert surely_within_bounds(text)


# Pieces of YAML around `*`: indicators, separators of every kind, scalars, anchors.
ALIAS_PIECES = [
    "*x", "&x", "a", "b c", "0", "- ", "-", "? ", ": ", ":", ",", "[", "]", "{", "}", "'", '"', "|", ">",
    "---", "...", " ", "\t", "\n", "\r", "\x85", "\u2028", "\ufeff", "#", "!t ", ".", "*", "{a: ", "\n  ",
]  # fmt: skip


@settings(max_examples=3000, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ALIAS_PIECES), min_size=1, max_size=14), st.booleans())
def test_every_alias_either_parser_reads_is_screened(pieces, c_parser):
    """The screen's promise, over random text: wherever PyYAML's or libyaml's parser reads an alias
    (before any error), the screen flags the text. Their scanners also take `''*x` for a quoted
    scalar and an alias, which no parser accepts: the screen may let such text by (yaml-rs refuses
    it too), since it cannot tell a closing quote from an opening one (`'*/5 * * * *'`)."""
    text = "".join(pieces)
    loader = yaml.CSafeLoader if c_parser else yaml.SafeLoader
    aliases = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            aliases += isinstance(event, yaml.AliasEvent)
    except yaml.YAMLError:
        pass
    if aliases:
        assert not surely_within_bounds(text), repr(text)


def test_an_alias_bomb_written_right_after_colons_is_refused(tmp_path):
    # The bomb above, as JSON-style flow mappings whose aliases follow the ':' with no space.
    levels = ['"a0": &a0 {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}']
    for level in range(1, 8):
        items = ",".join(f'"k{i}":*a{level - 1}' for i in range(10))
        levels.append(f'"a{level}": &a{level} {{"kind": "List", "items": [{{{items}}}]}}')
    text = '{"kind": "List", "items": [{"x":*a7}], "anchors": {' + ", ".join(levels) + "}}"
    assert "aliases expand the document more than" in load_error(tmp_path, text)
