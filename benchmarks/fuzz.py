"""Fuzz the CLI: bad input must never break kubetide (issue 13).

`python -m benchmarks.fuzz [--inputs N] [--seed S] [--jobs J] [--timeout SEC] [--save DIR] [--new-kinds]`

Hypothesis mutates the bundled examples (scenarios, dumps, node-group and QoS files) and their
flags, structurally (a value replaced by a nasty one, a key deleted or invented, a list item
duplicated, a value nested deep) and as text (empty, blank, binary, not UTF-8, cut short, nested
100,000 deep, an alias bomb), and runs each input through `kubetide.cli.main.main(argv)` in a
forked child of a worker process that has imported kubetide once. For every input:

- the exit code is 0 or 2: never a traceback, never a signal;
- on exit 2, stderr holds exactly one `kubetide: error: ...` line (warnings and argparse's
  "(see --help)" hint aside), naming the file that was broken when a whole file was;
- the child stays within the time limit and the address-space limit the worker sets on it
  (`resource.setrlimit`), so a hang or a runaway allocation is reported, not waited out.

Valid inputs stay small by construction (simulations are cut to a few minutes with --duration,
no mutation writes a size between a handful and the simulator's limits), so an input over the
time limit is a hang. The test suite runs a few hundred inputs with a fixed seed
(tests/fuzz/test_fuzz_cli.py); this command runs the long budget and prints outcome counts,
saving each failing input under --save. docs/fuzzing.md records the last long run.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import json
import os
import queue
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
OUTCOMES = ("ok", "error", "traceback", "crash", "hang", "bad-message")
FAILURES = ("traceback", "crash", "hang", "bad-message")
# The child's address-space limit: kubetide's imports take ~0.6 GB of it, a large example run ~1 GB.
MEMORY_LIMIT = 3 * 2**30
SIMULATED = "3m"  # how long a valid scenario runs: enough to start nodes and drain one


# -- inputs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """A bundled example run: argv naming the files, and the files (copied into a directory)."""

    command: str
    argv: tuple[str, ...]
    files: dict[str, Path]  # mutable inputs, by their name in the case directory
    extra: dict[str, Path] = field(default_factory=dict)  # read, never mutated (a trace CSV)


FUZZ_SEEDS = Path(__file__).resolve().parent / "fuzz_seeds"
# Every trace a seed scenario names, by its name relative to the scenario.
TRACES = {
    "traces/frontend-morning.csv": EXAMPLES / "traces/frontend-morning.csv",
    "traces/night-usage.csv": EXAMPLES / "traces/night-usage.csv",
    "traces/usage.csv": FUZZ_SEEDS / "traces/usage.csv",
}
USAGE_TRACES = ("traces/night-usage.csv", "traces/usage.csv")
SIMULATE_ARGV = ("simulate", "s.yaml", "--duration", SIMULATED, "--no-report", "--json", "--out", "out")
NEW_KINDS = FUZZ_SEEDS / "new-kinds.yaml"  # a CronJob, an HPA, a usage trace, rollout events


def _scenario(path: Path) -> Seed:
    return Seed("simulate", SIMULATE_ARGV, {"s.yaml": path}, dict(TRACES))


# The seeds of the newer input kinds: the new-kinds scenario, the demo asking a gRPC expander at an
# address (no service listens: every scale-up falls back, as CA's does), and a Dask sweep's
# scheduler address (no scheduler either: the address is refused or the connection fails).
GRPC_URL = "--set=grpc-expander-url=127.0.0.1:1"
SWEEP_ADDRESS = "tls://127.0.0.1:8786"
NEW_KIND_SEEDS: tuple[Seed, ...] = (
    _scenario(NEW_KINDS),
    Seed(
        "simulate",
        (*SIMULATE_ARGV, "--set=expander=grpc", GRPC_URL, "--set=grpc-expander-cert=cert.pem"),
        {"s.yaml": ROOT / "src/kubetide/data/scenarios/demo.yaml"},
        {"cert.pem": FUZZ_SEEDS / "expander-cert.pem"},
    ),
    Seed(
        "sweep",
        (
            *("sweep", "s.yaml", "--engine", "dask", "--scheduler-address", SWEEP_ADDRESS),
            *("--seeds", "1", "--duration", "1m", "--json", "--out", "out"),
        ),
        {"s.yaml": NEW_KINDS},
        dict(TRACES),
    ),
)


SEEDS: tuple[Seed, ...] = (
    *(
        _scenario(p)
        for p in sorted([*EXAMPLES.glob("*.yaml"), *EXAMPLES.glob("unready/*.yaml")])
        if "kind: Scenario" in p.read_text()
    ),
    _scenario(ROOT / "src/kubetide/data/scenarios/demo.yaml"),
    Seed(
        "plan",
        ("plan", "cluster.yaml", "--node-groups", "groups.yaml", "--json"),
        {"cluster.yaml": EXAMPLES / "plan-cluster.yaml", "groups.yaml": EXAMPLES / "plan-node-groups.yaml"},
    ),
    Seed("schedule", ("schedule", "cluster.yaml", "--json"), {"cluster.yaml": EXAMPLES / "cluster.yaml"}),
    Seed(
        "downscale",
        ("downscale", "pods.yaml", "--replicas", "8", "--owner", "ReplicaSet/web-7f9c8d6b5", "--json"),
        {"pods.yaml": EXAMPLES / "downscale-pods.yaml"},
    ),
    Seed(
        "qos",
        ("qos", "node.yaml", "--nodeqos", "nodeqos.yaml", "--json"),
        {"node.yaml": EXAMPLES / "qos/node-state.yaml", "nodeqos.yaml": EXAMPLES / "qos/nodeqos.yaml"},
    ),
    *NEW_KIND_SEEDS,
)

_DOCUMENTS: dict[Path, list[Any]] = {}


def _documents(path: Path) -> list[Any]:
    if path not in _DOCUMENTS:
        _DOCUMENTS[path] = list(yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader))
    return _DOCUMENTS[path]


@dataclass
class Case:
    """One input: argv (file names relative to the case directory) and the files' bytes."""

    seed: str
    argv: list[str]
    files: dict[str, bytes]
    mutations: list[str]
    directories: list[str] = field(default_factory=list)  # names given as directories, not files
    broken_file: str | None = None  # a file made unreadable as a whole: the error must name it,
    # unless another mutation (a flag, another file) may fail first

    def describe(self) -> str:
        return f"{self.seed}: {'; '.join(self.mutations)}"


NASTY_SCALARS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    2**31,
    2**63 - 1,
    2**63,
    -(2**63) - 1,
    10**100,
    1e100,
    -1e100,
    float("inf"),
    float("nan"),
    0.5,
    "",
    " ",
    "abc",
    "1e100",
    "99999999999999999999",
    "9999999999Ei",
    "-1",
    "0",
    "1ns",
    "1us",
    "0s",
    "100000h",
    "-5m",
    "ünï\u202ecødé 💥",
    "\x00",
    "a" * 5000,
    "9" * 5000,
)
NASTY_VALUES: tuple[Any, ...] = (*NASTY_SCALARS, [], {}, [1, "a"], {"a": 1}, [{}])
NASTY_FLAG_VALUES = ("", "-1", "0", "abc", "1e400", "100000h", "1ns", "99999999999999999999", "ü", "\x7f")
BROKEN_CSV = (
    b"time,replicas\n0,\xff\n",
    b"time,replicas\n0,99999999999999999999\n",
    b"time,replicas\n1e400,3\n",
    b"time,replicas\nnan,3\n",
    b"time,replicas\n-5m,3\n",
    b"\x00\x01\x02",
    b"",
)
BAD_PATHS = ("/dev/null/x", "/proc/self/x", "s.yaml", "missing.yaml", ".", "/")
BROKEN_USAGE_CSV = (
    b"time,workload,cpu\n0,shop/web," + b"9" * 140_000 + b"\n",  # over the csv module's field limit
    b"time,workload,cpu\n0,shop/gone,100m\n0,other/nope,1\n0,shop/web,200m\n",  # names nothing
    b"time,workload,cpu\n0,web,100m\n",
    b"time,workload,cpu\n0,shop/web,-1\n",
    b"time,workload,cpu\n0,shop/web,1e100\n",
    b"time,workload,cpu\nnan,shop/web,1\n",
    b"time,workload,cpu\n5,shop/web,1\n1,shop/web,1\n",
    b"time,workload,workload\n0,shop/web,1\n",
    b'time,workload,cpu\n0,"shop/web\n',
    b"time,workload,cpu\n0,shop/web,1\x00\n",
    b"time,workload,memory,cpu\n100000h,shop/web,1Ei,1\n",
    b"# only a comment\n",
)
# Values for fields of the newer kinds, by the field's name: a `domain` mutation puts one where a
# field of that name is (a CronJob's schedule, an HPA's bounds, a rollout's surge, ...).
FAR_TIMES = (
    "9999-12-31T23:59:59Z",
    "9999-12-31T23:59:59+14:00",
    "0001-01-01T00:00:00Z",
    "10000-01-01T00:00:00Z",
    "1970-01-01T00:00:00Z",
    "2262-04-11T23:47:17Z",
    "2026-11-01T00:00:00.999999999Z",
    "2026-13-01T00:00:00Z",
)
DOMAIN_VALUES: dict[str, tuple[Any, ...]] = {
    "schedule": (
        "0 0 31 2 *",
        "0 0 30 2 *",
        "0 0 29 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 31 2 1",
        "@every 0s",
        "@every 1ns",
        "@every 100000h",
        "@every -5m",
        "@yearly",
        "@reboot",
        "TZ=UTC 0 * * * *",
        "CRON_TZ=Europe/Paris 0 * * * *",
        "* * * * * *",
        "61 * * * *",
        "*/0 * * * *",
        "0-59/1 0-23 1-31 1-12 0-6",
        "H * * * *",
        "0 0 L * *",
        "",
    ),
    "timeZone": ("Bogus/Zone", "UTC", "", "Etc/GMT+14", "../../etc/passwd", "Europe/Paris "),
    "lastScheduleTime": FAR_TIMES,
    "lastSuccessfulTime": FAR_TIMES,
    "lastScaleTime": FAR_TIMES,
    "creationTimestamp": FAR_TIMES,
    "startingDeadlineSeconds": (0, -1, 2**31, 2**63 - 1, 1),
    "concurrencyPolicy": ("Forbid", "Replace", "Bogus", ""),
    "minReplicas": (0, 1, -1, 2**31, 2**31 - 1),
    "maxReplicas": (0, 1, 2**31, 2**31 - 1, 100_001),
    "averageUtilization": (0, -1, 1, 1000, 2**31),
    "averageValue": ("0", "-1", "1e100", "9999999999Ei", "1n", "abc"),
    "metrics": (
        [],
        [{"type": "Bogus"}],
        [
            {
                "type": "Pods",
                "pods": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "1"}},
            }
        ],
        [
            {
                "type": "External",
                "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "3"}},
            }
        ],
        [
            {
                "type": "Resource",
                "resource": {
                    "name": "ephemeral-storage",
                    "target": {"type": "AverageValue", "averageValue": "1Gi"},
                },
            }
        ],
        [
            {
                "type": "Resource",
                "resource": {
                    "name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "1"},
                },
            }
        ],
        [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "target": {"type": "Value", "averageValue": "100m"}},
            }
        ],
        [
            {
                "type": "ContainerResource",
                "containerResource": {
                    "name": "cpu",
                    "container": "web",
                    "target": {"type": "Utilization", "averageUtilization": 50},
                },
            }
        ],
    ),
    "scaleTargetRef": (
        {"kind": "Deployment", "name": ""},
        {"kind": "", "name": "web"},
        {"kind": "Deployment", "name": "a/b"},
        {"kind": "Deployment", "name": "missing"},
        {"kind": "StatefulSet", "name": "web"},
    ),
    "stabilizationWindowSeconds": (0, 3600, 3601, -1),
    "periodSeconds": (0, 1800, 1801),
    "maxSurge": (0, "0%", 2**31, "150%", "101%", "-1%", "abc", "9" * 30 + "%"),
    "maxUnavailable": (0, "0%", "100%", "101%", 2**31, "-5%", "5.5%"),
    "minAvailable": (0, "100%", "101%", 2**31, "-5%"),
    "revisionHistoryLimit": (-1, 0, 2**31),
    "progressDeadlineSeconds": (0, 1, 5, -1, 2**31),
    "minReadySeconds": (600, 599, -1, 2**31),
    "restartPolicy": ("Always", "OnFailure", "Never", "Bogus"),
    "images": ({"web": ""}, {"nope": "x:1"}, {}, {"web": "a" * 5000}),
    "at": ("0s", "-1m", "100000h", "1ns", "29m59s"),
    "name": ("a" * 52, "a" * 53, "a" * 64, "A", "a/b", ""),
}
# Where the sweep and gRPC seeds' addresses go, and what they become.
NASTY_ADDRESSES = (
    "tls://127.0.0.1:8786",
    "tls://127.0.0.1:1",
    "tls://",
    "tls://:",
    "tls://[::1",
    "tls://host:99999",
    "wss://127.0.0.1:1",
    "tcp://127.0.0.1:1",
    "tcp://:",
    "inproc://x",
    "ucx://127.0.0.1:1",
    "bogus://x",
    "127.0.0.1",
    "",
    "ünï://x:1",
    "tls://" + "a" * 5000 + ":1",
)
NASTY_GRPC_URLS = (
    "127.0.0.1:1",
    "",
    "::::",
    "[::1",
    "host:99999",
    "dns:///x",
    "unix:/nonexist",
    "ünï:1",
    "a" * 5000,
)


def cases(seeds: tuple[Seed, ...] = SEEDS):  # -> SearchStrategy[Case]; hypothesis is imported
    # late so the worker never loads it
    from hypothesis import strategies as st

    @st.composite
    def build(draw) -> Case:
        seed = draw(st.sampled_from(seeds))
        documents = {name: copy.deepcopy(_documents(path)) for name, path in seed.files.items()}
        case = Case(
            seed=f"{seed.command} {', '.join(p.name for p in seed.files.values())}",
            argv=list(seed.argv),
            files={name: path.read_bytes() for name, path in seed.extra.items()},
            mutations=[],
        )
        texts: dict[str, bytes] = {}
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(("structure",) * 6 + ("domain",) * 3 + ("text", "flag", "aside")))
            if kind == "domain":
                name = draw(st.sampled_from(sorted(documents)))
                case.mutations.append(f"{name}: {_mutate_domain(draw, documents[name])}")
            elif kind == "flag" and (seed.command == "sweep" or GRPC_URL in case.argv):
                case.mutations.append(_mutate_address(draw, case.argv))
            elif kind == "structure":
                name = draw(st.sampled_from(sorted(documents)))
                case.mutations.append(f"{name}: {_mutate_structure(draw, documents[name])}")
            elif kind == "text":
                name = draw(st.sampled_from(sorted(seed.files)))
                texts[name], what = _broken_text(draw, documents[name])
                case.mutations.append(f"{name}: {what}")
                case.broken_file = name
            elif kind == "flag":
                case.mutations.append(_mutate_flags(draw, case.argv, sorted(seed.files)))
            else:  # a file made a directory, or a file the seed only reads (a trace) broken
                name = draw(st.sampled_from(sorted([*seed.files, *seed.extra])))
                if name in seed.extra and draw(st.booleans()):
                    broken = BROKEN_USAGE_CSV if name in USAGE_TRACES else BROKEN_CSV
                    case.files[name] = draw(st.sampled_from(broken))
                    case.mutations.append(f"{name}: broken CSV")
                else:
                    case.directories.append(name)
                    case.mutations.append(f"{name}: a directory")
                    case.broken_file = name
        for name, docs in documents.items():
            as_json = draw(st.booleans()) if len(docs) == 1 else False
            # (an empty text is a text: `or` would put the unbroken documents back)
            case.files[name] = texts[name] if name in texts else _serialize(docs, as_json)
        for name in case.directories:
            case.files.pop(name, None)
        if seed.command == "sweep" or any(not m.startswith(f"{case.broken_file}: ") for m in case.mutations):
            # (no scheduler answers the sweep's address: a scenario that survived its breaking, a
            # cut that is still YAML, is followed by an error naming the address, not the file)
            case.broken_file = None
        return case

    return build()


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into `value`, parents first, in document order; a loop, not recursion, since a
    mutation may have nested a value hundreds deep."""
    stack: list[tuple[tuple, Any]] = [(prefix, value)]
    while stack:
        path, node = stack.pop()
        yield path
        if isinstance(node, dict):
            children = [((*path, key), child) for key, child in node.items()]
        elif isinstance(node, list):
            children = [((*path, index), child) for index, child in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))


# The deepest a mutated document may get. Copying and writing a value recurse once or more per
# level, and hypothesis runs a draw with a recursion limit it sets from the caller's depth: two
# values nested 600 deep on top of each other overflowed it on one run of a draw and not on its
# replay, which stops the whole campaign (FlakyStrategyDefinition, seed 20261130).
MAX_NESTING = 650


def _mutate_structure(draw, documents: list[Any]) -> str:
    from hypothesis import strategies as st

    if not documents:
        documents.append({})
    # Inside the documents; whole documents only once earlier mutations have emptied them.
    every_path = list(_paths(documents))
    deepest = max(map(len, every_path))
    paths = [p for p in every_path if len(p) > 1] or [(i,) for i in range(len(documents))]
    path = draw(st.sampled_from(paths))
    parent = documents
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    where = "/".join(map(str, path))
    action = draw(st.sampled_from(("replace",) * 4 + ("delete", "invent", "duplicate", "nest", "retype")))
    if action == "replace":
        # A copy: the mutable ones ([], {}) would otherwise be shared with later mutations, which
        # would change NASTY_VALUES itself and make the next draws differ (hypothesis then stops
        # with FlakyStrategyDefinition, as seeds 20261127 and 20261128 did).
        value = copy.deepcopy(draw(st.sampled_from(NASTY_VALUES)))
        parent[key] = value
        return f"{where} = {_short(value)}"
    if action == "delete":
        del parent[key]
        return f"delete {where}"
    if action == "invent":
        invented = draw(st.sampled_from(("unknwon", "spec", "metadata", "", "kind", "0")))
        value = copy.deepcopy(draw(st.sampled_from(NASTY_VALUES)))
        if isinstance(parent[key], dict):
            parent[key][invented] = value
        elif isinstance(parent, dict):
            parent[invented] = value
        else:
            parent[key] = {invented: value}
        return f"invent {invented!r} at {where}"
    if action == "duplicate":
        if isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
            return f"duplicate {where}"
        parent[key] = [parent[key], parent[key]]
        return f"{where} = a list of itself twice"
    if action == "nest":
        depth = draw(st.sampled_from([d for d in (3, 50, 600) if deepest + d <= MAX_NESTING] or [3]))
        value = parent[key]
        for _ in range(depth):
            value = [value]
        parent[key] = value
        return f"{where} nested {depth} deep"
    parent[key] = str(parent[key]) if not isinstance(parent[key], str) else {"value": parent[key]}
    return f"{where} changes type"


def _mutate_domain(draw, documents: list[Any]) -> str:
    """A field of the newer kinds given a value of its own domain (a schedule that never fires, a
    time in year 9999, minReplicas 0, ...); where the documents have no such field, a structure
    mutation instead."""
    from hypothesis import strategies as st

    paths = [p for p in _paths(documents) if p and isinstance(p[-1], str) and p[-1] in DOMAIN_VALUES]
    if not paths:
        return _mutate_structure(draw, documents)
    path = draw(st.sampled_from(paths))
    parent = documents
    for key in path[:-1]:
        parent = parent[key]
    value = copy.deepcopy(draw(st.sampled_from(DOMAIN_VALUES[path[-1]])))
    parent[path[-1]] = value
    return f"{'/'.join(map(str, path))} = {_short(value)}"


def _mutate_address(draw, argv: list[str]) -> str:
    """The Dask scheduler's or the gRPC expander's address replaced, --insecure maybe added."""
    from hypothesis import strategies as st

    if "--scheduler-address" in argv:
        index = argv.index("--scheduler-address") + 1
        argv[index] = draw(st.sampled_from(NASTY_ADDRESSES))
        if draw(st.booleans()):
            argv.append("--insecure")
        return f"--scheduler-address {_short(argv[index])}{' --insecure' if argv[-1] == '--insecure' else ''}"
    index = argv.index(GRPC_URL)
    argv[index] = f"--set=grpc-expander-url={draw(st.sampled_from(NASTY_GRPC_URLS))}"
    return f"{_short(argv[index])}"


def _broken_text(draw, documents: list[Any]) -> tuple[bytes, str]:
    from hypothesis import strategies as st

    text = _serialize(documents, as_json=False)
    kind = draw(
        st.sampled_from(
            (
                "empty",
                "blank",
                "binary",
                "latin-1",
                "cut",
                "deep flow",
                "deep block",
                "deep json",
                "alias bomb",
                "tab",
            )
        )
    )
    if kind == "empty":
        return b"", kind
    if kind == "blank":
        return b"  \n\n# nothing\n", kind
    if kind == "binary":
        return bytes(draw(st.binary(min_size=1, max_size=64))) + text[:200], kind
    if kind == "latin-1":
        return text.replace(b"a", b"\xe4", 1), kind
    if kind == "cut":
        return text[: draw(st.integers(1, max(1, len(text) - 1)))], kind
    if kind == "deep flow":
        depth = draw(st.sampled_from((1000, 100_000)))
        return b"x: " + b"[" * depth + b"]" * depth + b"\n", f"{kind} {depth}"
    if kind == "deep json":
        return b'{"items": ' + b"[" * 1000 + b"]" * 1000 + b"}", kind
    if kind == "deep block":
        return b"- " * 100_000 + b"x\n", kind
    if kind == "alias bomb":
        lines = [b"a0: &a0 {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}"]
        for level in range(1, 9):
            items = b", ".join([b"*a%d" % (level - 1)] * 10)
            lines.append(b"a%d: &a%d {kind: List, items: [%s]}" % (level, level, items))
        return b"kind: List\nitems: [*a8]\nanchors:\n" + b"\n".join(b"  " + line for line in lines), kind
    return text.replace(b"  ", b"\t", 1), kind


def _mutate_flags(draw, argv: list[str], files: list[str]) -> str:
    from hypothesis import strategies as st

    flags = [i for i, part in enumerate(argv) if part.startswith("--") and i + 1 < len(argv)]
    action = draw(st.sampled_from(("value", "path", "unknown", "twice", "drop")))
    if action == "value" and flags:
        index = draw(st.sampled_from(flags)) + 1
        if argv[index - 1] in ("--node-groups", "--nodeqos", "--out"):
            argv[index] = draw(st.sampled_from(BAD_PATHS))
        elif not argv[index].startswith("--"):
            argv[index] = draw(st.sampled_from(NASTY_FLAG_VALUES))
        return f"{argv[index - 1]} {argv[index]!r}"
    named = [name for name in files if name in argv]
    if action == "path" and named:
        index = argv.index(draw(st.sampled_from(named)))
        argv[index] = draw(st.sampled_from(BAD_PATHS))
        return f"file argument {argv[index]!r}"
    if action == "twice" and argv[0] in ("schedule", "downscale"):
        argv.insert(2, argv[1])
        return "the same file twice"
    if action == "drop" and flags:
        index = draw(st.sampled_from(flags))
        del argv[index : index + 2]
        return "drop a flag"
    extra = (
        "--frobnicate",
        "--seed=abc",
        "--seed=99999999999999999999999",
        "--replicas=-1",
        "--set=scan-interval=1ns",
        "--set=max-nodes-total=99999999999999999999",
        "--set=scale-down-utilization-threshold=nan",
        "--set=nope=1",
        "-x",
        "--",
    )
    argv.append(draw(st.sampled_from(extra)))
    return f"extra {argv[-1]!r}"


def _serialize(documents: list[Any], as_json: bool) -> bytes:
    if as_json:
        return json.dumps(documents[0], allow_nan=True).encode()
    try:
        return yaml.dump_all(documents, Dumper=yaml.CSafeDumper, allow_unicode=True).encode()
    except RecursionError:  # PyYAML's representer recurses: write deep values as JSON flow text
        return json.dumps(documents[0] if len(documents) == 1 else documents).encode()


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- running ---------------------------------------------------------------------------------


@dataclass
class Result:
    code: int | None  # exit code, or None when killed by a signal or the time limit
    signal: int | None
    timed_out: bool
    stderr: str
    seconds: float


def outcome(case: Case, result: Result) -> tuple[str, str]:
    """(outcome, why) for one input: one of OUTCOMES, and what was wrong if it failed."""
    if result.timed_out:
        return "hang", f"over the time limit ({result.seconds:.0f}s)"
    if result.signal is not None:
        return "crash", f"killed by {signal.Signals(result.signal).name}"
    if "Traceback" in result.stderr or result.code not in (0, 2):
        last = result.stderr.strip().splitlines()[-1:] or [""]
        return "traceback", f"exit {result.code}: {last[0][:200]}"
    if result.code == 0:
        return "ok", ""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("kubetide: error: ")]
    others = [
        line
        for line in lines
        if not line.startswith(("kubetide: error: ", "kubetide: warning: ", "  (see '"))
    ]
    if len(errors) != 1 or others:
        return "bad-message", f"{len(errors)} error lines, {len(others)} others: {result.stderr[:300]!r}"
    if case.broken_file and case.broken_file not in errors[0] and case.broken_file in case.argv:
        return "bad-message", f"does not name {case.broken_file}: {errors[0][:300]}"
    return "error", ""


class Worker:
    """A process that has imported kubetide and forks a child per input (run with --worker)."""

    def __init__(self) -> None:
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "160"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.fuzz", "--worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, case: Case, timeout: float) -> Result:
        job = {
            "argv": case.argv,
            "directories": case.directories,
            "files": {name: base64.b64encode(data).decode() for name, data in case.files.items()},
            "timeout": timeout,
        }
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        reply = self.process.stdout.readline()
        if not reply:  # the harness's own bug: every input runs in a child the worker outlives
            raise RuntimeError(f"the fuzz worker died (exit {self.process.wait()})")
        return Result(**json.loads(reply))

    def close(self) -> None:
        if self.process.stdin is not None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        self.process.wait(timeout=30)


def run_cases(
    cases_: list[Case], jobs: int, timeout: float, on_result: Callable[[Case, Result], None]
) -> None:
    """Run every case on `jobs` workers in parallel; `on_result` is called from worker threads."""
    pending: queue.Queue[Case] = queue.Queue()
    for case in cases_:
        pending.put(case)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def drain() -> None:
        worker = Worker()
        try:
            while not errors:
                try:
                    case = pending.get_nowait()
                except queue.Empty:
                    return
                result = worker.run(case, timeout)
                with lock:
                    on_result(case, result)
        except BaseException as exc:  # re-raised by the caller's thread, below
            errors.append(exc)
        finally:
            worker.close()

    threads = [threading.Thread(target=drain) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


def draw(strategy: Any, count: int, seed: int) -> list[Any]:
    """`count` examples of a hypothesis strategy, the same ones for the same seed (shared with
    benchmarks/fuzz_scenarios.py)."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    found: list[Any] = []

    @hypothesis_seed(seed)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(example: Any) -> None:
        found.append(example)

    collect()
    return found[:count]


def generate(count: int, seed: int, seeds: tuple[Seed, ...] = SEEDS) -> list[Case]:
    """`count` inputs, the same ones for the same seed (mutations of `seeds`, by default all)."""
    return draw(cases(seeds), count, seed)


# -- the worker ------------------------------------------------------------------------------


def _worker() -> None:
    from kubetide.cli import main as cli

    cli.build_parser()  # imports every subcommand
    for module in (
        "kubetide.sim.runtime.simulation",
        "kubetide.sim.report.output",
        "kubetide.sim.spec.scenario",
    ):
        __import__(module)  # what `simulate` imports when it runs
    for line in sys.stdin:
        job = json.loads(line)
        result = _run_in_child(cli.main, job["argv"], job["files"], job["directories"], job["timeout"])
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def _run_in_child(
    main: Callable, argv: list[str], files: dict[str, str], directories: list[str], timeout: float
) -> dict:
    directory = Path(tempfile.mkdtemp(prefix="kubetide-fuzz-"))
    try:
        for name in directories:
            (directory / name).mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            path = directory / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(base64.b64decode(data))
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _child(main, argv, directory, timeout)
        status, timed_out = _wait(pid, started + timeout)
        return {
            "code": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) and not timed_out else None,
            "timed_out": timed_out,
            "stderr": _kept_lines((directory / ".stderr").read_text(errors="replace")),
            "seconds": time.monotonic() - started,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _kept_lines(stderr: str) -> str:
    """What is kept of a child's stderr: every line, each cut at 300 characters (a warning that
    quotes a 5,000-character value would otherwise push the error line out of a cut at a size)."""
    return "\n".join(line[:300] for line in stderr.splitlines()[:200])


def _child(main: Callable, argv: list[str], directory: Path, timeout: float) -> None:
    """In the forked child: limits, redirected output, the CLI, and an exit that skips cleanup."""
    code = 1
    try:
        os.chdir(directory)
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        cpu = int(timeout) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        for fd, name in ((1, ".stdout"), (2, ".stderr")):
            handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(handle, fd)
            os.close(handle)
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except BaseException:  # what Python would print for an uncaught exception
            traceback.print_exc()
            code = 1
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code if isinstance(code, int) else 1)


def _wait(pid: int, deadline: float) -> tuple[int, bool]:
    delay = 0.001
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, False
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1], True
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


# -- the command -----------------------------------------------------------------------------


def campaign(
    inputs: int, seed: int, jobs: int, timeout: float, save: Path | None, seeds: tuple[Seed, ...] = SEEDS
) -> Counter[str]:
    counts: Counter[str] = Counter()
    batch = 250  # generated and run in batches: a case holds its files' bytes
    started = time.monotonic()
    for first in range(0, inputs, batch):
        batch_cases = generate(min(batch, inputs - first), seed + first, seeds)

        def record(case: Case, result: Result) -> None:
            kind, why = outcome(case, result)
            counts[kind] += 1
            if kind in FAILURES:
                print(f"{kind}: {case.describe()}: {why}", flush=True)
                if save is not None:
                    _save(save, case, kind, sum(counts.values()))

        run_cases(batch_cases, jobs, timeout, record)
        done = sum(counts.values())
        print(f"{done} inputs in {time.monotonic() - started:.0f}s: {_summary(counts)}", flush=True)
    return counts


def _save(directory: Path, case: Case, kind: str, number: int) -> None:
    target = directory / f"{number:05d}-{kind}"
    target.mkdir(parents=True, exist_ok=True)
    for name, data in case.files.items():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_bytes(data)
    for name in case.directories:
        (target / name).mkdir(parents=True, exist_ok=True)
    (target / "README").write_text(f"kubetide {' '.join(case.argv)}\n{case.describe()}\n")


def _summary(counts: Counter[str]) -> str:
    return ", ".join(f"{name} {counts[name]}" for name in OUTCOMES)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="how many inputs (default 10,000)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers in parallel")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per input (default 60)")
    parser.add_argument("--save", type=Path, help="save each failing input in this directory")
    parser.add_argument(
        "--new-kinds",
        action="store_true",
        help="mutate only the newer kinds' seeds (CronJobs, HPAs, usage traces, rollouts, addresses)",
    )
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    seeds = NEW_KIND_SEEDS if args.new_kinds else SEEDS
    counts = campaign(args.inputs, args.seed, args.jobs, args.timeout, args.save, seeds)
    print(f"total: {sum(counts.values())} inputs: {_summary(counts)}")
    return 1 if any(counts[name] for name in FAILURES) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
