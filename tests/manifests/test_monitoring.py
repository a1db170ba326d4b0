"""The alerts and the dashboard query metrics dralloc really exports, with their real labels.

Names, label names and (for the label sets metrics.py initialises) label values are
read from the exposition of `dralloc.metrics.REGISTRY`, with a cluster source that
reports one series of each scrape-time gauge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.manifests.rendered import MANIFESTS, find, load_monitoring

from dralloc import metrics

MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
METRIC = re.compile(r"\b(dralloc_\w+)")


def exported() -> dict[str, dict[str, set[str]]]:
    """sample name -> label name -> values seen."""
    sample_source = {
        "resource_claims": [(("true", "false", "resource_claim_template"), 1.0)],
        "devices": [(("gpu.example.com", "gpu", state), 1.0) for state in ("total", "allocated", "free", "tainted")],
        "device_taints": [(("gpu.example.com", "gpu", "NoExecute"), 1.0)],
        "pools": [(("gpu.example.com", "gpu", "2-3"), 1.0)],
        "counters": [(("gpu.example.com", "gpu-0", "memory", state), 1.0) for state in ("total", "used")],
        "capacity": [(("nic.example.com", "nic", "bandwidth", state), 1.0) for state in ("total", "used")],
        "claim_states": [((state,), 1.0) for state in ("pending", "allocated", "reserved", "deallocating")],
        "queue": [(("pending",), 1.0)],
        "cel": [(("cached",), 1.0)],
    }
    metrics.set_cluster_source(lambda: sample_source)
    try:
        text = generate_latest(metrics.REGISTRY).decode()
    finally:
        metrics.set_cluster_source(None)
    out: dict[str, dict[str, set[str]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = out.setdefault(sample.name, {})
            for name, value in sample.labels.items():
                labels.setdefault(name, set()).add(value)
    return out


def alerts() -> list[dict[str, Any]]:
    rule = find(load_monitoring(), "PrometheusRule")
    return [r for group in rule["spec"]["groups"] for r in group["rules"]]


def dashboard() -> dict[str, Any]:
    return json.loads((MANIFESTS / "dashboard.json").read_text())


def expressions() -> Iterator[tuple[str, str]]:
    for alert in alerts():
        yield f"alert {alert['alert']}", alert["expr"]
    for panel in dashboard()["panels"]:
        for target in panel["targets"]:
            yield f"panel {panel['title']!r}", target["expr"]


@pytest.mark.parametrize(("where", "expr"), list(expressions()))
def test_queries_use_exported_metrics_and_labels(where: str, expr: str) -> None:
    series = exported()
    used = METRIC.findall(expr)
    assert used or "up{" in expr, f"{where}: no dralloc metric in {expr}"
    for name in used:
        assert name in series, f"{where}: {name} is not exported"
    labels = {label for name in used for label in series[name]}
    for group in GROUPING.findall(expr):
        for label in filter(None, (g.strip() for g in group.split(","))):
            assert label in labels, f"{where}: no metric in {used} has the label {label!r}"
    for label, op, value in MATCHER.findall(expr):
        if not used:
            continue
        assert label in labels, f"{where}: no metric in {used} has the label {label!r}"
        if op in ("=", "=~"):
            known = set().union(*(series[name].get(label, set()) for name in used))
            for alternative in value.split("|") if op == "=~" else [value]:
                assert alternative in known, f"{where}: {label}={alternative!r} never occurs ({sorted(known)})"


def test_alerts_are_the_promised_ones_and_complete() -> None:
    names = [a["alert"] for a in alerts()]
    assert {"DrallocPodsUnschedulable", "DrallocAllocationErrors", "DrallocApiConflictsHigh"} <= set(names)
    assert len(names) == len(set(names))
    unschedulable = next(a for a in alerts() if a["alert"] == "DrallocPodsUnschedulable")
    assert 'dralloc_scheduling_queue_pods{state="unschedulable"}' in unschedulable["expr"]
    assert unschedulable["for"] == "15m"
    for alert in alerts():
        assert re.fullmatch(r"\d+m", alert["for"]), alert["alert"]
        assert alert["labels"]["severity"] in ("warning", "critical")
        assert alert["annotations"]["summary"] and alert["annotations"]["description"]


def test_dashboard_has_the_promised_panels() -> None:
    board = dashboard()
    exprs = {p["title"]: " ".join(t["expr"] for t in p["targets"]) for p in board["panels"]}
    wanted = {
        "dralloc_allocation_attempts_total": "attempts by result",
        "dralloc_allocation_duration_seconds_bucket": "allocation latency",
        "dralloc_pod_placement_duration_seconds_bucket": "placement latency",
        "dralloc_scheduling_queue_pods": "queue by state",
        "dralloc_resource_claims": "claims",
        "dralloc_devices": "devices by state",
        "dralloc_api_conflicts_total": "conflicts",
        "dralloc_api_retries_total": "retries",
        "dralloc_resourceclaim_creates_total": "claim creates",
        "dralloc_batch_decisions_total": "batches decided as one",
        "dralloc_preemption_attempts_total": "preemptions",
        "dralloc_consolidations_total": "consolidations",
        "dralloc_consolidation_moves_total": "pods moved",
    }
    for metric, what in wanted.items():
        assert any(metric in e for e in exprs.values()), f"no panel shows {what}"
    for metric in ("dralloc_allocation_duration_seconds_bucket", "dralloc_pod_placement_duration_seconds_bucket"):
        panel = next(e for e in exprs.values() if metric in e)
        assert "histogram_quantile(0.5," in panel and "histogram_quantile(0.99," in panel
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    assert all(t["datasource"]["uid"] == "${datasource}" for p in board["panels"] for t in p["targets"])
