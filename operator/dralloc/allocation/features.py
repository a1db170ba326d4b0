"""DRA feature gates and the Kubernetes release, as an explicit input to the allocator.

Gates change what the allocator accepts and considers; they are never read from
the environment. The release (1.36, 1.37 or 1.38) picks the semantics where upstream's
allocator changed between them (docs/allocation.md, "Kubernetes 1.36 and 1.37" and
"Kubernetes 1.38"). 1.37 knows four more (alpha) allocator gates, and DRANodeAllocatableResources
in its 1.37 form (the scheduler's node-resource accounting); the defaults of the others are the
same. 1.38 turns DRAFractionalCapacityRange on and locks six gates on (LOCKED_1_38).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Mapping

from dralloc.allocation import errors

# The releases whose allocator dralloc reproduces, oldest first.
RELEASES: tuple[str, ...] = ("1.36", "1.37", "1.38")
# 1.38 is not released yet (dralloc follows k8s.io/dynamic-resource-allocation v0.38.0-beta.0).
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

# 1.38 (k8s.io/kubernetes v1.38.0-beta.0 pkg/features/kube_features.go): DRAConsumableCapacity
# and DRAFractionalCapacityRange are GA and on (not locked); the same gates otherwise.
DEFAULTS_1_38: Mapping[str, bool] = {**DEFAULTS_1_37, "DRAFractionalCapacityRange": True}

# Gates 1.38's kube-scheduler refuses to turn off (GA, LockToDefault: DRADeviceBindingConditions,
# DRADeviceTaints and DRAPartitionableDevices from 1.38, the other three from 1.36/1.37).
# dralloc refuses them at 1.38 only: at 1.36 and 1.37 it keeps accepting them off, as before.
LOCKED_1_38: frozenset[str] = frozenset({
    "DRAAdminAccess", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus",
    "DRADeviceBindingConditions", "DRADeviceTaints", "DRAPartitionableDevices",
})
# 1.37.2's kube-scheduler already refuses turning off DRAAdminAccess, DRAPrioritizedList and
# DRAResourceClaimDeviceStatus (checked against the binary); dralloc's 1.37 still accepts it, so
# that the 1.37 vectors that turn them off keep running through the CLI (open in issue 30).
LOCKED: Mapping[str, frozenset[str]] = {"1.36": frozenset(), "1.37": frozenset(), "1.38": LOCKED_1_38}

DEFAULTS: Mapping[str, Mapping[str, bool]] = {"1.36": DEFAULTS_1_36, "1.37": DEFAULTS_1_37, "1.38": DEFAULTS_1_38}

# Gates that kube-scheduler accepts on only with others on (pkg/features/kube_features.go,
# defaultKubernetesFeatureGateDependencies, the same among these gates in v1.37.2 and
# v1.38.0-beta.0; component-base refuses the rest with "X is enabled, but depends on features
# that are disabled: [Y]"). Read for 1.37 and 1.38 only.
DEPENDENCIES: Mapping[str, tuple[str, ...]] = {
    "DRADeviceBindingConditions": ("DRAResourceClaimDeviceStatus",),
    "DRADeviceCompatibilityGroups": ("DRAPartitionableDevices",),
    "DRAFractionalCapacityRange": ("DRAConsumableCapacity",),
}

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

    # The properties below are cached on the instance (functools.cached_property: the allocator reads
    # them on every call); fields alone make a Features' value, equality and hash.

    def __hash__(self) -> int:
        # The dataclass's hash (of the fields), computed once: features key the allocator's caches.
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash(tuple(getattr(self, field.name) for field in dataclasses.fields(self)))

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
        """Features from gate names; gates not named keep their default. A gate the release locks
        may not be set to another value, and a gate may not be on while one it depends on is off
        (`DEPENDENCIES`): kube-scheduler's --feature-gates refuses both the same way."""
        cls._check_known(gates, release)
        locked = sorted(name for name, value in gates.items()
                        if name in LOCKED.get(release, ()) and value != DEFAULTS[release][name])
        if locked:
            # k8s.io/component-base featuregate (unsafeSetFromMap): one error per gate; several are
            # joined as apimachinery's error aggregate prints them, "[a, b]".
            refused = [f"cannot set feature gate {name} to {str(gates[name]).lower()}, feature is locked to "
                       f"{str(DEFAULTS[release][name]).lower()}" for name in locked]
            raise errors.UnknownFeatureGateError(refused[0] if len(refused) == 1 else f"[{', '.join(refused)}]")
        if release != "1.36":
            merged = {**DEFAULTS[release], **gates}
            # Upstream checks them in map order; sorted here, so that the message is stable.
            unmet = [f"{name} is enabled, but depends on features that are disabled: "
                     f"[{' '.join(dep for dep in deps if not merged[dep])}]"
                     for name, deps in sorted(DEPENDENCIES.items())
                     if merged[name] and not all(merged[dep] for dep in deps)]
            if unmet:
                raise errors.UnknownFeatureGateError(unmet[0] if len(unmet) == 1 else f"[{', '.join(unmet)}]")
        return cls._from_known(gates, release)

    @classmethod
    def _check_known(cls, gates: Mapping[str, bool], release: str) -> None:
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

    @classmethod
    def _from_known(cls, gates: Mapping[str, bool], release: str) -> Features:
        merged = {**DEFAULTS.get(release, DEFAULTS_1_37), **gates}
        return cls(**{_FIELD_OF[name]: value for name, value in merged.items()}, release=release)

    @classmethod
    def only(cls, enabled: Iterable[str], *, release: str = DEFAULT_RELEASE) -> Features:
        """Exactly these gates on, every other gate off (how the conformance vectors state gates).

        Locked gates may be off here: the vectors ask the allocator library itself, which honours
        every gate whatever kube-scheduler allows (as the oracle does)."""
        enabled = set(enabled)
        known = DEFAULTS.get(release, DEFAULTS_1_37)
        unknown = sorted(enabled - set(known))
        if unknown:
            raise errors.UnknownFeatureGateError(
                f"unknown feature gate(s) {', '.join(unknown)} in Kubernetes {release}; "
                f"known gates: {', '.join(sorted(known))}"
            )
        gates = {name: name in enabled for name in known}
        cls._check_known(gates, release)
        return cls._from_known(gates, release)

    @functools.cached_property
    def binding_conditions(self) -> bool:
        """Devices with binding conditions need both gates (upstream's DeviceBindingAndStatus)."""
        return self.device_binding_conditions and self.resource_claim_device_status

    @functools.cached_property
    def at_least_1_37(self) -> bool:
        return self.release != "1.36"

    @functools.cached_property
    def variant(self) -> str:
        """Which of upstream's allocator variants these features select: stable, incubating or
        experimental (the first whose supported features cover the enabled ones).

        Up to 1.37, stable supports AdminAccess, PrioritizedList, PartitionableDevices and
        DeviceTaints; incubating adds ConsumableCapacity, DeviceBindingAndStatus (both of its
        gates) and, in 1.37, FractionalCapacityRange; experimental supports everything, among it
        ListTypeAttributes and 1.37's CompatibilityGroups, OptionalNodeOperations and
        DerivedAttributes. 1.38 rotates them: stable supports 1.37's incubating set, incubating
        everything, so experimental is never picked. Semantics follow the code each variant
        runs: see `code`.
        """
        alpha = (self.list_type_attributes or self.compatibility_groups or self.optional_node_operations
                 or self.derived_attributes)
        if self.release == "1.38":
            return "incubating" if alpha else "stable"
        if alpha:
            return "experimental"
        if self.consumable_capacity or self.binding_conditions or self.fractional_capacity_range:
            return "incubating"
        return "stable"

    @functools.cached_property
    def code(self) -> str:
        """Which generation of upstream's allocator code answers, named by its 1.36/1.37 variant.

        "stable": 1.36/1.37's stable variant (no distinctAttribute, no capacity requests, pools in
        input order); "incubating": their incubating variant, and 1.38's stable (1.37's incubating
        code with fixes); "experimental": their experimental variant, and 1.38's incubating (1.37's
        experimental code with the same fixes). 1.38's fixes are gated on the release itself.
        """
        if self.release == "1.38":
            return {"stable": "incubating", "incubating": "experimental"}[self.variant]
        return self.variant

    @functools.cached_property
    def counter_slices_everywhere(self) -> bool:
        """Whether a slice with sharedCounters is read for every node, whatever its node fields.

        So in 1.36 and in 1.37's stable variant; 1.37's incubating and experimental variants, and
        every 1.38 variant, read it only where it selects the node.
        """
        return not (self.at_least_1_37 and self.beyond_stable_channel)

    @functools.cached_property
    def beyond_stable_channel(self) -> bool:
        """Whether upstream runs code newer than 1.36/1.37's stable variant (`code`).

        That old stable code knows no distinctAttribute, no capacity requests and no
        `allowMultipleAllocations`, so a claim using them is read as if the field were absent.
        Always true at 1.38, whose stable variant is 1.37's incubating code.
        """
        return self.code != "stable"

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
    if wanted in RELEASES:  # 1.38 too: followed as v0.38.0-beta.0 has it
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
