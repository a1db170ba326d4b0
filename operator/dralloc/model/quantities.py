"""Exact Kubernetes resource quantities.

A Kubernetes `Quantity` ("4Gi", "1500m", "1e3") is a decimal number with a
format (binary SI, decimal SI or decimal exponent). The API server rounds
every value *up* to a multiple of 10^-9 and prints it canonically: the
largest suffix that keeps the mantissa an integer, binary suffixes only for
integers of magnitude >= 1024 that were written with a binary suffix. This
module reproduces that so that what we write back reads exactly as the API
server would have written it, and so that capacity and counter arithmetic
never goes through a float.

Values are kept as `fractions.Fraction` (always a multiple of 1e-9 after
parsing), which makes add, sub and compare exact.
"""

from __future__ import annotations

import enum
import functools
import math
import re
from fractions import Fraction
from typing import Any

from pydantic_core import core_schema

_NANO = Fraction(1, 10**9)

_BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18,
}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT = {exp: suffix for suffix, exp in _BINARY_SUFFIXES.items()}

# Sign, digits with an optional fraction, then a suffix (possibly an exponent).
_QUANTITY_RE = re.compile(
    r"^(?P<sign>[+-])?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]*)"
    r"(?P<suffix>(?:[eE][+-]?[0-9]+)|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"
)


class QuantityFormat(enum.Enum):
    DECIMAL_EXPONENT = "DecimalExponent"
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_MAX_INT64 = 2**63 - 1
MAX_DIGITS = 1000  # the largest magnitude dralloc reads: 10^1000 (see Quantity.parse)
_BINARY_FACTORS = {suffix: 2**exp for suffix, exp in _BINARY_SUFFIXES.items()}
_DECIMAL_FACTORS = {suffix: Fraction(10) ** exp for suffix, exp in _DECIMAL_SUFFIXES.items()}


def _ceil_to_nano(value: Fraction) -> Fraction:
    # The API server keeps at most nine fractional digits and rounds up (away from
    # zero for positive values, towards zero for negative ones, as inf.Dec RoundUp does).
    if value.denominator == 1:
        return value
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    if value > 0:
        return Fraction(math.ceil(scaled)) * _NANO
    return -Fraction(math.ceil(-scaled)) * _NANO


class Quantity:
    """An exact, immutable Kubernetes quantity with its preferred print format."""

    __slots__ = ("_format", "_value")

    def __init__(self, value: Fraction | int, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> None:
        self._value = _ceil_to_nano(Fraction(value))
        self._format = fmt

    @classmethod
    def parse(cls, text: str | int | Quantity) -> Quantity:
        """Parse "4Gi", "1500m", "1e3", "0.5" (or an int, as JSON may carry)."""
        if isinstance(text, Quantity):
            return text
        if isinstance(text, bool):
            raise QuantityError(f"quantities must match the regular expression: got {text!r}")
        if isinstance(text, int):
            return cls(text, QuantityFormat.DECIMAL_SI)
        if not isinstance(text, str):
            raise QuantityError(f"quantity must be a string, got {type(text).__name__}")
        match = _QUANTITY_RE.match(text.strip()) if text.strip() == text else None
        if match is None or text == "":
            raise QuantityError(
                f"quantities must match the regular expression "
                f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
            )
        digits = match["number"]
        suffix = match["suffix"] or ""
        scientific = len(suffix) > 1 and suffix[0] in ("e", "E") and suffix not in _BINARY_FACTORS
        exponent = int(suffix[1:]) if scientific else _DECIMAL_SUFFIXES.get(suffix, 0)
        whole = digits.split(".")[0].lstrip("0")
        if len(digits) > MAX_DIGITS or len(whole) + exponent > MAX_DIGITS:
            # apimachinery keeps such values as a scaled decimal; dralloc works with exact integers
            # and refuses magnitudes no device, node or request has (1e1000000 would take hours).
            raise QuantityError(f"quantity {text[:40]!r}{'...' if len(text) > 40 else ''} is too large: "
                                f"dralloc handles quantities of at most {MAX_DIGITS} digits")
        if scientific and exponent < -(len(digits) + 18):
            exponent = -(len(digits) + 18)  # every non-zero value this small rounds up to the same 1n
            suffix = f"e{exponent}"
        number: Fraction | int = int(digits) if digits.isdigit() else Fraction(digits.rstrip(".") or "0")
        negative = match["sign"] == "-"
        if suffix in _BINARY_FACTORS:
            # As apimachinery: binary amounts are capped at the largest int64, and a binary
            # amount between 0 and 1 cannot be written with a binary suffix, so it is decimal.
            magnitude = min(number * _BINARY_FACTORS[suffix], _MAX_INT64)
            fmt = QuantityFormat.DECIMAL_SI if 0 < magnitude < 1 else QuantityFormat.BINARY_SI
            return cls(-magnitude if negative else magnitude, fmt)
        if negative:
            number = -number
        if len(suffix) > 1 and suffix[0] in ("e", "E"):
            return cls(number * Fraction(10) ** int(suffix[1:]), QuantityFormat.DECIMAL_EXPONENT)
        return cls(number * _DECIMAL_FACTORS[suffix], QuantityFormat.DECIMAL_SI)

    @property
    def value(self) -> Fraction:
        return self._value

    @property
    def format(self) -> QuantityFormat:
        return self._format

    @property
    def nanos(self) -> int:
        """The value in units of 10^-9, exactly (every parsed value is a multiple of that)."""
        value = self._value
        return value.numerator * (10**9 // value.denominator)

    def is_zero(self) -> bool:
        return self._value == 0

    def as_int_ceil(self) -> int:
        """The integer value, rounded up (Go's Quantity.Value())."""
        return math.ceil(self._value)

    def as_approximate_float(self) -> float:
        return float(self._value)

    def is_integer(self) -> bool:
        return self._value.denominator == 1

    def sign(self) -> int:
        return (self._value > 0) - (self._value < 0)

    def with_value(self, value: Fraction | int) -> Quantity:
        return Quantity(value, self._format)

    # Arithmetic keeps the receiver's format, except that a zero receiver takes the
    # other operand's format (as Go's Quantity.Add/Sub do).
    def __add__(self, other: Quantity) -> Quantity:
        fmt = other._format if self._value == 0 else self._format
        return Quantity(self._value + other._value, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other._format if self._value == 0 else self._format
        return Quantity(self._value - other._value, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self._value, self._format)

    def _cmp_value(self, other: object) -> Fraction:
        if isinstance(other, Quantity):
            return other._value
        if isinstance(other, int) and not isinstance(other, bool):
            return Fraction(other)
        raise TypeError(f"cannot compare Quantity with {type(other).__name__}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (Quantity, int)) or isinstance(other, bool):
            return NotImplemented
        return self._value == self._cmp_value(other)

    def __hash__(self) -> int:
        return hash(self._value)

    def __lt__(self, other: Quantity | int) -> bool:
        return self._value < self._cmp_value(other)

    def __le__(self, other: Quantity | int) -> bool:
        return self._value <= self._cmp_value(other)

    def __gt__(self, other: Quantity | int) -> bool:
        return self._value > self._cmp_value(other)

    def __ge__(self, other: Quantity | int) -> bool:
        return self._value >= self._cmp_value(other)

    def compare(self, other: Quantity) -> int:
        return (self._value > other._value) - (self._value < other._value)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r})"

    def __str__(self) -> str:
        return canonical(self._value, self._format)

    # pydantic integration: accept "4Gi" / 4 / Quantity, serialize canonically.
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate,
            serialization=core_schema.plain_serializer_function_ser_schema(str),
            json_schema_input_schema=core_schema.str_schema(),
        )


def _validate(value: Any) -> Quantity:
    """A quantity from API JSON, read as the API server reads it (Quantity.UnmarshalJSON):
    strings are trimmed, and a JSON number is parsed from its decimal text."""
    if isinstance(value, str):
        try:
            return _parsed(value.strip())
        except QuantityError as exc:
            raise ValueError(str(exc)) from exc
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"quantity must be a finite number, got {value!r}")
        value = repr(value)
    try:
        return Quantity.parse(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> Quantity:
    # A snapshot repeats a few quantity strings (every GPU's memory, every node's cpu and pods)
    # tens of thousands of times; Quantity is immutable, so one parse each serves them all.
    # Errors are not cached (lru_cache does not keep exceptions): they raise every time.
    return Quantity.parse(text)


def _decimal_canonical(value: Fraction) -> tuple[int, int]:
    """Mantissa and exponent (multiple of 3) with the mantissa as small as possible."""
    mantissa = value / _NANO
    assert mantissa.denominator == 1
    amount, exponent = int(mantissa), -9
    while amount != 0 and amount % 10 == 0:
        amount //= 10
        exponent += 1
    remainder = exponent % 3
    if remainder:
        amount *= 10**remainder
        exponent -= remainder
    return amount, exponent


@functools.lru_cache(maxsize=4096)
def canonical(value: Fraction, fmt: QuantityFormat) -> str:
    """The string the API server writes for this value in this format (memoized: a workload
    prints the same few CPU and memory amounts for thousands of pods)."""
    if value == 0:
        return "0"
    if fmt is QuantityFormat.BINARY_SI:
        if -1024 < value < 1024 or value.denominator != 1:
            fmt = QuantityFormat.DECIMAL_SI
        else:
            amount, exponent = int(value), 0
            while amount % 1024 == 0 and exponent < 60:
                amount //= 1024
                exponent += 10
            return f"{amount}{_BINARY_BY_EXPONENT.get(exponent, '')}"
    amount, exponent = _decimal_canonical(value)
    if fmt is QuantityFormat.DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
        return f"{amount}{_DECIMAL_BY_EXPONENT[exponent]}"
    if exponent == 0:
        return str(amount)
    return f"{amount}e{exponent}"


def parse(text: str | int | Quantity) -> Quantity:
    """Module-level shortcut for `Quantity.parse`."""
    return Quantity.parse(text)
