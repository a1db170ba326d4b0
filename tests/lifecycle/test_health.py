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


def claim(conditions: list[dict[str, Any]], device: DeviceID = GPU0, *,
          allocated: tuple[DeviceID, ...] = (GPU0,)) -> model_claims.ResourceClaim:
    """Claim `c` allocated `allocated`, its driver reporting `conditions` for `device`."""
    return conversion.parse_as(model_claims.ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"},
        "status": {"allocation": {"devices": {"results": [
            {"request": "gpu", "driver": d.driver, "pool": d.pool, "device": d.device} for d in allocated]}},
                   "devices": [{"driver": device.driver, "pool": device.pool, "device": device.device,
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
        pod = {"metadata": {"name": "w", "namespace": "ns", "uid": "uid-w"},
               "spec": {"resourceClaims": [{"name": "c", "resourceClaimName": "c"}]},
               "status": {"containerStatuses": [{
                   "name": "main", "allocatedResourcesStatus": [{"name": "claim:c/gpu", "resources": [
                       {"resourceID": f"{DRIVER}/node-a/gpu-0", "health": "Unhealthy"},
                       {"resourceID": f"{DRIVER}/node-a/gpu-1", "health": "Healthy"}]}]}]}}
        mine = own_claim("c", "uid-w", GPU0, GPU1)
        reports = health.pod_reports([pod], [mine])
        assert [(r.device, r.ignored) for r in reports] == [(GPU0, "")]
        assert list(health.pod_signals(p, reports)) == [GPU0]
        assert health.pod_signals(policy(), reports) == {}

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
        assert health.signals_for(p, claims=[], reports=[], index=index(healthy=True)) == health.Observed({}, None, ())


# Issue 26: a pod writes its own status, so its allocatedResourcesStatus may name any
# device. Pod B on node-0 holds gpu-0 of node-0 through its claim `b-gpus`; pod A on
# node-1 holds gpu-0 of node-1 through `a-gpus`.
B_GPU = DeviceID(DRIVER, "node-0", "gpu-0")
A_GPU = DeviceID(DRIVER, "node-1", "gpu-0")


def own_claim(name: str, reserved_for: str | None, *allocated: DeviceID, namespace: str = "ns",
              request: str = "gpu") -> model_claims.ResourceClaim:
    status: dict[str, Any] = {}
    if allocated:
        status["allocation"] = {"devices": {"results": [
            {"request": request, "driver": d.driver, "pool": d.pool, "device": d.device} for d in allocated]}}
    if reserved_for is not None:
        status["reservedFor"] = [{"resource": "pods", "name": "x", "uid": reserved_for}]
    return conversion.parse_as(model_claims.ResourceClaim, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace, "uid": f"claim-{name}"}, "status": status})


CLAIMS = (own_claim("a-gpus", "uid-a", A_GPU), own_claim("b-gpus", "uid-b", B_GPU))


def reporting_pod(entry: str, device: DeviceID | str, *, resource_claims: list[dict[str, Any]] | None = None,
                  uid: str = "uid-a", namespace: str = "ns", phase: str = "Running",
                  health_: str = "Unhealthy", **status: Any) -> dict[str, Any]:
    """Pod `a` (node-1), its template claim entry `gpus` recorded as `a-gpus`, reporting `device` under `entry`."""
    claims = resource_claims if resource_claims is not None else [{"name": "gpus", "resourceClaimTemplateName": "t"}]
    return {"metadata": {"name": "a", "namespace": namespace, "uid": uid},
            "spec": {"nodeName": "node-1", "resourceClaims": claims},
            "status": {"phase": phase, "resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": "a-gpus"}],
                       **status,
                       "containerStatuses": [{"name": "main", "allocatedResourcesStatus": [{"name": entry, "resources": [
                           {"resourceID": str(device), "health": health_}]}]}]}}


POD_REPORTS = {
    # name: (pod, claims, the report's device, why it is ignored ("": it counts))
    "another tenant's device: pod A names pod B's GPU": (
        reporting_pod("claim:gpus", B_GPU), CLAIMS, B_GPU, health.DEVICE_NOT_ALLOCATED),
    "another tenant's device, with a request": (
        reporting_pod("claim:gpus/gpu", B_GPU), CLAIMS, B_GPU, health.DEVICE_NOT_ALLOCATED),
    "its own device": (reporting_pod("claim:gpus", A_GPU), CLAIMS, A_GPU, ""),
    "its own device, for its request": (reporting_pod("claim:gpus/gpu", A_GPU), CLAIMS, A_GPU, ""),
    "its own device, another request of the claim": (
        reporting_pod("claim:gpus/nic", A_GPU), CLAIMS, A_GPU, health.DEVICE_NOT_ALLOCATED),
    "its own device, a firstAvailable subrequest": (
        reporting_pod("claim:gpus/gpu", A_GPU), (own_claim("a-gpus", "uid-a", A_GPU, request="gpu/big"),),
        A_GPU, ""),
    "a claim entry the pod does not have": (
        reporting_pod("claim:other", B_GPU), CLAIMS, B_GPU, health.UNKNOWN_CLAIM),
    "the other pod's claim named in its own spec (not reserved for it)": (
        reporting_pod("claim:theirs", B_GPU, resource_claims=[{"name": "theirs", "resourceClaimName": "b-gpus"}]),
        CLAIMS, B_GPU, health.CLAIM_NOT_RESERVED),
    "a template claim not recorded yet": (
        reporting_pod("claim:later", A_GPU, resource_claims=[{"name": "later", "resourceClaimTemplateName": "t"}]),
        CLAIMS, A_GPU, health.CLAIM_NOT_FOUND),
    "a claim of that name in another namespace": (
        reporting_pod("claim:gpus", A_GPU, namespace="elsewhere"), CLAIMS, A_GPU, health.CLAIM_NOT_FOUND),
    "its claim, not allocated": (
        reporting_pod("claim:gpus", A_GPU), (own_claim("a-gpus", "uid-a"),), A_GPU, health.CLAIM_NOT_RESERVED),
    "its claim, allocated but reserved for nobody": (
        reporting_pod("claim:gpus", A_GPU), (own_claim("a-gpus", None, A_GPU),), A_GPU, health.CLAIM_NOT_RESERVED),
    "a pod without a uid": (reporting_pod("claim:gpus", A_GPU, uid=""), CLAIMS, A_GPU, health.CLAIM_NOT_RESERVED),
    "a resourceID that names no device": (reporting_pod("claim:gpus", "nonsense"), CLAIMS, None,
                                          health.BAD_RESOURCE_ID),
    "its extended-resource claim": (
        reporting_pod("claim:a-extended/container-0-request-0-0", A_GPU,
                      extendedResourceClaimStatus={"resourceClaimName": "a-extended", "requestMappings": []}),
        (own_claim("a-extended", "uid-a", A_GPU, request="container-0-request-0-0"),), A_GPU, ""),
}


class TestPodReportsCountOnlyForTheirOwnDevices:
    @pytest.mark.parametrize("case", list(POD_REPORTS))
    def test_report(self, case: str) -> None:
        pod, claims, device, ignored = POD_REPORTS[case]
        (report,) = health.pod_reports([pod], claims)
        assert (report.device, report.ignored) == (device, ignored)
        assert (report.source, report.uid) == (f"Pod {pod['metadata']['namespace']}/a", pod["metadata"]["uid"])
        p = policy(signals={"podResourceHealth": True})
        observed = health.signals_for(p, claims=claims, reports=[report], index=SliceIndex([]))
        assert observed.signals == ({device: f"Pod ns/a: {report.what}"} if not ignored else {})
        assert observed.ignored == (() if not ignored else (report,))

    @pytest.mark.parametrize("pod", [reporting_pod("claim:gpus", A_GPU, phase="Succeeded"),
                                     reporting_pod("claim:gpus", A_GPU, health_="Healthy"),
                                     reporting_pod("claim:gpus", A_GPU, health_="Unknown"),
                                     reporting_pod("cpu", A_GPU)], ids=["finished", "healthy", "unknown", "not-a-claim"])
    def test_not_a_report(self, pod: dict[str, Any]) -> None:
        assert health.pod_reports([pod], CLAIMS) == []

    @pytest.mark.parametrize(("device", "tainted"), [(B_GPU, frozenset()), (A_GPU, frozenset({A_GPU}))],
                             ids=["another-tenant's-device", "its-own-device"])
    def test_only_its_own_device_is_tainted(self, clock: Clock, device: DeviceID, tainted: frozenset[DeviceID]) -> None:
        """Pod A (node-1) reports node-0/gpu-0, pod B's: no taint; its own node-1/gpu-0: tainted."""
        p = policy(signals={"podResourceHealth": True})
        reports = health.pod_reports([reporting_pod("claim:gpus", device)], CLAIMS)
        observed = health.signals_for(p, claims=CLAIMS, reports=reports, index=SliceIndex([]))
        result = health.step({}, observed.signals, now=clock.now, unhealthy_after=dt.timedelta(0),
                             healthy_after=dt.timedelta(0))
        assert result.tainted == tainted

    def test_a_policy_selector_leaves_out_reports_of_other_devices(self) -> None:
        p = policy(selector={"pool": "node-1"}, signals={"podResourceHealth": True})
        reports = health.pod_reports([reporting_pod("claim:gpus", B_GPU)], CLAIMS)
        assert health.signals_for(p, claims=CLAIMS, reports=reports, index=SliceIndex([])).ignored == ()


CLAIM_CONDITIONS = {
    # name: (claim, the device whose condition is matched, why it is ignored ("": it counts))
    "an allocated device": (claim([{"type": "Ready", "status": "False"}]), GPU0, ""),
    "a device not in the claim's allocation": (
        claim([{"type": "Ready", "status": "False"}], GPU1), GPU1, health.DEVICE_NOT_ALLOCATED),
    "a claim not allocated": (
        claim([{"type": "Ready", "status": "False"}], allocated=()), GPU0, health.DEVICE_NOT_ALLOCATED),
}


class TestClaimConditionsCountOnlyForAllocatedDevices:
    @pytest.mark.parametrize("case", list(CLAIM_CONDITIONS))
    def test_condition(self, case: str) -> None:
        c, device, ignored = CLAIM_CONDITIONS[case]
        p = policy(signals={"claimConditions": [{"type": "Ready", "status": "False"}]})
        (report,) = health.claim_reports(p, [c])
        assert (report.device, report.ignored) == (device, ignored)
        assert health.claim_signals(p, [c]) == ({device: "ResourceClaim ns/c: condition Ready=False"}
                                                if not ignored else {})

    def test_a_share_must_be_the_claims_own(self) -> None:
        raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "ns"},
               "status": {"allocation": {"devices": {"results": [{"request": "nic", "driver": DRIVER, "pool": "node-a",
                                                                  "device": "gpu-0", "shareID": "s1"}]}},
                          "devices": [{"driver": DRIVER, "pool": "node-a", "device": "gpu-0", "shareID": share,
                                       "conditions": [{"type": "Ready", "status": "False"}]}
                                      for share in ("s1", "s2")]}}
        p = policy(signals={"claimConditions": [{"type": "Ready", "status": "False"}]})
        reports = health.claim_reports(p, [conversion.parse_as(model_claims.ResourceClaim, raw)])
        assert [r.ignored for r in reports] == ["", health.DEVICE_NOT_ALLOCATED]
