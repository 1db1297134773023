"""`kubectl kubetide plan`: the kubectl-kubetide console script plans the current context's cluster.

The console script is run as pyproject.toml declares it (module and function), from a directory
on PATH, as kubectl runs plugins: with kubectl's kubeconfig in $KUBECONFIG and no flag of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from controlplane import wait_until

pytestmark = pytest.mark.controlplane

ROOT = Path(__file__).resolve().parents[2]


def _plugin_on_path(tmp_path: Path) -> Path:
    """A `kubectl-kubetide` executable running the entry point pyproject.toml declares."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["kubectl-kubetide"].partition(":")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "kubectl-kubetide"
    script.write_text(
        f"#!{sys.executable}\n"
        f"import sys\nsys.path.insert(0, {str(ROOT / 'src')!r})\n"
        f"from {module} import {function}\nraise SystemExit({function}())\n"
    )
    script.chmod(0o755)
    return bin_dir


def _environment(tmp_path: Path, kubeconfig: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PATH": f"{_plugin_on_path(tmp_path)}{os.pathsep}{os.environ.get('PATH', '')}",
        "KUBECONFIG": str(kubeconfig),
        "HOME": str(tmp_path),  # no ~/.kube/config to fall back on
        "COLUMNS": "100",
    }


def _node_state(kube) -> dict:
    """What plan could change on a node: its labels and taints (KWOK's heartbeats and the node
    controller's annotations move the rest)."""
    return {
        n.metadata.name: (n.metadata.labels, sorted((t.key, t.effect) for t in n.spec.taints or []))
        for n in kube.core.list_node().items
    }


def _fake_node(kube, name: str):
    kube.create_fake_node(name, cpu="2", labels={"kubetide.io/node-group": "plugin"})
    kube.wait_node_ready(name)
    # Ready, and the node controller has lifted its not-ready taint: what plan sees stays put.
    wait_until(lambda: not kube.core.read_node(name).spec.taints, what=f"Node {name} untainted")


def test_the_console_script_plans_the_cluster_of_the_current_context(kube, tmp_path):
    _fake_node(kube, "plugin-a")
    before = _node_state(kube)
    env = _environment(tmp_path, kube.control_plane.kubeconfig_path)

    result = subprocess.run(
        ["kubectl-kubetide", "plan", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["kind"] == "PlanResult"
    assert plan["scale_down"]["nodes"]["plugin-a"]["node_group"] == "plugin"
    after = _node_state(kube)
    assert {name: after[name] for name in before} == before  # read-only: no taint or label


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_runs_it_as_the_kubetide_plugin(kube, tmp_path):
    _fake_node(kube, "plugin-b")
    env = _environment(tmp_path, kube.control_plane.kubeconfig_path)

    listed = subprocess.run(["kubectl", "plugin", "list"], env=env, capture_output=True, text=True)
    assert "kubectl-kubetide" in listed.stdout
    result = subprocess.run(
        ["kubectl", "kubetide", "plan"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "plugin-b" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_without_a_kubeconfig_it_says_so_in_one_line(tmp_path):
    env = _environment(tmp_path, tmp_path / "missing")
    result = subprocess.run(["kubectl-kubetide", "plan"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == (
        f"kubetide: error: kubectl kubetide: no kubeconfig to read (KUBECONFIG={tmp_path / 'missing'}: "
        "no such file)\n"
    )
