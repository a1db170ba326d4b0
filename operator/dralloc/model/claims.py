"""ResourceClaim, ResourceClaimTemplate and the AllocationResult the allocator writes."""


from typing import Any

from pydantic import Field

from dralloc.model.base import ApiModel, Object, ObjectMeta
from dralloc.model.classes import DeviceSelector, OpaqueDeviceConfiguration
from dralloc.model.nodes import NodeSelector
from dralloc.model.quantities import Quantity
from dralloc.model.taints import DeviceToleration

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"


class CapacityRequirements(ApiModel):
    requests: dict[str, Quantity] = Field(default_factory=dict)


class ExactDeviceRequest(ApiModel):
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str | None = None
    count: int | None = None
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None
    derived_attributes: tuple[dict[str, Any], ...] = ()  # 1.37, DRADerivedAttributes (name, expression)


class DeviceSubRequest(ApiModel):
    name: str
    device_class_name: str = ""
    selectors: tuple[DeviceSelector, ...] = ()
    allocation_mode: str | None = None
    count: int | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: CapacityRequirements | None = None
    derived_attributes: tuple[dict[str, Any], ...] = ()  # 1.37, DRADerivedAttributes (name, expression)


class DeviceRequest(ApiModel):
    name: str
    exactly: ExactDeviceRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


class DeviceConstraint(ApiModel):
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


class DeviceClaimConfiguration(ApiModel):
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClaim(ApiModel):
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceClaimConfiguration, ...] = ()


class ResourceClaimSpec(ApiModel):
    devices: DeviceClaim = Field(default_factory=DeviceClaim)


class DeviceRequestAllocationResult(ApiModel):
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = Field(default=None, alias="shareID")
    consumed_capacity: dict[str, Quantity] = Field(default_factory=dict)
    skip_node_operations: tuple[str, ...] = ()  # 1.37, copied from the device's slice


class DeviceAllocationConfiguration(ApiModel):
    source: str
    requests: tuple[str, ...] = ()
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceAllocationResult(ApiModel):
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[DeviceAllocationConfiguration, ...] = ()


class AllocationResult(ApiModel):
    devices: DeviceAllocationResult = Field(default_factory=DeviceAllocationResult)
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


class ResourceClaimConsumerReference(ApiModel):
    api_group: str | None = None
    resource: str
    name: str
    uid: str


class AllocatedDeviceStatus(ApiModel):
    driver: str
    pool: str
    device: str
    share_id: str | None = Field(default=None, alias="shareID")
    conditions: tuple[dict[str, Any], ...] = ()
    data: Any = None
    network_data: dict[str, Any] | None = None


class ResourceClaimStatus(ApiModel):
    allocation: AllocationResult | None = None
    reserved_for: tuple[ResourceClaimConsumerReference, ...] = ()
    devices: tuple[AllocatedDeviceStatus, ...] = ()


class ResourceClaim(Object):
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)
    status: ResourceClaimStatus = Field(default_factory=ResourceClaimStatus)


class ResourceClaimTemplateSpec(ApiModel):
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceClaimSpec = Field(default_factory=ResourceClaimSpec)


class ResourceClaimTemplate(Object):
    spec: ResourceClaimTemplateSpec = Field(default_factory=ResourceClaimTemplateSpec)
