"""deploy/dashboards/kubetide.json: every series a panel (or a variable) queries is one kubetide
exports, under CA's names, so no panel stays empty for a typo or a metric kubetide lacks."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from kubetide.kube.metrics import AutoscalerMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "dashboards" / "kubetide.json"
# PromQL's own words in the dashboard's queries; everything else that looks like a name is a series.
PROMQL = {
    "sum", "by", "rate", "increase", "histogram_quantile", "time", "le", "job", "function", "state",
    "type", "reason", "gpu_name", "node_group_type", "eviction_result", "direction", "activity",
    "label_values", "instance",
}  # fmt: skip


SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count")}


def exported() -> set[str]:
    """The sample names /metrics has (or will have, for a labelled metric with no child yet: its
    # TYPE line is there from the start), as PromQL names them."""
    text = AutoscalerMetrics().exposition()[0].decode()
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + suffix for suffix in SUFFIXES.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


def queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    found = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    found += [v["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return found


def series_of(query: str) -> set[str]:
    without_strings = re.sub(r'"[^"]*"|\[[^\]]*\]|\{\{[^}]*\}\}', " ", query)
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", without_strings))
    return {name for name in names if name not in PROMQL}


def test_every_query_names_an_exported_series():
    available = exported()
    unknown = {
        query: sorted(series_of(query) - available) for query in queries() if series_of(query) - available
    }
    assert unknown == {}


def test_the_dashboard_shows_the_series_the_issue_asks_for():
    named = set().union(*(series_of(q) for q in queries()))
    for series in (
        "cluster_autoscaler_scaled_down_gpu_nodes_total",
        "cluster_autoscaler_scaled_down_nodes_total",
        "cluster_autoscaler_function_duration_seconds_bucket",
        "cluster_autoscaler_unremovable_nodes_count",
        "cluster_autoscaler_failed_scale_ups_total",
    ):
        assert series in named


def test_the_check_finds_a_misspelt_series():
    assert (
        series_of('sum by (reason) (increase(cluster_autoscaler_scaled_down_node_total{job="$job"}[5m]))')
        - exported()
    )
