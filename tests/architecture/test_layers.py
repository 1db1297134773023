"""The layering of docs/architecture.md is enforced by import-linter's contracts in pyproject.toml
(run by .ci/run as `lint-imports`). These tests prove the linter is live: the real tree keeps every
contract, and a copy of it with one planted violation per contract breaks each of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import kubetide

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(kubetide.__file__).parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# One violation per contract, each in a module of its own.
PLANTED = {
    "model/_planted_upward.py": "import kubetide.sim.runtime.engine\n",  # model may not import sim
    "sim/_planted_real_cluster.py": "import kubetide.kube\n",  # sim and kube are independent
    "sim/spec/_planted_runtime.py": "import kubetide.sim.runtime.world\n",  # the spec is below the runtime
    "autoscaler/_planted_http.py": "import urllib.request\n",  # decisions do no I/O
    # outside scaledown/, only its sub-packages' faces
    "autoscaler/_planted_scaledown_module.py": "import kubetide.autoscaler.scaledown.planning.planner\n",
    "scheduling/_planted_cycle_a.py": "from kubetide.scheduling import _planted_cycle_b\n",
    "scheduling/_planted_cycle_b.py": "from kubetide.scheduling import _planted_cycle_a\n",
}


def lint(cwd: Path, source_root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(source_root)}  # ahead of the editable install
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_tree_keeps_every_contract():
    result = lint(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def copy_tree(tmp_path: Path) -> Path:
    """A copy of the package and the contracts under tmp_path; returns the package's copy."""
    copy = tmp_path / "src" / "kubetide"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return copy


def test_the_contracts_hold_without_kube(tmp_path):
    # kube/ is optional in the contracts: a tree without it (as before the real-cluster work,
    # or a trimmed build) is checked, not refused.
    shutil.rmtree(copy_tree(tmp_path) / "kube", ignore_errors=True)
    result = lint(tmp_path, tmp_path / "src")
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_planted_violation_breaks_its_contract(tmp_path):
    copy = copy_tree(tmp_path)
    (copy / "kube").mkdir(exist_ok=True)
    (copy / "kube" / "__init__.py").touch()
    for path, text in PLANTED.items():
        (copy / path).write_text(text)
    result = lint(tmp_path, tmp_path / "src")
    out = result.stdout
    assert result.returncode != 0, out
    broken = out[out.index("Broken contracts") :]
    for contract in (
        "Layers: cli -> sweep",
        "The simulator in three parts",
        "The simulated cluster and the real one never depend on each other",
        "Decision code imports no HTTP client",
        "Outside scaledown/, code imports its sub-packages' faces, never their modules",
        "No import cycles between sibling modules",
    ):
        assert contract in broken, f"{contract!r} not reported broken:\n{out}"
    for module in (
        "_planted_upward",
        "_planted_real_cluster",
        "_planted_runtime",
        "_planted_http",
        "_planted_scaledown_module",
        "_planted_cycle_",
    ):
        assert module in broken, f"{module} not named:\n{out}"
