"""ResourceSlice: pools, devices, attributes, capacity, shared counters."""


from typing import Any

from pydantic import Field, ValidatorFunctionWrapHandler, model_validator

from dralloc.model.base import ApiModel, Object
from dralloc.model.nodes import NodeSelector
from dralloc.model.quantities import Quantity
from dralloc.model.taints import DeviceTaint

# Parsed attributes and capacities with a scalar value, by value: most of a fleet's devices
# publish the same model, driver version, memory (frozen models, so one instance serves all).
# Bounded: emptied when full (per-device values such as UUIDs keep arriving, and a small
# table refilled a few times keeps the shared values shared almost as well as a big one).
_INTERNED: dict[tuple[Any, ...], Any] = {}
_INTERNED_MAX = 1 << 12


def _intern(key: tuple[Any, ...], value: Any, handler: Any) -> Any:
    found = _INTERNED.get(key)
    if found is None:
        found = handler(value)
        if len(_INTERNED) >= _INTERNED_MAX:
            _INTERNED.clear()
        _INTERNED[key] = found
    return found


class DeviceAttribute(ApiModel):
    """Exactly one of the value fields is set (the API validates that)."""

    @model_validator(mode="wrap")
    @classmethod
    def _interned(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            ((name, item),) = value.items()
            if isinstance(item, str | int | bool):
                return _intern(("attribute", name, type(item), item), value, handler)
        return handler(value)

    int_: int | None = Field(default=None, alias="int")
    bool_: bool | None = Field(default=None, alias="bool")
    string: str | None = None
    version: str | None = None
    ints: tuple[int, ...] | None = None
    bools: tuple[bool, ...] | None = None
    strings: tuple[str, ...] | None = None
    versions: tuple[str, ...] | None = None

    def kind_and_value(self) -> tuple[str, Any] | None:
        """(`int`|`bool`|`string`|`version`|`ints`|..., value), or None for an unknown type."""
        # Read once per attribute when a device's CEL value is built (every device of a large
        # snapshot): plain tests in field order, without building the pairs for every call.
        if self.int_ is not None:
            return "int", self.int_
        if self.bool_ is not None:
            return "bool", self.bool_
        if self.string is not None:
            return "string", self.string
        if self.version is not None:
            return "version", self.version
        if self.ints is not None:
            return "ints", self.ints
        if self.bools is not None:
            return "bools", self.bools
        if self.strings is not None:
            return "strings", self.strings
        if self.versions is not None:
            return "versions", self.versions
        return None

    def raw(self) -> dict[str, Any]:
        found = self.kind_and_value()
        if found is None:
            return {}
        kind, value = found
        return {kind: list(value) if isinstance(value, tuple) else value}


class CapacityRequestPolicyRange(ApiModel):
    min: Quantity | None = None
    max: Quantity | None = None
    step: Quantity | None = None


class CapacityRequestPolicy(ApiModel):
    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    valid_range: CapacityRequestPolicyRange | None = None


class DeviceCapacity(ApiModel):
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _interned(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, dict) and len(value) == 1 and isinstance(value.get("value"), str | int):
            return _intern(("capacity", type(value["value"]), value["value"]), value, handler)
        return handler(value)


class Counter(ApiModel):
    value: Quantity


class CounterSet(ApiModel):
    name: str
    counters: dict[str, Counter] = Field(default_factory=dict)


class DeviceCounterConsumption(ApiModel):
    counter_set: str
    counters: dict[str, Counter] = Field(default_factory=dict)
    compatibility_groups: tuple[str, ...] = ()  # 1.37, DRADeviceCompatibilityGroups


class NodeAllocatableMapping(ApiModel):
    """1.37, DRANodeAllocatableResources: how an allocation maps onto a node resource."""

    capacity_key: str | None = None
    capacity_multiplier: Quantity | None = None
    device_multiplier: Quantity | None = None


class NodeAllocatableOverhead(ApiModel):
    per_pod: Quantity | None = None
    per_container: Quantity | None = None


class NodeAllocatableResource(ApiModel):
    mapping: NodeAllocatableMapping | None = None
    overhead: NodeAllocatableOverhead | None = None


class Device(ApiModel):
    name: str
    attributes: dict[str, DeviceAttribute] = Field(default_factory=dict)
    capacity: dict[str, DeviceCapacity] = Field(default_factory=dict)
    consumes_counters: tuple[DeviceCounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool | None = None
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None
    # 1.37, DRANodeAllocatableResources: node resources (cpu, memory, ...) the device maps or costs.
    node_allocatable_resources: dict[str, NodeAllocatableResource] = Field(default_factory=dict)


class ResourcePool(ApiModel):
    name: str
    generation: int = 0
    resource_slice_count: int = 0


class ResourceSliceSpec(ApiModel):
    driver: str
    pool: ResourcePool
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    per_device_node_selection: bool | None = None
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    partition_type_attribute: str | None = None  # 1.37, DRAPartitionableDevicesType (validation only)
    skip_node_operations: tuple[str, ...] = ()  # 1.37, DRAOptionalNodeOperations


class ResourceSlice(Object):
    spec: ResourceSliceSpec
