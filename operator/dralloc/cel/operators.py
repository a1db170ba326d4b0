"""CEL's operators where celpy's defaults differ from cel-go (which upstream uses).

cel-go evaluates with *heterogeneous equality*: `1 == 1u`, `1 == 1.0` are true,
values of unrelated types are simply unequal (`"a" == 1` is false, not an
error), and `<`/`<=`/`>`/`>=` compare int, uint and double numerically. celpy
instead raises "no such overload" for `IntType == UintType`, lets a Python bool
equal an int (`true == 1`), and `in` inherits both. Selectors compare dynamic
attribute values (declared as `any` upstream), so these cases are real: a
driver publishing `numa` as an int must not turn `numa == "0"` into a fatal
error. List indexing is also tightened (no negative indices, no bool index).

Every function here (and every library function) may receive a celpy error
*value* as an argument, because celpy's `&&`/`||`/`?:` return errors as values;
`propagates_errors` passes such an error through untouched, as cel-go does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from celpy import celtypes
from celpy.evaluation import CELEvalError

from dralloc.model.quantities import Quantity

_F = TypeVar("_F", bound=Callable[..., Any])
_TRUE = celtypes.BoolType(True)
_FALSE = celtypes.BoolType(False)

_NUMBERS = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)
_ORDERED_SAME_TYPE = (
    celtypes.StringType, celtypes.BytesType, celtypes.TimestampType, celtypes.DurationType,
)


def propagates_errors(function: _F) -> _F:
    """Return the first error-valued argument instead of calling the function."""

    @functools.wraps(function)
    def wrapper(*args: Any) -> Any:
        for arg in args:
            if isinstance(arg, CELEvalError):
                return arg
        return function(*args)

    return cast(_F, wrapper)


def cel_int(value: int) -> celtypes.IntType:
    """An IntType for a value known to be in int64 range, without celpy's per-call checks."""
    return int.__new__(celtypes.IntType, value)


def cel_bool(value: bool) -> celtypes.BoolType:
    return _TRUE if value else _FALSE


def type_name(value: Any) -> str:
    """The CEL name of a value's type, for error messages."""
    if isinstance(value, celtypes.BoolType):
        return "bool"
    if isinstance(value, celtypes.IntType):
        return "int"
    if isinstance(value, celtypes.UintType):
        return "uint"
    if isinstance(value, celtypes.DoubleType):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    if isinstance(value, Quantity):
        return "kubernetes.Quantity"
    if value is None:
        return "null_type"
    return _OTHER_TYPE_NAMES.get(type(value).__name__, type(value).__name__)


# By class name: those modules import this one.
_OTHER_TYPE_NAMES = {"Semver": "kubernetes.Semver", "IP": "net.IP", "CIDR": "net.CIDR",
                     "TimestampType": "google.protobuf.Timestamp", "DurationType": "google.protobuf.Duration",
                     "Optional": "optional_type", "URL": "kubernetes.URL", "NamedFormat": "kubernetes.NamedFormat"}


def no_such_overload(function: str, *args: Any) -> TypeError:
    """cel-go's runtime dispatch failure: `no such overload: f(receiver type, argument types...)`."""
    return TypeError(f"no such overload: {function}({', '.join(type_name(a) for a in args)})")


def names_overload(function: str) -> Callable[[_F], _F]:
    """A library function whose argument checks fail as cel-go's extension functions do: one
    "no such overload: f(receiver type, argument types...)" naming every argument, whichever
    of them was of the wrong type."""

    def decorate(implementation: _F) -> _F:
        @functools.wraps(implementation)
        def checked(*args: Any) -> Any:
            try:
                return implementation(*args)
            except TypeError as exc:
                if not str(exc).startswith("no such overload:"):  # a bare one is worded as intended
                    raise
                raise no_such_overload(function, *args) from None

        return cast(_F, checked)

    return decorate


# Kubernetes' opaque types answer `==` with another type as an error (cel-go calls the left
# operand's Equal, and theirs return "no such overload"); CEL's own types answer false.
_OPAQUE_EQUALITY = frozenset({"Semver", "Quantity", "IP", "CIDR", "URL", "NamedFormat"})


def _is_number(value: Any) -> bool:
    return isinstance(value, _NUMBERS) and not isinstance(value, celtypes.BoolType)


def cel_equal(left: Any, right: Any) -> bool:
    """Heterogeneous equality as cel-go implements it."""
    if isinstance(left, celtypes.BoolType) or isinstance(right, celtypes.BoolType):
        return (isinstance(left, celtypes.BoolType) and isinstance(right, celtypes.BoolType)
                and bool(left) == bool(right))
    if _is_number(left) and _is_number(right):
        # Python compares int with float exactly, and NaN equals nothing.
        return bool(_plain(left) == _plain(right))
    if isinstance(left, str) and isinstance(right, str):
        return str.__eq__(left, right)
    if isinstance(left, bytes) and isinstance(right, bytes):
        return bytes.__eq__(left, right)
    if left is None or right is None:
        return left is None and right is None
    if type(left).__name__ in _OPAQUE_EQUALITY and type(left) is not type(right):
        raise TypeError("no such overload")
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and not any(_is_false(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        if len(left) != len(right):
            return False
        for key, value in left.items():
            found, other = _map_lookup(right, key)
            if not found or _is_false(value, other):
                return False
        return True
    if type(left) is type(right):
        return bool(left == right)
    return False


def _is_false(left: Any, right: Any) -> bool:
    """An element comparison inside list or map equality: cel-go stops only at a false one, so an
    element pair whose Equal is an error counts as equal (`[semver("1.0.0")] == [dyn("a")]`)."""
    try:
        return not cel_equal(left, right)
    except TypeError:
        return False


def equals_true(left: Any, right: Any) -> bool:
    """Membership (`in`, `includes`, `indexOf`, sets): cel-go asks whether Equal is true, so an
    error there is simply "not this one"."""
    try:
        return cel_equal(left, right)
    except TypeError:
        return False


def _plain(value: Any) -> int | float:
    # celpy's numeric types refuse to compare across types; the builtins do it exactly.
    return float(value) if isinstance(value, float) else int(value)


def _map_lookup(container: Mapping[Any, Any], key: Any) -> tuple[bool, Any]:
    for candidate, value in container.items():
        if equals_true(candidate, key):
            return True, value
    return False, None


@propagates_errors
def equal(left: Any, right: Any) -> celtypes.BoolType:
    return cel_bool(cel_equal(left, right))


@propagates_errors
def not_equal(left: Any, right: Any) -> celtypes.BoolType:
    return cel_bool(not cel_equal(left, right))


def _compare(left: Any, right: Any, operator: str) -> int:
    if _is_number(left) and _is_number(right):
        a, b = _plain(left), _plain(right)
        if a != a or b != b:
            raise ValueError("NaN")
        return (a > b) - (a < b)
    if isinstance(left, celtypes.BoolType) and isinstance(right, celtypes.BoolType):
        return int(left) - int(right)
    for kind in _ORDERED_SAME_TYPE:
        if isinstance(left, kind) and isinstance(right, kind):
            a2: Any = left
            return int(a2 > right) - int(a2 < right)
    # cel-go words it by the left operand: a type that orders (its Compare refuses the other
    # operand) says just "no such overload"; any other names the operator.
    if _is_number(left) or isinstance(left, (celtypes.BoolType, *_ORDERED_SAME_TYPE)):
        raise TypeError("no such overload")
    raise TypeError(f"no such overload: _{operator}_")


def _ordering(operator: str, accept: Callable[[int], bool]) -> Callable[[Any, Any], celtypes.BoolType]:
    def compare(left: Any, right: Any) -> celtypes.BoolType:
        try:
            return cel_bool(accept(_compare(left, right, operator)))
        except ValueError:
            # Any comparison with NaN is false.
            return cel_bool(False)

    return compare


@propagates_errors
def less(left: Any, right: Any) -> celtypes.BoolType:
    return _less(left, right)


@propagates_errors
def less_equal(left: Any, right: Any) -> celtypes.BoolType:
    return _less_equal(left, right)


@propagates_errors
def greater(left: Any, right: Any) -> celtypes.BoolType:
    return _greater(left, right)


@propagates_errors
def greater_equal(left: Any, right: Any) -> celtypes.BoolType:
    return _greater_equal(left, right)


_less = _ordering("<", lambda c: c < 0)
_less_equal = _ordering("<=", lambda c: c <= 0)
_greater = _ordering(">", lambda c: c > 0)
_greater_equal = _ordering(">=", lambda c: c >= 0)


def _worded(function: Callable[..., Any], *args: Any) -> Any:
    """celpy's arithmetic and `!`, with cel-go's wording of a type mismatch ("no such overload"
    rather than Python's TypeError text)."""
    try:
        value = function(*args)
    except TypeError:
        raise TypeError("no such overload") from None
    if value is NotImplemented:
        raise TypeError("no such overload")
    return value


# Transpiled code names functions by module and qualname, so each operator is spelled out.
@propagates_errors
def logical_not(value: Any) -> Any:
    if not isinstance(value, celtypes.BoolType):
        raise TypeError("no such overload")
    return cel_bool(not value)


@propagates_errors
def negate(value: Any) -> Any:
    return _worded(_celpy_functions()["-_"], value)


@propagates_errors
def add(left: Any, right: Any) -> Any:
    return _worded(_celpy_functions()["_+_"], left, right)


@propagates_errors
def subtract(left: Any, right: Any) -> Any:
    return _worded(_celpy_functions()["_-_"], left, right)


@propagates_errors
def multiply(left: Any, right: Any) -> Any:
    return _worded(_celpy_functions()["_*_"], left, right)


@propagates_errors
def divide(left: Any, right: Any) -> Any:
    return _worded(_celpy_functions()["_/_"], left, right)


@propagates_errors
def modulo(left: Any, right: Any) -> Any:
    return _worded(_celpy_functions()["_%_"], left, right)


@functools.cache
def _celpy_functions() -> Mapping[str, Callable[..., Any]]:
    from celpy.evaluation import base_functions

    return base_functions


_ABSENT = object()


@propagates_errors
def contained_in(item: Any, container: Any) -> celtypes.BoolType:
    """`item in container` for lists (element equality) and maps (key presence)."""
    if isinstance(container, list):
        return cel_bool(any(equals_true(item, element) for element in container))
    if isinstance(container, Mapping):
        if isinstance(item, str) and not isinstance(container, celtypes.MessageType):
            # Fast path for the common string-keyed map; dict.get never uses a domain map's
            # default. A value that is an error is an attribute 1.38 could not convert, which
            # upstream's map does not report as present (`devices.invalid_attribute`).
            if isinstance(container, dict):
                found = dict.get(container, item, _ABSENT)
                return cel_bool(found is not _ABSENT and type(found) is not CELEvalError)
            return cel_bool(item in container)
        return cel_bool(_map_lookup(container, item)[0])
    raise TypeError("no such overload")  # as cel-go's dispatch of @in on a non-container


@propagates_errors
def index(container: Any, key: Any) -> Any:
    """`container[key]`: lists by integral index, maps by key ("no such key" when absent).

    Indexing an optional gives an optional (cel-go's optional chaining)."""
    if type(container).__name__ == "Optional":
        return container.index_of(key)
    if isinstance(container, list):
        if isinstance(key, celtypes.BoolType) or not _is_number(key):
            raise TypeError(f"no such overload: list[{type_name(key)}]")
        if isinstance(key, float) and not float(key).is_integer():
            raise ValueError(f"unsupported index value {key}")
        position = int(key)
        if position < 0 or position >= len(container):
            raise IndexError(f"index out of bounds: {position}")
        return container[position]
    if isinstance(container, Mapping):
        if isinstance(key, str):
            return container[key]
        found, value = _map_lookup(container, key)
        if not found:
            raise KeyError(key)
        return value
    raise TypeError(f"no such overload: {type_name(container)}[{type_name(key)}]")
