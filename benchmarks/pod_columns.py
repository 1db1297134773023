"""What loading a JSON pod dump costs per pod, built as Pods or read as columns (issue 41 item 3).

    PYTHONPATH=src python -m benchmarks.pod_columns DUMP.json

DUMP.json is a `kind: List` (`python -m benchmarks.dumps downscale --out ...`). In-process CPU
seconds (`time.process_time`, the cycle collector off as the loader has it) of each step, on the
dump's pods, in the order a loader would take them:

1. `split`: the List's items as raw texts (msgspec);
2. `decode`: each pod's text into the wire schema (model/wire.py), in C;
3. `pods`: the model's Pods built from the wires, as the loader builds them (model/pod_typed.py);
4. `columns`: the pods as the rows `kubetide downscale` loads (model/pod_columns.py): every
   check typed_pod makes (`checked_pod`), each pod's row written from what it found.

Step 3 against step 4 is what loading rows instead of Pods saves; steps 1-2 are paid either way. The figures are in BENCHMARKS.md ("Pod columns from the wire schema").
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import msgspec

from kubetide.model import typed
from kubetide.model.pod_columns import PodColumns
from kubetide.model.pod_typed import checked_pod, typed_pod
from kubetide.model.wire import KindWire, PodWire


class _Items(msgspec.Struct):
    items: list[msgspec.Raw]


def _rows(wires: list[PodWire]) -> PodColumns:
    """The pods as the loader's rows (model/pod_columns.py), every check `typed_pod` makes made."""
    rows = PodColumns()
    for wire in wires:
        checked = checked_pod(wire)
        if checked is not None:
            rows.add_checked(wire, checked)
    return rows


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
        _timed("columns", lambda: _rows(wires), figures)
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
