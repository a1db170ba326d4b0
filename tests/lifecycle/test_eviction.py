"""NoExecute eviction decisions and effective taints, with time passed in."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from dralloc.allocation import taintrules
from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.lifecycle import eviction
from dralloc.model import claims as model_claims
from dralloc.model import classes, conversion, devices, taints
from dralloc.model import pods as model_pods

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DRIVER = "gpu.example.com"
GPU0 = DeviceID(DRIVER, "node-a", "gpu-0")
GPU1 = DeviceID(DRIVER, "node-a", "gpu-1")


def taint(effect: str = "NoExecute", key: str = "broken", *, added: str | None = None) -> taints.DeviceTaint:
    raw: dict[str, Any] = {"key": key, "value": "true", "effect": effect}
    if added:
        raw["timeAdded"] = added
    return conversion.parse_as(taints.DeviceTaint, raw)


def effective(*found: tuple[DeviceID, taints.DeviceTaint, str]) -> dict[DeviceID, tuple[taintrules.EffectiveTaint, ...]]:
    out: dict[DeviceID, list[taintrules.EffectiveTaint]] = {}
    for device, t, rule in found:
        source = taintrules.SOURCE_RULE if rule else taintrules.SOURCE_SLICE
        out.setdefault(device, []).append(taintrules.EffectiveTaint(t, source, rule))
    return {k: tuple(v) for k, v in out.items()}


def pod(name: str, *, node: str | None = "node-a", deleting: bool = False, phase: str | None = None,
        claim: str | None = None) -> model_pods.Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    spec: dict[str, Any] = {"containers": [{"name": "main"}],
                            "resourceClaims": [{"name": "gpus", "resourceClaimName": claim or f"{name}-claim"}]}
    if node:
        spec["nodeName"] = node
    status = {"phase": phase} if phase else {}
    return conversion.parse_as(model_pods.Pod, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
                                                "status": status})


def claim(name: str, *users: str, device: DeviceID = GPU0, tolerations: list[dict[str, Any]] | None = None,
          device_class: str = "gpu") -> model_claims.ResourceClaim:
    result: dict[str, Any] = {"request": "gpu", "driver": device.driver, "pool": device.pool, "device": device.device}
    if tolerations:
        result["tolerations"] = tolerations
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}},
           "status": {"allocation": {"devices": {"results": [result]}},
                      "reservedFor": [{"resource": "pods", "name": u, "uid": f"uid-{u}"} for u in users]}}
    return conversion.parse_as(model_claims.ResourceClaim, raw)


def decide(pods: list[model_pods.Pod], claims: list[model_claims.ResourceClaim],
           found: dict[DeviceID, tuple[taintrules.EffectiveTaint, ...]], *, now: dt.datetime = T0,
           first_seen: dict[eviction.TaintKey, dt.datetime] | None = None,
           previous: tuple[eviction.PodRef, ...] = ()) -> eviction.Decision:
    by_key = {(c.metadata.namespace or "", c.metadata.name): c for c in claims}
    seen = first_seen if first_seen is not None else {
        eviction.taint_key(d, e): T0 for d, es in found.items() for e in es}
    return eviction.decide(pods, lambda ns, n: by_key.get((ns, n)), found, now=now, first_seen=seen,
                           previous=previous)


def tol(seconds: int | None = None, *, effect: str | None = "NoExecute", key: str = "broken") -> dict[str, Any]:
    raw: dict[str, Any] = {"key": key, "operator": "Exists"}
    if effect:
        raw["effect"] = effect
    if seconds is not None:
        raw["tolerationSeconds"] = seconds
    return raw


class TestDecide:
    def test_untolerated_no_execute_is_due_at_once(self) -> None:
        """No toleration: the pod is due when the taint appeared."""
        d = decide([pod("a")], [claim("a-claim", "a")], effective((GPU0, taint(), "r")))
        assert [e.pod.name for e in d.due] == ["a"] and d.later == ()
        assert d.due[0].at == T0 and d.due[0].rules == ("r",)
        assert d.pending_by_rule == {"r": 1}

    def test_toleration_seconds_delay_the_eviction(self) -> None:
        """tolerationSeconds counts from the taint's appearance."""
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(30)])], effective((GPU0, taint(), "r")),
                   now=T0 + dt.timedelta(seconds=10))
        assert d.due == () and d.later[0].at == T0 + dt.timedelta(seconds=30)
        assert d.next_at == T0 + dt.timedelta(seconds=30)

    def test_due_once_toleration_seconds_passed(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(30)])], effective((GPU0, taint(), "r")),
                   now=T0 + dt.timedelta(seconds=30))
        assert [e.pod.name for e in d.due] == ["a"]

    def test_time_added_wins_over_first_seen(self) -> None:
        """A taint's timeAdded is when it counts from, even if we saw it later."""
        t = taint(added="2029-12-31T23:59:00Z")
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(30)])], effective((GPU0, t, "r")))
        assert [e.pod.name for e in d.due] == ["a"]

    def test_tolerated_forever_is_ignored(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol()])], effective((GPU0, taint(), "r")))
        assert d.due == () and d.later == () and d.pending_by_rule == {}

    def test_smallest_toleration_seconds_counts(self) -> None:
        """Several matching tolerations: the shortest finite one decides, forever ones do not extend it."""
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(), tol(60), tol(20, effect=None)])],
                   effective((GPU0, taint(), "r")), now=T0 + dt.timedelta(seconds=1))
        assert d.later[0].at == T0 + dt.timedelta(seconds=20)

    def test_toleration_for_another_key_does_not_help(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(key="other")])],
                   effective((GPU0, taint(), "r")))
        assert [e.pod.name for e in d.due] == ["a"]

    @pytest.mark.parametrize("effect", ["NoSchedule", "None"])
    def test_other_effects_never_evict(self, effect: str) -> None:
        d = decide([pod("a")], [claim("a-claim", "a")], effective((GPU0, taint(effect), "r")))
        assert d.due == () and d.later == ()

    def test_effect_none_reports_what_no_execute_would_do(self) -> None:
        d = decide([pod("a"), pod("b")], [claim("a-claim", "a"), claim("b-claim", "b", tolerations=[tol()])],
                   effective((GPU0, taint("None"), "r")))
        assert d.would_evict_by_rule == {"r": 1}

    def test_slice_taints_evict_too(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a")], effective((GPU0, taint(), "")))
        assert [e.pod.name for e in d.due] == ["a"] and d.due[0].rules == ()
        assert "its ResourceSlice" in d.due[0].describe()

    def test_other_devices_are_not_affected(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a", device=GPU1)], effective((GPU0, taint(), "r")))
        assert d.due == ()

    @pytest.mark.parametrize("case", ["unbound", "finished", "deleting", "not-reserved", "no-claim"])
    def test_pods_not_running_on_the_device_are_left_alone(self, case: str) -> None:
        p = {"unbound": pod("a", node=None), "finished": pod("a", phase="Succeeded"),
             "deleting": pod("a", deleting=True)}.get(case, pod("a"))
        claims = {"not-reserved": [claim("a-claim")], "no-claim": []}.get(case, [claim("a-claim", "a")])
        d = decide([p], claims, effective((GPU0, taint(), "r")))
        assert d.due == () and d.later == ()

    def test_removed_taint_cancels_a_pending_eviction(self) -> None:
        """A pod pending before and not now is reported as cancelled; a pod gone is too (caller checks)."""
        before = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(30)])], effective((GPU0, taint(), "r")))
        pending = tuple(e.pod for e in before.later)
        after = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(30)])], {}, previous=pending)
        assert after.cancelled == pending

    def test_pods_we_deleted_count_as_being_deleted(self) -> None:
        """A pod deleted a moment ago whose watch event has not arrived is neither due nor pending."""
        found = effective((GPU0, taint(), "r"))
        by_key = {("default", "a-claim"): claim("a-claim", "a")}
        d = eviction.decide([pod("a")], lambda ns, n: by_key.get((ns, n)), found, now=T0, first_seen={},
                            deleted=[eviction.PodRef("default", "a", "uid-a")])
        assert d.due == () and d.pending_by_rule == {} and d.class_deleting == {"gpu": 1}

    def test_earliest_taint_decides(self) -> None:
        found = effective((GPU0, taint(key="slow"), "slow-rule"), (GPU0, taint(key="fast"), "fast-rule"))
        d = decide([pod("a")], [claim("a-claim", "a", tolerations=[tol(60, key="slow"), tol(5, key="fast")])], found,
                   now=T0 + dt.timedelta(seconds=1))
        assert d.later[0].taint.rule == "fast-rule"
        assert d.later[0].rules == ("fast-rule", "slow-rule")

    def test_shared_claim_evicts_every_user(self) -> None:
        d = decide([pod("a", claim="shared"), pod("b", claim="shared")], [claim("shared", "a", "b")],
                   effective((GPU0, taint(), "r")))
        assert sorted(e.pod.name for e in d.due) == ["a", "b"]
        assert d.class_pods == {"gpu": 2}


class TestLimit:
    def due(self, n: int, *, deleting: int = 0, others: int = 0) -> eviction.Decision:
        pods = [pod(f"p{i}") for i in range(n)] + [pod(f"d{i}", deleting=True) for i in range(deleting)]
        pods += [pod(f"o{i}") for i in range(others)]
        claims = [claim(f"p{i}-claim", f"p{i}") for i in range(n)]
        claims += [claim(f"d{i}-claim", f"d{i}") for i in range(deleting)]
        claims += [claim(f"o{i}-claim", f"o{i}", device=GPU1) for i in range(others)]
        return decide(pods, claims, effective((GPU0, taint(), "r")))

    def test_per_minute_budget(self) -> None:
        limited = eviction.limit(self.due(5), eviction.Limits(per_minute=3, max_percent=100), now=T0, recent=[])
        assert len(limited.allowed) == 3 and len(limited.held) == 2
        assert limited.retry_at == T0 + eviction.WINDOW

    def test_recent_evictions_use_the_budget_until_they_leave_the_window(self) -> None:
        recent = [T0 - dt.timedelta(seconds=50), T0 - dt.timedelta(seconds=70)]
        limited = eviction.limit(self.due(5), eviction.Limits(per_minute=2, max_percent=100), now=T0, recent=recent)
        assert len(limited.allowed) == 1
        assert limited.retry_at == T0 + dt.timedelta(seconds=10)

    def test_zero_means_no_rate_limit(self) -> None:
        limited = eviction.limit(self.due(5), eviction.Limits(per_minute=0, max_percent=100), now=T0, recent=[])
        assert len(limited.allowed) == 5 and limited.retry_at is None

    def test_max_percent_of_a_device_class(self) -> None:
        """10 pods use class gpu, 50 %: at most 5 at once, counting those already being deleted."""
        limited = eviction.limit(self.due(6, deleting=2, others=2), eviction.Limits(per_minute=0, max_percent=50),
                                 now=T0, recent=[])
        assert len(limited.allowed) == 3 and len(limited.held) == 3

    def test_at_least_one_at_a_time(self) -> None:
        limited = eviction.limit(self.due(1), eviction.Limits(per_minute=0, max_percent=10), now=T0, recent=[])
        assert len(limited.allowed) == 1

    def test_a_policy_group_has_its_own_tighter_budget(self) -> None:
        """Evictions caused by a policy's rules also fit the policy's limits; other rules only the overall ones."""
        pods = [pod(f"p{i}") for i in range(4)]
        claims = [claim(f"p{i}-claim", f"p{i}", device=GPU0 if i < 2 else GPU1) for i in range(4)]
        found = effective((GPU0, taint(), "policy-rule"), (GPU1, taint(), "plain-rule"))
        d = decide(pods, claims, found)
        groups = {"gpu-health": eviction.Group(eviction.Limits(per_minute=2, max_percent=100),
                                               recent=[T0 - dt.timedelta(seconds=30)])}
        limited = eviction.limit(d, eviction.Limits(per_minute=0, max_percent=100), now=T0, recent=[],
                                 groups=groups, group_of={"policy-rule": "gpu-health"})
        assert sorted(e.pod.name for e in limited.allowed) == ["p0", "p2", "p3"]
        assert [e.pod.name for e in limited.held] == ["p1"]
        assert limited.retry_at == T0 + dt.timedelta(seconds=30)

    def test_environment_settings(self) -> None:
        limits = eviction.Limits.from_environment({"DRALLOC_EVICTION_PER_MINUTE": "7",
                                                   "DRALLOC_EVICTION_MAX_PERCENT": "130",
                                                   "DRALLOC_EVICTION_DRY_RUN": "true"})
        assert limits == eviction.Limits(per_minute=7, max_percent=100, dry_run=True)


class TestRuleCondition:
    def rule(self, effect: str) -> taints.DeviceTaintRule:
        return conversion.parse_as(taints.DeviceTaintRule, {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"taint": {"key": "broken", "effect": effect}}})

    def test_pending(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a")], effective((GPU0, taint(), "r")))
        c = eviction.rule_condition(self.rule("NoExecute"), d, evicted=2, dry_run=False)
        assert (c["status"], c["reason"], c["message"]) == ("True", "PodsPendingEviction",
                                                            "1 pod(s) pending eviction, 2 evicted")

    def test_completed(self) -> None:
        c = eviction.rule_condition(self.rule("NoExecute"), decide([], [], {}), evicted=2, dry_run=False)
        assert (c["status"], c["reason"]) == ("False", "Completed")

    def test_effect_none(self) -> None:
        d = decide([pod("a")], [claim("a-claim", "a")], effective((GPU0, taint("None"), "r")))
        c = eviction.rule_condition(self.rule("None"), d, evicted=0, dry_run=False)
        assert c["status"] == "False" and "1 pod(s) would be evicted" in c["message"]


def slice_index(*device_names: str, healthy: bool = True) -> SliceIndex:
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": DRIVER, "nodeName": "node-a", "pool": {"name": "node-a", "generation": 1,
                                                                    "resourceSliceCount": 1},
                    "devices": [{"name": n, "attributes": {"healthy": {"bool": healthy and n != "gpu-1"}},
                                 **({"taints": [{"key": "slice", "effect": "NoSchedule"}]} if n == "gpu-2" else {})}
                                for n in device_names]}}
    return SliceIndex([conversion.parse_as(devices.ResourceSlice, raw)])


def rule(selector: dict[str, Any], effect: str = "NoExecute") -> taints.DeviceTaintRule:
    return conversion.parse_as(taints.DeviceTaintRule, {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "metadata": {"name": "r", "uid": "u"},
        "spec": {"deviceSelector": selector, "taint": {"key": "broken", "effect": effect}}})


class TestEffectiveTaints:
    def names(self, selector: dict[str, Any], device_classes: dict[str, classes.DeviceClass] | None = None) -> list[str]:
        found = taintrules.effective_taints([rule(selector)], slice_index("gpu-0", "gpu-1"), device_classes)
        return sorted(d.device for d, es in found.items() if any(e.source == "rule" for e in es))

    def test_driver_pool_device(self) -> None:
        assert self.names({"driver": DRIVER, "pool": "node-a", "device": "gpu-1"}) == ["gpu-1"]
        assert self.names({"driver": DRIVER}) == ["gpu-0", "gpu-1"]
        assert self.names({"pool": "other"}) == []

    def test_cel_selectors(self) -> None:
        selector = {"selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].healthy == false'}}]}
        assert self.names(selector) == ["gpu-1"]

    def test_broken_cel_matches_nothing(self) -> None:
        assert self.names({"selectors": [{"cel": {"expression": "device.nope("}}]}) == []

    def test_device_class_name(self) -> None:
        cls = conversion.parse_as(classes.DeviceClass, {
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
        assert self.names({"deviceClassName": "gpu"}, {"gpu": cls}) == ["gpu-0", "gpu-1"]
        assert self.names({"deviceClassName": "missing"}, {"gpu": cls}) == []

    def test_slice_taints_come_first_with_their_source(self) -> None:
        found = taintrules.effective_taints([rule({"device": "gpu-2"})], slice_index("gpu-2"))
        (device,) = found
        assert [e.source for e in found[device]] == ["slice", "rule"]
        assert taintrules.rule_taints([rule({"device": "gpu-2"})], slice_index("gpu-2"))[device][0].key == "broken"
