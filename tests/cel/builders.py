"""Devices for selector tests: a typical GPU of driver gpu.example.com."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dralloc.cel import devices
from dralloc.model.quantities import Quantity

DRIVER = "gpu.example.com"


def gpu(attributes: Mapping[str, Mapping[str, Any]] | None = None,
        capacity: Mapping[str, str] | None = None, *,
        driver: str = DRIVER, allow_multiple_allocations: bool = False) -> devices.DeviceEnv:
    """A device with `model`, `numa`, `driverVersion` and `memory`, unless told otherwise."""
    if attributes is None:
        attributes = {
            "model": {"string": "a100"},
            "numa": {"int": 1},
            "ecc": {"bool": True},
            "driverVersion": {"version": "1.2.3"},
            "nic.example.com/ports": {"ints": [1, 2, 4]},
            "tags": {"strings": ["fast", "big"]},
        }
    if capacity is None:
        capacity = {"memory": "80Gi", "cores": "108", "nic.example.com/bandwidth": "100G"}
    return devices.device_env(
        driver=driver,
        attributes=attributes,
        capacity={name: Quantity.parse(value) for name, value in capacity.items()},
        allow_multiple_allocations=allow_multiple_allocations,
    )
