"""The device health state machine and its signals, driven by an injected clock."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from dralloc.allocation.pools import DeviceID, SliceIndex
from dralloc.lifecycle import health
from dralloc.model import claims as model_claims
from dralloc.model import conversion, devices

T0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
DRIVER = "gpu.example.com"
GPU0 = DeviceID(DRIVER, "node-a", "gpu-0")
GPU1 = DeviceID(DRIVER, "node-a", "gpu-1")


class Clock:
    """Time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = T0

    def advance(self, seconds: float) -> dt.datetime:
        self.now += dt.timedelta(seconds=seconds)
        return self.now


class Machine:
    """Feeds signals through health.step with fixed windows, keeping the states like the handler does."""

    def __init__(self, clock: Clock, *, unhealthy_after: float, healthy_after: float) -> None:
        self.clock = clock
        self.states: dict[DeviceID, health.DeviceHealth] = {}
        self.windows = (dt.timedelta(seconds=unhealthy_after), dt.timedelta(seconds=healthy_after))
        self.transitions: list[tuple[str, str]] = []
        self.last: health.Step | None = None

    def observe(self, *signalled: DeviceID) -> health.Step:
        result = health.step(self.states, {d: "probe failed" for d in signalled}, now=self.clock.now,
                             unhealthy_after=self.windows[0], healthy_after=self.windows[1])
        self.states = dict(result.states)
        self.transitions += [(t.before, t.after) for t in result.transitions]
        self.last = result
        return result

    def state(self, device: DeviceID = GPU0) -> str:
        found = self.states.get(device)
        return found.state if found else health.HEALTHY


@pytest.fixture
def clock() -> Clock:
    return Clock()


class TestPersistenceWindow:
    def test_signal_must_persist_before_tainting(self, clock: Clock) -> None:
        m = Machine(clock, unhealthy_after=30, healthy_after=60)
        assert m.observe(GPU0).tainted == frozenset()
        assert m.state() == health.SUSPECT
        assert m.last is not None and m.last.next_at == T0 + dt.timedelta(seconds=30)
        clock.advance(29)
        assert m.observe(GPU0).tainted == frozenset()
        clock.advance(1)
        assert m.observe(GPU0).tainted == frozenset({GPU0})
        assert m.transitions == [("healthy", "suspect"), ("suspect", "unhealthy")]

    def test_signal_gone_within_the_window_leaves_the_device_healthy(self, clock: Clock) -> None:
        m = Machine(clock, unhealthy_after=30, healthy_after=60)
        m.observe(GPU0)
        clock.advance(10)
        m.observe()
        assert m.state() == health.HEALTHY and m.states == {}
        clock.advance(25)
        m.observe(GPU0)
        assert m.state() == health.SUSPECT  # the window starts over
        assert m.last is not None and m.last.next_at == clock.now + dt.timedelta(seconds=30)

    def test_zero_window_taints_at_once(self, clock: Clock) -> None:
        m = Machine(clock, unhealthy_after=0, healthy_after=0)
        assert m.observe(GPU0).tainted == frozenset({GPU0})


class TestRecoveryWindow:
    def tainted(self, clock: Clock) -> Machine:
        m = Machine(clock, unhealthy_after=0, healthy_after=60)
        m.observe(GPU0)
        return m

    def test_taint_stays_until_healthy_for_the_whole_window(self, clock: Clock) -> None:
        m = self.tainted(clock)
        clock.advance(5)
        assert m.observe().tainted == frozenset({GPU0})
        assert m.state() == health.RECOVERING
        clock.advance(59)
        assert m.observe().tainted == frozenset({GPU0})
        clock.advance(1)
        assert m.observe().tainted == frozenset()
        assert m.transitions[-2:] == [("unhealthy", "recovering"), ("recovering", "healthy")]

    def test_flap_during_recovery_resets_it(self, clock: Clock) -> None:
        m = self.tainted(clock)
        clock.advance(1)
        m.observe()
        clock.advance(50)
        m.observe(GPU0)
        assert m.state() == health.UNHEALTHY
        clock.advance(1)
        m.observe()
        clock.advance(59)
        assert m.observe().tainted == frozenset({GPU0})
        clock.advance(1)
        assert m.observe().tainted == frozenset()

    def test_zero_recovery_untaints_when_the_signal_goes(self, clock: Clock) -> None:
        m = Machine(clock, unhealthy_after=0, healthy_after=0)
        m.observe(GPU0)
        clock.advance(1)
        assert m.observe().tainted == frozenset()

    def test_devices_are_independent(self, clock: Clock) -> None:
        m = Machine(clock, unhealthy_after=10, healthy_after=10)
        m.observe(GPU0)
        clock.advance(5)
        m.observe(GPU0, GPU1)
        clock.advance(5)
        result = m.observe(GPU0, GPU1)
        assert result.tainted == frozenset({GPU0})
        assert result.next_at == T0 + dt.timedelta(seconds=15)


def policy(**spec: Any) -> health.DeviceHealthPolicy:
    return conversion.parse_as(health.DeviceHealthPolicy, {
        "apiVersion": "dralloc.io/v1alpha1", "kind": "DeviceHealthPolicy", "metadata": {"name": "p", "uid": "u"},
        "spec": spec})


def claim(conditions: list[dict[str, Any]], device: DeviceID = GPU0) -> model_claims.ResourceClaim:
    return conversion.parse_as(model_claims.ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"},
        "status": {"devices": [{"driver": device.driver, "pool": device.pool, "device": device.device,
                                "conditions": conditions}]}})


def index(healthy: bool) -> SliceIndex:
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": DRIVER, "nodeName": "node-a",
                    "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0", "attributes": {"healthy": {"bool": healthy}}}]}}
    return SliceIndex([conversion.parse_as(devices.ResourceSlice, raw)])


class TestSignals:
    def test_claim_condition_type_and_status_match(self) -> None:
        p = policy(signals={"claimConditions": [{"type": "Ready", "status": "False"}]})
        assert list(health.claim_signals(p, [claim([{"type": "Ready", "status": "False"}])])) == [GPU0]
        assert health.claim_signals(p, [claim([{"type": "Ready", "status": "True"}])]) == {}
        assert health.claim_signals(p, [claim([{"type": "Other", "status": "False"}])]) == {}

    def test_selector_limits_the_devices(self) -> None:
        p = policy(selector={"driver": "other.example.com"},
                   signals={"claimConditions": [{"type": "Ready", "status": "False"}]})
        assert health.claim_signals(p, [claim([{"type": "Ready", "status": "False"}])]) == {}

    def test_pod_allocated_resources_status(self) -> None:
        p = policy(signals={"podResourceHealth": True})
        pod = {"metadata": {"name": "w", "namespace": "ns"}, "status": {"containerStatuses": [{
            "name": "main", "allocatedResourcesStatus": [{"name": "claim:c/gpu", "resources": [
                {"resourceID": f"{DRIVER}/node-a/gpu-0", "health": "Unhealthy"},
                {"resourceID": f"{DRIVER}/node-a/gpu-1", "health": "Healthy"}]}]}]}}
        assert list(health.pod_signals(p, [pod])) == [GPU0]
        assert health.pod_signals(policy(), [pod]) == {}

    def test_resource_id_with_a_slash_in_the_pool(self) -> None:
        assert health.parse_resource_id("d.example.com/rack/1/gpu-0") == DeviceID("d.example.com", "rack/1", "gpu-0")
        assert health.parse_resource_id("nonsense") is None

    def test_cel_over_the_device(self) -> None:
        p = policy(signals={"deviceSelectors": [{"cel": {"expression": f'!device.attributes["{DRIVER}"].healthy'}}]})
        assert list(health.selector_signals(p, index(healthy=False))[0]) == [GPU0]
        assert health.selector_signals(p, index(healthy=True)) == ({}, None)

    def test_broken_cel_is_reported_not_raised(self) -> None:
        p = policy(signals={"deviceSelectors": [{"cel": {"expression": "device.("}}]})
        found, problem = health.selector_signals(p, index(healthy=True))
        assert found == {} and problem is not None and "DeviceHealthPolicy p" in problem

    def test_defaults(self) -> None:
        p = policy()
        assert (p.taint.key, p.taint.effect) == ("dralloc.io/unhealthy", "NoExecute")
        assert health.signals_for(p, claims=[], pods=[], index=index(healthy=True)) == ({}, None)
