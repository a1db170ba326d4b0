"""The PrometheusRule in manifests/ passes `promtool check rules`, and every alert passes `promtool test rules`.

The rule file is the PrometheusRule's `spec`, exactly as shipped. For every alert there is
a scenario of series as two replicas export them (the active one, and a standby whose
gauges are 0 and whose counters stand still): the alert is silent before its `for:` has
passed, fires after it with the labels and annotations the rules give it (templates
rendered as Prometheus renders them), and no other alert fires in that scenario. A healthy
cluster fires nothing. The scenarios are built here, not copied into a file, so an alert
added to manifests/ without a scenario fails `test_every_alert_has_a_scenario`.
"""

from __future__ import annotations

import math
import pathlib
import re
import subprocess
from typing import Any

import pytest
import yaml
from tests.monitoring import prometheus

Obj = dict[str, Any]
STEP = 60  # seconds between samples (promtool's interval)
LENGTH = 45  # samples per series: 45 minutes, longer than every `for:` plus its rate window
UP = 'up{job="dralloc", namespace="dralloc-system", service="dralloc-metrics", pod="%s"}'
ACTIVE, STANDBY = "dralloc-5d8f-a", "dralloc-5d8f-b"


def _flat(value: float) -> str:
    return f"{value:g}x{LENGTH}"


def _counting(per_minute: float, *, after: int = 0) -> str:
    """A counter flat at 0 for `after` minutes, then rising `per_minute` every minute."""
    head = f"0x{after} " if after else ""
    return f"{head}0+{per_minute:g}x{LENGTH - after}"


def healthy() -> dict[str, str]:
    """Both replicas up, queues empty, counters growing only on success."""
    series: dict[str, str] = {}
    for pod in (ACTIVE, STANDBY):
        series[UP % pod] = _flat(1)
        for state in ("pending", "waiting-for-claim", "backoff", "unschedulable", "error"):
            series[f'dralloc_scheduling_queue_pods{{pod="{pod}", state="{state}"}}'] = _flat(0)
        for result in ("allocated", "unschedulable", "error", "budget-exhausted"):
            rising = pod == ACTIVE and result in ("allocated", "unschedulable")
            series[f'dralloc_allocation_attempts_total{{pod="{pod}", result="{result}"}}'] = (
                _counting(30) if rising else _flat(0))
        for result in ("placed", "unfit", "budget-exhausted", "waiting", "error"):
            series[f'dralloc_gang_decisions_total{{pod="{pod}", result="{result}"}}'] = (
                _counting(2) if pod == ACTIVE and result == "placed" else _flat(0))
        for loop in ("scheduling", "lifecycle", "eviction", "health"):
            series[f'dralloc_loop_pass_failures_total{{pod="{pod}", loop="{loop}"}}'] = _flat(0)
        for operation in ("claim-status", "bind"):
            # A few conflicts are normal (another writer, a stale cache): 6 a minute stays far below 1/s.
            series[f'dralloc_api_conflicts_total{{pod="{pod}", operation="{operation}"}}'] = (
                _counting(6) if pod == ACTIVE else _flat(0))
        for status in ("success", "failure"):
            series[f'dralloc_resourceclaim_creates_total{{pod="{pod}", status="{status}"}}'] = (
                _counting(30) if pod == ACTIVE and status == "success" else _flat(0))
    return series


def _with(changes: dict[str, str]) -> dict[str, str]:
    series = healthy()
    series.update(changes)
    return series


def _active(metric: str, **labels: str) -> str:
    inner = ", ".join([f'pod="{ACTIVE}"', *(f'{k}="{v}"' for k, v in labels.items())])
    return f"{metric}{{{inner}}}"


# alert -> (series, the value its expression has once the scenario is steady, the labels it adds).
SCENARIOS: dict[str, tuple[dict[str, str], float, dict[str, str]]] = {
    # Both replicas stop answering scrapes after 5 minutes (up is 0 when a scrape fails).
    "DrallocDown": (_with({UP % ACTIVE: f"1x5 0x{LENGTH - 5}", UP % STANDBY: f"1x5 0x{LENGTH - 5}"}), 1.0, {}),
    # Three pods fit nowhere; the standby's queue stays 0 (max() across replicas).
    "DrallocPodsUnschedulable": (_with({
        _active("dralloc_scheduling_queue_pods", state="unschedulable"): _flat(3)}), 3.0, {}),
    "DrallocPodsInError": (_with({_active("dralloc_scheduling_queue_pods", state="error"): _flat(2)}), 2.0, {}),
    # A pod's claim names a class that does not exist: retried every 10 s at the backoff's cap.
    "DrallocAllocationErrors": (_with({
        _active("dralloc_allocation_attempts_total", result="error"): _counting(6, after=2)}), 0.1, {}),
    "DrallocLoopFailing": (_with({
        _active("dralloc_loop_pass_failures_total", loop="lifecycle"): _counting(60, after=2)}), 1.0,
        {"loop": "lifecycle"}),
    # 150 conflicts a minute on claim status writes: 2.5/s, plus the healthy 0.1/s on binds.
    "DrallocApiConflictsHigh": (_with({
        _active("dralloc_api_conflicts_total", operation="claim-status"): _counting(150, after=2)}), 2.6, {}),
    "DrallocClaimCreateFailures": (_with({
        _active("dralloc_resourceclaim_creates_total", status="failure"): _counting(12, after=2)}), 0.2, {}),
}
# Extra cases of one alert: another way its expression must be met.
VARIANTS: dict[str, tuple[str, dict[str, str], float, dict[str, str]]] = {
    # The ServiceMonitor selects nothing at all: no `up` series of dralloc's.
    "DrallocDown-never-scraped": ("DrallocDown", {k: v for k, v in healthy().items() if not k.startswith("up{")},
                                  1.0, {}),
    "DrallocAllocationErrors-budget": ("DrallocAllocationErrors", _with({
        _active("dralloc_allocation_attempts_total", result="budget-exhausted"): _counting(6, after=2)}), 0.1, {}),
    # A gang member's claim names a class that does not exist: the gang's decisions end in error
    # (dralloc_allocation_attempts_total counts single pods only).
    "DrallocAllocationErrors-gang": ("DrallocAllocationErrors", _with({
        _active("dralloc_gang_decisions_total", result="error"): _counting(6, after=2)}), 0.1, {}),
}


def _minutes(duration: str) -> int:
    found = re.fullmatch(r"(\d+)m", duration)
    assert found, f"for: {duration!r} (the scenarios are in whole minutes)"
    return int(found[1])


def _go_float(value: float) -> str:
    """Go's %v of a float64, as text/template prints {{ $value }}."""
    return f"{value:.15g}" if value != int(value) else str(int(value))


def humanize(value: float) -> str:
    """Prometheus's template function `humanize` (SI prefixes, 4 significant digits)."""
    if value == 0 or math.isnan(value) or math.isinf(value):
        return f"{value:.4g}"
    prefix = ""
    if abs(value) >= 1:
        for p in ("k", "M", "G", "T", "P", "E", "Z", "Y"):
            if abs(value) < 1000:
                break
            prefix, value = p, value / 1000
    else:
        for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
            if abs(value) >= 1:
                break
            prefix, value = p, value * 1000
    return f"{value:.4g}{prefix}"


def render(template: str, value: float, labels: dict[str, str]) -> str:
    """The templates the rules use; any other template makes the test fail (it would go unchecked)."""
    text = template.replace("{{ $value | humanize }}", humanize(value)).replace("{{ $value }}", _go_float(value))
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m[1]], text)
    assert "{{" not in text, f"a template the test cannot render: {template}"
    return text


def _expected(alert: Obj, value: float, extra: dict[str, str]) -> Obj:
    labels = {**extra, **alert.get("labels", {})}
    return {"exp_labels": labels,
            "exp_annotations": {k: render(v, value, {**extra, **labels}) for k, v in alert["annotations"].items()}}


def _case(rules: Obj, name: str, series: dict[str, str], value: float, extra: dict[str, str]) -> Obj:
    alert = next(a for a in prometheus.alerts(rules) if a["alert"] == name)
    wait = _minutes(alert["for"])
    # Series that change do so at minute 5 at the latest, and a rate needs two samples: the
    # expression holds from minute 6, so the alert fires from minute 6 + for.
    silent_until, fires_at = wait - 1, 6 + wait + 1
    checks: list[Obj] = [{"eval_time": f"{silent_until}m", "alertname": name, "exp_alerts": []},
                         {"eval_time": f"{fires_at}m", "alertname": name, "exp_alerts": [_expected(alert, value, extra)]}]
    checks += [{"eval_time": f"{fires_at}m", "alertname": other["alert"], "exp_alerts": []}
               for other in prometheus.alerts(rules) if other["alert"] != name]
    return {"name": name, "interval": f"{STEP}s",
            "input_series": [{"series": s, "values": v} for s, v in series.items()], "alert_rule_test": checks}


def unit_tests(rules: Obj, rules_file: pathlib.Path) -> Obj:
    tests = [_case(rules, name, *scenario) for name, scenario in SCENARIOS.items()]
    tests += [{**_case(rules, alert, series, value, extra), "name": variant}
              for variant, (alert, series, value, extra) in VARIANTS.items()]
    tests.append({"name": "healthy", "interval": f"{STEP}s",
                  "input_series": [{"series": s, "values": v} for s, v in healthy().items()],
                  "alert_rule_test": [{"eval_time": f"{m}m", "alertname": a["alert"], "exp_alerts": []}
                                      for a in prometheus.alerts(rules) for m in (10, 30, LENGTH - 1)]})
    return {"rule_files": [str(rules_file)], "evaluation_interval": f"{STEP}s", "tests": tests}


def test_promtool_checks_the_shipped_rules(prometheus_binaries: prometheus.Binaries, rules_path: pathlib.Path) -> None:
    done = subprocess.run([prometheus_binaries.promtool, "check", "rules", str(rules_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    count = len(prometheus.alerts(prometheus.rule_file()))
    assert f"SUCCESS: {count} rules found" in done.stdout


def test_every_alert_has_a_scenario() -> None:
    assert {a["alert"] for a in prometheus.alerts(prometheus.rule_file())} == set(SCENARIOS)


def test_every_alert_fires_on_its_scenario_and_only_there(prometheus_binaries: prometheus.Binaries,
                                                         rules_path: pathlib.Path, tmp_path: pathlib.Path) -> None:
    tests = tmp_path / "dralloc-rules.test.yaml"
    tests.write_text(yaml.safe_dump(unit_tests(prometheus.rule_file(), rules_path), sort_keys=False))
    done = subprocess.run([prometheus_binaries.promtool, "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_test_fails_when_an_alert_does_not_fire(prometheus_binaries: prometheus.Binaries,
                                                         tmp_path: pathlib.Path) -> None:
    """The harness can fail: with one alert's expression made impossible, its scenario fails."""
    rules = prometheus.rule_file()
    broken = next(a for a in prometheus.alerts(rules) if a["alert"] == "DrallocPodsUnschedulable")
    broken["expr"] = f"({broken['expr']}) and on() vector(0) > 1"
    rules_file = prometheus.write_rules(rules, tmp_path / "broken-rules.yaml")
    tests = tmp_path / "broken.test.yaml"
    tests.write_text(yaml.safe_dump(unit_tests(rules, rules_file), sort_keys=False))
    done = subprocess.run([prometheus_binaries.promtool, "test", "rules", str(tests)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "alertname: DrallocPodsUnschedulable" in done.stdout + done.stderr


@pytest.mark.parametrize(("value", "text"), [(0.1, "100m"), (2.6, "2.6"), (1234.0, "1.234k"), (0.0, "0")])
def test_humanize_is_prometheus_humanize(value: float, text: str) -> None:
    assert humanize(value) == text
