"""The backtracking search: first fit, in upstream's order, with exact upstream results.

Search order (Kubernetes 1.36, incubating allocator). Claims are taken in the
given order, requests in claim order, and the devices of one request one at a
time until its count is reached. For each device needed, candidates are tried
pool by pool (pools without binding-condition devices first, each group sorted
by driver then pool name), slice by slice (by name), device by device (slice
order). The k-th device of a request is only looked for after the position of
the (k-1)-th, so the search walks combinations, not permutations. The first
complete solution wins. When a later request cannot be satisfied the search
goes back to the most recent choice and tries the next candidate.

A candidate is accepted when, in this order: it is not in use; it passes the
class and request selectors (and per-device node selection, and the
binding-conditions gate); its capacity fits (consumable capacity); its counters
fit (partitionable devices); its taints are tolerated; and every claim
constraint accepts it. Every reservation made for a candidate that is then
rejected, or that the search backtracks over, is undone.

A firstAvailable request tries its subrequests in order, each with the whole
rest of the search. A claim may hold at most 32 results; a branch that would go
over is abandoned, and when every subrequest of a request goes over, so is
every alternative device choice made earlier within the same claim (the count
does not depend on which device was chosen), exactly as upstream prunes.

dralloc adds a counting bound before the search (bounds.py): if the requests
that need exclusive devices cannot be matched to distinct candidates at all, the
answer is "does not fit" at once instead of after an exponential search.
Pruning never changes which solution is found first, only how fast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from fractions import Fraction

from dralloc.allocation import capacity, errors, interruption, nodeaffinity, selectors, taints
from dralloc.allocation import constraints as constraints_
from dralloc.allocation.counters import CounterLedger
from dralloc.allocation.features import OPTIONAL_NODE_OPERATIONS, Features
from dralloc.allocation.pools import DeviceID, DeviceInfo, NodeScope, NodeView, Pool
from dralloc.allocation.requests import RESULTS_MAX, ClaimPlan, RequestPlan
from dralloc.allocation.snapshots import AllocatedState, DeviceSet
from dralloc.model import taints as model_taints
from dralloc.model.quantities import Quantity

# allocate_one's three answers: a full solution below, none, or "every way down this
# branch exceeds the result limit" (prune alternatives within the claim).
FOUND, NOT_FOUND, EXCEEDED = 1, 0, 2


class BudgetExceeded(Exception):
    """Internal: the step budget ran out; unwinds the recursion."""


@dataclasses.dataclass(slots=True)
class Pick:
    """One device taken for one request, with what it reserved."""

    request: RequestPlan
    pool: Pool
    info: DeviceInfo
    shared: bool
    amounts: dict[str, Quantity] | None
    share_index: int


ShareIdFactory = Callable[[int, str, DeviceID, int], str]


class Search:
    """One allocation call's mutable state. Not reusable, not thread-safe."""

    __slots__ = (
        "_counters", "allocated", "allocating", "budget", "cel_view", "claims", "consumable", "devices",
        "extra_taints", "features", "in_call_capacity", "interrupt", "invalid_pool_seen", "node",
        "node_operations_optional", "pool_at", "results", "scope", "selected_sub", "share_count", "shared_before",
        "steps",
    )

    def __init__(
        self,
        *,
        claims: list[ClaimPlan],
        scope: NodeScope,
        node: NodeView,
        allocated: AllocatedState,
        features: Features,
        extra_taints: dict[DeviceID, tuple[model_taints.DeviceTaint, ...]],
        budget: int | None,
    ) -> None:
        self.claims = claims
        self.node = node
        self.allocated = allocated
        self.features = features
        self.cel_view = selectors.view_of(features)
        # A device whose slice skips node operations (1.37) needs the experimental code (1.38: incubating) with
        # DRAOptionalNodeOperations and a node that declares it; other variants ignore the field.
        self.node_operations_optional = not features.at_least_1_37 or features.code != "experimental" or (
            features.optional_node_operations and OPTIONAL_NODE_OPERATIONS in node.declared_features)
        self.extra_taints = extra_taints
        self.budget = budget
        self.steps = 0
        self.scope = scope
        self.invalid_pool_seen = scope.invalid_pool_seen
        self.devices = scope.devices  # the candidates in search order (NodeScope)
        self.pool_at = scope.pool_at
        self.allocating: dict[DeviceID, list[int]] = {}
        self.in_call_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self._counters: CounterLedger | None = None  # made when a device that consumes counters is met
        self.results: list[list[Pick]] = [[] for _ in claims]
        self.selected_sub: dict[tuple[int, int], int] = {}
        self.share_count = 0
        self.interrupt = interruption.current()  # the caller's "too costly, stop" (None: never)
        self.consumable = features.consumable_capacity
        # Devices with shares before this call; an empty tuple when there are none (a cheaper test).
        self.shared_before: AbstractSet[DeviceID] | tuple[()] = allocated.shared if allocated.shared else ()

    @property
    def counters(self) -> CounterLedger:
        """The counters this call consumes (partitionable devices)."""
        counters = self._counters
        if counters is None:
            counters = self._counters = CounterLedger(self.allocated,
                                                      compatibility_groups=self.features.compatibility_groups)
        return counters

    @counters.setter
    def counters(self, ledger: CounterLedger) -> None:
        self._counters = ledger

    @property
    def order(self) -> tuple[tuple[Pool, DeviceInfo], ...]:
        """(pool, device) in search order (NodeScope.order)."""
        return self.scope.order

    def fresh(self, *, budget: int | None) -> Search:
        """A new search over the same claims and node, with nothing taken yet.

        Constraints keep their state on the plan objects; a search stopped by its budget
        unwound without removing its devices, so they are reset. Memoized selector results
        stay valid.
        """
        for claim in self.claims:
            for constraint in claim.constraints:
                constraint.reset()
        again = Search(claims=self.claims, scope=self.scope, node=self.node, allocated=self.allocated,
                       features=self.features, extra_taints=self.extra_taints, budget=budget)
        again.claims = self.claims
        again.results = [[] for _ in self.claims]
        return again

    # ---- per-device checks -------------------------------------------------------------

    def shareable(self, info: DeviceInfo) -> bool:
        return self.consumable and info.allow_multiple

    def in_use_before(self, info: DeviceInfo) -> bool:
        """In use by allocations that already exist (not by picks of this call)."""
        device_id = info.id
        if device_id in self.allocated.exclusive:
            return True
        # A device that stopped allowing multiple allocations is still held by its shares.
        return device_id in self.shared_before and not (self.consumable and info.allow_multiple)

    def in_use(self, request: RequestPlan, info: DeviceInfo, claim_index: int) -> bool:
        device_id = info.id
        holders = self.allocating.get(device_id)
        if request.admin_access:
            # Admin access only keeps out of devices its own claim holds exclusively: a device
            # that allows multiple allocations takes another share, as it does for any request
            # (upstream records only non-shareable picks as "allocating for this claim").
            return holders is not None and claim_index in holders and not (self.consumable and info.allow_multiple)
        # `in_use_before`, then this call's picks, inlined: a device that allows multiple
        # allocations is never in use but exclusively allocated; any other one is when it has a
        # holder, existing shares included (a device that stopped allowing them).
        if device_id in self.allocated.exclusive:
            return True
        if self.consumable and info.allow_multiple:
            return False
        return bool(holders) or device_id in self.shared_before

    def selectable(self, request: RequestPlan, position: int) -> bool:
        """Selectors, per-device node selection and the binding-conditions gate (memoized per request)."""
        memo = request.selectable
        known = memo.get(position)
        if known is not None:
            return known
        info = self.devices[position]
        result = self.statically_selectable(request, info)
        memo[position] = result
        return result

    def statically_selectable(self, request: RequestPlan, info: DeviceInfo) -> bool:
        if info.binding_conditions and not self.features.binding_conditions:
            return False
        # class_matches and request_matches, inlined (a call per device each).
        view, wording = self.cel_view, self.features.at_least_1_37
        expressions = request.class_expressions
        if expressions is None:
            if not self.class_matches(request, info):
                return False
        elif expressions and not selectors.all_match_expressions(info, expressions, owner=request.class_owner,
                                                                 view=view, release_1_37_wording=wording):
            return False
        expressions = request.request_expressions
        if expressions is None:
            if not self.request_matches(request, info):
                return False
        elif expressions and not selectors.all_match_expressions(info, expressions, owner=request.request_owner,
                                                                 view=view, release_1_37_wording=wording):
            return False
        return not info.per_device_node or self.node_usable(info)

    def class_matches(self, request: RequestPlan, info: DeviceInfo) -> bool:
        # Errors name the claim and request that met the class, then the class (`class_owner`).
        expressions = request.class_expressions
        if expressions is None:
            return selectors.all_match(info, request.device_class.spec.selectors, owner=request.class_owner,
                                       view=self.cel_view, release_1_37_wording=self.features.at_least_1_37)
        return not expressions or selectors.all_match_expressions(
            info, expressions, owner=request.class_owner, view=self.cel_view,
            release_1_37_wording=self.features.at_least_1_37)

    def request_matches(self, request: RequestPlan, info: DeviceInfo) -> bool:
        expressions = request.request_expressions
        if expressions is None:
            return selectors.all_match(info, request.selectors, owner=request.request_owner, view=self.cel_view,
                                       release_1_37_wording=self.features.at_least_1_37)
        return not expressions or selectors.all_match_expressions(
            info, expressions, owner=request.request_owner, view=self.cel_view,
            release_1_37_wording=self.features.at_least_1_37)

    def node_usable(self, info: DeviceInfo) -> bool:
        """Per-device node selection: whether this device can be used from the node."""
        if not info.per_device_node:
            return True
        device = info.device
        try:
            return nodeaffinity.node_matches(
                node_name=self.node.name, labels=self.node.labels, target_node_name=device.node_name,
                all_nodes=device.all_nodes, selector=device.node_selector,
            )
        except ValueError as exc:
            raise errors.DeviceSliceError(
                f"ResourceSlice {info.slice.metadata.name}: device {info.id.device}: nodeSelector: {exc}"
            ) from exc

    def capacity_amounts(self, request: RequestPlan, info: DeviceInfo, *, in_call: bool,
                         static: bool = False, all_mode: bool = False) -> tuple[bool, dict[str, Quantity] | None]:
        """(fits, amounts) under consumable capacity; amounts is None when nothing is consumed.

        `static`: against the device's declared capacity only, ignoring what existing shares
        consume (how 1.37 decides which devices an `All` request covers). 1.38 reads request
        names with the driver as default domain and stops on a negative request
        (DeviceCapacityError naming the device: its name only while an `All` request gathers
        its devices, `all_mode`, as upstream).
        """
        if not self.features.consumable_capacity:
            return True, None
        if not request.capacity and info.plain_capacity and not self.shareable(info):
            # The common case, decided without arithmetic: a dedicated device whose whole
            # capacity is taken fits exactly when nothing else consumes any of it.
            fits = static or (info.id not in self.allocated.consumed_capacity and (
                not in_call or info.id not in self.in_call_capacity))
            return fits, None
        driver = info.driver if self.features.release == "1.38" else None
        try:
            amounts = capacity.consumption(request.capacity, info.capacity, step_format=self.features.at_least_1_37,
                                           fractional=self.features.fractional_capacity_range, driver=driver)
        except capacity.CapacityRequestProblem as exc:
            device = info.device.name if all_mode else info.id
            raise errors.DeviceCapacityError(
                f"claim {request.claim_ref}, request {request.name}: checking capacity for device {device}: {exc}"
            ) from None
        if amounts is None:
            return False, None
        ok = capacity.fits(
            amounts, info.capacity,
            already=None if static else self.allocated.consumed_capacity.get(info.id),
            in_call=self.in_call_capacity.get(info.id) if in_call else None,
            driver=driver,
        )
        return ok, amounts

    def taint_blocks(self, request: RequestPlan, info: DeviceInfo) -> bool:
        if not self.features.device_taints:
            return False
        device_taints = info.taints
        extra = self.extra_taints.get(info.id)
        if extra:
            device_taints = device_taints + extra
        return taints.blocking_taint(device_taints, request.tolerations) is not None

    def statically_usable(self, request: RequestPlan, position: int) -> bool | None:
        """Checks that do not depend on other picks of this call; None when a CEL error hides the answer."""
        info = self.devices[position]
        if not request.admin_access and self.in_use_before(info):
            return False
        if info.consumes and not self.features.partitionable_devices:
            return False
        try:
            if not self.selectable(request, position):
                return False
        except errors.AllocationInputError:
            return None
        if not self.capacity_amounts(request, info, in_call=False)[0]:
            return False
        return not self.taint_blocks(request, info)

    # ---- taking and giving back one device --------------------------------------------

    def take(self, claim_index: int, request: RequestPlan, pool: Pool, info: DeviceInfo, *, must: bool,
             room: tuple[bool, dict[str, Quantity] | None] | None = None) -> Pick | None:
        """allocateDevice: the in-call checks; on success everything is reserved and recorded.

        `room`: `capacity_amounts(..., in_call=True)` when the caller already computed it.
        """
        if self.in_use(request, info, claim_index):
            return None
        if info.slice.spec.skip_node_operations and not self.node_operations_optional:
            return None
        if info.consumes and not self.features.partitionable_devices:
            return None
        shared = self.shareable(info)
        if info.consumes and not self.counters.try_consume(pool, info, shared=shared):
            return None
        if self.taint_blocks(request, info):
            if info.consumes:
                self.counters.release(pool, info, shared=shared)
            return None
        claim = self.claims[claim_index]
        added: list[constraints_.Constraint] = []
        for constraint in claim.constraints:
            if not constraint.covers(request.base_name, request.sub_name):
                continue
            try:
                fits = constraint.add(info, request.derived)
            except constraints_.UnsupportedValue:
                # 1.38: an uncomparable value stops the allocation. Its stable variant names the
                # claim and request; its incubating one (1.37's experimental code) does not.
                for done in reversed(added):
                    done.remove()
                if info.consumes:
                    self.counters.release(pool, info, shared=shared)
                where = f"claim {claim.ref}, request {request.name}: " if self.features.code == "incubating" else ""
                raise errors.DeviceConstraintError(
                    f"{where}device {info.id}: unsupported attribute value for {constraint.attribute}") from None
            if fits:
                added.append(constraint)
                continue
            for done in reversed(added):
                done.remove()
            if info.consumes:
                self.counters.release(pool, info, shared=shared)
            if must:
                raise errors.DeviceConstraintError(
                    f"claim {claim.ref}, request {request.name}: cannot add device {info.id} "
                    f"because a claim constraint would not be satisfied"
                )
            return None
        # Capacity last, as upstream: a device an `All` request must take fails its constraints
        # with an error even when it would not have had the capacity either.
        fits, amounts = room if room is not None else self.capacity_amounts(request, info, in_call=True)
        if not fits:
            for done in reversed(added):
                done.remove()
            if info.consumes:
                self.counters.release(pool, info, shared=shared)
            return None
        self.allocating.setdefault(info.id, []).append(claim_index)
        if shared and amounts:
            used = self.in_call_capacity.setdefault(info.id, {})
            for name, amount in amounts.items():
                used[name] = used.get(name, Fraction(0)) + amount.value
        pick = Pick(request, pool, info, shared, amounts, self.share_count)
        if shared:
            self.share_count += 1
        self.results[claim_index].append(pick)
        return pick

    def give_back(self, claim_index: int, pick: Pick) -> None:
        info, request = pick.info, pick.request
        claim = self.claims[claim_index]
        for constraint in reversed(claim.constraints):
            if constraint.covers(request.base_name, request.sub_name):
                constraint.remove()
        holders = self.allocating[info.id]
        holders.remove(claim_index)
        if not holders:
            del self.allocating[info.id]
        if pick.shared and pick.amounts:
            used = self.in_call_capacity[info.id]
            for name, amount in pick.amounts.items():
                used[name] -= amount.value
        if pick.shared:
            self.share_count -= 1
        if info.consumes:
            self.counters.release(pick.pool, info, shared=pick.shared)
        self.results[claim_index].pop()

    # ---- the recursion ------------------------------------------------------------------

    def run(self) -> bool:
        found = self.run_plain()
        if found is not None:
            return found
        return self.allocate_one(0, 0, 0, 0, False, 0) == FOUND

    def run_plain(self) -> bool | None:
        """The search's answer for the commonest call, one claim with one plain request, found
        without the recursion; None when the call is not such (the recursion decides).

        Plain: ExactCount, no subrequests, no admin access, no capacity request, no constraint,
        and the devices met consume no counters and are neither shared nor capacity-limited
        (when they are, the walk is given back and None answered). Then whether a device can be
        taken does not depend on the devices taken before it, so the recursion takes the first
        `count` usable devices in order (it never backtracks on the way) in count + 3 steps, or,
        when only q < count are usable, walks every subset of them (2^q steps) and fails. This walk
        meets the devices in the recursion's order and makes the same checks (selector errors
        surface on the same device), and answers with the same steps, picks and state; a budget
        the recursion would run out of, or an interruption check it would make, leaves it to the
        recursion.
        """
        claims = self.claims
        if len(claims) != 1 or self.steps or self.results[0]:
            return None
        claim = claims[0]
        if len(claim.requests) != 1 or claim.constraints or len(claim.requests[0]) != 1:
            return None
        request = claim.requests[0][0]
        count = request.count
        if (request.sub_name is not None or request.all_mode or request.admin_access or request.capacity
                or not 0 < count <= RESULTS_MAX):
            return None
        budget = self.budget
        consumable = self.consumable
        picks: list[Pick] = []
        devices, pool_at = self.devices, self.pool_at
        allocating, shared_before = self.allocating, self.shared_before
        exclusive = self.allocated.exclusive
        held, newest, extra = exclusive.membership() if type(exclusive) is DeviceSet else (None, 0, frozenset())
        selectable = request.selectable
        for position in range(len(devices)):
            info = devices[position]
            if info.consumes or (consumable and (info.allow_multiple or not info.plain_capacity)):
                break  # counters or capacity shared with other picks: the recursion decides
            # `in_use` for a request without admin access and a device that allows no sharing, inlined
            # (DeviceSet.__contains__ too).
            device_id = info.id
            if held is None:
                if device_id in exclusive:
                    continue
            else:
                version = held(device_id)
                if (version is not None and version <= newest) or (extra and device_id in extra):
                    continue
            if device_id in allocating or device_id in shared_before:
                continue
            known = selectable.get(position)  # `selectable`'s memo, read inline
            if known is None:
                known = self.selectable(request, position)
            if not known:
                continue
            room = self.capacity_amounts(request, info, in_call=True)
            if not room[0]:
                continue
            pick = self.take(0, request, pool_at[position], info, must=False, room=room)
            if pick is None:
                continue
            picks.append(pick)
            if len(picks) == count:
                steps = count + 3
                if budget is not None and steps > budget:
                    break
                self.steps = steps
                return True
        else:
            steps = 1 << len(picks)
            if (budget is None or steps <= budget) and steps < interruption.STEPS_BETWEEN_CHECKS:
                for pick in reversed(picks):
                    self.give_back(0, pick)
                self.steps = steps
                return False
        for pick in reversed(picks):
            self.give_back(0, pick)
        return None

    def allocate_one(self, ci: int, ri: int, si: int, di: int, in_sub: bool, start: int) -> int:
        self.steps += 1
        if self.budget is not None and self.steps > self.budget:
            raise BudgetExceeded
        if self.interrupt is not None and not self.steps % interruption.STEPS_BETWEEN_CHECKS and self.interrupt():
            raise interruption.Interrupted
        if ci >= len(self.claims):
            return FOUND
        claim = self.claims[ci]
        if ri >= len(claim.requests):
            outcome = self.allocate_one(ci + 1, 0, 0, 0, False, 0)
            # Exceeding the limit in a later claim says nothing about choices in this one.
            return NOT_FOUND if outcome == EXCEEDED else outcome
        alternatives = claim.requests[ri]
        if not in_sub and alternatives[0].sub_name is not None:
            all_exceeded = True
            for index in range(len(alternatives)):
                outcome = self.allocate_one(ci, ri, index, 0, True, 0)
                if outcome == EXCEEDED:
                    continue
                all_exceeded = False
                if outcome == FOUND:
                    self.selected_sub[(ci, ri)] = index
                    return FOUND
            return EXCEEDED if all_exceeded else NOT_FOUND
        request = alternatives[si]
        if request.all_mode and not request.all_devices:
            return NOT_FOUND
        if di >= request.count:
            return self.allocate_one(ci, ri + 1, 0, 0, False, 0)
        if len(self.results[ci]) + request.count - di > RESULTS_MAX:
            return EXCEEDED
        if request.all_mode:
            pool, info = request.all_devices[di]
            pick = self.take(ci, request, pool, info, must=True)
            if pick is None:
                return NOT_FOUND
            outcome = self.allocate_one(ci, ri, si, di + 1, in_sub, 0)
            if outcome != FOUND:
                self.give_back(ci, pick)
            return outcome
        # No "too few devices left" cut-off here: upstream evaluates every device it reaches,
        # and a CEL runtime error on a late device must surface exactly as it does upstream.
        # The counting bound (bounds.py) is what keeps hopeless searches short.
        devices, pool_at = self.devices, self.pool_at
        last = len(devices)
        position = start
        selectable = request.selectable
        while position < last:
            info = devices[position]
            position += 1
            if self.in_use(request, info, ci):
                continue
            known = selectable.get(position - 1)  # `selectable`'s memo, read inline
            if known is None:
                known = self.selectable(request, position - 1)
            if not known:
                continue
            # Capacity before the in-call checks, as upstream's allocateOne (CmpRequestOverCapacity):
            # a device without room never reaches the constraints, whose derived attributes can fail.
            room = self.capacity_amounts(request, info, in_call=True)
            if not room[0]:
                continue
            pick = self.take(ci, request, pool_at[position - 1], info, must=False, room=room)
            if pick is None:
                continue
            outcome = self.allocate_one(ci, ri, si, di + 1, in_sub, position)
            if outcome == FOUND:
                return FOUND
            self.give_back(ci, pick)
            if outcome == EXCEEDED:
                return EXCEEDED
        return NOT_FOUND
