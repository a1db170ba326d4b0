"""Derived attributes (DRADerivedAttributes, alpha in 1.37): CEL that computes an attribute.

A request's `derivedAttributes` name an attribute and give an expression over the same
`device` a selector sees; claim constraints (matchAttribute, distinctAttribute) that cover
the request then compare the computed value instead of a published one. The expression is
compiled like a selector with another output rule: a primitive scalar (string, int, bool,
semver) or a list of them, `dyn` allowed, as upstream's `GetOrCompileDerivedAttribute`
(stored-expressions environment, so lists always). The value is converted as upstream's
`valToDeviceAttribute` does, with its messages for what cannot be an attribute (they name Go
types, because that is what users see from kube-scheduler).

Evaluation uses the celpy program, not the selector fast path: a derived attribute is
computed once per (device, expression) and memoized by the allocator, so its cost is not on
the hot path.

Parsing, transpiling, the errors (`CELCompileError`, `CELRuntimeError`) and their wording are
`compiling`'s, shared with the selectors; the checks are `checking`'s with this module's
result rule (`derived_result`).
"""

from __future__ import annotations

from typing import Any, cast

from celpy import celtypes
from celpy.evaluation import Activation, CELEvalError, result

from dralloc.cel import checking, compiling, cost, library_net, library_optional, lru, quickparse, typecheck
from dralloc.cel.devices import DeviceEnv
from dralloc.cel.library_semver import Semver
from dralloc.model.quantities import Quantity

# What an attribute can hold, by static type (upstream's isAllowedDerivedAttributeElementType).
_ELEMENT_TYPES = frozenset({typecheck.BOOL, typecheck.INT, typecheck.STRING, typecheck.SEMVER,
                            typecheck.DYN, typecheck.UNKNOWN, typecheck.FREE, "any"})


def derived_result(kind: str) -> str | None:
    """Why an expression of this static type cannot compute an attribute, None when it can."""
    if kind in _ELEMENT_TYPES:
        return None
    if kind.startswith("list(") and kind.endswith(")") and kind[5:-1] in _ELEMENT_TYPES:
        return None
    return ("must evaluate to a primitive scalar (string, integer, boolean, semver) "
            f"or a list of these scalars, not {checking.shown_type(kind)}")


class DerivedExpression:
    """A compiled derived-attribute expression; immutable and reusable across devices."""

    __slots__ = ("_entry", "expression")

    expression: str
    _entry: Any

    def __init__(self, expression: str, entry: Any) -> None:
        object.__setattr__(self, "expression", expression)
        object.__setattr__(self, "_entry", entry)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("DerivedExpression is immutable")

    def __repr__(self) -> str:
        return f"DerivedExpression({self.expression!r})"

    def evaluate(self, device: DeviceEnv) -> tuple[str, Any]:
        """The attribute the expression computes for the device, as (kind, value) with the kinds
        of `DeviceAttribute.kind_and_value` (`int`, ..., `strings`, ...; lists as tuples).

        Raises CELRuntimeError with upstream's message when evaluation fails or the value
        cannot be an attribute.
        """
        if device.error is not None:
            raise compiling.CELRuntimeError(device.error, expression=self.expression)
        try:
            with cost.evaluation():
                value = result(cast(Activation, device.scope), self._entry)
        except Exception as exc:  # only the cost limit is supposed to get past result()
            raise compiling.CELRuntimeError(compiling.describe_exception(exc),
                                            expression=self.expression) from exc
        if isinstance(value, CELEvalError):
            raise compiling.CELRuntimeError(compiling.describe_error(value),
                                            expression=self.expression) from value
        try:
            return _attribute(value)
        except ValueError as exc:
            raise compiling.CELRuntimeError(str(exc), expression=self.expression) from None


def _scalar(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, celtypes.BoolType):
        return "bool", bool(value)
    if isinstance(value, celtypes.IntType):
        return "int", int(value)
    if isinstance(value, celtypes.StringType):
        return "string", str(value)
    if isinstance(value, Semver):
        return "version", str(value)
    return None


def _attribute(value: Any) -> tuple[str, Any]:
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, celtypes.ListType):
        if not value:
            return "strings", ()
        first = _scalar(value[0])
        if first is None:
            raise ValueError(f"unsupported list element type: {_go_type(value[0])}")
        kind = first[0]
        items = []
        for index, element in enumerate(value):
            converted = _scalar(element)
            if converted is None or converted[0] != kind:
                raise ValueError(f"expected list element at index {index} to be {_CEL_NAMES[kind]}, "
                                 f"got {_go_type(element)}")
            items.append(converted[1])
        return kind + "s", tuple(items)
    raise ValueError(f"unsupported CEL return type: {_go_type(value)}")


# How upstream's messages name the element kind it expected (the CEL type, semver for versions).
_CEL_NAMES = {"bool": "bool", "int": "int", "string": "string", "version": "semver"}


def _go_type(value: Any) -> str:
    """The Go type (`%T`) of what cel-go's `Value()` returns for this CEL value."""
    table: tuple[tuple[Any, str], ...] = (
        (celtypes.BoolType, "bool"), (celtypes.IntType, "int64"), (celtypes.UintType, "uint64"),
        (celtypes.DoubleType, "float64"), (celtypes.StringType, "string"), (celtypes.BytesType, "[]uint8"),
        (celtypes.ListType, "[]ref.Val"), (celtypes.MapType, "map[ref.Val]ref.Val"),
        (celtypes.DurationType, "time.Duration"), (celtypes.TimestampType, "time.Time"),
        (Semver, "semver.Version"), (library_optional.Optional, "*types.Optional"),
    )
    if value is None:
        return "structpb.NullValue"
    for cls, name in table:
        if isinstance(value, cls):
            return name
    if isinstance(value, Quantity):
        return "*resource.Quantity"
    if isinstance(value, library_net.IP):
        return "netip.Addr"
    if isinstance(value, library_net.CIDR):
        return "netip.Prefix"
    return type(value).__name__


# Compiled derived-attribute expressions and compile errors (their message), by text: a bounded
# LRU weighed by characters, as the selectors' compile cache (`selectors.CACHE_CHARACTERS`).
CACHE_EXPRESSIONS = 1024
CACHE_CHARACTERS = 1 << 18
_compiled: lru.LRU[str, DerivedExpression | str] = lru.LRU(CACHE_EXPRESSIONS, CACHE_CHARACTERS)


def compile_derived(expression: str) -> DerivedExpression:
    """Compile (or fetch) a derived attribute's expression; CELCompileError as upstream words it."""
    found = _compiled.get(expression)
    if found is None:
        weight = len(expression)
        try:
            found = _compile(expression)
        except compiling.CELCompileError as exc:
            found = str(exc)
            weight += len(found)
        found = _compiled.setdefault(expression, found, weight)
    if isinstance(found, str):
        raise compiling.CELCompileError(found, expression=expression)
    return found


def _compile(expression: str) -> DerivedExpression:
    if len(expression) > compiling.MAX_EXPRESSION_LENGTH:
        raise compiling.CELCompileError(
            f"compilation failed: expression is longer than {compiling.MAX_EXPRESSION_LENGTH} bytes",
            expression=expression)
    try:
        quick = quickparse.parse(expression)
        if quick is not None and not checking.check(quick, expression, result=derived_result):
            tree, issues = quick, []
        else:
            tree = compiling.parse(expression)
            issues = checking.check(tree, expression, result=derived_result)
        if issues:
            raise compiling.CELCompileError(compiling.compile_failure(expression, issues),
                                            expression=expression)
        return DerivedExpression(expression, compiling.transpile(tree))
    except (RecursionError, SyntaxError):
        raise compiling.CELCompileError("compilation failed: expression nested too deeply",
                                        expression=expression) from None
