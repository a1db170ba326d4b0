"""Why nothing fits: per claim and request, what removed the devices of its class.

Run only after the search failed, never on the way to an allocation. For every
request (each subrequest of a firstAvailable request separately) it walks the
node's devices, including those of incomplete and invalid pools. Devices the
request's class does not select, or that cannot be used from this node, are not
counted at all: they could never be this request's devices here. Each counted
device is charged to the first check it fails, in the search's order; devices
that pass every check are the candidates.

When every request has enough candidates on its own, something about the
combination is to blame, and the explanation finds out what by searching again
with one thing relaxed at a time (`Culprit`):

1. every constraint dropped and every counter set unlimited: if the claims still
   do not fit, the requests compete for the same devices; requests are then left
   out one at a time, keeping out those without which it still does not fit, to
   name a set of requests that cannot all be satisfied together;
2. otherwise each constraint dropped alone, and the counters made unlimited (all,
   then each counter set alone): whatever makes the claims fit is named.

These searches share one small step budget (what explaining costs is bounded
whatever the claims, issue 31) and each tries first the devices the counting
bound matched to each request; when they run out, hit an error, or no single
relaxation makes the claims fit, the note says it cannot tell which. CEL errors
do not escape from here: an explanation must not fail.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from dralloc.allocation import bounds, errors
from dralloc.allocation.constraints import MatchAttribute
from dralloc.allocation.counters import CounterLedger, RelaxedLedger
from dralloc.allocation.outcomes import Cause, Culprit, RequestReason
from dralloc.allocation.pools import DeviceInfo, NodeScope, Pool, PoolID
from dralloc.allocation.requests import ClaimPlan, RequestPlan
from dralloc.allocation.search import BudgetExceeded, Search

EXPLAIN_STEPS = 20_000  # steps per extra search of an explanation
# Steps of all the extra searches of one explanation together: about 50 ms on a 2-core machine
# (bench/explanations.py), so explaining never costs much more than the search it explains.
EXPLAIN_TOTAL_STEPS = 4_000
MAX_COUNTER_SET_TRIALS = 32  # beyond that many counter sets, counters are blamed as a whole
ENOUGH = "enough devices individually"
CANNOT_TELL = (f"{ENOUGH}; constraints, counters or the other requests rule out every combination, "
               "cannot tell which")

RequestKey = tuple[int, int]  # (claim index, request index)


def _of_request(search: Search, plan: RequestPlan, info: DeviceInfo) -> bool:
    """Whether the device is one the request could ever take from this node: class selected, usable here."""
    try:
        return search.class_matches(plan, info) and search.node_usable(info)
    except errors.AllocationInputError:
        return False  # a class whose CEL fails on the device selects nothing (as selectors.in_class)


def _first_failure(search: Search, plan: RequestPlan, pool: Pool, info: DeviceInfo,
                   ledger: CounterLedger) -> tuple[Cause, str] | None:
    """The first check the device fails for the request, and (for a selector error) its message."""
    if pool.incomplete:
        return Cause.INCOMPLETE_POOL, ""
    if pool.invalid:
        return Cause.INVALID_POOL, ""
    if info.binding_conditions and not search.features.binding_conditions:
        return Cause.BINDING_CONDITIONS, ""
    # Selectors before "in use" (the search checks in the other order): a busy device the
    # request could never use must be reported as not matching, not as busy.
    try:
        if not search.request_matches(plan, info):
            return Cause.REQUEST_SELECTOR, ""
    except errors.AllocationInputError as exc:
        return Cause.SELECTOR_ERROR, str(exc)
    if not plan.admin_access and search.in_use_before(info):
        return Cause.IN_USE, ""
    if info.consumes and not search.features.partitionable_devices:
        return Cause.COUNTERS, ""
    if not search.capacity_amounts(plan, info, in_call=False)[0]:
        return Cause.CAPACITY, ""
    if info.consumes:
        # What already-allocated devices leave of the pool's counters (nothing of this call).
        shared = search.shareable(info)
        if not ledger.try_consume(pool, info, shared=shared):
            return Cause.COUNTERS_USED_UP, ""
        ledger.release(pool, info, shared=shared)
    if search.taint_blocks(plan, info):
        return Cause.TAINT, ""
    return None


# ---- searching again with something relaxed ----------------------------------------------------


class _Trials:
    """Fresh searches over variants of the failed claims, on the same node and state.

    The trials of one explanation share one budget of steps (`EXPLAIN_TOTAL_STEPS`, none more
    than `EXPLAIN_STEPS`): what an unschedulable claim costs to explain is bounded whatever its
    shape. Each trial first asks the counting bound (bounds.match): "impossible" answers it
    without a search; otherwise the devices the bound matched to each request are put first in
    the trial's order, so a variant that fits for no more reason than those devices is found
    in about as many steps as it has devices (a plain first-fit search can spend its whole
    budget looking for a tight fit the matching saw at once). The order changes only how soon
    the search finds an answer, not the answer: a variant fits or not whatever the order.
    """

    def __init__(self, search: Search, plans: list[ClaimPlan], budget: int | None) -> None:
        self.search = search
        self.plans = plans
        self.budget = EXPLAIN_STEPS if budget is None else max(1, min(budget, EXPLAIN_STEPS))
        self.left = min(self.budget * EXPLAIN_TOTAL_STEPS // EXPLAIN_STEPS, EXPLAIN_TOTAL_STEPS) or 1

    def fits(self, *, drop_constraints: frozenset[tuple[int, int]] | None = frozenset(),
             relax: frozenset[tuple[PoolID, str]] | None = frozenset(),
             keep: frozenset[RequestKey] | None = None) -> bool | None:
        """Whether the claims fit with these constraints dropped (None: all), these counter sets
        unlimited (None: all) and only the requests in `keep` (None: all); None when unknown."""
        variant = []
        for ci, claim in enumerate(self.plans):
            constraints = [] if drop_constraints is None else [
                c for k, c in enumerate(claim.constraints) if (ci, k) not in drop_constraints]
            requests = claim.requests if keep is None else [
                alternatives for ri, alternatives in enumerate(claim.requests) if (ci, ri) in keep]
            variant.append(dataclasses.replace(claim, constraints=constraints, requests=requests))
        self._reset()
        original = self.search
        try:
            # The counting bound ignores constraints and counters, so "impossible" holds for every
            # variant; it keeps hopeless competition (16 + 16 of 31 devices) from using the budget.
            matching = bounds.match(variant, order_len=len(original.devices), usable=original.statically_usable,
                                    exclusive=lambda plan, info: not plan.admin_access and not original.shareable(info),
                                    device_at=lambda position: original.devices[position])
            if matching.impossible:
                return False
            if self.left <= 0:
                return None
            scope = original.scope
            if matching.picks:
                variant, scope = _guided(variant, scope, matching.picks)
            trial = Search(claims=variant, scope=scope, node=original.node, allocated=original.allocated,
                           features=original.features, extra_taints=original.extra_taints,
                           budget=min(self.budget, self.left))
            if relax != frozenset():
                trial.counters = RelaxedLedger(original.allocated, relax,
                                               compatibility_groups=original.features.compatibility_groups)
            try:
                return trial.run()
            finally:
                self.left -= trial.steps
        except (BudgetExceeded, errors.AllocationInputError):
            return None
        finally:
            self._reset()

    def _reset(self) -> None:
        for claim in self.plans:
            for constraint in claim.constraints:
                constraint.reset()


def _guided(variant: list[ClaimPlan], scope: NodeScope,
            picks: dict[tuple[int, int], list[int]]) -> tuple[list[ClaimPlan], NodeScope]:
    """The variant over a scope whose order puts each request's matched devices first, in the order the
    search visits the requests. Plans are copied with their memo of selectable positions renumbered:
    the memo is by position, and the originals stay with the original order."""
    first = [position for key in sorted(picks) for position in picks[key]]
    chosen = set(first)
    permutation = first + [position for position in range(len(scope.devices)) if position not in chosen]
    renumbered = {old: new for new, old in enumerate(permutation)}
    copied = [dataclasses.replace(claim, requests=[
        [dataclasses.replace(plan, selectable={renumbered[old]: known for old, known in plan.selectable.items()})
         for plan in alternatives] for alternatives in claim.requests]) for claim in variant]
    return copied, scope.reordered(permutation)


def _constraint_text(claim: ClaimPlan, index: int) -> str:
    constraint = claim.constraints[index]
    kind = "matchAttribute" if isinstance(constraint, MatchAttribute) else "distinctAttribute"
    scope = f" over requests {', '.join(sorted(constraint.requests))}" if constraint.requests else ""
    # "claim NS/NAME" followed by "," or ":": how cached explanations are renamed for other items.
    return f"{kind} {constraint.attribute}{scope} (claim {claim.ref}, constraint #{index})"


def _competing(trials: _Trials, keys: list[RequestKey]) -> Culprit | None:
    """A set of requests that cannot all be satisfied even without constraints and counters."""
    needed = list(keys)
    for key in keys:
        without = [k for k in needed if k != key]
        if trials.fits(drop_constraints=None, relax=None, keep=frozenset(without)) is False:
            needed = without  # still does not fit without it: it is not needed to fail
    if len(needed) < 2:
        return None  # one request alone: not competition; nothing this explanation can name
    plans = trials.plans
    names = tuple(f"{plans[ci].ref}/{plans[ci].requests[ri][0].base_name}" for ci, ri in needed)
    claims = sorted({ci for ci, _ in needed})
    if len(claims) == 1:
        requests = [plans[ci].requests[ri][0].base_name for ci, ri in needed]
        listed = f"requests {_and(requests)} of claim {plans[claims[0]].ref}"
    else:
        listed = _and([f"request {plans[ci].requests[ri][0].base_name} of claim {plans[ci].ref}"
                       for ci, ri in needed])
    return Culprit("requests", f"{listed} compete for the same devices: they cannot all be satisfied together, "
                   "even without constraints and counters", names=names)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _constraints_and_counters(trials: _Trials, counter_sets: list[tuple[PoolID, str]]) -> list[Culprit]:
    found: list[Culprit] = []
    for ci, claim in enumerate(trials.plans):
        for index in range(len(claim.constraints)):
            if trials.fits(drop_constraints=frozenset({(ci, index)})) is True:
                found.append(Culprit("constraint", _constraint_text(claim, index), claim=claim.ref, index=index))
    if counter_sets and trials.fits(relax=None) is True:
        singles = []
        if len(counter_sets) <= MAX_COUNTER_SET_TRIALS:
            for pool_id, set_name in counter_sets:
                if trials.fits(relax=frozenset({(pool_id, set_name)})) is True:
                    singles.append(Culprit("counter-set", f"counter set {set_name} of pool {pool_id} runs out",
                                           names=(str(pool_id), set_name)))
        found.extend(singles or [Culprit("counters", "the shared counters run out (no single counter set "
                                         "is to blame)")])
    return found


def _culprit_note(culprits: list[Culprit]) -> str:
    if len(culprits) == 1:
        culprit = culprits[0]
        if culprit.kind == "requests":
            return f"{ENOUGH}, but {culprit.text}"
        if culprit.kind == "constraint":
            return f"{ENOUGH}, but {culprit.text} rules out every combination: without it the claims fit"
        remedy = "with more of it" if culprit.kind == "counter-set" else "with unlimited counters"
        return f"{ENOUGH}, but {culprit.text}: {remedy} the claims fit"
    return (f"{ENOUGH}, but each of these rules out every combination (relaxing any one of them, the claims fit): "
            + "; ".join(c.text for c in culprits))


def _involved(culprit: Culprit, plans: list[ClaimPlan], plan: RequestPlan, ci: int,
              uses: dict[int, set[tuple[PoolID, str]]]) -> bool:
    """Whether the culprit concerns this (sub)request: what the user needs to look at."""
    if culprit.kind == "constraint":
        return plans[ci].ref == culprit.claim and plans[ci].constraints[culprit.index].covers(
            plan.base_name, plan.sub_name)
    if culprit.kind == "counter-set":
        return any(str(pool_id) == culprit.names[0] and name == culprit.names[1] for pool_id, name in uses[id(plan)])
    if culprit.kind == "counters":
        return bool(uses[id(plan)])
    return f"{plan.claim_ref}/{plan.base_name}" in culprit.names


# ---- the explanation -----------------------------------------------------------------------------


def explain(search: Search, plans: list[ClaimPlan], pools: tuple[Pool, ...], *,
            budget: int | None = EXPLAIN_STEPS) -> tuple[RequestReason, ...]:
    reasons: list[RequestReason] = []
    located: list[tuple[int, RequestPlan]] = []  # claim index and plan of each reason
    ledger = CounterLedger(search.allocated, compatibility_groups=search.features.compatibility_groups)
    uses: dict[int, set[tuple[PoolID, str]]] = {}  # id(plan) -> counter sets its candidates consume
    for ci, claim in enumerate(plans):
        for alternatives in claim.requests:
            for plan in alternatives:
                removed: Counter[Cause] = Counter()
                total = candidates = 0
                consumed: set[tuple[PoolID, str]] = set()
                selector_error = ""
                for pool in pools:
                    for info in pool.devices:
                        if not _of_request(search, plan, info):
                            continue
                        total += 1
                        failed = _first_failure(search, plan, pool, info, ledger)
                        if failed is None:
                            candidates += 1
                            consumed.update((pool.id, set_name) for set_name, _ in info.consumes)
                        else:
                            removed[failed[0]] += 1
                            selector_error = selector_error or failed[1]
                uses[id(plan)] = consumed
                note = ""
                if plan.all_mode and not plan.all_devices:
                    note = "allocationMode All matched no device"
                elif candidates >= plan.count and not plan.admin_access:
                    note = CANNOT_TELL

                reasons.append(RequestReason(
                    claim=claim.ref,
                    request=plan.name,
                    needed=plan.count,
                    devices=total,
                    candidates=candidates,
                    removed=tuple(sorted(removed.items(), key=lambda kv: list(Cause).index(kv[0]))),
                    note=note,
                    device_class=plan.device_class.metadata.name,
                    selector_error=selector_error,
                ))
                located.append((ci, plan))
    # Requests that lack candidates on their own are the culprits; the others only failed
    # with them. A firstAvailable request is short only when every alternative is, and then
    # every alternative is reported: the user needs to know why the fallbacks failed too.
    groups: dict[tuple[str, str], list[RequestReason]] = {}
    for reason in reasons:
        groups.setdefault((reason.claim, reason.request.split("/")[0]), []).append(reason)
    short = [r for group in groups.values()
             if all(g.candidates < g.needed or (g.needed == 0 and g.note) for g in group) for r in group]
    if short:
        return tuple(short)
    if not any(r.note == CANNOT_TELL for r in reasons):
        return tuple(reasons)
    # Every request has enough candidates on its own: find what rules out the combinations.
    trials = _Trials(search, plans, budget)
    culprits: list[Culprit] = []
    relaxed = trials.fits(drop_constraints=None, relax=None)
    if relaxed is False:
        keys = [(ci, ri) for ci, claim in enumerate(plans) for ri in range(len(claim.requests))]
        competing = _competing(trials, keys)
        culprits = [competing] if competing is not None else []
    elif relaxed is True:
        counter_sets = sorted({key for consumed in uses.values() for key in consumed})
        culprits = _constraints_and_counters(trials, counter_sets)
    if not culprits:
        return tuple(reasons)
    note = _culprit_note(culprits)
    blamed = tuple(culprits)
    named = [
        dataclasses.replace(reason, note=note if reason.note == CANNOT_TELL else reason.note, culprits=blamed)
        for reason, (ci, plan) in zip(reasons, located, strict=True)
        if any(_involved(c, plans, plan, ci, uses) for c in culprits)
    ]
    # Only the requests the culprits concern; all of them if the culprits concern none (counters
    # consumed by devices no request could take cannot be blamed, but be safe).
    return tuple(named) if named else tuple(dataclasses.replace(r, culprits=blamed) for r in reasons)
