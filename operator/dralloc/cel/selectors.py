"""Compile and evaluate DRA device selectors: the public entry points of `dralloc.cel`.

`compile_selector(text)` parses with celpy, runs our compile-time checks
(`checking`), transpiles to Python with celpy's transpiler plus our additions
(`macros`), and executes the generated definitions once into a private
namespace; parsing, transpiling and the error wording are `compiling`'s, which
derived attributes (`derived`) share. That program is the reference.
`CompiledSelector.evaluate(device)` calls it with the device's celpy scope,
which is several times faster than celpy's interpreter and safe to call from
several threads: nothing shared is written during evaluation (celpy's own
`CompiledRunner` writes a module global on every call, which is why we do not
use it directly).

Most selectors also get a fast path (`fastpath`): closures over the device's
plain values that compute exactly what the reference computes, without ever
building the device's celpy scope. `evaluate` uses it when there is one;
`compile_reference(text)` gives the same selector pinned to the celpy program,
for tests that compare the two.

Errors read like upstream's. A compile error is `CELCompileError` with
"compilation failed: ERROR: <input>:L:C: <reason>" and the caret line; anything
that goes wrong while evaluating (missing key, type mismatch, a non-bool
result, an unusable device attribute) is `CELRuntimeError`.
Both are `CELError`s, defined in `compiling` and re-exported here for callers.

Upstream's runtime cost limit (1,000,000) is approximated by `cost`: comprehension
iterations and `lists.range` elements are counted, and an evaluation past the limit
fails with upstream's "operation cancelled: actual cost limit exceeded".

Compiled selectors and compile errors are cached by expression text in a bounded LRU
(`lru`): at most `CACHE_EXPRESSIONS` (4,096) texts and `CACHE_CHARACTERS` (1 Mi) characters
of text, since what a compiled selector keeps grows with its text (about 70 bytes per
character: ~70 MiB at most); `set_cache_limit` changes both. docs/cel.md lists every cache.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

from celpy import celtypes
from celpy.evaluation import Activation, CELEvalError, result

from dralloc.cel import checking, compiling, cost, fastpath, library_net, lru, quickparse
from dralloc.cel.compiling import CELCompileError as CELCompileError  # re-exported: callers catch them here
from dralloc.cel.compiling import CELError as CELError  # re-exported
from dralloc.cel.compiling import CELRuntimeError as CELRuntimeError  # re-exported
from dralloc.cel.devices import DeviceEnv, DomainMap, DomainValues, to_cel


class CompiledSelector:
    """A compiled selector; immutable and reusable across devices and threads."""

    __slots__ = ("_entry", "_fast", "_reference", "expression", "reads")

    expression: str
    # What of the device the fast path reads (`fastpath.device_reads`), None when it reads more
    # or there is no fast path: devices alike in these values get the same result.
    reads: tuple[fastpath.Read, ...] | None
    _entry: Callable[[Any], Any]
    _fast: Callable[[DeviceEnv], Any] | None
    _reference: CompiledSelector

    def __init__(self, expression: str, entry: Callable[[Any], Any],
                 fast: Callable[[DeviceEnv], Any] | None = None,
                 reads: tuple[fastpath.Read, ...] | None = None) -> None:
        object.__setattr__(self, "expression", expression)
        object.__setattr__(self, "reads", reads if fast is not None else None)
        object.__setattr__(self, "_entry", entry)
        object.__setattr__(self, "_fast", fast)
        reference = self if fast is None else CompiledSelector(expression, entry)
        object.__setattr__(self, "_reference", reference)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("CompiledSelector is immutable")

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"

    @property
    def has_fast_path(self) -> bool:
        """Whether `evaluate` runs compiled closures rather than the celpy program."""
        return self._fast is not None

    def evaluate(self, device: DeviceEnv) -> bool:
        """True if the device matches; raises CELRuntimeError like upstream's evaluation errors."""
        if device.error is not None:
            raise CELRuntimeError(device.error, expression=self.expression)
        fast = self._fast
        if fast is not None and not device.invalid:  # the fast path reads only valid values
            try:
                try:
                    value = fast(device)
                except fastpath.CAUGHT as exc:
                    # What result() would have made of it (it may raise instead, as result() does).
                    value = fastpath.error_value(exc)
            except Exception as exc:
                raise CELRuntimeError(compiling.describe_exception(exc), expression=self.expression) from exc
            if value is True or value is False:
                return value
            value = to_cel(value)
        else:
            try:
                with cost.evaluation():
                    value = result(cast(Activation, device.scope), self._entry)
            except Exception as exc:  # only the cost limit is supposed to get past result()
                raise CELRuntimeError(compiling.describe_exception(exc), expression=self.expression) from exc
            if isinstance(value, celtypes.BoolType):
                return bool(value)
        if isinstance(value, CELEvalError):
            raise CELRuntimeError(compiling.describe_error(value), expression=self.expression) from value
        converted = _as_bool(value, device.lazy)
        if isinstance(converted, bool):
            return converted
        raise CELRuntimeError(converted, expression=self.expression)


# Compiled selectors and compile errors, by expression text: a bounded LRU (`lru`), so that
# ever new tenant selectors cannot grow memory without end. Weighed by characters of text
# (and of the error message): what a compiled selector keeps grows with its text, about
# 70 bytes per character measured (9 KiB for a typical 130-character selector, 650 KiB for
# one of 10 KiB). The defaults bound the compiled programs kept to about 70 MiB whatever the
# selectors. A compile error is cached as its message: compiling a 10 KiB selector that fails
# costs as much as one that works, and a broken class is met once per device it is asked about.
CACHE_EXPRESSIONS = 4096
CACHE_CHARACTERS = 1 << 20
_lock = threading.Lock()  # one compilation at a time
_compiled: lru.LRU[str, CompiledSelector | str] = lru.LRU(CACHE_EXPRESSIONS, CACHE_CHARACTERS)
# The same for releases before 1.38, of texts that name a function of CIDR library version 1.
_compiled_cidr_v0: lru.LRU[str, CompiledSelector | str] = lru.LRU(CACHE_EXPRESSIONS, CACHE_CHARACTERS)
# 1.38's compile errors of texts that name something undeclared (worded by `suggestions`).
_compiled_1_38_wording: lru.LRU[str, CompiledSelector | str] = lru.LRU(CACHE_EXPRESSIONS, CACHE_CHARACTERS)
# The extra check of `list_values=False`, by expression text: its error message, "" for none.
_without_list_values: lru.LRU[str, str] = lru.LRU(CACHE_EXPRESSIONS, CACHE_CHARACTERS)


def set_cache_limit(expressions: int, characters: int | None = None) -> None:
    """Bound the compile caches to `expressions` texts and `characters` characters of text
    (default `CACHE_CHARACTERS`); evicts at once what no longer fits."""
    weight = CACHE_CHARACTERS if characters is None else characters
    _compiled.resize(expressions, weight)
    _compiled_cidr_v0.resize(expressions, weight)
    _compiled_1_38_wording.resize(expressions, weight)
    _without_list_values.resize(expressions, weight)


def compile_selector(expression: str, *, list_values: bool = True, cidr_v1: bool = False) -> CompiledSelector:
    """Compile (or fetch the already compiled) selector for this exact text.

    `list_values=False`: as upstream 1.36 compiles with DRAListTypeAttributes off, which also
    refuses macros over an attribute's value (`checking.ranges_over_attribute_values`).
    `cidr_v1=False`: as releases before 1.38 compile, whose CIDR library (version 0) lacks
    `isMask()` (`library_net.CIDR_V1`).
    """
    if not cidr_v1 and any(name in expression for name in library_net.CIDR_V1):
        # Rare: a separate cache, so that the common case stays one lookup by text.
        compiled = _compile_selector(expression, _compiled_cidr_v0, library_net.CIDR_V1)
    elif cidr_v1:
        try:
            compiled = _compile_selector(expression)
        except CELCompileError as exc:
            if "undeclared reference" not in str(exc):
                raise
            # 1.38 words undeclared references otherwise (`suggestions`); only the message differs.
            compiled = _compile_selector(expression, _compiled_1_38_wording, wording_1_38=True)
    else:
        compiled = _compile_selector(expression)
    if not list_values:
        _check_without_list_values(expression)
    return compiled


def _check_without_list_values(expression: str) -> None:
    message = _without_list_values.get(expression)
    if message is None:
        issues = checking.ranges_over_attribute_values(compiling.parse(expression))  # celpy's tree has positions
        message = ("compilation failed: " + "\n".join(compiling.format_issue(expression, i) for i in issues)
                   if issues else "")
        message = _without_list_values.setdefault(expression, message, len(expression) + len(message))
    if message:
        raise CELCompileError(message, expression=expression)


def _compile_selector(expression: str, cache: lru.LRU[str, CompiledSelector | str] | None = None,
                      removed: frozenset[str] = frozenset(), *, wording_1_38: bool = False) -> CompiledSelector:
    cache = _compiled if cache is None else cache
    found = cache.get(expression)
    if found is None:
        with _lock:
            found = cache.get(expression)  # compiled by another thread meanwhile?
            if found is None:
                weight = len(expression)
                try:
                    found = _compile_guarded(expression, removed, wording_1_38)
                except CELCompileError as exc:
                    found = str(exc)
                    weight += len(found)
                found = cache.setdefault(expression, found, weight)
    if isinstance(found, str):
        raise CELCompileError(found, expression=expression)
    return found


def compile_reference(expression: str, *, cidr_v1: bool = False) -> CompiledSelector:
    """The same selector, always evaluated by the celpy program (the fast path's reference)."""
    return compile_selector(expression, cidr_v1=cidr_v1)._reference


def _compile_guarded(expression: str, removed: frozenset[str] = frozenset(),
                     wording_1_38: bool = False) -> CompiledSelector:
    try:
        return _compile(expression, removed, wording_1_38)
    except (RecursionError, SyntaxError):
        # Nesting deeper than the parse tree walks (checks, fast path, transpiler) or Python's
        # own compiler can take (`((((...))))` a few hundred deep): an invalid selector, never
        # a crash of whoever compiles it.
        raise CELCompileError("compilation failed: expression nested too deeply", expression=expression) from None


def _compile(expression: str, removed: frozenset[str] = frozenset(), wording_1_38: bool = False) -> CompiledSelector:
    if len(expression) > compiling.MAX_EXPRESSION_LENGTH:
        raise CELCompileError(
            f"compilation failed: expression is longer than {compiling.MAX_EXPRESSION_LENGTH} bytes",
            expression=expression,
        )
    # The quick parser's tree, when it has one, is celpy's tree; compile errors are
    # still reported from celpy's own parse, which knows the source positions.
    quick = quickparse.parse(expression)
    if quick is not None and not checking.check(quick, expression, removed=removed, wording_1_38=wording_1_38):
        tree, issues = quick, []
    else:
        tree = compiling.parse(expression)
        issues = checking.check(tree, expression, removed=removed, wording_1_38=wording_1_38)
    if issues:
        raise CELCompileError(compiling.compile_failure(expression, issues), expression=expression)
    try:
        entry = compiling.transpile(tree)
    except RecursionError:
        raise CELCompileError("compilation failed: expression nested too deeply",
                              expression=expression) from None
    fast = fastpath.compile_tree(tree)
    return CompiledSelector(expression, entry, fast, fastpath.device_reads(tree) if fast is not None else None)


# How cel-go's ConvertToNative(bool) refuses each type, after DeviceMatches' own prefix.
_CONVERSION_ERRORS = {
    "int": "unsupported type conversion from 'int' to bool",
    "uint": "unsupported type conversion from 'uint' to bool",
    "string": "unsupported native conversion from string to 'bool'",
    "double": "type conversion error from Double to 'bool'",
    "bytes": "type conversion error from Bytes to 'bool'",
    "list": "type conversion error from list to 'bool'",
    "map": "type conversion error from map to 'bool'",
    "type": "type conversion not supported for 'type'",
    "kubernetes.NamedFormat": "type conversion error from 'Format' to 'bool'",
}


def _as_bool(value: Any, lazy: bool = False) -> bool | str:
    """The selector's result as upstream's DeviceMatches converts it: a bool, or the message of
    the failure (dyn results reach run time; an optional converts as its value). `lazy`: as
    1.38, whose attribute and capacity maps are proxies without a native form."""
    from dralloc.cel import library_optional, operators

    shown = _result_type(value)
    if shown == "?":
        shown = operators.type_name(value)
    if isinstance(value, library_optional.Optional):
        if not value.has_value:
            return f"CEL result of type {shown} could not be converted to bool: optional.none() dereference"
        inner = _as_bool(value.value, lazy)
        if isinstance(inner, bool):
            return inner
        return f"CEL result of type {shown} could not be converted to bool: {inner.split(': ', 1)[1]}"
    if isinstance(value, celtypes.BoolType):
        return bool(value)
    name = shown
    if lazy and type(value) in (DomainMap, DomainValues):
        return f"CEL result of type {name} could not be converted to bool: not implemented"
    detail = _CONVERSION_ERRORS.get(name)
    if detail is None:
        detail = f"type conversion error from '{name.split('.')[-1]}' to 'bool'"
    return f"CEL result of type {name} could not be converted to bool: {detail}"


def _result_type(value: Any) -> str:
    if isinstance(value, type | celtypes.TypeType):
        return "type"
    if isinstance(value, celtypes.DurationType):
        return "google.protobuf.Duration"
    if isinstance(value, celtypes.TimestampType):
        return "google.protobuf.Timestamp"
    return "?"
