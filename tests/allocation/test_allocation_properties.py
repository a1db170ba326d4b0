"""Invariants of `allocate` on small random clusters (tests/strategies.py).

The reference for "is there a solution at all" is `exhaustive`, a deliberately
naive search written here from SPEC.md: it tries every subrequest choice and
every combination of devices per request, in no particular order, and checks
selectors (by the Python meaning of the strategy's fixed selectors), taints,
in-use state, admin access, sharing and claim constraints on its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from tests.builders import built, snapshot
from tests.strategies import CLASSES, SELECTORS, Cluster, clusters

from dralloc import allocation
from dralloc.allocation import errors, outcomes
from dralloc.cel import devices as cel_devices
from dralloc.cel import selectors as cel_selectors

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BLOCKING = ("NoSchedule", "NoExecute")


def run(cluster: Cluster, claims: Sequence[Any] | None = None) -> outcomes.Outcome:
    """allocate() on a fresh snapshot (nothing cached between calls)."""
    snap = snapshot(classes=cluster.classes, slices=cluster.slices, allocated=cluster.allocated,
                    features=cluster.features)
    chosen = cluster.claims if claims is None else claims
    return allocation.allocate(snap, [built(c) for c in chosen], cluster.node, features=cluster.features)


# ---- an independent, exhaustive reference ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Dev:
    driver: str
    pool: str
    name: str
    attributes: Mapping[str, Any]  # short name -> (type, value)
    taints: tuple[Mapping[str, Any], ...]
    shared: bool
    in_use: bool

    def value(self, qualified: str) -> tuple[str, Any] | None:
        domain, _, ident = qualified.partition("/")
        return self.attributes.get(ident) if domain == self.driver else None

    def plain(self) -> dict[str, Any]:
        return {k: v for k, (_, v) in self.attributes.items()}


@dataclass(frozen=True)
class Option:
    name: str  # request or request/subrequest
    base: str
    selectors: tuple[str, ...]
    all_mode: bool
    count: int
    admin: bool
    tolerations: tuple[Mapping[str, Any], ...]


class PoolBeingUpdated(Exception):
    """The reference expects InvalidPoolError: an All request next to an incomplete pool."""


def _tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator") == "Exists":
        return True
    return toleration.get("value", "") == taint.get("value", "")


def _visible_devices(cluster: Cluster) -> tuple[list[Dev], bool]:
    """Devices of complete pools usable from the node, and whether an incomplete pool is visible."""
    in_use = {
        (r["driver"], r["pool"], r["device"])
        for c in cluster.allocated for r in c.raw()["status"]["allocation"]["devices"]["results"]
        if not r.get("adminAccess")
    }
    by_pool: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in cluster.slices:
        spec = s.raw()["spec"]
        by_pool.setdefault((spec["driver"], spec["pool"]["name"]), []).append(spec)
    found: list[Dev] = []
    incomplete_seen = False
    for (driver, pool), specs in by_pool.items():
        mine = [s for s in specs if s.get("allNodes") or s.get("nodeName") == cluster.node.name]
        if not mine:
            continue
        if len(specs) != specs[0]["pool"]["resourceSliceCount"]:
            incomplete_seen = True
            continue
        for spec in mine:
            for d in spec.get("devices", []):
                attributes = {k: next(iter(v.items())) for k, v in d.get("attributes", {}).items()}
                found.append(Dev(driver, pool, d["name"], attributes, tuple(d.get("taints", ())),
                                 bool(d.get("allowMultipleAllocations")), (driver, pool, d["name"]) in in_use))
    return found, incomplete_seen


def _options(request: Mapping[str, Any]) -> list[Option]:
    def one(name: str, body: Mapping[str, Any], admin: bool) -> Option:
        return Option(
            name=name, base=request["name"],
            selectors=CLASSES[body["deviceClassName"]] + tuple(s["cel"]["expression"] for s in body.get("selectors", ())),
            all_mode=body.get("allocationMode") == "All", count=body.get("count", 1), admin=admin,
            tolerations=tuple(body.get("tolerations", ())),
        )

    if "firstAvailable" in request:
        return [one(f"{request['name']}/{s['name']}", s, False) for s in request["firstAvailable"]]
    return [one(request["name"], request["exactly"], bool(request["exactly"].get("adminAccess")))]


def _constraint_ok(constraint: Mapping[str, Any], picks: Sequence[tuple[Option, Dev]]) -> bool:
    covered = set(constraint.get("requests", ()))
    attribute = constraint.get("matchAttribute") or constraint["distinctAttribute"]
    values = [d.value(attribute) for o, d in picks if not covered or o.base in covered or o.name in covered]
    if any(v is None for v in values):
        return False
    if "matchAttribute" in constraint:
        return len(set(values)) <= 1
    return len(set(values)) == len(values)


def exhaustive(cluster: Cluster, claims: Sequence[Any] | None = None) -> bool:
    """Whether any assignment satisfies every claim; raises PoolBeingUpdated when allocate must error."""
    devices, incomplete_seen = _visible_devices(cluster)
    raw_claims = [c.raw() for c in (cluster.claims if claims is None else claims)]
    requests = [(ci, _options(r)) for ci, c in enumerate(raw_claims) for r in c["spec"]["devices"]["requests"]]
    if incomplete_seen and any(o.all_mode for _, options in requests for o in options):
        raise PoolBeingUpdated
    taints_on = cluster.features.device_taints

    def selectable(option: Option, dev: Dev) -> bool:
        return all(SELECTORS[s](dev.driver, dev.plain()) for s in option.selectors)

    def usable(option: Option, dev: Dev) -> bool:
        if dev.in_use and not option.admin:
            return False
        return not taints_on or all(
            t["effect"] not in BLOCKING or any(_tolerates(x, t) for x in option.tolerations) for t in dev.taints)

    def free(option: Option, dev: Dev, ci: int, holders: Mapping[Dev, list[int]]) -> bool:
        taken_by = holders.get(dev, [])
        if option.admin:  # keeps out of a device its own claim holds, unless that device is shareable
            return dev.shared or ci not in taken_by
        return not taken_by or dev.shared

    def picks_for(option: Option) -> Iterator[tuple[Dev, ...]]:
        if option.all_mode:
            chosen = tuple(d for d in devices if selectable(option, d))
            if chosen and all(usable(option, d) for d in chosen):
                yield chosen
            return
        candidates = [d for d in devices if selectable(option, d) and usable(option, d)]
        yield from itertools.combinations(candidates, option.count)

    def search(index: int, holders: dict[Dev, list[int]], picked: list[list[tuple[Option, Dev]]]) -> bool:
        if index == len(requests):
            return True
        ci, options = requests[index]
        for option in options:
            for combo in picks_for(option):
                if not all(free(option, d, ci, holders) for d in combo):
                    continue
                trial = picked[ci] + [(option, d) for d in combo]
                if not all(_constraint_ok(c, trial) for c in raw_claims[ci]["spec"]["devices"].get("constraints", ())):
                    continue
                for d in combo:
                    holders.setdefault(d, []).append(ci)
                picked[ci] = trial
                if search(index + 1, holders, picked):
                    return True
                picked[ci] = trial[: len(trial) - len(combo)]
                for d in combo:
                    holders[d].remove(ci)
        return False

    return search(0, {}, [[] for _ in raw_claims])


def decide(cluster: Cluster, claims: Sequence[Any] | None = None) -> str:
    """"allocated", "unschedulable" or "error", by the exhaustive reference."""
    try:
        return "allocated" if exhaustive(cluster, claims) else "unschedulable"
    except PoolBeingUpdated:
        return "error"


def status(cluster: Cluster, claims: Sequence[Any] | None = None) -> str:
    try:
        return run(cluster, claims).status
    except errors.InvalidPoolError:
        return "error"


# ---- helpers to read results back ----------------------------------------------------------------------------


def _slice_devices(cluster: Cluster) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (s.raw()["spec"]["driver"], s.raw()["spec"]["pool"]["name"], d["name"]): d
        for s in cluster.slices for d in s.raw()["spec"].get("devices", [])
    }


def _request_body(claim: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    base, _, sub = name.partition("/")
    (request,) = [r for r in claim["spec"]["devices"]["requests"] if r["name"] == base]
    if sub:
        (body,) = [s for s in request["firstAvailable"] if s["name"] == sub]
        return body  # type: ignore[no-any-return]
    return request["exactly"]  # type: ignore[no-any-return]


def _allocated(cluster: Cluster) -> outcomes.Allocated | None:
    try:
        outcome = run(cluster)
    except errors.InvalidPoolError:
        return None
    return outcome if isinstance(outcome, outcomes.Allocated) else None


# ---- the properties ----------------------------------------------------------------------------------------------


@SETTINGS
@given(clusters())
def test_device_never_in_two_results_unless_shared_or_admin(cluster: Cluster) -> None:
    """A device appears in at most one result that is neither shared (shareID) nor adminAccess."""
    outcome = _allocated(cluster)
    if outcome is None:
        return
    exclusive = [
        (r.driver, r.pool, r.device)
        for a in outcome.results for r in a.devices.results if not r.share_id and not r.admin_access
    ]
    assert len(exclusive) == len(set(exclusive))


@SETTINGS
@given(clusters())
def test_share_ids_only_on_devices_allowing_multiple_allocations(cluster: Cluster) -> None:
    """shareID is set exactly on results for devices with allowMultipleAllocations."""
    outcome = _allocated(cluster)
    if outcome is None:
        return
    published = _slice_devices(cluster)
    for a in outcome.results:
        for r in a.devices.results:
            shared = bool(published[(r.driver, r.pool, r.device)].get("allowMultipleAllocations"))
            assert (r.share_id is not None) is shared


@SETTINGS
@given(clusters())
def test_allocated_devices_satisfy_selectors_taints_and_constraints(cluster: Cluster) -> None:
    """Every picked device passes its class and request CEL selectors, its taints are tolerated, constraints hold."""
    outcome = _allocated(cluster)
    if outcome is None:
        return
    published = _slice_devices(cluster)
    for claim_builder, allocation_result in zip(cluster.claims, outcome.results, strict=True):
        raw_claim = claim_builder.raw()
        picks = []
        for r in allocation_result.devices.results:
            raw_device = published[(r.driver, r.pool, r.device)]
            body = _request_body(raw_claim, r.request)
            env = cel_devices.device_env(driver=r.driver, attributes=raw_device.get("attributes", {}), capacity={},
                                         allow_multiple_allocations=bool(raw_device.get("allowMultipleAllocations")))
            expressions = CLASSES[body["deviceClassName"]] + tuple(s["cel"]["expression"] for s in body.get("selectors", ()))
            for expression in expressions:
                assert cel_selectors.compile_selector(expression).evaluate(env) is True
            if cluster.features.device_taints:
                for t in raw_device.get("taints", ()):
                    tolerated = any(_tolerates(x, t) for x in body.get("tolerations", ()))
                    assert t["effect"] not in BLOCKING or tolerated is True
            attributes = {k: next(iter(v.items())) for k, v in raw_device.get("attributes", {}).items()}
            option = Option(r.request, r.request.partition("/")[0], (), False, 1, False, ())
            picks.append((option, Dev(r.driver, r.pool, r.device, attributes, (), False, False)))
        for constraint in raw_claim["spec"]["devices"].get("constraints", ()):
            assert _constraint_ok(constraint, picks) is True


@SETTINGS
@given(clusters())
def test_same_input_gives_same_output(cluster: Cluster) -> None:
    """Two calls on equal inputs (fresh snapshots) give equal outcomes, share IDs included."""
    try:
        first = run(cluster)
    except errors.AllocationInputError as exc:
        with pytest.raises(type(exc)) as again:
            run(cluster)
        assert str(again.value) == str(exc)
        return
    assert run(cluster) == first


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_first_fit_unschedulable_only_when_exhaustive_search_finds_nothing(cluster: Cluster) -> None:
    """allocate() allocates exactly when an exhaustive search finds some assignment (and errors when it must)."""
    assert status(cluster) == decide(cluster)


@SETTINGS
@given(clusters(max_claims=3))
def test_counting_bound_never_changes_the_answer(cluster: Cluster) -> None:
    """With the counting bound switched off, allocate() gives the same outcome (except the step count)."""
    try:
        with_bound = run(cluster)
    except errors.AllocationInputError:
        return
    with mock.patch("dralloc.allocation.bounds.impossible", return_value=False):
        without = run(cluster)
    assert type(with_bound) is type(without)
    if isinstance(with_bound, outcomes.Allocated):
        assert isinstance(without, outcomes.Allocated)
        assert with_bound.results == without.results
    if isinstance(with_bound, outcomes.Unsatisfiable):
        assert isinstance(without, outcomes.Unsatisfiable)
        assert with_bound.reasons == without.reasons


@SETTINGS
@given(clusters(max_claims=3))
def test_the_explanations_matching_guided_order_never_changes_the_explanation(cluster: Cluster) -> None:
    """The extra searches of an explanation try the bound's matched devices first (explaining._guided): the
    same reasons and culprits as searching in the node's own order (both within their budgets here)."""
    try:
        guided = run(cluster)
    except errors.AllocationInputError:
        return
    if not isinstance(guided, outcomes.Unsatisfiable):
        return
    with mock.patch("dralloc.allocation.explaining._guided", lambda variant, scope, picks: (variant, scope)):
        plain = run(cluster)
    assert isinstance(plain, outcomes.Unsatisfiable)
    assert guided.reasons == plain.reasons


@SETTINGS
@given(clusters(max_claims=3))
def test_claims_allocated_together_all_or_none(cluster: Cluster) -> None:
    """Together: one result per claim or none; any claim that fails alone makes the whole call fail."""
    together = status(cluster)
    if together == "error":
        return
    alone = [status(cluster, [c]) for c in cluster.claims]
    if together == "allocated":
        outcome = run(cluster)
        assert isinstance(outcome, outcomes.Allocated)
        assert len(outcome.results) == len(cluster.claims)
        assert alone == ["allocated"] * len(cluster.claims)
    if "unschedulable" in alone:
        assert together == "unschedulable"
    assert together == decide(cluster)


@SETTINGS
@given(clusters())
def test_unsatisfiable_reasons_account_for_every_device(cluster: Cluster) -> None:
    """Reasons name the requests short of candidates (else every request); each accounts for every device."""
    try:
        outcome = run(cluster)
    except errors.AllocationInputError:
        return
    if not isinstance(outcome, outcomes.Unsatisfiable):
        return
    wanted = {
        (f"default/{c.raw()['metadata']['name']}", o.name)
        for c in cluster.claims for r in c.raw()["spec"]["devices"]["requests"] for o in _options(r)
    }
    named = {(r.claim, r.request) for r in outcome.reasons}
    assert named <= wanted
    short = all(r.candidates < r.needed or (r.needed == 0 and r.note != "") for r in outcome.reasons)
    # Fewer than every request only when those are short, or when a culprit was found (the
    # requests it concerns are named).
    assert named == wanted or short is True or all(r.culprits for r in outcome.reasons)
    for reason in outcome.reasons:
        assert reason.candidates + sum(n for _, n in reason.removed) == reason.devices


def _claim_variant(builder: Any, *, drop_constraint: int | None = None, drop_all_constraints: bool = False,
                   keep_requests: set[str] | None = None) -> Any:
    """The claim as a model, with a constraint (or all) dropped and only some requests kept."""
    from dralloc.model import claims as model_claims

    raw = builder.raw()
    devices = raw["spec"]["devices"]
    constraints = devices.get("constraints", [])
    if drop_all_constraints:
        constraints = []
    elif drop_constraint is not None:
        constraints = [c for i, c in enumerate(constraints) if i != drop_constraint]
    devices["constraints"] = constraints
    if keep_requests is not None:
        devices["requests"] = [r for r in devices["requests"] if r["name"] in keep_requests]
    return model_claims.ResourceClaim.model_validate(raw)


@SETTINGS
@given(clusters(max_claims=3))
def test_named_culprits_are_what_rules_out_every_combination(cluster: Cluster) -> None:
    """A constraint named as the culprit: without it the claims fit. Competing requests named: without
    constraints, those requests alone still do not fit. (The strategy's pools have no counters.)"""
    try:
        outcome = run(cluster)
    except errors.AllocationInputError:
        return
    if not isinstance(outcome, outcomes.Unsatisfiable):
        return
    culprits = {c for r in outcome.reasons for c in r.culprits}
    snap = snapshot(classes=cluster.classes, slices=cluster.slices, allocated=cluster.allocated,
                    features=cluster.features)
    refs = [f"default/{c.raw()['metadata']['name']}" for c in cluster.claims]
    for culprit in culprits:
        assert culprit.kind in ("constraint", "requests"), culprit
        if culprit.kind == "constraint":
            variant = [_claim_variant(c, drop_constraint=culprit.index) if ref == culprit.claim else built(c)
                       for c, ref in zip(cluster.claims, refs, strict=True)]
            assert isinstance(allocation.allocate(snap, variant, cluster.node, features=cluster.features),
                              outcomes.Allocated), culprit
        else:
            assert len(culprit.names) >= 2
            variant = [_claim_variant(c, drop_all_constraints=True, keep_requests={
                name.rsplit("/", 1)[1] for name in culprit.names if name.rsplit("/", 1)[0] == ref})
                for c, ref in zip(cluster.claims, refs, strict=True)]
            assert isinstance(allocation.allocate(snap, variant, cluster.node, features=cluster.features),
                              outcomes.Unsatisfiable), culprit


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_strategy_selectors_mean_what_the_tests_assume(cluster: Cluster) -> None:
    """The Python predicates of strategies.SELECTORS agree with CEL on every generated device."""
    for (driver, _, _), raw_device in _slice_devices(cluster).items():
        env = cel_devices.device_env(driver=driver, attributes=raw_device["attributes"], capacity={},
                                     allow_multiple_allocations=False)
        plain = {k: next(iter(v.values())) for k, v in raw_device["attributes"].items()}
        for expression, predicate in SELECTORS.items():
            assert cel_selectors.compile_selector(expression).evaluate(env) is predicate(driver, plain)


def test_reference_finds_what_allocate_finds_on_a_known_case() -> None:
    """The exhaustive reference itself: two claims that only fit after backtracking are satisfiable."""
    from tests.builders import claim, device, slice_
    from tests.strategies import NODE, device_classes

    cluster = Cluster(
        classes=device_classes(),
        slices=(slice_("s", driver="a.example.com", node=NODE.name, devices=[
            device("d0").attr("numa", 0).attr("model", "x").attr("ecc", True),
            device("d1").attr("numa", 1).attr("model", "y").attr("ecc", False),
        ]),),
        allocated=(),
        claims=(claim("c0").request("r0", "any"),
                claim("c1").request("r0", "any", selectors=["device.attributes[device.driver].numa == 0"])),
    )
    assert decide(cluster) == "allocated"
    assert status(cluster) == "allocated"
    assert decide(cluster, [*cluster.claims, claim("c2").request("r0", "any")]) == "unschedulable"

