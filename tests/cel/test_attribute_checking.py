"""`devices.check_attribute_value`: the cheap "does this attribute convert?" agrees with the conversion.

The allocator's `device.driver == "..."` shortcut asks it instead of building the device's
CEL value, so it must raise exactly when `plain_attribute_value` does.
"""

from __future__ import annotations

from typing import Any

import pytest

from dralloc.cel import devices

CASES: dict[str, tuple[str | None, Any]] = {
    "int": ("int", 3),
    "bool": ("bool", True),
    "string": ("string", "a100"),
    "version": ("version", "1.2.3"),
    "ints": ("ints", (1, 2)),
    "bools": ("bools", (True,)),
    "strings": ("strings", ("a", "b")),
    "versions": ("versions", ("1.0.0", "2.0.0")),
    "empty-list": ("strings", ()),
    "no-value": (None, None),
    "bad-version": ("version", "v1"),
    "bad-version-in-list": ("versions", ("1.0.0", "one")),
    "int-out-of-range": ("int", 2**63),
    "int-in-list-out-of-range": ("ints", (1, -(2**63) - 1)),
}


@pytest.mark.parametrize(("kind", "value"), list(CASES.values()), ids=list(CASES))
def test_check_agrees_with_conversion(kind: str | None, value: Any) -> None:
    """check_attribute_value raises ValueError with the same message as plain_attribute_value, or neither raises."""
    raw = {} if kind is None else {kind: list(value) if isinstance(value, tuple) else value}
    try:
        devices.plain_attribute_value(raw)
    except ValueError as exc:
        with pytest.raises(ValueError) as info:
            devices.check_attribute_value(kind, value)
        assert str(info.value) == str(exc)
    else:
        assert devices.check_attribute_value(kind, value) is None
