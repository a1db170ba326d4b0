"""DRA feature gates and the Kubernetes release, as an explicit input to the allocator.

Gates change what the allocator accepts and considers; they are never read from
the environment. The release (1.36 or 1.37) picks the semantics where upstream's
allocator changed between the two (docs/allocation.md, "Kubernetes 1.36 and 1.37").
1.37 knows four more (alpha) allocator gates, and DRANodeAllocatableResources in its 1.37
form (the scheduler's node-resource accounting); the defaults of the others are the same.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from dralloc.allocation import errors

# The releases whose allocator dralloc reproduces, oldest first.
RELEASES: tuple[str, ...] = ("1.36", "1.37")
DEFAULT_RELEASE = "1.37"

# Gate name -> Kubernetes 1.36 default.
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

# 1.37: the same defaults, plus its alpha gates that change what the allocator does (off).
DEFAULTS_1_37: Mapping[str, bool] = {
    **DEFAULTS_1_36,
    "DRADeviceCompatibilityGroups": False,
    "DRAFractionalCapacityRange": False,
    "DRAOptionalNodeOperations": False,
    "DRADerivedAttributes": False,
    # Not an allocator gate: kube-scheduler's DynamicResources plugin accounts node resources
    # (cpu, memory, ...) that allocated devices map or cost (scheduling/nodeallocatable.py).
    "DRANodeAllocatableResources": False,
}

DEFAULTS: Mapping[str, Mapping[str, bool]] = {"1.36": DEFAULTS_1_36, "1.37": DEFAULTS_1_37}

# What upstream's node declares (node.status.declaredFeatures) for DRAOptionalNodeOperations.
OPTIONAL_NODE_OPERATIONS = "DRAOptionalNodeOperations"


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
    # 1.37 alpha gates (refused at 1.36).
    compatibility_groups: bool = False
    fractional_capacity_range: bool = False
    optional_node_operations: bool = False
    derived_attributes: bool = False
    node_allocatable_resources: bool = False
    release: str = DEFAULT_RELEASE

    def __post_init__(self) -> None:
        if self.release not in RELEASES:
            raise errors.UnknownReleaseError(
                f"unsupported Kubernetes release {self.release!r}; supported: {', '.join(RELEASES)}")
        if self.release == "1.36":
            newer = sorted(name for name in set(DEFAULTS_1_37) - set(DEFAULTS_1_36)
                           if getattr(self, _FIELD_OF[name]))
            if newer:
                raise errors.UnknownFeatureGateError(
                    f"feature gate(s) {', '.join(newer)} do not exist in Kubernetes 1.36")

    @classmethod
    def from_gates(cls, gates: Mapping[str, bool], *, release: str = DEFAULT_RELEASE) -> Features:
        """Features from gate names; gates not named keep their default."""
        known = DEFAULTS.get(release, DEFAULTS_1_37)
        unknown = sorted(set(gates) - set(known))
        if release == "1.36" and gates.get("DRANodeAllocatableResources"):
            # The gate exists in 1.36, with another API (nodeAllocatableResourceMappings).
            raise errors.UnknownFeatureGateError(
                "DRANodeAllocatableResources: dralloc follows it in Kubernetes 1.37's form "
                "(device nodeAllocatableResources); 1.36's alpha nodeAllocatableResourceMappings is not reproduced")
        if unknown:
            raise errors.UnknownFeatureGateError(
                f"unknown feature gate(s) {', '.join(unknown)} in Kubernetes {release}; "
                f"known gates: {', '.join(sorted(known))}"
            )
        merged = {**known, **gates}
        return cls(**{_FIELD_OF[name]: value for name, value in merged.items()}, release=release)

    @classmethod
    def only(cls, enabled: Iterable[str], *, release: str = DEFAULT_RELEASE) -> Features:
        """Exactly these gates on, every other gate off (how the conformance vectors state gates)."""
        enabled = set(enabled)
        known = DEFAULTS.get(release, DEFAULTS_1_37)
        unknown = sorted(enabled - set(known))
        if unknown:
            raise errors.UnknownFeatureGateError(
                f"unknown feature gate(s) {', '.join(unknown)} in Kubernetes {release}; "
                f"known gates: {', '.join(sorted(known))}"
            )
        return cls.from_gates({name: name in enabled for name in known}, release=release)

    @property
    def binding_conditions(self) -> bool:
        """Devices with binding conditions need both gates (upstream's DeviceBindingAndStatus)."""
        return self.device_binding_conditions and self.resource_claim_device_status

    @property
    def at_least_1_37(self) -> bool:
        return self.release != "1.36"

    @property
    def variant(self) -> str:
        """Which of upstream's allocator variants these features select: stable, incubating or
        experimental (the first whose supported features cover the enabled ones).

        stable supports AdminAccess, PrioritizedList, PartitionableDevices and DeviceTaints;
        incubating adds ConsumableCapacity, DeviceBindingAndStatus (both of its gates) and, in
        1.37, FractionalCapacityRange; experimental supports everything, among it
        ListTypeAttributes and 1.37's CompatibilityGroups, OptionalNodeOperations and
        DerivedAttributes. Semantics differ in a few places (see the properties using this).
        """
        if (self.list_type_attributes or self.compatibility_groups or self.optional_node_operations
                or self.derived_attributes):
            return "experimental"
        if self.consumable_capacity or self.binding_conditions or self.fractional_capacity_range:
            return "incubating"
        return "stable"

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

        The stable variant knows no distinctAttribute, no capacity requests and no
        `allowMultipleAllocations`, so a claim using them is read as if the field were absent.
        """
        return self.variant != "stable"

    def gates(self) -> dict[str, bool]:
        """The gates of this release by name (the release is not a gate: see `release`)."""
        return {name: getattr(self, _FIELD_OF[name]) for name in DEFAULTS[self.release]}


_FIELD_OF: Mapping[str, str] = {
    "DRAAdminAccess": "admin_access",
    "DRAPrioritizedList": "prioritized_list",
    "DRAPartitionableDevices": "partitionable_devices",
    "DRADeviceTaints": "device_taints",
    "DRAConsumableCapacity": "consumable_capacity",
    "DRADeviceBindingConditions": "device_binding_conditions",
    "DRAResourceClaimDeviceStatus": "resource_claim_device_status",
    "DRAListTypeAttributes": "list_type_attributes",
    "DRADeviceCompatibilityGroups": "compatibility_groups",
    "DRAFractionalCapacityRange": "fractional_capacity_range",
    "DRAOptionalNodeOperations": "optional_node_operations",
    "DRADerivedAttributes": "derived_attributes",
    "DRANodeAllocatableResources": "node_allocatable_resources",
}


def release_of_server(major: int, minor: int) -> tuple[str, str | None]:
    """The release whose semantics to follow for an API server of this version, and a warning
    when dralloc does not reproduce that version itself (the nearest one is used)."""
    wanted = f"{major}.{minor}"
    if wanted in RELEASES:
        return wanted, None
    nearest = RELEASES[0] if (major, minor) < (1, 36) else RELEASES[-1]
    return nearest, (f"the API server is Kubernetes {wanted}; dralloc reproduces the allocator of "
                     f"{', '.join(RELEASES)} and follows {nearest}")


def parse_gates(text: str) -> dict[str, bool]:
    """Parse `Gate=true,Other=false` (the kube-scheduler --feature-gates syntax)."""
    gates: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.strip().lower() not in ("true", "false"):
            raise errors.UnknownFeatureGateError(f"invalid feature gate {item!r}: expected Name=true or Name=false")
        gates[name.strip()] = value.strip().lower() == "true"
    return gates
