"""Pure allocation logic: which devices a set of ResourceClaims gets on one node.

Inputs in, outcome out. No I/O, no clock, no randomness, no logging, no kopf;
only `dralloc.cel` and `dralloc.model` are imported. The semantics are those of
the upstream structured allocator (k8s.io/dynamic-resource-allocation,
release 1.36; see docs/allocation.md and the conformance vectors), with the
documented exceptions where dralloc does what the API promises instead.

Entry point: `allocate(snapshot, claims, node, features=..., budget=...)`.
It returns an `outcomes.Allocated`, `outcomes.Unsatisfiable` (with reasons) or
`outcomes.BudgetExhausted`, and raises `errors.AllocationInputError` for bad
input. Claims are allocated together: all of them or none.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence

from dralloc.allocation import bounds, errors, explaining, outcomes, results
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceID, DeviceInfo, NodeView, Pool
from dralloc.allocation.requests import ClaimPlan, RequestPlan, plan_claims
from dralloc.allocation.search import BudgetExceeded, Search, ShareIdFactory
from dralloc.allocation.snapshots import Snapshot
from dralloc.model import claims as model_claims

DEFAULT_BUDGET = 1_000_000
PROBE_STEPS = 200  # steps a search may take before the counting bound is consulted

# Share IDs must be fresh UIDs, yet the core has no randomness: derive them from what
# makes a share unique (claim, request, device, pick), in a namespace of our own.
_SHARE_NAMESPACE = uuid.UUID("6f1d0f5e-8c7a-4f2e-9a51-2d6c0b7e4a10")


def deterministic_share_ids(claim_list: Sequence[model_claims.ResourceClaim]) -> ShareIdFactory:
    def make(claim_index: int, request: str, device: DeviceID, pick: int) -> str:
        claim = claim_list[claim_index]
        key = f"{claim.metadata.uid or ''}|{claim.ref()}|{request}|{device}|{pick}"
        return str(uuid.uuid5(_SHARE_NAMESPACE, key))

    return make


def _all_devices(search_pools: tuple[Pool, ...], search: Search, plan: RequestPlan) -> list[tuple[Pool, DeviceInfo]]:
    chosen: list[tuple[Pool, DeviceInfo]] = []
    # 1.38 wraps ErrFailedAllocationOnNode: such a pool rules out this node only.
    pool_error = errors.InvalidPoolOnNodeError if search.features.release == "1.38" else errors.InvalidPoolError
    for pool in search_pools:
        if pool.incomplete:
            raise pool_error(
                f"claim {plan.claim_ref}, request {plan.name}: asks for all devices, "
                f"but resource pool {pool.id} is currently being updated"
            )
        if pool.invalid:
            raise pool_error(
                f"claim {plan.claim_ref}, request {plan.name}: asks for all devices, "
                f"but resource pool {pool.id} is currently invalid"
            )
        for info in pool.devices:
            if not search.statically_selectable(plan, info):
                continue
            if plan.capacity is not None or search.features.consumable_capacity:
                # 1.36 leaves out a device with too little capacity left; 1.37 keeps every device
                # whose declared capacity could serve the request, so the request then fails.
                fits, _ = search.capacity_amounts(plan, info, in_call=False, static=search.features.at_least_1_37,
                                                  all_mode=True)
                if not fits:
                    continue
            chosen.append((pool, info))
    return chosen


def _failure(search: Search, plans: list[ClaimPlan], pools: tuple[Pool, ...], node: NodeView, *,
             budget: int | None, explain: bool) -> outcomes.Outcome:
    """The outcome of a search that found nothing."""
    if search.invalid_pool_seen:
        raise errors.InvalidPoolOnNodeError(
            f"cannot allocate all claims on node {node.name}: invalid resource pools were encountered: "
            + ", ".join(f"{p.id} ({p.invalid_reason})" for p in pools if p.invalid and not p.incomplete)
        )
    reasons = explaining.explain(search, plans, pools, budget=budget) if explain else ()
    return outcomes.Unsatisfiable(reasons=reasons, steps=search.steps)


def allocate(
    snapshot: Snapshot,
    claims: Sequence[model_claims.ResourceClaim],
    node: NodeView,
    *,
    features: Features,
    budget: int | None = DEFAULT_BUDGET,
    share_ids: ShareIdFactory | None = None,
    explain: bool = True,
    prefer: Sequence[DeviceID] = (),
) -> outcomes.Outcome:
    """Allocate all `claims` together on `node`, first fit in upstream's order.

    `prefer`: devices to try first, in this order, before the rest in upstream's order (a
    placement policy's device choice, e.g. fragmentation-aware); the search and its checks
    are unchanged, so the result is valid whatever the order, and upstream's without it.
    """
    claim_list = list(claims)
    scope = snapshot.slices.scope_for(node, features)
    if prefer:
        rank = {device: position for position, device in enumerate(prefer)}
        last = len(rank)
        devices = scope.devices
        scope = scope.reordered(sorted(range(len(devices)), key=lambda position: rank.get(devices[position].id, last)))
    pools = scope.pools
    search = Search(
        claims=[],
        scope=scope,
        node=node,
        allocated=snapshot.allocated,
        features=features,
        extra_taints=dict(snapshot.extra_taints) if snapshot.extra_taints else {},
        budget=budget,
    )
    plans = plan_claims(
        claim_list,
        device_classes=snapshot.classes,
        features=features,
        all_devices=functools.partial(_all_devices, pools, search),
    )
    search.claims = plans
    search.results = [[] for _ in plans]

    # Most searches end within a few steps, where the counting bound would only cost time: the
    # search first runs on a small probe budget, and only when that is not enough does the
    # bound get to declare the claims hopeless before the full (fresh) search runs.
    demand = 0
    for plan in plans:
        for alternatives in plan.requests:
            demand += alternatives[0].count if len(alternatives) == 1 else min(p.count for p in alternatives)
    probe = (PROBE_STEPS if budget is None else min(PROBE_STEPS, budget)) if demand > 1 else None
    try:
        if probe is not None:
            search.budget = probe
            try:
                found = search.run()
            except BudgetExceeded:
                if bounds.impossible(
                    plans,
                    order_len=len(search.devices),
                    usable=search.statically_usable,
                    exclusive=lambda plan, info: not plan.admin_access and not search.shareable(info),
                    device_at=lambda position: search.devices[position],
                ):
                    return _failure(search, plans, pools, node, budget=budget, explain=explain)
                if budget is not None and search.steps >= budget:
                    raise
                spent = search.steps
                # The fresh search counts on from the probe's steps, so its limit is the whole budget.
                search = search.fresh(budget=budget)
                search.steps = spent
                found = search.run()
        else:
            found = search.run()
    except BudgetExceeded:
        return outcomes.BudgetExhausted(steps=search.steps)
    if not found:
        return _failure(search, plans, pools, node, budget=budget, explain=explain)
    allocation = results.build(
        plans, search.results, search.selected_sub, node=node, features=features,
        share_id=share_ids or deterministic_share_ids(claim_list),
    )
    return outcomes.Allocated(results=allocation, steps=search.steps)


__all__ = ["Features", "NodeView", "Snapshot", "allocate", "errors", "outcomes"]
