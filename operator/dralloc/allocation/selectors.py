"""CEL device selectors, evaluated once per (device, expression).

Compilation is memoized by `dralloc.cel.selectors.compile_selector`; results are
memoized on the `DeviceInfo` (which lives as long as its slice object), so a
selector runs once per device, not once per allocation attempt or per node.
Compile and runtime errors are cached too: they fail every call that reaches
that device, as upstream's allocator does.

Errors name the class or claim and the selector index like upstream:
"class gpu: selector #0: CEL compile error: ...".

The CEL engine (celpy, lark and dralloc.cel's compiler: a good part of a CLI run's start)
is imported where a selector is compiled or a device's CEL value built, not here: the
commonest selector, `device.driver == "..."`, needs only the check that the device's
attributes convert (`dralloc.cel.attributes`, which imports no celpy).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from dralloc.allocation import errors
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceInfo
from dralloc.cel import attributes as cel_attributes
from dralloc.model import classes

if TYPE_CHECKING:
    from dralloc.cel import devices as cel_devices


@dataclasses.dataclass(frozen=True)
class CelView:
    """What the upstream allocator variant lets CEL see of a device.

    `allow_multiple`: the stable variant passes no `allowMultipleAllocations` (it reads
    false). `list_values`: 1.36 with DRAListTypeAttributes off does not convert list values
    ("unsupported attribute value"); 1.37 does whatever the gate. Results are memoized per
    view: one device can be seen through several views in one process (tests, simulate
    with --features).
    """

    allow_multiple: bool = True
    list_values: bool = True


FULL_VIEW = CelView()


def view_of(features: Features) -> CelView:
    view = CelView(allow_multiple=features.beyond_stable_channel,
                   list_values=features.at_least_1_37 or features.list_type_attributes)
    return FULL_VIEW if view == FULL_VIEW else view


_CEL_ENV = "__cel_env__"


@dataclasses.dataclass
class SelectorStats:
    """How selector results were obtained since start (read by the operator's metrics)."""

    cached: int = 0
    evaluated: int = 0
    errors: int = 0


STATS = SelectorStats()


def check_present(selectors: Sequence[classes.DeviceSelector], owner: str) -> None:
    """Every selector must carry a CEL expression; anything else is an unknown selector type."""
    for index, selector in enumerate(selectors):
        if selector.cel is None:
            raise errors.UnsupportedFieldError(
                f"{owner}, selector #{index}: CEL expression empty (unsupported selector type?)"
            )


def _key(view: CelView, name: str) -> Any:
    """The memo key of `name` on a device: the name itself for the full view (the common case)."""
    return name if view is FULL_VIEW else (view, name)


def _env(info: DeviceInfo, view: CelView) -> cel_devices.DeviceEnv:
    key = _key(view, _CEL_ENV)
    env = info.selector_results.get(key)
    if env is None:
        from dralloc.cel import devices as cel_devices  # the CEL engine, on first use (module docstring)

        env = cel_devices.device_env(
            driver=info.driver,
            attributes={name: attr.raw() for name, attr in info.device.attributes.items()},
            capacity={name: cap.value for name, cap in info.device.capacity.items()},
            allow_multiple_allocations=info.allow_multiple and view.allow_multiple,
            list_values=view.list_values,
        )
        info.selector_results[key] = env
    return env


def _conversion_error(info: DeviceInfo, view: CelView) -> str | None:
    """Why upstream could not turn this device into the CEL `device` at all, None when it can.

    Decided without building the device's CEL value unless some attribute is bad, in which
    case the full conversion words the message (`device_env`).
    """
    env: cel_devices.DeviceEnv | None = info.selector_results.get(_key(view, _CEL_ENV))
    if env is not None:
        return env.error
    for attribute in info.device.attributes.values():
        kind, value = attribute.kind_and_value() or (None, None)
        # The scalars that always convert, decided inline (`check_attribute_value` would only
        # call `_scalar` to say so): every attribute of every device is checked once.
        kind_of = type(value)
        if kind == "string":
            if kind_of is str:
                continue
        elif kind == "int":
            if kind_of is int and cel_attributes.INT64_MIN <= cast(int, value) <= cel_attributes.INT64_MAX:
                continue
        elif kind == "bool":
            if kind_of is bool:
                continue
        try:  # versions parse once each (cel.attributes caches them)
            cel_attributes.check_attribute_value(kind, value, list_values=view.list_values)
        except ValueError:
            return _env(info, view).error
    return None


# Results shared by alike devices: (expression, view, what the selector reads of the device)
# -> result. A fleet's devices differ in UUIDs and bus addresses, which selectors rarely
# read; building each device's CEL value only to evaluate the same comparison on the same
# model name was most of a large snapshot's placement time. Bounded: emptied when full.
_ALIKE: dict[tuple[Any, ...], Any] = {}
_ALIKE_MAX = 1 << 16
_CONVERTS = "__converts__"


def _alike_key(info: DeviceInfo, view: CelView, expression: str,
               reads: tuple[tuple[str, ...], ...]) -> tuple[Any, ...] | None:
    """The key under which devices alike in what `reads` names share a result, or None when this
    device cannot share: its attributes do not convert (the error names the device's own
    attribute), a read name could mean two of its entries, or a domain cannot be one."""
    converts = info.selector_results.get(_key(view, _CONVERTS))
    if converts is None:
        converts = info.selector_results[_key(view, _CONVERTS)] = _conversion_error(info, view) is None
    if not converts or len(info.attributes) != len(info.device.attributes):
        return None  # a short and a qualified name for one attribute: the CEL value decides which
    values: list[Any] = [expression, view]
    for read in reads:
        if read[0] == "device":
            values.append(info.driver if read[1] == "driver" else info.allow_multiple and view.allow_multiple)
            continue
        field, domain, ident = read
        if "/" in domain:
            return None
        if field == "attributes":
            attribute = info.attributes.get(f"{domain}/{ident}")
            values.append(None if attribute is None else attribute.kind_and_value())
            continue
        qualified = info.capacity.get(f"{domain}/{ident}")
        short = info.capacity.get(ident) if domain == info.driver and "/" not in ident else None
        if qualified is not None and short is not None:
            return None
        amount = qualified if qualified is not None else short
        # A quantity is its value and print format (the CEL value keeps nothing else).
        values.append(None if amount is None else (amount.value.value, amount.value.format))
    return tuple(values)


# `device.driver == "name"` is by far the most common class selector; it needs neither the
# CEL engine nor the device's celpy value, and its meaning is plain string equality (once the
# device's attributes convert at all, see `evaluate`).
_DRIVER_EQUALS = re.compile(r"""^\s*device\.driver\s*==\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*$""")


@functools.lru_cache(maxsize=4096)
def _driver_literal(expression: str) -> str | None:
    match = _DRIVER_EQUALS.match(expression)
    if match is None:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


# Upstream 1.37's cel.EnhanceRuntimeError: what it appends to a runtime error about a missing key.
NO_SUCH_KEY_HINT = (". consider using CEL optional chaining (.? followed by orValue()) "
                    "or guarding the check with has() for optional fields")


def evaluate(info: DeviceInfo, expression: str, *, owner: str, index: int, view: CelView = FULL_VIEW,
             release_1_37_wording: bool = True) -> bool:
    """Whether the device satisfies one selector. Raises InvalidSelectorError on CEL errors.

    `release_1_37_wording`: a runtime error names the device ("selector #0 on device D/P/N")
    and a missing key gets upstream 1.37's hint (cel.EnhanceRuntimeError); 1.36 had neither.
    """
    key = _key(view, expression)
    cached = info.selector_results.get(key)
    if cached is not None:
        STATS.cached += 1
    else:
        STATS.evaluated += 1
        literal = _driver_literal(expression)
        if literal is not None:
            # Upstream converts the whole device before it evaluates any selector, so an attribute
            # it cannot convert (no value, which is what kube-apiserver leaves of a list attribute
            # written with DRAListTypeAttributes off; a version that does not parse) fails
            # `device.driver == "..."` as well.
            device_error = _conversion_error(info, view)
            cached = info.driver == literal if device_error is None else ("runtime", device_error)
        else:
            from dralloc.cel import selectors as cel_selectors  # the CEL engine, on first use

            try:
                program = cel_selectors.compile_selector(expression, list_values=view.list_values)
            except cel_selectors.CELCompileError as exc:
                cached = ("compile", str(exc))
            else:
                alike = _alike_key(info, view, expression, program.reads) if program.reads is not None else None
                cached = _ALIKE.get(alike) if alike is not None else None
                if cached is None:
                    try:
                        cached = program.evaluate(_env(info, view)) is True
                    except cel_selectors.CELRuntimeError as exc:
                        cached = ("runtime", str(exc))
                    if alike is not None:
                        if len(_ALIKE) >= _ALIKE_MAX:
                            _ALIKE.clear()
                        _ALIKE[alike] = cached
        info.selector_results[key] = cached
    if cached is True or cached is False:
        return cached
    kind, message = cached
    STATS.errors += 1
    # The failure is cached per device; the message names whoever reached it this time.
    if kind == "runtime" and release_1_37_wording:
        if "no such key:" in message:
            message += NO_SUCH_KEY_HINT
        raise errors.InvalidSelectorError(f"{owner}: selector #{index} on device {info.id}: CEL runtime error: {message}")
    raise errors.InvalidSelectorError(f"{owner}: selector #{index}: CEL {kind} error: {message}")


def all_match(info: DeviceInfo, selectors: Sequence[classes.DeviceSelector], *, owner: str,
              view: CelView = FULL_VIEW, release_1_37_wording: bool = True) -> bool:
    for index, selector in enumerate(selectors):
        assert selector.cel is not None  # checked by check_present before the search
        if not evaluate(info, selector.cel.expression, owner=owner, index=index, view=view,
                        release_1_37_wording=release_1_37_wording):
            return False
    return True


def derived_attribute(info: DeviceInfo, name: str, expression: str) -> tuple[str, Any]:
    """The value a request's derived attribute `name` computes for the device, as
    `DeviceAttribute.kind_and_value` gives a published one; memoized on the device.

    Raises InvalidDerivedAttributeError with upstream's words: "compile derived attribute
    NAME failed: ..." or "evaluate derived attribute NAME on device D/P/N failed: ...".
    Derived attributes exist only in the experimental variant, which shows CEL the whole
    device (the full view).
    """
    key = (_DERIVED, expression)
    cached = info.selector_results.get(key)
    if cached is None:
        from dralloc.cel import derived as cel_derived  # the CEL engine, on first use
        from dralloc.cel import selectors as cel_selectors

        try:
            program = cel_derived.compile_derived(expression)
        except cel_selectors.CELCompileError as exc:
            cached = ("compile", str(exc))
        else:
            try:
                cached = ("value", program.evaluate(_env(info, FULL_VIEW)))
            except cel_selectors.CELRuntimeError as exc:
                cached = ("evaluate", str(exc))
        info.selector_results[key] = cached
    outcome, detail = cached
    if outcome == "value":
        return cast(tuple[str, Any], detail)
    if outcome == "compile":
        raise errors.InvalidDerivedAttributeError(f"compile derived attribute {name} failed: {detail}")
    raise errors.InvalidDerivedAttributeError(
        f"evaluate derived attribute {name} on device {info.id} failed: {detail}")


_DERIVED = "__derived__"


def compile_check(expression: str, *, owner: str, index: int) -> None:
    """Raise InvalidSelectorError now if the expression does not compile."""
    from dralloc.cel import selectors as cel_selectors  # the CEL engine, on first use

    try:
        cel_selectors.compile_selector(expression)
    except cel_selectors.CELCompileError as exc:
        raise errors.InvalidSelectorError(f"{owner}: selector #{index}: CEL compile error: {exc}") from exc


def in_class(info: DeviceInfo, device_class: classes.DeviceClass) -> bool:
    """Whether the device is one of the class's devices; a class whose CEL fails matches nothing.

    For reports (utilization, metrics), where a broken class must not stop the count: the
    allocator itself raises such errors instead.
    """
    try:
        return all_match(info, device_class.spec.selectors, owner=f"class {device_class.metadata.name}")
    except errors.AllocationInputError:
        return False
