"""`dralloc simulate --optimal`: how many items an exact solver could place, for comparison.

Every placement policy places items one at a time in arrival order and never moves
one; the question a capacity planner asks is whether any assignment could place
more. This builds that assignment problem for OR-Tools CP-SAT (an optional
dependency: `pip install ortools`) and reports the most items it can place, proven
optimal or with the solver's upper bound when the time limit ends the search.

The problem is the one the fragmentation measure sees (scheduling/fragmenting.py):
per node its devices (each a signature with free amounts per capacity, or one unit
for a device that cannot be shared) and its CPU and memory left; per item its
requests (`count` devices, each taking given amounts of a device of an allowed
signature) and its CPU and memory. An item may go to a node only if the Placer's
node fit (selectors, affinity, taints, other resources) lets it. Items whose claims
the model does not describe (constraints, All mode, admin access, shared claims)
are left out and counted apart. The answer is exact for the modelled items, which
for traces like the Alibaba one (shares, whole GPUs, models, CPU and memory) are all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from dralloc.allocation.fragmentation import Amount
from dralloc.scheduling import nodefit, placement

MISSING = "--optimal needs OR-Tools' CP-SAT solver, which is not installed: pip install ortools"


class SolverMissing(Exception):
    """ortools is not installed."""


@dataclasses.dataclass(frozen=True)
class Optimum:
    items: int  # items considered (modelled)
    left_out: int  # items the model does not describe
    best: int  # most items placed by the best assignment found
    bound: int  # no assignment places more
    proven: bool
    seconds: float
    gang_members: int = 0  # of left_out: pods of gangs (all or none), which the model places one by one

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _scaled(values: Sequence[Amount]) -> tuple[list[int], int]:
    """Integers for CP-SAT: amounts times their common denominator."""
    denominator = 1
    for value in values:
        if not isinstance(value, int):
            denominator = denominator * value.denominator // _gcd(denominator, value.denominator)
    return [int(v * denominator) for v in values], denominator


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


def solve(placer: placement.Placer, items: Sequence[placement.Item], *, time_limit: float) -> Optimum:
    """The most of `items` that fit together on the placer's cluster as it is now."""
    try:
        from ortools.sat.python import cp_model
    except ImportError as exc:
        raise SolverMissing(MISSING) from exc
    model = placer.model
    if model is None:
        raise ValueError("solve needs a Placer made with policy fragmentation-aware (its cluster model)")
    cp = cp_model.CpModel()
    placed: list[Any] = []
    left_out = 0
    # node index -> device position -> dimension -> [(amount, var)]; node -> resource -> [(need, var)]
    device_use: dict[tuple[int, int, int], list[tuple[Amount, Any]]] = {}
    resource_use: dict[tuple[int, int], list[tuple[int, Any]]] = {}
    considered = 0
    for i, item in enumerate(items):
        shape = placer._model_shape(item)
        if shape is None:
            left_out += 1
            continue
        considered += 1
        requests = nodefit.pod_requests(item.pod) if item.pod is not None else None
        options = []
        for n in range(len(placer.nodes)):
            state = model.state(n)
            if not model.measure.fits(state, shape) or placer.misfit(item, n, requests) is not None:
                continue
            x = cp.new_bool_var(f"x{i}_{n}")
            options.append(x)
            for r, need in enumerate(shape.resources):
                if need:
                    resource_use.setdefault((n, r), []).append((need, x))
            devices = state[0]
            for q, demand in enumerate(shape.devices):
                chosen = []
                # A request in one topology domain: one domain is picked, its devices only.
                picked: dict[object, Any] = {}
                for d, device in enumerate(devices):
                    amounts = demand.amounts.get(device[0])
                    if amounts is None:
                        continue
                    y = cp.new_bool_var(f"y{i}_{n}_{q}_{d}")
                    chosen.append(y)
                    if demand.domains is not None:
                        domain = demand.domains[device[0]]
                        if domain not in picked:
                            picked[domain] = cp.new_bool_var(f"z{i}_{n}_{q}_{len(picked)}")
                        cp.add_implication(y, picked[domain])
                    for k, amount in enumerate(amounts):
                        device_use.setdefault((n, d, k), []).append((amount, y))
                    if not model.signatures[device[0]].shareable:
                        device_use.setdefault((n, d, -1), []).append((1, y))  # one holder at most
                cp.add(sum(chosen) == demand.count * x)
                if picked:
                    cp.add(sum(picked.values()) <= 1)
        if options:
            cp.add(sum(options) <= 1)
            placed.extend(options)
    for (n, d, k), uses in device_use.items():
        device = model.state(n)[0][d]
        free: Amount = 1 if k == -1 else device[1][k]
        scaled, _ = _scaled([free, *(a for a, _ in uses)])
        divisor = 0
        for value in scaled[1:]:
            divisor = _gcd(divisor, value)
        divisor = divisor or 1
        cp.add(sum((s // divisor) * v for s, (_, v) in zip(scaled[1:], uses, strict=True)) <= scaled[0] // divisor)
    for (n, r), needs in resource_use.items():
        # Nano-units overflow CP-SAT's 64-bit coefficients (GiBs of memory): divide by the needs'
        # common divisor, rounding what is left down (exact for integer sums of the needs).
        divisor = 0
        for need, _ in needs:
            divisor = _gcd(divisor, need)
        left = model.state(n)[1][r] // divisor
        cp.add(sum((need // divisor) * v for need, v in needs) <= min(left, 2**62))
    cp.maximize(sum(placed))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = 1  # reproducible, and polite on a shared machine
    solver.parameters.random_seed = 0
    status = solver.solve(cp)
    best = int(solver.objective_value) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else 0
    bound = int(solver.best_objective_bound) if status != cp_model.INFEASIBLE else 0
    return Optimum(considered, left_out, best, min(bound, considered), status == cp_model.OPTIMAL, solver.wall_time)
