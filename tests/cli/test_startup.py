"""What each command imports before it does anything: `kubetide COMMAND --help` loads no heavy
library, and `plan --json` none that only drawing or a live cluster needs. Every command pays its
imports at start-up; these tests check what is loaded (sys.modules in a fresh interpreter), not
how long it takes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import kubetide.cli.main as cli_main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# Libraries no command's --help needs; the decision code's own (NumPy, the model's parsers) included.
HEAVY = (
    "numpy",
    "pydantic",
    "plotly",
    "rich",
    "yaml",
    "yaml_rs",
    "croniter",
    "kubernetes",
    "urllib3",
    "prometheus_client",
    "boto3",
    "botocore",
    "grpc",
    "dask",
    "distributed",
)
# What `plan --json` on a dump never uses: drawing, plotting, live clusters, clouds, extras; and
# cron schedules, on a dump (the example's) without CronJobs.
NOT_FOR_PLAN_JSON = (
    "plotly",
    "rich",
    "kubernetes",
    "urllib3",
    "boto3",
    "botocore",
    "grpc",
    "dask",
    "croniter",
)


def _loaded_after(argv: list[str], libraries: tuple[str, ...], depth: int = 1) -> list[str]:
    """The `libraries` that `kubetide *argv` has imported once it returns, in a fresh interpreter
    (each module named by its first `depth` dotted parts: 2 for kubetide's own packages)."""
    code = (
        "import contextlib, io, sys\n"
        "from kubetide.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        f"print(sorted({{'.'.join(m.split('.')[:{depth}]) for m in sys.modules}} & {set(libraries)!r}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return eval(done.stdout.splitlines()[-1])  # a list literal of names we printed


@pytest.mark.parametrize("command", [c.replace("_", "-") for c in cli_main.COMMANDS])
def test_a_commands_help_imports_no_heavy_library(command):
    assert _loaded_after([command, "--help"], HEAVY) == []


def test_plan_json_imports_nothing_for_drawing_or_live_clusters():
    argv = [
        "plan",
        str(EXAMPLES / "plan-cluster.yaml"),
        "--node-groups",
        str(EXAMPLES / "plan-node-groups.yaml"),
    ]
    assert _loaded_after([*argv, "--json"], NOT_FOR_PLAN_JSON) == []
    assert "rich" in _loaded_after(argv, ("rich",))  # the table is drawn by rich: the check can fail


def test_plans_unblock_budget_default_is_the_planners():
    """cli/plan.py spells the default out so that --help imports no planner."""
    from kubetide.autoscaler.scaledown.explanation import unblock_search
    from kubetide.cli import plan

    assert plan.UNBLOCK_BUDGET == unblock_search.UNBLOCK_BUDGET


def test_lazy_package_exports_are_the_submodules_objects():
    """Every name a package re-exports (a lazy one on first use) is there (what its __all__ and
    its imports, which type checkers read, say) and is its module's own object."""
    import ast
    import importlib

    for package in (
        "kubetide.model",
        "kubetide.snapshot",
        "kubetide.scheduling",
        "kubetide.workloads",
        "kubetide.autoscaler.scaledown",
        "kubetide.autoscaler.scaledown.planning",
        "kubetide.autoscaler.scaledown.actuation",
        "kubetide.autoscaler.scaledown.explanation",
        "kubetide.autoscaler.clusterstate",
    ):
        module = importlib.import_module(package)
        tree = ast.parse(Path(module.__file__).read_text())
        declared = {
            alias.name: node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module not in (None, "kubetide.lazy", "__future__", "typing")
            for alias in node.names
        }
        assert set(declared) == set(module.__all__), package
        for name, source in declared.items():
            assert getattr(module, name) is getattr(importlib.import_module(source), name), (package, name)
        with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
            module.NoSuchName  # noqa: B018 - the read is the test


def test_plan_json_does_not_import_the_simulator():
    """`plan` shares the simulator's work timer (kubetide.clock), not its modules: importing the
    simulator cost `plan` about 0.2 s CPU of start-up."""
    argv = [
        "plan",
        str(EXAMPLES / "plan-cluster.yaml"),
        "--node-groups",
        str(EXAMPLES / "plan-node-groups.yaml"),
    ]
    assert _loaded_after([*argv, "--json"], ("kubetide.sim", "kubetide.sweep"), depth=2) == []
