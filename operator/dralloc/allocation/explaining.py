"""Why nothing fits: per claim and request, what removed the node's devices.

Run only after the search failed. For every request (each subrequest of a
firstAvailable request separately) it walks the node's devices, including those
of incomplete and invalid pools, and charges each device to the first check it
fails, in the search's order. Devices that pass every per-device check are the
candidates; if there are enough of them, the note says that the claims'
constraints, counters or competition between requests ruled out every
combination. CEL errors do not escape from here: an explanation must not fail.
"""

from __future__ import annotations

from collections import Counter

from dralloc.allocation import errors
from dralloc.allocation.outcomes import Cause, RequestReason
from dralloc.allocation.pools import DeviceInfo, Pool
from dralloc.allocation.requests import ClaimPlan, RequestPlan
from dralloc.allocation.search import Search


def _first_failure(search: Search, plan: RequestPlan, pool: Pool, info: DeviceInfo) -> Cause | None:
    if pool.incomplete:
        return Cause.INCOMPLETE_POOL
    if pool.invalid:
        return Cause.INVALID_POOL
    if info.binding_conditions and not search.features.binding_conditions:
        return Cause.BINDING_CONDITIONS
    # Selectors before "in use" (the search checks in the other order): a busy device the
    # request could never use must be reported as not matching, not as busy.
    try:
        if not search.class_matches(plan, info):
            return Cause.CLASS_SELECTOR
        if not search.node_usable(info):
            return Cause.NODE
        if not search.request_matches(plan, info):
            return Cause.REQUEST_SELECTOR
    except errors.AllocationInputError:
        return Cause.REQUEST_SELECTOR
    if not plan.admin_access and search.in_use_before(info):
        return Cause.IN_USE
    if info.consumes and not search.features.partitionable_devices:
        return Cause.COUNTERS
    if not search.capacity_amounts(plan, info, in_call=False)[0]:
        return Cause.CAPACITY
    if search.taint_blocks(plan, info):
        return Cause.TAINT
    return None


def explain(search: Search, plans: list[ClaimPlan], pools: tuple[Pool, ...]) -> tuple[RequestReason, ...]:
    reasons: list[RequestReason] = []
    for claim in plans:
        for alternatives in claim.requests:
            for plan in alternatives:
                removed: Counter[Cause] = Counter()
                total = candidates = 0
                for pool in pools:
                    for info in pool.devices:
                        total += 1
                        cause = _first_failure(search, plan, pool, info)
                        if cause is None:
                            candidates += 1
                        else:
                            removed[cause] += 1
                note = ""
                if plan.all_mode and not plan.all_devices:
                    note = "allocationMode All matched no device"
                elif candidates >= plan.count and not plan.admin_access:
                    note = ("enough devices individually; constraints, counters or the other requests "
                            "rule out every combination")
                reasons.append(RequestReason(
                    claim=claim.ref,
                    request=plan.name,
                    needed=plan.count,
                    devices=total,
                    candidates=candidates,
                    removed=tuple(sorted(removed.items(), key=lambda kv: list(Cause).index(kv[0]))),
                    note=note,
                ))
    # Requests that lack candidates on their own are the culprits; the others only failed
    # with them. A firstAvailable request is short only when every alternative is, and then
    # every alternative is reported: the user needs to know why the fallbacks failed too.
    # Report every request only when none is short on its own.
    groups: dict[tuple[str, str], list[RequestReason]] = {}
    for reason in reasons:
        groups.setdefault((reason.claim, reason.request.split("/")[0]), []).append(reason)
    short = [r for group in groups.values()
             if all(g.candidates < g.needed or (g.needed == 0 and g.note) for g in group) for r in group]
    return tuple(short or reasons)
