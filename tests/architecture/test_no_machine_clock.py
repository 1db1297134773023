"""Decision code never reads the machine's clock: time comes from the Clock port and time budgets
from the Timer port (kubetide/clock.py), which is what makes the simulator show what the real
controller would do. import-linter sees imports, not calls, so this test reads the source."""

from __future__ import annotations

import ast
from pathlib import Path

import kubetide

PACKAGE = Path(kubetide.__file__).parent
DECISION_PACKAGES = ("model", "snapshot", "scheduling", "workloads", "autoscaler", "qos")

TIME_READS = {"time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns"}
DATETIME_READS = {"now", "utcnow", "today"}  # on the datetime and date classes


def clock_reads(source: str) -> list[str]:
    """Calls that read the machine's clock (whatever names the modules and classes are bound to)
    and `from time import ...` of such a function."""
    tree = ast.parse(source)
    time_names, clock_classes = set(), set()  # names bound to the time module / datetime, date
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "time":
                    time_names.add(a.asname or "time")
                elif a.name == "datetime":
                    name = a.asname or "datetime"
                    clock_classes.update({f"{name}.datetime", f"{name}.date"})
        elif isinstance(node, ast.ImportFrom) and node.module == "datetime":
            clock_classes.update(a.asname or a.name for a in node.names if a.name in ("datetime", "date"))
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            found += [
                f"line {node.lineno}: from time import {a.name}" for a in node.names if a.name in TIME_READS
            ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner, name = ast.unparse(node.func.value), node.func.attr
            if (owner in time_names and name in TIME_READS) or (
                owner in clock_classes and name in DATETIME_READS
            ):
                found.append(f"line {node.lineno}: {owner}.{name}(")
    return sorted(found, key=lambda f: int(f.split(":")[0].removeprefix("line ")))


def test_decision_packages_never_read_the_machine_clock():
    offenders = {}
    for package in DECISION_PACKAGES:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            reads = clock_reads(path.read_text(encoding="utf-8"))
            if reads:
                offenders[str(path.relative_to(PACKAGE))] = reads
    assert not offenders, f"use the Clock or Timer port instead: {offenders}"


def test_the_scan_finds_every_way_of_reading_the_clock():
    planted = """
import time, datetime
from datetime import datetime as dt, date
from time import perf_counter
a = time.time()
b = time.monotonic()
c = datetime.datetime.now()
d = dt.now()
e = date.today()
f = time.perf_counter()
g = datetime.fromtimestamp(0)
"""
    assert clock_reads(planted) == [
        "line 4: from time import perf_counter",
        "line 5: time.time(",
        "line 6: time.monotonic(",
        "line 7: datetime.datetime.now(",
        "line 8: dt.now(",
        "line 9: date.today(",
        "line 10: time.perf_counter(",
    ]
