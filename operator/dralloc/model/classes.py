"""DeviceClass and the selector/config shapes shared with claims."""


from typing import Any

from pydantic import Field

from dralloc.model.base import ApiModel, Object


class CELDeviceSelector(ApiModel):
    expression: str


class DeviceSelector(ApiModel):
    cel: CELDeviceSelector | None = None


class OpaqueDeviceConfiguration(ApiModel):
    driver: str
    parameters: Any = None


class DeviceClassConfiguration(ApiModel):
    opaque: OpaqueDeviceConfiguration | None = None


class DeviceClassSpec(ApiModel):
    selectors: tuple[DeviceSelector, ...] = ()
    config: tuple[DeviceClassConfiguration, ...] = ()
    extended_resource_name: str | None = None


class DeviceClass(Object):
    spec: DeviceClassSpec = Field(default_factory=DeviceClassSpec)
