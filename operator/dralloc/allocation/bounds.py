"""A counting bound checked before the search: can the requests possibly fit?

Upstream's search has no counting bound: three claims asking for 13 devices
among 11 take it seconds of backtracking to reject. Here each request that
needs exclusive devices (not admin access, no shareable candidate) gets its set
of *static* candidates: devices that pass every check that does not depend on
other picks (not in use already, selectors, node, capacity against existing
shares, taints). If those requests cannot be matched to distinct devices
(a bipartite b-matching, solved as a max flow), no search can succeed.

The bound must never change an answer, only its speed. It therefore never
raises: it swallows CEL errors (the search raises them if it reaches the device,
exactly as upstream would) and it declines to judge (returns None) when a failed
search could have produced an error instead of "does not fit", e.g. an All
request with a constraint, or a constraint over derived attributes. firstAvailable requests count only when all their
subrequests need exclusive devices, with the union of their candidates and the
smallest count.

When the requests can have distinct devices, the matching that shows it (`match`)
is kept: an explanation's extra searches try each request's matched devices first.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dralloc.allocation import errors
from dralloc.allocation.pools import DeviceInfo
from dralloc.allocation.requests import ClaimPlan, RequestPlan


def _static_candidates(
    plan: RequestPlan,
    order_len: int,
    usable: Callable[[RequestPlan, int], bool | None],
) -> set[int] | None:
    found: set[int] = set()
    for position in range(order_len):
        verdict = usable(plan, position)
        if verdict is None:
            return None
        if verdict:
            found.add(position)
    return found


def _max_flow(demands: list[int], edges: list[set[int]], limit: int) -> tuple[int, dict[int, int]]:
    """Units routable from requests (with demands) to distinct devices, by augmenting paths, and
    which request (index into `demands`) each matched device went to."""
    units = [(r, sorted(edges[r])) for r, d in enumerate(demands) for _ in range(d)]
    owner: dict[int, int] = {}  # device -> unit

    def augment(unit: int, visited: set[int]) -> bool:
        for device in units[unit][1]:
            if device in visited:
                continue
            visited.add(device)
            holder = owner.get(device)
            if holder is None or augment(holder, visited):
                owner[device] = unit
                return True
        return False

    matched = 0
    for unit in range(len(units)):
        if augment(unit, set()):
            matched += 1
            if matched >= limit:
                break
    return matched, {device: units[unit][0] for device, unit in owner.items()}


@dataclasses.dataclass(frozen=True)
class Matching:
    """What the bound found: `impossible` (no search can succeed), or else, when it could judge
    every request that needs exclusive devices, distinct devices for each of them (`picks`:
    (claim index, request index) -> positions, in order). The picks are a hint, not an answer:
    constraints, counters, shares and the search's own order decide; a search that tries each
    request's picks first finds a fitting combination at once when there is no more to it."""

    impossible: bool
    picks: dict[tuple[int, int], list[int]] | None = None


UNJUDGED = Matching(impossible=False)


def impossible(
    plans: list[ClaimPlan],
    *,
    order_len: int,
    usable: Callable[[RequestPlan, int], bool | None],
    exclusive: Callable[[RequestPlan, DeviceInfo], bool],
    device_at: Callable[[int], DeviceInfo],
) -> bool:
    """True when no assignment of distinct devices can satisfy the exclusive requests."""
    return match(plans, order_len=order_len, usable=usable, exclusive=exclusive, device_at=device_at).impossible


def match(
    plans: list[ClaimPlan],
    *,
    order_len: int,
    usable: Callable[[RequestPlan, int], bool | None],
    exclusive: Callable[[RequestPlan, DeviceInfo], bool],
    device_at: Callable[[int], DeviceInfo],
) -> Matching:
    """The counting bound, and distinct devices for the exclusive requests when they can have them."""
    demands: list[int] = []
    edges: list[set[int]] = []
    keys: list[tuple[int, int]] = []
    for ci, claim in enumerate(plans):
        if claim.constraints and any(p.all_mode or p.derived for alternatives in claim.requests for p in alternatives):
            # The search could end in an error instead: a constraint error (All), or a derived
            # attribute that fails on a device a constraint looks at (DRADerivedAttributes).
            return UNJUDGED
        if any(c.strict for c in claim.constraints) and any(
                c.may_fail_on(device_at(position)) for position in range(order_len) for c in claim.constraints):
            # 1.38: a constraint that meets a value it cannot compare stops the allocation.
            return UNJUDGED
        for ri, alternatives in enumerate(claim.requests):
            if any(p.admin_access for p in alternatives):
                continue
            union: set[int] = set()
            for plan in alternatives:
                try:
                    found = _static_candidates(plan, order_len, usable)
                except errors.AllocationInputError:
                    return UNJUDGED
                if found is None:
                    return UNJUDGED
                if any(not exclusive(plan, device_at(p)) for p in found):
                    union = set()
                    break
                union |= found
            else:
                need = min(p.count for p in alternatives)
                if len(union) < need:
                    return Matching(impossible=True)
                if need:
                    demands.append(need)
                    edges.append(union)
                    keys.append((ci, ri))
    total = sum(demands)
    if not total:
        return UNJUDGED
    if len(set().union(*edges)) < total:
        return Matching(impossible=True)
    matched, owners = _max_flow(demands, edges, total)
    if matched < total:
        return Matching(impossible=True)
    picks: dict[tuple[int, int], list[int]] = {key: [] for key in keys}
    for device in sorted(owners):
        picks[keys[owners[device]]].append(device)
    return Matching(impossible=False, picks=picks)
