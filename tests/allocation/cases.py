"""One named table of allocation cases, beyond the conformance vectors.

Each entry reads as a sentence: its inputs (built with tests.builders), what the
allocator must answer (`allocates`, `does_not_fit`, `raises`, `runs_out_of_budget`)
and, where the case is about a detail of the result, a `check` on the outcome.
`max_steps` turns a slow search into a failure without timing anything.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tests.builders import (
    DRIVER,
    ClaimBuilder,
    ClassBuilder,
    SliceBuilder,
    claim,
    class_,
    device,
    device_id,
    node,
    node_selector,
    result,
    slice_,
    subrequest,
    taint,
    toleration,
)

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.allocation.features import Features
from dralloc.allocation.outcomes import Cause
from dralloc.allocation.pools import DeviceID, NodeView
from dralloc.model import taints
from dralloc.model.quantities import Quantity

Rerun = Callable[[], outcomes.Outcome]


@dataclasses.dataclass(frozen=True)
class Allocates:
    """Per claim, in claim order: the (request, device) picks; a device may be written `pool/device`."""

    claims: tuple[tuple[tuple[str, str], ...], ...]


@dataclasses.dataclass(frozen=True)
class DoesNotFit:
    """Unsatisfiable; `removed`, `candidates` and `devices` are keyed "claim/request" and compared exactly."""

    removed: Mapping[str, Mapping[Cause, int]] | None = None
    candidates: Mapping[str, int] | None = None
    devices: Mapping[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class Raises:
    error: type[errors.AllocationInputError]
    phrase: str


@dataclasses.dataclass(frozen=True)
class RunsOutOfBudget:
    pass


Expect = Allocates | DoesNotFit | Raises | RunsOutOfBudget


def allocates(*per_claim: Sequence[tuple[str, str]]) -> Allocates:
    return Allocates(tuple(tuple(picks) for picks in per_claim))


def does_not_fit(removed: Mapping[str, Mapping[Cause, int]] | None = None,
                 candidates: Mapping[str, int] | None = None,
                 devices: Mapping[str, int] | None = None) -> DoesNotFit:
    return DoesNotFit(removed, candidates, devices)


def raises(error: type[errors.AllocationInputError], phrase: str) -> Raises:
    return Raises(error, phrase)


@dataclasses.dataclass(frozen=True)
class Case:
    expect: Expect
    claims: Sequence[ClaimBuilder]
    slices: Sequence[SliceBuilder] = ()
    classes: Sequence[ClassBuilder] = ()
    allocated: Sequence[ClaimBuilder] = ()
    node: NodeView = dataclasses.field(default_factory=node)
    features: Features = dataclasses.field(default_factory=Features)
    extra_taints: Mapping[DeviceID, Sequence[taints.DeviceTaint]] = dataclasses.field(default_factory=dict)
    budget: int | None = 1_000_000
    max_steps: int | None = None
    check: Callable[[outcomes.Outcome, Rerun], None] | None = None


# ---- shared inputs ------------------------------------------------------------------------------

GPU = class_("gpu", f'device.driver == "{DRIVER}"')
ANY = class_("any")
A100 = class_("a100", f'device.attributes["{DRIVER}"].model == "a100"')
T4 = class_("t4", f'device.attributes["{DRIVER}"].model == "t4"')
NUMA = f"{DRIVER}/numa"


def gpus(*names: str, **kwargs: Any) -> SliceBuilder:
    """One slice on node-1 with plain devices."""
    return slice_("s1", devices=[device(n) for n in names], **kwargs)


def numa_gpus(*numas: int | None) -> SliceBuilder:
    """gpu-0, gpu-1, ... with the given numa attribute (None: no attribute)."""
    return slice_("s1", devices=[
        device(f"gpu-{i}") if n is None else device(f"gpu-{i}").attr("numa", n) for i, n in enumerate(numas)
    ])


def c0() -> ClaimBuilder:
    return claim("c0")


def in_use(*names: str, pool: str = "pool-1") -> ClaimBuilder:
    return claim("holder").request("r", "gpu", count=len(names)).allocated(
        *(result("r", n, pool=pool) for n in names))


# ---- checks on details of the result --------------------------------------------------------------


def _only(outcome: outcomes.Outcome) -> Any:
    assert isinstance(outcome, outcomes.Allocated)
    return outcome.results[0]


def _tolerations_copied(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    entry = _only(outcome).devices.results[0]
    assert [(t.key, t.operator, t.effect) for t in entry.tolerations] == [("maintenance", "Exists", None)]


def _admin_flag_set(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    assert _only(outcome).devices.results[0].admin_access is True


def _share_ids(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    ids = [r.share_id for r in _only(outcome).devices.results]
    assert len(ids) == 2
    assert all(ids) is True
    assert ids[0] != ids[1]
    for share in ids:
        assert str(uuid.UUID(share)) == share
    again = [r.share_id for r in _only(rerun()).devices.results]
    assert again == ids


def _consumed_two_gi(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    entry = _only(outcome).devices.results[0]
    assert entry.consumed_capacity == {"memory": Quantity.parse("2Gi")}
    assert str(entry.consumed_capacity["memory"]) == "2Gi"


def _dedicated_device_has_no_share(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    entry = _only(outcome).devices.results[0]
    assert entry.share_id is None
    assert entry.consumed_capacity == {}


def _node_selector_zone_a(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    selector = _only(outcome).node_selector
    assert selector is not None
    (term,) = selector.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in term.match_expressions] == [("zone", "In", ("a",))]
    assert term.match_fields == ()


def _pinned_to_node_1(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    selector = _only(outcome).node_selector
    assert selector is not None
    (term,) = selector.node_selector_terms
    assert [(r.key, r.operator, r.values) for r in term.match_fields] == [("metadata.name", "In", ("node-1",))]


def _no_node_selector(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    assert _only(outcome).node_selector is None


def _class_then_claim_config(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    config = _only(outcome).devices.config
    assert [(c.source, c.requests, c.opaque.parameters if c.opaque else None) for c in config] == [
        ("FromClass", ("r0", "r1"), {"from": "class"}),
        ("FromClaim", ("r1",), {"from": "claim"}),
    ]


def _class_then_claim_config_1_37(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    config = _only(outcome).devices.config
    assert [(c.source, c.requests, c.opaque.parameters if c.opaque else None) for c in config] == [
        ("FromClass", (), {"from": "class"}),  # covers every request: "empty means all"
        ("FromClaim", ("r1",), {"from": "claim"}),
    ]


def _claim_config_copied_per_request(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    config = _only(outcome).devices.config
    assert [(c.source, c.requests) for c in config] == [("FromClaim", ("r0", "r1")), ("FromClaim", ("r0", "r1"))]


def _claim_config_once_for_all(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    config = _only(outcome).devices.config
    assert [(c.source, c.requests) for c in config] == [("FromClaim", ())]


def _names_the_selector_error(outcome: outcomes.Outcome) -> None:
    assert isinstance(outcome, outcomes.Unsatisfiable)
    (reason,) = outcome.reasons
    assert "a selector fails on some devices: " in reason.message()
    assert "no such key: model" in reason.message()


def _binding_conditions_copied(outcome: outcomes.Outcome, rerun: Rerun) -> None:
    entry = _only(outcome).devices.results[0]
    assert entry.binding_conditions == ("attached",)
    assert entry.binding_failure_conditions == ("failed",)


# ---- the table ------------------------------------------------------------------------------------

COUNTER_POOL = [
    slice_("s-counters", counters={"mem": {"memory": "8Gi"}}, slice_count=2),
]

CASES: dict[str, Case] = {
    # -- order ---------------------------------------------------------------------------------------
    "first-fit-takes-devices-in-slice-order": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1", "gpu-2")],
        claims=[c0().request("r0", "gpu", count=2)],
        expect=allocates([("r0", "gpu-0"), ("r0", "gpu-1")]),
    ),
    "pools-searched-by-driver-then-pool-name": Case(
        classes=[ANY],
        slices=[
            slice_("s-1", driver="b.example.com", pool="pool-a", devices=[device("b-0")]),
            slice_("s-2", driver="a.example.com", pool="pool-z", devices=[device("az-0")]),
            slice_("s-3", driver="a.example.com", pool="pool-b", devices=[device("ab-0")]),
        ],
        claims=[c0().request("r0", "any")],
        expect=allocates([("r0", "pool-b/ab-0")]),
    ),
    "slices-of-a-pool-searched-by-name": Case(
        classes=[GPU],
        slices=[
            slice_("s-b", slice_count=2, devices=[device("dev-b")]),
            slice_("s-a", slice_count=2, devices=[device("dev-a")]),
        ],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "dev-a")]),
    ),
    # -- taints ----------------------------------------------------------------------------------------
    "tainted-noschedule-not-tolerated": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").taint("broken")])],
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(removed={"c0/r0": {Cause.TAINT: 1}}, candidates={"c0/r0": 0}),
    ),
    "tainted-device-skipped-for-the-next-one": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").taint("broken"), device("gpu-1")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-1")]),
    ),
    "noexecute-taint-tolerated-by-exists-and-toleration-copied": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").taint("maintenance", "soon", "NoExecute")])],
        claims=[c0().request("r0", "gpu", tolerations=[toleration("maintenance", operator="Exists")])],
        expect=allocates([("r0", "gpu-0")]),
        check=_tolerations_copied,
    ),
    "taint-with-effect-none-never-blocks": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").taint("note", effect="None")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
    ),
    "taints-ignored-when-device-taints-gate-off": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").taint("broken")])],
        claims=[c0().request("r0", "gpu")],
        features=Features(device_taints=False),
        expect=allocates([("r0", "gpu-0")]),
    ),
    "rule-taints-from-snapshot-block-device": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")],
        extra_taints={device_id("gpu-0"): [taint("rule", "x", "NoExecute")]},
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-1")]),
    ),
    "rule-taint-tolerated-like-a-slice-taint": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        extra_taints={device_id("gpu-0"): [taint("rule", "x", "NoSchedule")]},
        claims=[c0().request("r0", "gpu", tolerations=[toleration("rule", value="x")])],
        expect=allocates([("r0", "gpu-0")]),
    ),
    # -- in use and admin access -------------------------------------------------------------------------
    "device-in-use-is-skipped": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")], allocated=[in_use("gpu-0")],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-1")]),
    ),
    "unsatisfiable-reasons-count-in-use-devices": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0"), device("gpu-1"), device("gpu-2").taint("broken")])],
        allocated=[in_use("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(removed={"c0/r0": {Cause.IN_USE: 2, Cause.TAINT: 1}}, candidates={"c0/r0": 0}),
    ),
    "admin-result-of-an-allocated-claim-leaves-device-free": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        allocated=[claim("holder").request("r", "gpu", admin=True).allocated(result("r", "gpu-0", admin=True))],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
    ),
    "admin-access-ignores-existing-allocations": Case(
        classes=[GPU], slices=[gpus("gpu-0")], allocated=[in_use("gpu-0")],
        claims=[c0().request("r0", "gpu", admin=True)],
        expect=allocates([("r0", "gpu-0")]),
        check=_admin_flag_set,
    ),
    "admin-access-with-gate-off-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", admin=True)],
        features=Features(admin_access=False),
        expect=raises(errors.FeatureDisabledError, "admin access is requested, but the feature is disabled"),
    ),
    "admin-claim-before-normal-claim-blocks-it": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[claim("c0").request("r0", "gpu", admin=True), claim("c1").request("r0", "gpu")],
        expect=does_not_fit(),
    ),
    "normal-claim-before-admin-claim-both-allocate": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[claim("c0").request("r0", "gpu"), claim("c1").request("r0", "gpu", admin=True)],
        expect=allocates([("r0", "gpu-0")], [("r0", "gpu-0")]),
    ),
    # -- classes and selectors -------------------------------------------------------------------------------
    "reasons-count-only-devices-of-the-class": Case(
        classes=[GPU],
        slices=[
            gpus("gpu-0"),
            slice_("s2", driver="nic.example.com", pool="nics", devices=[device("nic-0"), device("nic-1")]),
        ],
        claims=[c0().request("r0", "gpu", count=2)],
        expect=does_not_fit(removed={"c0/r0": {}}, candidates={"c0/r0": 1}, devices={"c0/r0": 1}),
    ),
    "reasons-count-only-devices-usable-from-the-node": Case(
        classes=[GPU],
        slices=[slice_("s1", per_device=True, devices=[
            device("gpu-0").on_node("node-1"), device("gpu-1").on_node("node-2"), device("gpu-2").on_node("node-2"),
        ])],
        claims=[c0().request("r0", "gpu", count=2)],
        expect=does_not_fit(removed={"c0/r0": {}}, candidates={"c0/r0": 1}, devices={"c0/r0": 1}),
    ),
    "reasons-of-a-request-count-busy-devices-of-its-class-only": Case(
        classes=[GPU, class_("nic", 'device.driver == "nic.example.com"')],
        slices=[
            gpus("gpu-0", "gpu-1"),
            slice_("s2", driver="nic.example.com", pool="nics", devices=[device("nic-0"), device("nic-1")]),
        ],
        allocated=[claim("old").request("r", "gpu").allocated(result("r", "gpu-0")),
                   claim("old-nic").request("r", "nic").allocated(result("r", "nic-0", driver="nic.example.com",
                                                                          pool="nics"))],
        claims=[c0().request("r0", "gpu", count=2)],
        expect=does_not_fit(removed={"c0/r0": {Cause.IN_USE: 1}}, candidates={"c0/r0": 1}, devices={"c0/r0": 2}),
    ),
    "request-selector-reasons-count-mismatches": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100"), device("gpu-1").attr("model", "t4"),
                                      device("gpu-2").attr("model", "t4")])],
        claims=[c0().request("r0", "gpu", count=2, selectors=[f'device.attributes["{DRIVER}"].model == "a100"'])],
        expect=does_not_fit(removed={"c0/r0": {Cause.REQUEST_SELECTOR: 2}}, candidates={"c0/r0": 1}),
    ),
    "unknown-class-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "nope")],
        expect=raises(errors.UnknownClassError, 'deviceclass.resource.k8s.io "nope" not found'),
    ),
    "cel-runtime-error-fails-the-whole-call": Case(
        classes=[A100], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "a100")],
        expect=raises(errors.InvalidSelectorError, "CEL runtime error"),
    ),
    "cel-compile-error-names-claim-and-selector-index": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", selectors=["device.driver == 1 +"])],
        expect=raises(errors.InvalidSelectorError, "claim default/c0, request r0: selector #0: CEL compile error"),
    ),
    # -- firstAvailable ----------------------------------------------------------------------------------------
    "firstavailable-falls-back-to-second-subrequest": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")],
        claims=[c0().first_available("r0", subrequest("big", "gpu", 3), subrequest("small", "gpu", 1))],
        expect=allocates([("r0/small", "gpu-0")]),
    ),
    "firstavailable-backtracks-when-a-later-request-fails": Case(
        classes=[A100, T4],
        slices=[slice_("s1", devices=[device("a100-0").attr("model", "a100"), device("t4-0").attr("model", "t4")])],
        claims=[c0().first_available("r0", subrequest("fast", "a100"), subrequest("slow", "t4"))
                .request("r1", "a100")],
        expect=allocates([("r0/slow", "t4-0"), ("r1", "a100-0")]),
    ),
    "firstavailable-with-gate-off-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().first_available("r0", subrequest("one", "gpu"))],
        features=Features(prioritized_list=False),
        expect=raises(errors.FeatureDisabledError, "DRAPrioritizedList feature is disabled"),
    ),
    "firstavailable-reasons-list-every-subrequest": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").taint("broken")])],
        claims=[c0().first_available("r0", subrequest("a", "gpu", 2), subrequest("b", "gpu", 1))],
        expect=does_not_fit(removed={"c0/r0/a": {Cause.TAINT: 1}, "c0/r0/b": {Cause.TAINT: 1}}),
    ),
    # -- constraints -----------------------------------------------------------------------------------------------
    "match-attribute-forces-same-numa": Case(
        classes=[GPU], slices=[numa_gpus(0, 1, 1)],
        claims=[c0().request("r0", "gpu", count=2).constraint_match(NUMA)],
        expect=allocates([("r0", "gpu-1"), ("r0", "gpu-2")]),
    ),
    "match-attribute-spans-requests": Case(
        classes=[GPU], slices=[numa_gpus(0, 1, 0)],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").constraint_match(NUMA)],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-2")]),
    ),
    "match-attribute-missing-attribute-rejects-device": Case(
        classes=[GPU], slices=[numa_gpus(None, 0, 0)],
        claims=[c0().request("r0", "gpu", count=2).constraint_match(NUMA)],
        expect=allocates([("r0", "gpu-1"), ("r0", "gpu-2")]),
    ),
    "match-attribute-with-short-name-of-other-driver-finds-nothing": Case(
        classes=[GPU], slices=[numa_gpus(0, 0)],
        claims=[c0().request("r0", "gpu", count=2).constraint_match("other.example.com/numa")],
        expect=does_not_fit(candidates={"c0/r0": 2}),
    ),
    "distinct-attribute-across-whole-request": Case(
        classes=[GPU], slices=[numa_gpus(0, 1, 0, 2)],
        claims=[c0().request("r0", "gpu", count=3).constraint_distinct(NUMA)],
        expect=allocates([("r0", "gpu-0"), ("r0", "gpu-1"), ("r0", "gpu-3")]),
    ),
    "constraint-scoped-to-named-requests": Case(
        classes=[GPU], slices=[numa_gpus(0, 1, 0)],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").request("r2", "gpu").constraint_match(NUMA, "r0", "r1")],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-2"), ("r2", "gpu-1")]),
    ),
    "constraint-naming-a-subrequest-binds-only-that-choice": Case(
        classes=[GPU], slices=[numa_gpus(0, 1)],
        claims=[c0().request("r0", "gpu")
                .first_available("r1", subrequest("pinned", "gpu"), subrequest("loose", "gpu"))
                .constraint_match(NUMA, "r0", "r1/pinned")],
        expect=allocates([("r0", "gpu-0"), ("r1/loose", "gpu-1")]),
    ),
    # -- allocationMode All -----------------------------------------------------------------------------------------
    "all-mode-takes-every-matching-device": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100"), device("gpu-1").attr("model", "t4"),
                                      device("gpu-2").attr("model", "a100")])],
        claims=[c0().request("r0", "gpu", all=True, selectors=[f'device.attributes["{DRIVER}"].model == "a100"'])],
        expect=allocates([("r0", "gpu-0"), ("r0", "gpu-2")]),
    ),
    "all-mode-with-a-device-in-use-does-not-fit": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")], allocated=[in_use("gpu-1")],
        claims=[c0().request("r0", "gpu", all=True)],
        expect=does_not_fit(),
    ),
    "all-mode-on-incomplete-pool-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0", slice_count=2)],
        claims=[c0().request("r0", "gpu", all=True)],
        expect=raises(errors.InvalidPoolError, "is currently being updated"),
    ),
    "all-mode-breaking-a-constraint-is-an-error": Case(
        classes=[GPU], slices=[numa_gpus(0, 1)],
        claims=[c0().request("r0", "gpu", all=True).constraint_match(NUMA)],
        expect=raises(errors.ConstraintError, "because a claim constraint would not be satisfied"),
    ),
    # -- pools ----------------------------------------------------------------------------------------------------------
    "incomplete-pool-never-allocated-from": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1", slice_count=2)],
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(removed={"c0/r0": {Cause.INCOMPLETE_POOL: 2}}, candidates={"c0/r0": 0}),
    ),
    "incomplete-pool-skipped-for-a-complete-one": Case(
        classes=[GPU],
        slices=[slice_("s1", pool="pool-1", slice_count=2, devices=[device("gpu-0")]),
                slice_("s2", pool="pool-2", devices=[device("gpu-0")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "pool-2/gpu-0")]),
    ),
    "invalid-pool-skipped-when-another-pool-fits": Case(
        classes=[GPU],
        slices=[slice_("s1", slice_count=2, devices=[device("gpu-0")]),
                slice_("s2", slice_count=2, devices=[device("gpu-0")]),
                slice_("s3", pool="pool-2", devices=[device("gpu-9")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "pool-2/gpu-9")]),
    ),
    "invalid-pool-and-no-solution-is-an-error": Case(
        classes=[GPU],
        slices=[slice_("s1", slice_count=2, devices=[device("gpu-0")]),
                slice_("s2", slice_count=2, devices=[device("gpu-0")])],
        claims=[c0().request("r0", "gpu")],
        expect=raises(errors.InvalidPoolError, "invalid resource pools were encountered"),
    ),
    # -- several claims -----------------------------------------------------------------------------------------------
    "claims-allocated-together-all-or-none": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")],
        claims=[claim("c0").request("r0", "gpu"), claim("c1").request("r0", "gpu", count=2)],
        expect=does_not_fit(),
    ),
    "later-claim-makes-earlier-claim-backtrack": Case(
        classes=[GPU, A100],
        slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100"), device("gpu-1").attr("model", "t4")])],
        claims=[claim("c0").request("r0", "gpu"), claim("c1").request("r0", "a100")],
        expect=allocates([("r0", "gpu-1")], [("r0", "gpu-0")]),
    ),
    "budget-exhausted-is-its-own-outcome": Case(
        classes=[GPU, A100],
        slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100"), device("gpu-1").attr("model", "t4")])],
        claims=[claim("c0").request("r0", "gpu"), claim("c1").request("r0", "a100")],
        budget=2,
        expect=RunsOutOfBudget(),
    ),
    "counting-bound-rejects-thirteen-of-eleven-at-once": Case(
        classes=[GPU], slices=[gpus(*(f"gpu-{i}" for i in range(11)))],
        claims=[claim("c0").request("r0", "gpu", count=5), claim("c1").request("r0", "gpu", count=4),
                claim("c2").request("r0", "gpu", count=4)],
        max_steps=allocation.PROBE_STEPS + 1,
        expect=does_not_fit(),
    ),
    "more-than-32-results-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", count=20).request("r1", "gpu", count=13)],
        expect=raises(errors.LimitExceededError, "exceeds the claim limit of 32"),
    ),
    # -- consumable capacity and sharing -------------------------------------------------------------------------------
    "share-ids-are-deterministic-and-unique": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").shared().capacity("memory", "40Gi")])],
        claims=[c0().request("r0", "gpu", capacity={"memory": "10Gi"}).request("r1", "gpu", capacity={"memory": "10Gi"})],
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-0")]),
        check=_share_ids,
    ),
    "shared-device-capacity-used-up-by-existing-shares": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").shared().capacity("memory", "40Gi")])],
        allocated=[claim("holder").request("r", "gpu").allocated(
            result("r", "gpu-0", share_id="11111111-1111-1111-1111-111111111111", consumed={"memory": "35Gi"}))],
        claims=[c0().request("r0", "gpu", capacity={"memory": "10Gi"})],
        expect=does_not_fit(removed={"c0/r0": {Cause.CAPACITY: 1}}),
    ),
    "consumable-capacity-rounds-up-to-step": Case(
        classes=[GPU],
        slices=[slice_("s1", devices=[device("gpu-0").shared().capacity("memory", "40Gi", min="1Gi", step="1Gi")])],
        claims=[c0().request("r0", "gpu", capacity={"memory": "1500Mi"})],
        expect=allocates([("r0", "gpu-0")]),
        check=_consumed_two_gi,
    ),
    "dedicated-device-checked-for-capacity-but-gets-no-share": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").capacity("memory", "40Gi")])],
        claims=[c0().request("r0", "gpu", capacity={"memory": "10Gi"})],
        expect=allocates([("r0", "gpu-0")]),
        check=_dedicated_device_has_no_share,
    ),
    "capacity-request-naming-unknown-capacity-skips-device": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").capacity("memory", "40Gi")])],
        claims=[c0().request("r0", "gpu", capacity={"bandwidth": "1G"})],
        expect=does_not_fit(removed={"c0/r0": {Cause.CAPACITY: 1}}),
    ),
    "capacity-request-with-gate-off-is-an-error": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", capacity={"memory": "1Gi"})],
        features=Features(consumable_capacity=False),
        expect=raises(errors.FeatureDisabledError, "DRAConsumableCapacity feature is disabled"),
    ),
    # -- partitionable devices (counters) ---------------------------------------------------------------------------
    "counters-released-when-taint-rejects-device": Case(
        classes=[GPU],
        slices=[*COUNTER_POOL, slice_("s-devices", slice_count=2, devices=[
            device("part-a").consumes("mem", {"memory": "8Gi"}).taint("broken"),
            device("part-b").consumes("mem", {"memory": "8Gi"}),
        ])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "part-b")]),
    ),
    "counters-used-by-an-allocated-device-block-its-sibling": Case(
        classes=[GPU],
        slices=[*COUNTER_POOL, slice_("s-devices", slice_count=2, devices=[
            device("part-a").consumes("mem", {"memory": "8Gi"}),
            device("part-b").consumes("mem", {"memory": "8Gi"}),
        ])],
        allocated=[in_use("part-a")],
        claims=[c0().request("r0", "gpu")],
        # part-b is counted as blocked by counters, not as usable (issue 17).
        expect=does_not_fit(removed={"c0/r0": {Cause.IN_USE: 1, Cause.COUNTERS_USED_UP: 1}},
                            candidates={"c0/r0": 0}),
    ),
    "selector-error-is-named-not-counted-as-a-mismatch": Case(
        classes=[GPU],
        # gpu-1 (no model attribute) is busy, so the search never evaluates the selector on it;
        # the explanation does, and names the error the claim meets on a node where gpu-1 is free.
        slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100"), device("gpu-1")])],
        allocated=[in_use("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu", selectors=[f'device.attributes["{DRIVER}"].model == "a100"'])],
        expect=does_not_fit(removed={"c0/r0": {Cause.IN_USE: 1, Cause.SELECTOR_ERROR: 1}}),
        check=lambda outcome, rerun: _names_the_selector_error(outcome),
    ),
    "counters-shared-within-one-call": Case(
        classes=[GPU],
        slices=[*COUNTER_POOL, slice_("s-devices", slice_count=2, devices=[
            device("half-a").consumes("mem", {"memory": "4Gi"}),
            device("full").consumes("mem", {"memory": "8Gi"}),
            device("half-b").consumes("mem", {"memory": "4Gi"}),
        ])],
        claims=[c0().request("r0", "gpu", count=2)],
        expect=allocates([("r0", "half-a"), ("r0", "half-b")]),
    ),
    "partitionable-device-never-picked-with-gate-off": Case(
        classes=[GPU],
        slices=[*COUNTER_POOL, slice_("s-devices", slice_count=2, devices=[
            device("part-a").consumes("mem", {"memory": "8Gi"}), device("plain"),
        ])],
        features=Features(partitionable_devices=False),
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "plain")]),
    ),
    # -- nodes ------------------------------------------------------------------------------------------------------------
    "node-selector-slice-merged-into-result": Case(
        classes=[GPU], slices=[gpus("gpu-0", nodes=node_selector(("zone", "In", ["a"])))],
        node=node("node-1", {"zone": "a"}),
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
        check=_node_selector_zone_a,
    ),
    "node-selector-slice-invisible-from-other-nodes": Case(
        classes=[GPU], slices=[gpus("gpu-0", nodes=node_selector(("zone", "In", ["a"])))],
        node=node("node-1", {"zone": "b"}),
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(candidates={"c0/r0": 0}),
    ),
    "node-name-slice-pins-result-to-node": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
        check=_pinned_to_node_1,
    ),
    "all-nodes-slice-has-no-node-selector": Case(
        classes=[GPU], slices=[gpus("gpu-0", all_nodes=True)],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
        check=_no_node_selector,
    ),
    "per-device-node-selection-uses-only-this-nodes-devices": Case(
        classes=[GPU],
        slices=[slice_("s1", per_device=True, devices=[device("gpu-0").on_node("node-2"), device("gpu-1").on_node("node-1")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-1")]),
        check=_pinned_to_node_1,
    ),
    "slice-of-another-node-is-invisible": Case(
        classes=[GPU], slices=[gpus("gpu-0", node="node-2")],
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(candidates={"c0/r0": 0}),
    ),
    # -- binding conditions -----------------------------------------------------------------------------------------------
    "binding-condition-pools-tried-last": Case(
        classes=[GPU],
        slices=[slice_("s1", pool="a-pool", devices=[device("late").binding(["attached"], ["failed"])]),
                slice_("s2", pool="b-pool", devices=[device("early")])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "b-pool/early")]),
    ),
    "binding-conditions-copied-into-result": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").binding(["attached"], ["failed"])])],
        claims=[c0().request("r0", "gpu")],
        expect=allocates([("r0", "gpu-0")]),
        check=_binding_conditions_copied,
    ),
    "binding-condition-devices-unusable-with-gate-off": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").binding(["attached"])])],
        features=Features(device_binding_conditions=False),
        claims=[c0().request("r0", "gpu")],
        expect=does_not_fit(removed={"c0/r0": {Cause.BINDING_CONDITIONS: 1}}),
    ),
    # -- config --------------------------------------------------------------------------------------------------------------
    "class-config-first-then-claim-config-1.36": Case(
        classes=[GPU.config(DRIVER, {"from": "class"})], slices=[gpus("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").config(DRIVER, {"from": "claim"}, "r1")],
        features=Features(release="1.36"),
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
        check=_class_then_claim_config,
    ),
    "class-config-for-every-request-lists-none-1.37": Case(
        classes=[GPU.config(DRIVER, {"from": "class"})], slices=[gpus("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").config(DRIVER, {"from": "claim"}, "r1")],
        features=Features(release="1.37"),
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
        check=_class_then_claim_config_1_37,
    ),
    "claim-config-naming-two-requests-is-copied-twice-1.36": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").config(DRIVER, {}, "r0", "r1")],
        features=Features(release="1.36"),
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
        check=_claim_config_copied_per_request,
    ),
    "claim-config-naming-every-request-is-copied-once-for-all-1.37": Case(
        classes=[GPU], slices=[gpus("gpu-0", "gpu-1")],
        claims=[c0().request("r0", "gpu").request("r1", "gpu").config(DRIVER, {}, "r0", "r1")],
        features=Features(release="1.37"),
        expect=allocates([("r0", "gpu-0"), ("r1", "gpu-1")]),
        check=_claim_config_once_for_all,
    ),
    # -- upstream's stable variant (only GA-level gates on) -----------------------------------------------------------------
    "stable-variant-reads-a-capacity-request-as-absent": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", capacity={"memory": "4Gi"})],
        features=Features.only(["DRAPrioritizedList"]),
        expect=allocates([("r0", "gpu-0")]),
    ),
    "incubating-variant-refuses-a-capacity-request-with-its-gate-off": Case(
        classes=[GPU], slices=[gpus("gpu-0")],
        claims=[c0().request("r0", "gpu", capacity={"memory": "4Gi"})],
        features=Features.only(["DRAListTypeAttributes"]),
        expect=raises(errors.FeatureDisabledError, "DRAConsumableCapacity feature is disabled"),
    ),
    "stable-variant-shows-allow-multiple-allocations-as-false": Case(
        classes=[ANY], slices=[slice_("s1", devices=[device("shared").shared()])],
        claims=[c0().request("r0", "any", selectors=["device.allowMultipleAllocations"])],
        features=Features.only([]),
        expect=does_not_fit(),
    ),
    "incubating-variant-shows-allow-multiple-allocations": Case(
        classes=[ANY], slices=[slice_("s1", devices=[device("shared").shared()])],
        claims=[c0().request("r0", "any", selectors=["device.allowMultipleAllocations"])],
        features=Features.only(["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"]),
        expect=allocates([("r0", "shared")]),
    ),
    # -- pool completeness ---------------------------------------------------------------------------------------------------
    "slice-count-of-the-first-slice-met-decides-completeness": Case(
        # Upstream meets the node's own slices first: "z-mine" says 2 slices, and there are 2,
        # so the pool is complete, and its duplicate device makes it invalid.
        classes=[GPU],
        slices=[slice_("z-mine", slice_count=2, devices=[device("gpu-0")]),
                slice_("a-everywhere", node=None, all_nodes=True, slice_count=1, devices=[device("gpu-0")])],
        claims=[c0().request("r0", "gpu")],
        expect=raises(errors.InvalidPoolOnNodeError, "invalid resource pools were encountered"),
    ),
    # -- 1.36 with DRAListTypeAttributes off ----------------------------------------------------------------------------
    "list-value-fails-cel-in-1.36-without-the-gate": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").attr("numas", [0, 1])])],
        claims=[c0().request("r0", "gpu")],
        features=Features(release="1.36"),
        expect=raises(errors.InvalidSelectorError, "unsupported attribute value"),
    ),
    "list-value-is-read-by-cel-in-1.37-without-the-gate": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").attr("numas", [0, 1])])],
        claims=[c0().request("r0", "gpu", selectors=[f'0 in device.attributes["{DRIVER}"].numas'])],
        features=Features(release="1.37"),
        expect=allocates([("r0", "gpu-0")]),
    ),
    "macro-over-an-attribute-value-does-not-compile-in-1.36-without-the-gate": Case(
        classes=[GPU], slices=[slice_("s1", devices=[device("gpu-0").attr("model", "a100")])],
        claims=[c0().request("r0", "gpu", selectors=[f'device.attributes["{DRIVER}"].model.exists(m, m == "a")'])],
        features=Features(release="1.36"),
        expect=raises(errors.InvalidSelectorError, "cannot be range of a comprehension"),
    ),
}
