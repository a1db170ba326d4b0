"""Consumable capacity (DRAConsumableCapacity): how much of a device a request consumes.

For every capacity a device declares, the consumed amount is derived from the
request and the capacity's `requestPolicy` (default, validRange with min/step
rounding, validValues), must satisfy the policy, and must fit next to what
existing shares and earlier picks of this call already consume. Rounding on
`validRange` works on integer values, as upstream's `Quantity.Value()` does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from dralloc.model import devices
from dralloc.model.quantities import Quantity, QuantityFormat

_INT64_MAX = 2**63 - 1


def _milli(q: Quantity) -> int | None:
    """The quantity in milli-units when that is exact and fits int64 (upstream's safeMilliValue)."""
    milli = q.value * 1000
    if milli.denominator != 1 or abs(milli.numerator) > _INT64_MAX:
        return None
    return milli.numerator


def _milli_ceil(q: Quantity) -> int:
    """Quantity.MilliValue(): rounded up to a milli-unit."""
    return math.ceil(q.value * 1000)


def uses_milli(valid_range: devices.CapacityRequestPolicyRange, fractional: bool) -> bool:
    """DRAFractionalCapacityRange (1.37): milli-unit arithmetic for a range whose bounds and step
    are exact in milli-units (step at least 1m); otherwise whole units, as before."""
    if not fractional:
        return False
    for q in (valid_range.min, valid_range.max, valid_range.step):
        if q is not None and _milli(q) is None:
            return False
    step = _milli(valid_range.step) if valid_range.step is not None else None
    return step is None or step >= 1


def consumed_amount(requested: Quantity | None, capacity: devices.DeviceCapacity, *,
                    step_format: bool = True, fractional: bool = False) -> Quantity:
    """What one request consumes of one capacity. A value rounded up on `validRange` takes the
    step's format (1.37) or BinarySI (1.36, `step_format=False`); `fractional` (1.37's
    DRAFractionalCapacityRange) rounds in milli-units where the range allows it."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    valid_range = policy.valid_range
    if valid_range is not None and valid_range.min is not None:
        if requested < valid_range.min:
            return valid_range.min
        if valid_range.step is None:
            return requested
        if uses_milli(valid_range, fractional):
            milli_value = _milli(requested)
            value = milli_value if milli_value is not None else _milli_ceil(requested)
            step, low = _milli_ceil(valid_range.step), _milli_ceil(valid_range.min)
            steps = -((low - value) // step)
            total = low + step * steps
            fmt = valid_range.step.format
            return Quantity(total // 1000, fmt) if total % 1000 == 0 else Quantity(Fraction(total, 1000), fmt)
        value, step, low = requested.as_int_ceil(), valid_range.step.as_int_ceil(), valid_range.min.as_int_ceil()
        steps = -((low - value) // step)  # ceil((value - low) / step)
        return Quantity(low + step * steps, valid_range.step.format if step_format else QuantityFormat.BINARY_SI)
    if policy.valid_values:
        for valid in policy.valid_values:
            if requested <= valid:
                return valid
    return requested


def violates_policy(amount: Quantity, policy: devices.CapacityRequestPolicy | None, *,
                    fractional: bool = False) -> bool:
    if policy is None:
        return False
    if policy.default is not None and amount == policy.default:
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and amount > valid_range.max:
            return True
        if valid_range.step is not None:
            if uses_milli(valid_range, fractional):
                milli_amount = _milli(amount)
                if milli_amount is None:
                    return True
                low = _milli_ceil(valid_range.min) if valid_range.min is not None else 0
                return (milli_amount - low) % _milli_ceil(valid_range.step) != 0
            low = valid_range.min.as_int_ceil() if valid_range.min is not None else 0
            step = valid_range.step.as_int_ceil()
            if step and (amount.as_int_ceil() - low) % step != 0:
                return True
        return False
    if policy.valid_values:
        return all(amount != valid for valid in policy.valid_values)
    return False


class CapacityRequestProblem(Exception):
    """1.38: a capacity request that stops the allocation (the caller names claim, request, device)."""


def qualified(name: str, driver: str) -> str:
    """A capacity name with the driver as its default domain (1.38): `mem` -> `driver/mem`."""
    return name if "/" in name else f"{driver}/{name}"


def _resolved_1_38(
    requests: Mapping[str, Quantity],
    capacity: Mapping[str, devices.DeviceCapacity],
    driver: str,
) -> tuple[dict[str, tuple[str, devices.DeviceCapacity]], dict[str, Quantity]] | None:
    """1.38's name resolution: the device's capacities by qualified name (a qualified entry wins
    over a plain one of the same name), each with the name the slice spells it with, and the
    request's amounts by qualified name; None when the device lacks a requested capacity.
    Raises CapacityRequestProblem for a capacity of the device requested under both spellings.

    Upstream (resolveCapacityRequests) walks the request map in Go's random order and stops at
    the first name the device lacks, so with both spellings and a missing capacity it answers
    either way from one run to the next; dralloc always reports the two spellings."""
    device: dict[str, tuple[str, devices.DeviceCapacity]] = {}
    for name, cap in capacity.items():
        key = qualified(name, driver)
        if key not in device or "/" in name:
            device[key] = (name, cap)
    wanted: dict[str, Quantity] = {}
    spelled: dict[str, str] = {}
    lacking = False
    for name, amount in requests.items():
        key = qualified(name, driver)
        if key not in device:
            lacking = True
            continue
        if key in wanted:
            raise CapacityRequestProblem(
                f"capacity {_go_quote(key.partition('/')[2])} requested both as {_go_quote(name)} "
                f"and as {_go_quote(spelled[key])}")
        wanted[key] = amount
        spelled[key] = name
    return None if lacking else (device, wanted)


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def consumption(
    requests: Mapping[str, Quantity] | None,
    capacity: Mapping[str, devices.DeviceCapacity],
    *,
    step_format: bool = True,
    fractional: bool = False,
    driver: str | None = None,
) -> dict[str, Quantity] | None:
    """What a request would consume of each declared capacity; None if it cannot (policy, unknown name).

    `driver` (Kubernetes 1.38): request names take the driver as their default domain (`mem`
    and `driver/mem` name the same capacity; both in one request is an error), the amounts
    are keyed as the slice spells each capacity, and a negative request or consumed amount
    stops the allocation (CapacityRequestProblem), even where a policy would round it up.
    """
    requests = requests or {}
    if driver is not None:
        found = _resolved_1_38(requests, capacity, driver)
        if found is None:
            return None
        device, wanted = found
        amounts_1_38: dict[str, Quantity] = {}
        for key, (name, cap) in device.items():
            requested = wanted.get(key)
            if requested is not None and requested.value < 0:
                raise CapacityRequestProblem(
                    f"capacity {_go_quote(key)}: capacity value is negative: request {requested}")
            amount = consumed_amount(requested, cap, step_format=step_format, fractional=fractional)
            if amount.value < 0:
                raise CapacityRequestProblem(f"capacity {_go_quote(key)}: capacity value is negative")
            amounts_1_38[name] = amount
        for name, cap in device.values():
            if violates_policy(amounts_1_38[name], cap.request_policy, fractional=fractional):
                return None
        return amounts_1_38
    if any(name not in capacity for name in requests):
        return None
    amounts: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        amount = consumed_amount(requests.get(name), cap, step_format=step_format, fractional=fractional)
        if violates_policy(amount, cap.request_policy, fractional=fractional):
            return None
        amounts[name] = amount
    return amounts


def fits(
    amounts: Mapping[str, Quantity],
    capacity: Mapping[str, devices.DeviceCapacity],
    *,
    already: Mapping[str, Fraction] | None,
    in_call: Mapping[str, Fraction] | None,
    driver: str | None = None,
) -> bool:
    """`driver` (1.38): what existing shares consume is matched by qualified name, whichever
    spelling their results use."""
    if already and driver is not None:
        merged: dict[str, Fraction] = {}
        for name, held_amount in already.items():
            key = qualified(name, driver)
            merged[key] = merged.get(key, Fraction(0)) + held_amount
        already = {name: merged.get(qualified(name, driver), Fraction(0)) for name in amounts}
    for name, amount in amounts.items():
        total = amount.value
        held = already.get(name, 0) if already else 0
        taking = in_call.get(name, 0) if in_call else 0
        limit = capacity[name].value.value
        if total.denominator == 1 and held.denominator == 1 and taking.denominator == 1 and limit.denominator == 1:
            # Whole amounts (milli-GPUs, bytes): the same sum in ints, without Fraction arithmetic.
            if total.numerator + held.numerator + taking.numerator > limit.numerator:
                return False
            continue
        if total + held + taking > limit:
            return False
    return True


