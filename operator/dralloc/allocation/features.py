"""DRA feature gates and the Kubernetes release, as an explicit input to the allocator.

Gates change what the allocator accepts and considers; they are never read from
the environment. The release (1.36 or 1.37) picks the semantics where upstream's
allocator changed between the two (docs/allocation.md, "Kubernetes 1.36 and 1.37").
Gate defaults are the same in both releases for the gates dralloc knows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from dralloc.allocation import errors

# The releases whose allocator dralloc reproduces, oldest first.
RELEASES: tuple[str, ...] = ("1.36", "1.37")
DEFAULT_RELEASE = "1.37"

# Gate name -> Kubernetes 1.36 default (1.37 has the same defaults for these gates).
DEFAULTS_1_36: Mapping[str, bool] = {
    "DRAAdminAccess": True,
    "DRAPrioritizedList": True,
    "DRAPartitionableDevices": True,
    "DRADeviceTaints": True,
    "DRAConsumableCapacity": True,
    "DRADeviceBindingConditions": True,
    "DRAResourceClaimDeviceStatus": True,
    "DRAListTypeAttributes": False,
}


@dataclasses.dataclass(frozen=True)
class Features:
    admin_access: bool = True
    prioritized_list: bool = True
    partitionable_devices: bool = True
    device_taints: bool = True
    consumable_capacity: bool = True
    device_binding_conditions: bool = True
    resource_claim_device_status: bool = True
    list_type_attributes: bool = False
    release: str = DEFAULT_RELEASE

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise errors.UnknownReleaseError(
                f"unsupported Kubernetes release {self.release!r}; supported: {', '.join(RELEASES)}")

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool], *, release: str = DEFAULT_RELEASE) -> Features:
        """Features from gate names; gates not named keep their default."""
        unknown = sorted(set(gates) - set(DEFAULTS_1_36))
        if unknown:
            raise errors.UnknownFeatureGateError(
                f"unknown feature gate(s) {', '.join(unknown)}; known gates: {', '.join(sorted(DEFAULTS_1_36))}"
            )
        merged = {**DEFAULTS_1_36, **gates}
        return cls(**{_FIELD_OF[name]: value for name, value in merged.items()}, release=release)

    @classmethod
    def only(cls, enabled: Iterable[str], *, release: str = DEFAULT_RELEASE) -> Features:
        """Exactly these gates on, every other gate off (how the conformance vectors state gates)."""
        enabled = set(enabled)
        unknown = sorted(enabled - set(DEFAULTS_1_36))
        if unknown:
            raise errors.UnknownFeatureGateError(
                f"unknown feature gate(s) {', '.join(unknown)}; known gates: {', '.join(sorted(DEFAULTS_1_36))}"
            )
        return cls.from_gates({name: name in enabled for name in DEFAULTS_1_36}, release=release)

    @property
    def binding_conditions(self) -> bool:
        """Devices with binding conditions need both gates (upstream's DeviceBindingAndStatus)."""
        return self.device_binding_conditions and self.resource_claim_device_status

    @property
    def at_least_1_37(self) -> bool:
        return self.release != "1.36"

    @property
    def counter_slices_everywhere(self) -> bool:
        """Whether a slice with sharedCounters is read for every node, whatever its node fields.

        So in 1.36 and in 1.37's stable variant; 1.37's incubating and experimental variants
        read it only where it selects the node.
        """
        return not (self.at_least_1_37 and self.beyond_stable_channel)

    @property
    def beyond_stable_channel(self) -> bool:
        """Whether upstream would run its incubating or experimental allocator, not the stable one.

        Upstream picks the first of its variants whose supported features cover the enabled
        ones. The stable variant supports only AdminAccess, PrioritizedList,
        PartitionableDevices and DeviceTaints; it knows no distinctAttribute, no capacity
        requests and no `allowMultipleAllocations`, so a claim using them is read as if the
        field were absent. DeviceBindingAndStatus counts only with both of its gates on.
        """
        return self.consumable_capacity or self.binding_conditions or self.list_type_attributes

    def gates(self) -> dict[str, bool]:
        """The gates by name (the release is not a gate: see `release`)."""
        return {name: getattr(self, field) for name, field in _FIELD_OF.items()}


_FIELD_OF: Mapping[str, str] = {
    "DRAAdminAccess": "admin_access",
    "DRAPrioritizedList": "prioritized_list",
    "DRAPartitionableDevices": "partitionable_devices",
    "DRADeviceTaints": "device_taints",
    "DRAConsumableCapacity": "consumable_capacity",
    "DRADeviceBindingConditions": "device_binding_conditions",
    "DRAResourceClaimDeviceStatus": "resource_claim_device_status",
    "DRAListTypeAttributes": "list_type_attributes",
}


def parse_gates(text: str) -> dict[str, bool]:
    """Parse `Gate=true,Other=false` (the kube-scheduler --feature-gates syntax)."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise errors.UnknownFeatureGateError(f"invalid feature gate {item!r}: expected Name=true or Name=false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates
