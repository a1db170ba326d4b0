"""Kubernetes quantities as kube-apiserver stores and compares them (apimachinery's `resource.Quantity`).

A quantity decodes to an exact number (kept here as a `Fraction`, rounded up to a
multiple of 10^-9 as apimachinery does) and a format taken from its suffix: binary SI
(`Ki` … `Ei`), decimal exponent (`e3`), or decimal SI (everything else). What the
server writes back is the canonical string of that value in that format (`0.5` is
stored as `500m`, `1000m` as `1`, `1.5Gi` as `1536Mi`); field errors print it the same
way. The decoder has already refused strings that are not quantities (structural.py).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_NANO = Fraction(1, 10**9)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_BY_EXPONENT = {exp: suffix for suffix, exp in _BINARY.items()}
_TEXT = re.compile(r"^(?P<sign>[+-])?(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
                   r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$")
_MAX_EXPONENT = 400  # beyond this, leave the text alone (apimachinery caps such values anyway)

BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"


class Quantity:
    """A parsed quantity: `value` (exact) and the `format` its text chose."""

    __slots__ = ("format", "value")

    def __init__(self, value: Fraction, fmt: str) -> None:
        self.value = value
        self.format = fmt

    def __str__(self) -> str:
        return canonical(self.value, self.format)

    def milli_exact(self) -> bool:
        """Whether the value has at most three decimal places (NewMilliQuantity(MilliValue()) == q)."""
        return (self.value * 1000).denominator == 1

    def fractional(self) -> bool:
        return self.value.denominator != 1


def parse(text: str | int | float) -> Quantity | None:
    """The quantity of a decoded value, or None when it is not one (or too large to bother)."""
    match = _TEXT.match(str(text).strip()) if not isinstance(text, bool) else None
    if match is None:
        return None
    suffix = match["suffix"] or ""
    number = Fraction(match["number"] if not match["number"].startswith(".") else "0" + match["number"])
    if suffix in _BINARY:
        fmt, value = BINARY_SI, number * 2 ** _BINARY[suffix]
    elif suffix[:1] in ("e", "E"):
        exponent = int(suffix[1:])
        if abs(exponent) > _MAX_EXPONENT:
            return None
        fmt, value = DECIMAL_EXPONENT, number * Fraction(10) ** exponent
    else:
        fmt, value = DECIMAL_SI, number * Fraction(10) ** _DECIMAL[suffix]
    if match["sign"] == "-":
        value = -value
    return Quantity(_round_up(value), fmt)


def canonical_text(text: str | int | float) -> str | int | float:
    """The string kube-apiserver stores for a quantity's text (the text itself if it does not parse)."""
    quantity = parse(text)
    return str(quantity) if quantity is not None else text


def _round_up(value: Fraction) -> Fraction:
    # At most nine fractional digits, rounded away from zero (inf.Dec's RoundUp).
    scaled = value / _NANO
    if scaled.denominator == 1:
        return value
    return Fraction(math.ceil(scaled)) * _NANO if value > 0 else -Fraction(math.ceil(-scaled)) * _NANO


def canonical(value: Fraction, fmt: str) -> str:
    """The string apimachinery writes for this value in this format."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and value.denominator == 1 and not -1024 < value < 1024:
        amount, exponent = int(value), 0
        while amount % 1024 == 0 and exponent < 60:
            amount //= 1024
            exponent += 10
        return f"{amount}{_BINARY_BY_EXPONENT.get(exponent, '')}"
    if fmt == BINARY_SI:
        fmt = DECIMAL_SI
    mantissa, exponent = int(value / _NANO), -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    if exponent % 3:
        mantissa *= 10 ** (exponent % 3)
        exponent -= exponent % 3
    if fmt == DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
        return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"
    return str(mantissa) if exponent == 0 else f"{mantissa}e{exponent}"
