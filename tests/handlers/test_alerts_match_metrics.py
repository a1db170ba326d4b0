"""The shipped alerts fire on what the metrics really do in a failing cluster, and stay quiet on a healthy one.

The operator runs a real scenario against the API server; its metrics are scraped
(`dralloc.metrics.REGISTRY`, as Prometheus would) before and after, and every alert
expression of manifests-monitoring/monitoring.yaml is evaluated on those two scrapes by a small
evaluator of the PromQL the rules use: `agg [by (labels)] (selector)` and
`agg [by (labels)] (rate(selector[window]))` compared with a number, and `absent(...)`.
A rate is the counter's increase between the scrapes over the seconds between them
(the scenario stands for the rule's window); `for:` durations are not simulated, and
`absent(up...)` (about scraping, not about dralloc's metrics) is left to Prometheus.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for
from tests.manifests.rendered import find, load_monitoring

from dralloc import metrics
from dralloc.testing import cluster

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]
EXPRESSION = re.compile(
    r"^(?P<agg>sum|max)\s*(?:by\s*\((?P<by>[^)]*)\))?\s*\(\s*(?P<inner>.+)\)\s*(?P<op>>|<|>=|<=|==)\s*(?P<value>[\d.]+)$")
RATE = re.compile(r"^rate\((?P<selector>.+)\[(?P<window>\w+)\]\)$")
SELECTOR = re.compile(r"^(?P<name>\w+)(?:\{(?P<matchers>[^}]*)\})?$")
MATCHER = re.compile(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def scrape() -> tuple[float, Series]:
    out: Series = {}
    for family in text_string_to_metric_families(generate_latest(metrics.REGISTRY).decode()):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return time.monotonic(), out


def _select(series: Series, selector: str) -> Iterator[tuple[frozenset[tuple[str, str]], float]]:
    found = SELECTOR.match(selector.strip())
    assert found, f"selector not understood: {selector}"
    matchers = MATCHER.findall(found["matchers"] or "")
    for (name, labels), value in series.items():
        if name != found["name"]:
            continue
        given = dict(labels)
        ok = True
        for label, op, wanted in matchers:
            have = given.get(label, "")
            ok &= {"=": have == wanted, "!=": have != wanted,
                   "=~": re.fullmatch(wanted, have) is not None, "!~": re.fullmatch(wanted, have) is None}[op]
        if ok:
            yield labels, value


def evaluate(expr: str, before: tuple[float, Series], after: tuple[float, Series]) -> dict[frozenset[tuple[str, str]], float]:
    """The alert's result vector: the groups for which the comparison holds, with their values.

    `A + B > x` (two ungrouped aggregations summed) is `A > x` or'ed with `B > x` for non-negative
    A and B when x is 0, the only way the rules use it."""
    flat = " ".join(expr.split())
    if " + " in flat:
        parts, comparison = flat.rsplit(")", 1)[0] + ")", flat.rsplit(")", 1)[1]
        assert comparison.strip() == "> 0", f"expression not understood by the test's evaluator: {expr}"
        total = sum(v for part in parts.split(" + ") for v in evaluate(f"{part} >= 0", before, after).values())
        return {frozenset(): total} if total > 0 else {}
    found = EXPRESSION.match(flat)
    assert found, f"expression not understood by the test's evaluator: {expr}"
    inner = found["inner"].strip()
    rate = RATE.match(inner)
    values: list[tuple[frozenset[tuple[str, str]], float]]
    if rate:
        seconds = max(after[0] - before[0], 1e-9)
        old = dict(_select(before[1], rate["selector"]))
        values = [(labels, max(0.0, value - old.get(labels, 0.0)) / seconds)
                  for labels, value in _select(after[1], rate["selector"])]
    else:
        values = list(_select(after[1], inner))
    by = [b.strip() for b in (found["by"] or "").split(",") if b.strip()]
    groups: dict[frozenset[tuple[str, str]], list[float]] = {}
    for labels, value in values:
        key = frozenset((k, v) for k, v in labels if k in by)
        groups.setdefault(key, []).append(value)
    threshold = float(found["value"])
    compare = {">": float.__gt__, "<": float.__lt__, ">=": float.__ge__, "<=": float.__le__, "==": float.__eq__}
    result = {}
    for key, group in groups.items():
        total = sum(group) if found["agg"] == "sum" else max(group)
        if compare[found["op"]](total, threshold):
            result[key] = total
    return result


def alerts() -> dict[str, str]:
    rule = find(load_monitoring(), "PrometheusRule")
    return {r["alert"]: r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]
            if not r["expr"].startswith("absent(")}


def firing(before: tuple[float, Series], after: tuple[float, Series]) -> set[str]:
    return {name for name, expr in alerts().items() if evaluate(expr, before, after)}


def _queue(state: str) -> float:
    return sum(v for labels, v in _select(scrape()[1], f'dralloc_scheduling_queue_pods{{state="{state}"}}'))


def test_a_bad_class_fires_the_error_alerts_and_nothing_else(apiserver: Cluster, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("good", device_class=gpu),
                    cluster.template("bad", device_class=apiserver.name("missing"))])
    before = scrape()
    apiserver.seed([cluster.pod("bad-pod", template_name="bad"), cluster.pod("good-pod", template_name="good")])
    wait_for(lambda: helpers.node_of(apiserver, "good-pod"), what="the good pod bound")
    wait_for(lambda: _queue("error") == 1, what="the bad pod counted in the queue as 'error'")
    assert _queue("pending") == 0
    after = scrape()
    assert firing(before, after) == {"DrallocAllocationErrors", "DrallocPodsInError"}


def test_an_unschedulable_pod_fires_only_the_unschedulable_alert(apiserver: Cluster, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("two", count=2, device_class=gpu)])
    before = scrape()
    apiserver.seed([cluster.pod("too-big", template_name="two")])
    wait_for(lambda: _queue("unschedulable") == 1, what="the pod counted as unschedulable")
    after = scrape()
    assert firing(before, after) == {"DrallocPodsUnschedulable"}


def test_a_healthy_cluster_fires_nothing(apiserver: Cluster, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 2), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    before = scrape()
    apiserver.seed([cluster.pod("a", template_name="one"), cluster.pod("b", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "a") and helpers.node_of(apiserver, "b"), what="both pods bound")
    after = scrape()
    assert firing(before, after) == set()


def test_the_evaluator_understands_every_alert() -> None:
    empty: tuple[float, Series] = (0.0, {})
    for expr in alerts().values():
        evaluate(expr, empty, (1.0, {}))  # raises on an expression it cannot read
