"""CEL device selectors, evaluated once per (device, expression).

Compilation is memoized by `dralloc.cel.selectors.compile_selector` (a bounded LRU, see
there). Results are memoized per expression: a least-recently-used map (`dralloc.cel.lru`)
from expression to that expression's result on each device it was asked about (by
the device's `serial`, which identifies the slice object and device a DeviceInfo was made
from, so a snapshot rebuilt around unchanged slices keeps its results) and to the results
shared by devices alike in what the selector reads. A selector runs once per device, not
once per allocation attempt or per node, as long as its expression stays in the map.

The map is bounded, so that tenants writing ever new selectors cannot grow memory without
end: at most `CACHE_EXPRESSIONS` (1,024) distinct expressions and `CACHE_RESULTS`
(2,097,152) results in all, about 40 bytes each (~80 MiB at most); past either limit the
least recently used expression goes with all its results, and is evaluated again when next
asked for. Class selectors and the selectors of the claims being placed stay in it. Both are
settable (`set_cache_limit`); the results limit should exceed the devices times the
expressions in use at once, or a placement pass evaluates some selectors more than once.
Results of devices whose slice object is gone stay until their expression is evicted.

Compile and runtime errors are cached too: they fail every call that reaches that device,
as upstream's allocator does.

Errors name the class or claim and the selector index like upstream:
"class gpu: selector #0: CEL compile error: ...".

The CEL engine (celpy, lark and dralloc.cel's compiler: a good part of a CLI run's start)
is imported where a selector is compiled or a device's CEL value built, not here: the
commonest selector, `device.driver == "..."`, needs only the check that the device's
attributes convert (`dralloc.cel.attributes`, which imports no celpy).

Thread-safe as the operator uses it (decisions in a worker thread, metrics and taint rules
in the event loop): a memoized result is read without a lock; storing one takes the map's
lock briefly (`dralloc.cel.lru`); two threads may evaluate the same selector on the same
device at once, and both get the same result.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from dralloc.allocation import errors, interruption
from dralloc.allocation.features import Features
from dralloc.allocation.pools import DeviceInfo
from dralloc.cel import attributes as cel_attributes
from dralloc.cel import lru
from dralloc.model import classes

if TYPE_CHECKING:
    from dralloc.cel import devices as cel_devices


@dataclasses.dataclass(frozen=True)
class CelView:
    """What the upstream allocator variant lets CEL see of a device.

    `allow_multiple`: the stable variant passes no `allowMultipleAllocations` (it reads
    false). `list_values`: 1.36 with DRAListTypeAttributes off does not convert list values
    ("unsupported attribute value"); 1.37 does whatever the gate. `lazy`: Kubernetes 1.38's
    CEL, which fails only the expressions that read an attribute it could not convert, where
    1.36 and 1.37 fail every expression on that device (`dralloc.cel.devices`), and whose
    CIDR library (version 1) has `isMask()`. Results are memoized per
    view: one device can be seen through several views in one process (tests, simulate
    with --features).
    """

    allow_multiple: bool = True
    list_values: bool = True
    lazy: bool = False
    # Which of the eight views this is, 0 for the full view: where memos keep what is seen
    # through it, without hashing the view (a dataclass's hash runs Python code).
    index: int = dataclasses.field(init=False, compare=False, repr=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", 4 * self.lazy + 2 * (not self.allow_multiple) + (not self.list_values))


FULL_VIEW = CelView()
VIEWS = 8  # how many CelView.index values there are


_LAZY_FULL_VIEW = CelView(lazy=True)
# One instance per view.
_VIEWS: dict[tuple[bool, bool, bool], CelView] = {(True, True, False): FULL_VIEW, (True, True, True): _LAZY_FULL_VIEW}


def view_of(features: Features) -> CelView:
    global _LAST_VIEW
    last = _LAST_VIEW
    if last[0] is features:
        return last[1]
    view = _VIEW_OF.get(features)
    if view is None:
        if len(_VIEW_OF) >= 256:
            _VIEW_OF.clear()
        view = _VIEW_OF.setdefault(features, _view_of(features))
    _LAST_VIEW = (features, view)
    return view


_VIEW_OF: dict[Features, CelView] = {}  # features -> their view (few distinct features in a process; bounded)
_LAST_VIEW: tuple[Features | None, CelView] = (None, FULL_VIEW)  # the features asked last (equal ones are others)


def _view_of(features: Features) -> CelView:
    flags = (features.beyond_stable_channel, features.at_least_1_37 or features.list_type_attributes,
             features.release == "1.38")
    view = _VIEWS.get(flags)
    if view is None:
        view = _VIEWS.setdefault(flags, CelView(allow_multiple=flags[0], list_values=flags[1], lazy=flags[2]))
    return view


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
    """The key of a device's own value `name` seen through `view` (`selector_results`): the
    name itself for the full view (the common case)."""
    return name if view is FULL_VIEW else (view.index, name)


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
            lazy=view.lazy,
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
        # The scalars that always convert, decided inline in `kind_and_value`'s order (which
        # field counts when several are set), without building its pair: `check_attribute_value`
        # would only call `_scalar` to say so. Every attribute of every device is checked once.
        value: Any = attribute.int_
        if value is not None:
            if type(value) is int and cel_attributes.INT64_MIN <= value <= cel_attributes.INT64_MAX:
                continue
            kind: str | None = "int"
        else:
            value = attribute.bool_
            if value is not None:
                if type(value) is bool:
                    continue
                kind = "bool"
            else:
                value = attribute.string
                if value is not None:
                    if type(value) is str:
                        continue
                    kind = "string"
                else:
                    value = attribute.version
                    if value is not None:
                        if value in _VERSIONS_CONVERT:
                            continue
                        kind = "version"
                    else:
                        kind, value = attribute.kind_and_value() or (None, None)
        try:  # versions parse once each (cel.attributes caches them)
            cel_attributes.check_attribute_value(kind, value, list_values=view.list_values)
        except ValueError:
            return _env(info, view).error
        if kind == "version" and type(value) is str:
            if len(_VERSIONS_CONVERT) >= _VERSIONS_CONVERT_MAX:
                _VERSIONS_CONVERT.clear()
            _VERSIONS_CONVERT.add(value)
    return None


# Version attribute values (str) known to parse: a fleet publishes a few driver and CUDA versions,
# checked once each here rather than through `check_attribute_value` for every device.
# Bounded: emptied when full.
_VERSIONS_CONVERT: set[str] = set()
_VERSIONS_CONVERT_MAX = 1 << 12


# The memo of selector results (module docstring): expression -> _Memo (a derived attribute's:
# (_DERIVED, expression)), least recently used first, weighed by the results it holds (a dict
# entry whose key, the device's serial, and value, True, False or an error tuple, exist anyway).
# A memo is reweighed every WEIGH_EVERY results it gains, not at each (that takes the lock): it
# may hold up to WEIGH_EVERY - 1 more than it weighs.
CACHE_EXPRESSIONS = 1024
CACHE_RESULTS = 1 << 21
WEIGH_EVERY = 16
_MEMO: lru.LRU[Any, _Memo] = lru.LRU(CACHE_EXPRESSIONS, CACHE_RESULTS)
_RECENT = _MEMO.data  # read directly on the hot path (lock-free, `lru`)


class _Memo:
    """What is memoized for one expression."""

    __slots__ = ("alike", "literal", "pending", "plans", "results")

    def __init__(self, literal: str | None) -> None:
        # By view (CelView.index): DeviceInfo.serial -> True, False or (kind, message) of an error.
        self.results: tuple[dict[int, Any], ...] = tuple({} for _ in range(VIEWS))
        # (view index, what the selector reads of a device: `_alike_key`) -> result, shared by
        # alike devices.
        self.alike: dict[tuple[Any, ...], Any] = {}
        # By view: how to read a device's alike key (`_alike_plan`), known once the expression
        # compiled for that view (_UNPLANNED before; None: devices never share its results).
        self.plans: list[Any] = [_UNPLANNED] * VIEWS
        # The driver compared by a `device.driver == "..."` selector, else None.
        self.literal = literal
        # Results stored since last weighed (approximate if threads race: it only says when).
        self.pending = WEIGH_EVERY - 1  # the first result weighs it at once

    def size(self) -> int:
        return sum(map(len, self.results)) + len(self.alike)


def set_cache_limit(expressions: int, results: int | None = None) -> None:
    """Keep selector results for at most `expressions` distinct expressions and `results`
    results in all (default `CACHE_RESULTS`); evicts at once what no longer fits."""
    _MEMO.resize(expressions, CACHE_RESULTS if results is None else results)


def forget_results() -> None:
    """Drop every memoized selector result (compiled programs stay): runs that are compared then each pay
    the same evaluations (`dralloc simulate --compare-policies`)."""
    _MEMO.clear()


def cache_usage() -> tuple[int, int]:
    """(expressions, results) the memo holds now."""
    return len(_MEMO), _MEMO.weight


def _memo(expression: str) -> _Memo:
    """The memo of a selector's expression, created (and registered) when absent."""
    memo = _MEMO.get(expression)
    if memo is None:
        memo = _MEMO.setdefault(expression, _Memo(_driver_literal(expression)), 0)
    return memo


def _remember(key: Any, memo: _Memo, table: dict[Any, Any], entry: Any, result: Any) -> None:
    """Store a result in one of the memo's tables; reweigh the memo when it has gained enough."""
    table[entry] = result
    memo.pending += 1
    if memo.pending >= WEIGH_EVERY:
        memo.pending = 0
        _MEMO.reweigh(key, memo, memo.size())


# Serials of devices: one per (slice object, device object) while the slice object lives, so
# the DeviceInfos of a rebuilt snapshot (SliceIndex) find the results of the slices that did not
# change. id(slice) -> (a weak reference to the slice, id(device) -> serial, the devices given one);
# an entry goes when its slice object does. The devices are held so that their ids stay their own
# meanwhile (they are the slice's devices, alive anyway); in one list per slice, not one pair per
# device, which the garbage collector would walk at every full collection.
_SLICE_SERIALS: dict[int, tuple[weakref.ref[Any], dict[int, int], list[Any]]] = {}
_NEXT_SERIAL = itertools.count(1)


def _serial(info: DeviceInfo) -> int:
    """The device's serial, given on first use (`DeviceInfo.serial`)."""
    serial = info.serial
    if serial is not None:
        return serial
    slice_, device = info.slice, info.device
    key = id(slice_)
    record = _SLICE_SERIALS.get(key)
    if record is None or record[0]() is not slice_:
        record = (weakref.ref(slice_, functools.partial(_forget_slice, key)), {}, [])
        _SLICE_SERIALS[key] = record
    serials = record[1]
    found = serials.get(id(device))
    if found is None:
        record[2].append(device)  # held before its id is a key (twice if threads race: harmless)
        found = serials.setdefault(id(device), next(_NEXT_SERIAL))
    info.serial = found
    return found


def _forget_slice(key: int, ref: weakref.ref[Any]) -> None:
    # Runs while the slice object is freed (any thread, even inside another function of this
    # module): no lock, one atomic pop. The record is this slice's: its address cannot be
    # reused before this returns.
    record = _SLICE_SERIALS.get(key)
    if record is not None and record[0] is ref:
        _SLICE_SERIALS.pop(key, None)


def _converts(info: DeviceInfo, view: CelView) -> bool:
    """Whether the device's attributes convert to CEL values (`_conversion_error`), memoized."""
    key = _CONVERTS if view is FULL_VIEW else (view.index, _CONVERTS)  # _key, inlined
    converts = info.selector_results.get(key)
    if converts is None:
        converts = info.selector_results[key] = _conversion_error(info, view) is None
    return cast(bool, converts)


# Steps of an alike plan (`_alike_plan`): what one read of the selector takes from a device.
_READ_DRIVER, _READ_ALLOW_MULTIPLE, _READ_ATTRIBUTE, _READ_CAPACITY = range(4)
_UNPLANNED = object()  # _Memo.plans: the expression has not compiled for that view yet


def _alike_plan(reads: tuple[tuple[str, ...], ...]) -> tuple[tuple[Any, ...], ...] | None:
    """How `_alike_key` reads a device for a selector that reads `reads`, worked out once per
    expression: per read its step and the names it looks up; None when no device can share
    (a domain that cannot be one)."""
    plan: list[tuple[Any, ...]] = []
    for read in reads:
        if read[0] == "device":
            plan.append((_READ_DRIVER,) if read[1] == "driver" else (_READ_ALLOW_MULTIPLE,))
            continue
        field, domain, ident = read
        if "/" in domain:
            return None
        # The short name too, read when the domain is the device's driver (see `_alike_key`).
        plan.append((_READ_ATTRIBUTE if field == "attributes" else _READ_CAPACITY, f"{domain}/{ident}", domain,
                     None if "/" in ident else ident))
    return tuple(plan)


def _alike_key(info: DeviceInfo, view: CelView, plan: tuple[tuple[Any, ...], ...]) -> tuple[Any, ...] | None:
    """The key under which devices alike in what the selector reads (its `_alike_plan`) share a
    result (within one expression's memo), or None when this device cannot share: its
    attributes do not convert (the error names the device's own attribute), or a read name
    could mean two of its entries. A fleet's devices differ in UUIDs and bus addresses, which
    selectors rarely read; building each device's CEL value only to evaluate the same
    comparison on the same model name was most of a large snapshot's placement time."""
    converts = info.selector_results.get(_CONVERTS if view is FULL_VIEW else (view.index, _CONVERTS))
    if converts is None:
        converts = _converts(info, view)
    if not converts or info.attribute_keys.collide:
        return None  # a short and a qualified name for one attribute: the CEL value decides which
    values: list[Any] = [view.index]
    driver = info.driver
    for step in plan:
        kind = step[0]
        if kind == _READ_ATTRIBUTE:
            # `info.attributes.get(step[1])` (`DeviceInfo.attribute`), inlined: as names do not collide,
            # the device has the attribute under its short name or its qualified one, not both.
            own = info.device.attributes
            if step[3] is not None and step[2] == driver:
                attribute = own.get(step[3])
                if attribute is None:
                    attribute = own.get(step[1])
            else:
                attribute = own.get(step[1])
            if attribute is None:
                values.append(None)
                continue
            # An attribute without a value (which only 1.38's lazy view lets reach here) is not
            # an absent one: reading it fails, testing an absent one does not.
            value = attribute.kind_and_value()
            values.append(_NO_VALUE if value is None else value)
        elif kind == _READ_CAPACITY:
            capacity = info.capacity
            qualified = capacity.get(step[1])
            short = capacity.get(step[3]) if step[3] is not None and step[2] == driver else None
            if qualified is not None and short is not None:
                return None
            amount = qualified if qualified is not None else short
            if amount is None:
                values.append(None)
            else:
                # A quantity is its value and print format (the CEL value keeps nothing else), as
                # integers and the format's name: a Fraction's hash is Python code.
                quantity = amount.value
                exact = quantity.value
                values.append((exact.numerator, exact.denominator, quantity.format._value_))
        elif kind == _READ_DRIVER:
            values.append(driver)
        else:
            values.append(info.allow_multiple and view.allow_multiple)
    return tuple(values)


_CONVERTS = "__converts__"
_NO_VALUE = "__no_value__"  # in an alike key: the attribute is there without a value

# `device.driver == "name"` is by far the most common class selector; it needs neither the
# CEL engine nor the device's celpy value, and its meaning is plain string equality (once the
# device's attributes convert at all, see `evaluate`).
_DRIVER_EQUALS = re.compile(r"""^\s*device\.driver\s*==\s*(?:"([^"\\\n]*)"|'([^'\\\n]*)')\s*$""")


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
    # The hot path, inlined: a memoized result read without a lock (`lru`).
    serial = info.serial
    if serial is None:
        serial = _serial(info)
    memo = _RECENT.get(expression)
    cached = None
    if memo is not None:
        try:
            _RECENT.move_to_end(expression)
        except KeyError:  # evicted by another thread since
            pass
        cached = memo.results[view.index].get(serial)
    if cached is not None:
        STATS.cached += 1
    else:
        interruption.checkpoint()  # before anything is memoized: a decision too costly stops here
        STATS.evaluated += 1
        if memo is None:
            memo = _memo(expression)
        cached = _evaluate(info, expression, view, memo)
        # `_remember`, inlined.
        memo.results[view.index][serial] = cached
        memo.pending += 1
        if memo.pending >= WEIGH_EVERY:
            memo.pending = 0
            _MEMO.reweigh(expression, memo, memo.size())
    if cached is True or cached is False:
        return cached
    kind, message = cached
    STATS.errors += 1
    # The failure is cached per device; the message names whoever reached it this time.
    if kind == "runtime" and release_1_37_wording:
        if "no such key:" in message:
            message += NO_SUCH_KEY_HINT
        raise errors.DeviceSelectorError(f"{owner}: selector #{index} on device {info.id}: CEL runtime error: {message}")
    raise errors.InvalidSelectorError(f"{owner}: selector #{index}: CEL {kind} error: {message}")


_CEL_SELECTORS: Any = None  # dralloc.cel.selectors once imported (`_cel_selectors`)


def _cel_selectors() -> Any:
    """The CEL engine's selector module, imported on first use (module docstring)."""
    global _CEL_SELECTORS
    if _CEL_SELECTORS is None:
        from dralloc.cel import selectors as cel_selectors

        _CEL_SELECTORS = cel_selectors
    return _CEL_SELECTORS


def _evaluate(info: DeviceInfo, expression: str, view: CelView, memo: _Memo) -> Any:
    """The selector's result on the device: True, False or (kind, message) of an error."""
    literal = memo.literal
    if literal is not None:
        # Upstream up to 1.37 converts the whole device before it evaluates any selector, so an
        # attribute it cannot convert (no value, which is what kube-apiserver leaves of a list
        # attribute written with DRAListTypeAttributes off; a version that does not parse) fails
        # `device.driver == "..."` as well. Through 1.38's lazy view every device converts.
        if _converts(info, view):
            return info.driver == literal
        return ("runtime", _conversion_error(info, view))
    index = view.index
    plan = memo.plans[index]
    alike = None
    if plan is not None and plan is not _UNPLANNED:
        # The expression compiled for this view before (it always will): an alike device's
        # result answers without the compiled program.
        alike = _alike_key(info, view, plan)
        if alike is not None:
            shared = memo.alike.get(alike)
            if shared is not None:
                return shared
    cel_selectors = _cel_selectors()
    try:
        program = cel_selectors.compile_selector(expression, list_values=view.list_values, cidr_v1=view.lazy)
    except cel_selectors.CELCompileError as exc:
        return ("compile", str(exc))
    if plan is _UNPLANNED:
        plan = memo.plans[index] = _alike_plan(program.reads) if program.reads is not None else None
        alike = _alike_key(info, view, plan) if plan is not None else None
        if alike is not None:
            shared = memo.alike.get(alike)
            if shared is not None:
                return shared
    try:
        result: Any = program.evaluate(_env(info, view)) is True
    except cel_selectors.CELRuntimeError as exc:
        result = ("runtime", str(exc))
    if alike is not None:
        _remember(expression, memo, memo.alike, alike, result)
    return result


def all_match(info: DeviceInfo, selectors: Sequence[classes.DeviceSelector], *, owner: str,
              view: CelView = FULL_VIEW, release_1_37_wording: bool = True) -> bool:
    for index, selector in enumerate(selectors):
        assert selector.cel is not None  # checked by check_present before the search
        if not evaluate(info, selector.cel.expression, owner=owner, index=index, view=view,
                        release_1_37_wording=release_1_37_wording):
            return False
    return True


def expressions(selectors: Sequence[classes.DeviceSelector]) -> tuple[str, ...] | None:
    """The selectors' CEL expressions, for `all_match_expressions`; None when one has none."""
    found = []
    for selector in selectors:
        if selector.cel is None:
            return None
        found.append(selector.cel.expression)
    return tuple(found)


def all_match_expressions(info: DeviceInfo, expressions: tuple[str, ...], *, owner: str, view: CelView = FULL_VIEW,
                          release_1_37_wording: bool = True) -> bool:
    """`all_match` of selectors with these expressions; a memoized result is read inline (`evaluate`'s
    hot path: the same recency, the same statistics), anything else is `evaluate`'s."""
    serial = info.serial
    results_of = view.index
    for index, expression in enumerate(expressions):
        if serial is not None:
            memo = _RECENT.get(expression)
            if memo is not None:
                cached = memo.results[results_of].get(serial)
                if cached is True or cached is False:
                    try:
                        _RECENT.move_to_end(expression)
                    except KeyError:  # evicted by another thread since
                        pass
                    STATS.cached += 1
                    if cached:
                        continue
                    return False
        if not evaluate(info, expression, owner=owner, index=index, view=view,
                        release_1_37_wording=release_1_37_wording):
            return False
    return True


def derived_attribute(info: DeviceInfo, name: str, expression: str, *, lazy: bool = False) -> tuple[str, Any]:
    """The value a request's derived attribute `name` computes for the device, as
    `DeviceAttribute.kind_and_value` gives a published one; memoized per expression and
    device with the selector results (same map, same limits).

    Raises InvalidDerivedAttributeError with upstream's words: "compile derived attribute
    NAME failed: ..." or "evaluate derived attribute NAME on device D/P/N failed: ...".
    Derived attributes exist only in the experimental variant (1.38: incubating), which shows
    CEL the whole device (the full view; `lazy` at 1.38, see CelView).
    """
    view = _LAZY_FULL_VIEW if lazy else FULL_VIEW
    key = (_DERIVED, expression)
    serial = _serial(info)
    memo = _MEMO.get(key)
    cached = memo.results[view.index].get(serial) if memo is not None else None
    if cached is None:
        from dralloc.cel import derived as cel_derived  # the CEL engine, on first use
        from dralloc.cel import selectors as cel_selectors

        try:
            program = cel_derived.compile_derived(expression)
        except cel_selectors.CELCompileError as exc:
            cached = ("compile", str(exc))
        else:
            try:
                cached = ("value", program.evaluate(_env(info, view)))
            except cel_selectors.CELRuntimeError as exc:
                cached = ("evaluate", str(exc))
        if memo is None:
            memo = _MEMO.setdefault(key, _Memo(None), 0)
        _remember(key, memo, memo.results[view.index], serial, cached)
    outcome, detail = cached
    if outcome == "value":
        return cast(tuple[str, Any], detail)
    if outcome == "compile":
        raise errors.InvalidDerivedAttributeError(f"compile derived attribute {name} failed: {detail}")
    raise errors.DeviceDerivedAttributeError(
        f"evaluate derived attribute {name} on device {info.id} failed: {detail}")


_DERIVED = "__derived__"  # the memo key of a derived attribute's expression: (_DERIVED, expression)


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
