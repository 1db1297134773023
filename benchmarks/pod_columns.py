"""What loading a JSON pod dump costs per pod, built as Pods or read as columns (issue 41 item 3).

    PYTHONPATH=src python -m benchmarks.pod_columns DUMP.json

DUMP.json is a `kind: List` (`python -m benchmarks.dumps downscale --out ...`). In-process CPU
seconds (`time.process_time`, the cycle collector off as the loader has it) of each step, on the
dump's pods, in the order a loader would take them:

1. `split`: the List's items as raw texts (msgspec);
2. `decode`: each pod's text into the wire schema (model/wire.py), in C;
3. `pods`: the model's Pods built from the wires, as the loader builds them (model/pod_typed.py);
4. `columns`: what `downscale`'s ranking reads of each pod (name, namespace, uid, node, phase,
   ready and its time, restarts, creation and deletion times, deletion cost, controller), taken
   from the wires column by column, with the checks a loader must still make on each pod (name,
   labels, owner references, every timestamp parsed) made by the project's own checkers.

Step 3 against step 4 is what a loader that keeps columns instead of Pods could save; steps 1-2
are paid either way. The figures are in BENCHMARKS.md ("Pod columns from the wire schema").
"""

from __future__ import annotations

import argparse
import gc
import itertools
import time
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import msgspec

from kubetide.model import typed
from kubetide.model.meta import synthetic_uid
from kubetide.model.pod_typed import _conditions, typed_pod
from kubetide.model.validation import labels_problem, object_name_problem
from kubetide.model.wire import KindWire, PodWire
from kubetide.workloads.cost import DELETION_COST_ANNOTATION


class _Items(msgspec.Struct):
    items: list[msgspec.Raw]


_NO_CONDITIONS: tuple[Any, ...] = (False, None, "", "", None)
_NO_ANNOTATIONS: dict[str, str] = {}


def _columns(wires: list[PodWire]) -> dict[str, list[Any]]:
    """The ranking's inputs, one list per field, and every per-pod check (a failing one raises)."""
    metas = list(map(attrgetter("metadata"), wires))
    names = list(map(attrgetter("name"), metas))
    if any(map(object_name_problem, itertools.repeat("Pod"), names)):
        raise ValueError("a pod name the Reader must word")
    labels = [m.labels for m in metas]
    if any(labels_problem(x) for x in labels if x):
        raise ValueError("a label the Reader must word")
    owners = [
        typed._owner_references(tuple(r)) if r else () for r in map(attrgetter("owner_references"), metas)
    ]
    statuses = list(map(attrgetter("status"), wires))
    conditions = [
        _conditions(s.conditions) if s is not None and s.conditions else _NO_CONDITIONS for s in statuses
    ]
    annotations = [a or _NO_ANNOTATIONS for a in map(attrgetter("annotations"), metas)]
    namespaces = [n or "default" for n in map(attrgetter("namespace"), metas)]
    return {
        "name": names,
        "namespace": namespaces,
        "uid": [m.uid or synthetic_uid("Pod", n, m.name) for m, n in zip(metas, namespaces, strict=True)],
        "node": [n or "" for n in map(attrgetter("spec.node_name"), wires)],
        "phase": [(s.phase if s is not None else None) or "Pending" for s in statuses],
        "ready": [c[0] for c in conditions],
        "ready_transition": [c[1] for c in conditions],
        "restarts": [
            max(c.restart_count or 0 for c in s.container_statuses)
            if s is not None and s.container_statuses
            else 0
            for s in statuses
        ],
        "created": list(map(typed.timestamp, map(attrgetter("creation_timestamp"), metas))),
        "deleted": list(map(typed.timestamp, map(attrgetter("deletion_timestamp"), metas))),
        "cost": [a.get(DELETION_COST_ANNOTATION) for a in annotations],
        "controller": [next((o for o in refs if o.controller), None) for refs in owners],
    }


def _timed(label: str, step: Callable[[], Any], figures: dict[str, float]) -> Any:
    started = time.process_time()
    result = step()
    figures[label] = time.process_time() - started
    return result


def measure(path: str) -> dict[str, float]:
    """CPU seconds of each step on the dump's pods, and their count (`pods_count`)."""
    with open(path, "rb") as file:
        text = file.read()
    figures: dict[str, float] = {}
    kind_of, pod_of = msgspec.json.Decoder(KindWire).decode, msgspec.json.Decoder(PodWire).decode
    gc.disable()
    try:
        raws = _timed("split", lambda: msgspec.json.decode(text, type=_Items).items, figures)
        pods_raw = [raw for raw in raws if kind_of(raw).kind == "Pod"]
        wires = _timed("decode", lambda: list(map(pod_of, pods_raw)), figures)
        typed._TIMES.clear()  # both steps parse every distinct timestamp once
        built = _timed("pods", lambda: [typed_pod(wire, "", "") for wire in wires], figures)
        typed._TIMES.clear()
        _timed("columns", lambda: _columns(wires), figures)
    finally:
        gc.enable()
    figures["pods_count"] = len(wires)
    figures["pods_for_the_reader"] = sum(pod is None for pod in built)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.pod_columns", description=__doc__.splitlines()[0]
    )
    parser.add_argument("dump", help="a JSON `kind: List` of pods (benchmarks.dumps)")
    figures = measure(parser.parse_args(argv).dump)
    count = int(figures.pop("pods_count"))
    print(f"{count} pods ({int(figures.pop('pods_for_the_reader'))} left to the Reader)")
    for label, seconds in figures.items():
        print(f"{label:8} {seconds:6.3f} s CPU  {seconds / count * 1e6:5.1f} us a pod")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
