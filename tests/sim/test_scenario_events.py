"""Typed scenario events (issue 40, item 4): one frozen class per kind, parsed in one place
(scenario._parse_event), an unknown kind a one-line parse error naming the file, the event and
the known kinds, and a dispatch whose exhaustiveness mypy proves."""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
import typing
from pathlib import Path

import pytest
from sim_helpers import make_scenario, workload

import kubetide
from kubetide.cli.main import main
from kubetide.sim.spec.scenario import (
    EVENT_KINDS,
    ApplyEvent,
    DeleteEvent,
    EventSpec,
    FaultEvent,
    RestartEvent,
    ScaleEvent,
    ScenarioEvent,
    SetImageEvent,
)

WEB = workload("Deployment", "web", replicas=2)

# kind: the spec.events entry, the class it parses to, and what it carries
CASES = [
    (
        "scale",
        {"kind": "Deployment", "name": "web", "replicas": 5},
        ScaleEvent,
        lambda e: e.target.replicas,
        5,
    ),
    (
        "apply",
        [workload("Deployment", "batch", replicas=1)],
        ApplyEvent,
        lambda e: e.manifests.workloads[0].name,
        "batch",
    ),
    ("delete", {"kind": "Deployment", "name": "web"}, DeleteEvent, lambda e: e.target.name, "web"),
    ("fault", {"type": "stockout", "nodeGroup": "general"}, FaultEvent, lambda e: e.fault.type, "stockout"),
    ("restart", {"name": "web"}, RestartEvent, lambda e: e.target.name, "web"),
    (
        "setImage",
        {"name": "web", "images": {"c": "web:2"}},
        SetImageEvent,
        lambda e: e.target.images,
        {"c": "web:2"},
    ),
]


@pytest.mark.parametrize(("kind", "body", "cls", "read", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_parses_to_its_class(kind, body, cls, read, expected):
    scenario = make_scenario(objects=[WEB], events=[{"at": "2m", kind: body}])
    [event] = scenario.events
    assert type(event) is cls and event.kind == kind
    assert (event.at, event.field) == (120.0, "spec.events[0]")
    assert read(event) == expected
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.at = 0.0  # type: ignore[misc]


def test_the_kinds_are_the_event_classes_and_the_spec_keys():
    """One list: the union's classes, their `kind`, and the keys a spec.events entry may hold."""
    classes = typing.get_args(ScenarioEvent)
    assert {c[2] for c in CASES} == set(classes)
    assert tuple(c.kind for c in classes) == EVENT_KINDS
    assert set(EVENT_KINDS) == set(EventSpec.model_fields) - {"at"}


def test_trace_rows_are_scale_events(tmp_path):
    (tmp_path / "web.csv").write_text("time,replicas\n0,2\n90,4\n")
    scenario = make_scenario(objects=[WEB], traces=[{"file": str(tmp_path / "web.csv"), "name": "web"}])
    assert [(type(e), e.at, e.target.replicas) for e in scenario.events] == [
        (ScaleEvent, 0.0, 2),
        (ScaleEvent, 90.0, 4),
    ]


@pytest.mark.parametrize(
    ("key", "hint"),
    [("explode", ""), ("scael", ' (did you mean "scale"?)'), ("setimage", ' (did you mean "setImage"?)')],
)
def test_an_unknown_kind_is_one_line_naming_the_file_the_event_and_the_kinds(tmp_path, capsys, key, hint):
    path = tmp_path / "s.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            apiVersion: kubetide.io/v1alpha1
            kind: Scenario
            metadata: {{name: s}}
            spec:
              duration: 10m
              nodeGroups: [{{name: g, maxSize: 3, template: {{status: {{allocatable: {{cpu: "4", memory: 8Gi}}}}}}}}]
              events:
                - at: 1m
                  fault: {{type: stockout, nodeGroup: g}}
                - at: 2m
                  {key}: {{}}
            """
        )
    )
    assert main(["simulate", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f'kubetide: error: {path}: spec.events[1]: unknown event kind "{key}"{hint}; '
        "the kinds are scale, apply, delete, fault, restart, setImage"
    ]
    assert captured.out == ""


# A dispatch over ScenarioEvent as the simulator writes it, with one kind left out per function.
_CASES = {
    "ScaleEvent": "case ScaleEvent():\n            return 'scale'",
    "ApplyEvent": "case ApplyEvent():\n            return 'apply'",
    "DeleteEvent": "case DeleteEvent():\n            return 'delete'",
    "FaultEvent": "case FaultEvent():\n            return 'fault'",
    "RestartEvent": "case RestartEvent():\n            return 'restart'",
    "SetImageEvent": "case SetImageEvent():\n            return 'setImage'",
}


def _dispatch(name: str, left_out: str | None) -> str:
    cases = "\n        ".join(text for kind, text in _CASES.items() if kind != left_out)
    return (
        f"def {name}(event: ScenarioEvent) -> str:\n"
        f"    match event:\n"
        f"        {cases}\n"
        f"        case _:\n"
        f"            assert_never(event)\n"
    )


def test_mypy_refuses_a_dispatch_that_leaves_a_kind_out(tmp_path):
    """How exhaustiveness is enforced: every `match` over ScenarioEvent ends in assert_never, and
    mypy (a required check) fails on any kind a match leaves out. Checked here on a snippet, with
    the project's mypy cache so that it costs seconds once the checks have run."""
    api = pytest.importorskip("mypy.api")
    src = Path(kubetide.__file__).resolve().parents[1]
    root = src.parent
    snippet = tmp_path / "dispatch.py"
    functions = [_dispatch("complete", None)] + [_dispatch(f"without_{kind}", kind) for kind in _CASES]
    snippet.write_text(
        "from typing import assert_never\n\n"
        "from kubetide.sim.spec.scenario import (\n"
        "    ApplyEvent, DeleteEvent, FaultEvent, RestartEvent, ScaleEvent, ScenarioEvent, SetImageEvent,\n"
        ")\n\n\n" + "\n\n".join(functions)
    )
    previous = os.environ.get("MYPYPATH")
    os.environ["MYPYPATH"] = str(src)  # this checkout's sources, whatever the venv has installed
    # mypy raises the interpreter's recursion limit for good; later tests (the loader's nesting
    # limit on JSON, which leans on RecursionError) need the default back.
    recursion_limit = sys.getrecursionlimit()
    try:
        out, err, status = api.run(
            [
                "--config-file",
                str(root / "pyproject.toml"),
                "--cache-dir",
                str(root / ".mypy_cache"),
                "--no-error-summary",
                "--hide-error-context",
                str(snippet),
            ]
        )
    finally:
        sys.setrecursionlimit(recursion_limit)
        if previous is None:
            del os.environ["MYPYPATH"]
        else:
            os.environ["MYPYPATH"] = previous
    assert status == 1, out + err
    errors = [line for line in out.splitlines() if ": error: " in line]
    # One error per incomplete function, naming the kind it left out; none for the complete one.
    lines = snippet.read_text().splitlines()

    def function_at(line: str) -> str:
        number = int(line.split(":")[1])
        return next(text.split("(")[0][4:] for text in reversed(lines[:number]) if text.startswith("def "))

    found = {function_at(line): line for line in errors}
    assert set(found) == {f"without_{kind}" for kind in _CASES}, out
    for kind in _CASES:
        assert f'"assert_never" has incompatible type "{kind}"' in found[f"without_{kind}"]
