"""Device taints, tolerations and DeviceTaintRule (resource.k8s.io)."""


from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.classes import DeviceSelector


class DeviceTaint(ApiModel):
    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class DeviceToleration(ApiModel):
    key: str | None = None
    operator: str | None = None  # None means Equal, as in the API
    value: str | None = None
    effect: str | None = None
    toleration_seconds: int | None = None


class DeviceTaintSelector(ApiModel):
    device_class_name: str | None = None
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    selectors: tuple[DeviceSelector, ...] = ()


class DeviceTaintRuleSpec(ApiModel):
    device_selector: DeviceTaintSelector | None = None
    taint: DeviceTaint


class DeviceTaintRule(Object):
    spec: DeviceTaintRuleSpec
    status: dict[str, object] = Field(default_factory=dict)
