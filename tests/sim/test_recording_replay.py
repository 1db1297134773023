"""A recording (`kubetide record`) replayed by `scenario from-cluster --trace DIR` (issue 38,
item 5): an hour in which a ReplicaSet grows fourfold then shrinks, with an HPA on it, usage and
finished Job pods. The live recording is tests/kube/test_record_live.py."""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml
from random_clusters import random_cluster

from kubetide.cli.main import main
from kubetide.cli.scenario import export_scenario
from kubetide.cloud.static import parse_groups
from kubetide.kube.record import Recording, write_recording
from kubetide.sim import Simulation, load_scenario

ROWS = [(0.0, 2), (600.0, 8), (2400.0, 1)]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def an_hour(tmp_path, *, usage: bool = True):
    dump, groups, _ = random_cluster(3)
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "app0", "namespace": "prod"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "app0"},
            "minReplicas": 1,
            "maxReplicas": 20,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }
    dump["items"].append(hpa)
    start, _ = export_scenario(
        [dump], "test-cluster", parse_groups({"nodeGroups": groups}, "groups"), duration=3600
    )
    recording = Recording(
        source="https://test-cluster", started="2026-12-04T00:00:00Z", interval=15, seconds=3600
    )
    recording.replicas[("ReplicaSet", "prod", "app0")] = list(ROWS)
    recording.replicas[("ReplicaSet", "prod", "app1")] = [(0.0, 1)]  # never moved: no trace
    recording.replicas[("Deployment", "prod", "born-later")] = [(100.0, 1), (200.0, 3)]
    if usage:
        recording.usage = [(0.0, "prod/app0", 200, 2**28), (1800.0, "prod/app0", 900, 2**29)]
    recording.job_runs = [
        (10.0, "prod", "batch", 300.0),
        (20.0, "prod", "batch", 500.0),
        (30.0, "prod", "batch", 100.0),
    ]
    recording.node_groups = [(0.0, "a", 2)]
    directory = tmp_path / "recording"
    directory.mkdir()
    write_recording(recording, directory, start)
    return directory


def test_an_hour_replays_with_its_replicas_usage_and_job_runs(tmp_path):
    directory = an_hour(tmp_path)
    out = tmp_path / "elsewhere" / "replay.yaml"
    out.parent.mkdir()
    code, stdout, stderr = cli("scenario", "from-cluster", "--trace", str(directory), "--out", str(out))
    assert code == 0, stderr
    assert "ReplicaSet prod/app0" in stdout and "prod/app0" in stdout.split("HPAs left out")[1]
    assert "born-later was created while recording" in stdout
    spec = yaml.safe_load(out.read_text())["spec"]
    assert spec["duration"] == "1h"
    assert spec["traces"] == [
        {
            "kind": "ReplicaSet",
            "namespace": "prod",
            "name": "app0",
            "file": "../recording/replicas/replicaset-prod-app0.csv",
        }
    ]
    assert not [o for o in spec["objects"] if o["kind"] == "HorizontalPodAutoscaler"]
    assert spec["usage"] == [{"trace": "../recording/usage.csv"}]
    assert spec["cluster"]["jobRunDuration"] == "5m"  # the median of 300 s, 500 s, 100 s

    simulation = Simulation(load_scenario(out))
    result = simulation.run()
    scaled = [(e["time"], e["message"]) for e in result.events if e.get("reason") == "Scaled"]
    assert scaled == [(t, f"replicas -> {r}") for t, r in ROWS]
    assert result.summary["invariants"]["pods_lost"] == 0
    assert len([p for p in simulation.world.pods() if p.labels.get("app") == "app0"]) == 1


def test_a_directory_that_is_not_a_recording_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    code, _, stderr = cli("scenario", "from-cluster", "--trace", str(tmp_path / "empty"))
    assert code == 2
    assert stderr.strip().count("\n") == 0 and "recording.yaml: no such file" in stderr


def test_trace_with_a_dump_is_refused(tmp_path):
    directory = an_hour(tmp_path, usage=False)
    code, _, stderr = cli("scenario", "from-cluster", "examples/cluster.yaml", "--trace", str(directory))
    assert code == 2 and "DUMP cannot be given with it" in stderr


@pytest.mark.parametrize("interval", ["0s", "2h", "soon"])
def test_record_refuses_a_bad_interval_before_connecting(tmp_path, interval):
    code, _, stderr = cli("record", "--for", "1m", "--out", str(tmp_path / "r"), "--interval", interval)
    assert code == 2 and "--interval" in stderr and stderr.count("\n") == 1
    assert not (tmp_path / "r").exists()
