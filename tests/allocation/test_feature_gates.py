"""Feature gates as explicit input (allocation.features): defaults, overrides, parsing, errors."""

from __future__ import annotations

import pytest

from dralloc.allocation import errors
from dralloc.allocation.features import DEFAULTS_1_36, DEFAULTS_1_37, Features, parse_gates


def test_defaults_are_kubernetes_1_37() -> None:
    """Features() has the 1.37 defaults: 1.36's (everything on except DRAListTypeAttributes) and the
    1.37 alpha gates off."""
    assert Features().gates() == dict(DEFAULTS_1_37)
    assert {name: on for name, on in DEFAULTS_1_37.items() if name not in DEFAULTS_1_36} == {
        "DRADeviceCompatibilityGroups": False, "DRAFractionalCapacityRange": False,
        "DRAOptionalNodeOperations": False, "DRADerivedAttributes": False, "DRANodeAllocatableResources": False}
    assert Features(release="1.36").gates() == dict(DEFAULTS_1_36)


def test_1_37_gates_do_not_exist_in_1_36() -> None:
    """Asking for a 1.37 alpha gate at 1.36 is an input error naming the gate and the release."""
    with pytest.raises(errors.UnknownFeatureGateError, match=r"DRADeviceCompatibilityGroups in Kubernetes 1.36"):
        Features.from_gates({"DRADeviceCompatibilityGroups": True}, release="1.36")
    with pytest.raises(errors.UnknownFeatureGateError, match=r"do not exist in Kubernetes 1.36"):
        Features(compatibility_groups=True, release="1.36")


def test_from_gates_without_gates_is_the_default() -> None:
    """from_gates({}) equals Features()."""
    assert Features.from_gates({}) == Features()


def test_from_gates_changes_only_the_named_gates() -> None:
    """Gates not named keep their default."""
    features = Features.from_gates({"DRADeviceTaints": False, "DRAListTypeAttributes": True})
    assert features == Features(device_taints=False, list_type_attributes=True)


def test_from_gates_rejects_unknown_gates() -> None:
    """An unknown gate name is an input error naming the gate and listing the known ones."""
    with pytest.raises(errors.UnknownFeatureGateError, match=r"DRAMagic.*known gates: DRAAdminAccess"):
        Features.from_gates({"DRAMagic": True})


def test_only_turns_every_other_gate_off() -> None:
    """only([...]) enables exactly the named gates."""
    features = Features.only(["DRAAdminAccess"])
    assert {name for name, on in features.gates().items() if on} == {"DRAAdminAccess"}


def test_only_rejects_unknown_gates() -> None:
    """only() with an unknown gate name is an input error, not a silently ignored gate."""
    with pytest.raises(errors.UnknownFeatureGateError):
        Features.only(["DRAAdminAccess", "NoSuchGate"])


def test_gates_round_trip() -> None:
    """from_gates(f.gates()) gives f back."""
    features = Features(consumable_capacity=False, device_taints=False)
    assert Features.from_gates(features.gates()) == features


def test_binding_conditions_need_both_gates() -> None:
    """Devices with binding conditions are usable only with DRADeviceBindingConditions and DRAResourceClaimDeviceStatus."""
    assert (Features().binding_conditions, Features(resource_claim_device_status=False).binding_conditions,
            Features(device_binding_conditions=False).binding_conditions) == (True, False, False)


def test_stable_channel_only_gates_stay_in_stable_channel() -> None:
    """With only GA-level gates on, upstream would run its stable allocator."""
    assert Features.only(["DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices",
                          "DRADeviceTaints"]).beyond_stable_channel is False


def test_parse_gates_reads_the_scheduler_syntax() -> None:
    """parse_gates reads `Gate=true,Other=false` with spaces and any capitalisation of the value."""
    assert parse_gates(" DRADeviceTaints=false, DRAListTypeAttributes=TRUE ") == {
        "DRADeviceTaints": False, "DRAListTypeAttributes": True}


def test_parse_gates_of_nothing_is_empty() -> None:
    """An empty gate string sets no gates."""
    assert parse_gates("") == {}


@pytest.mark.parametrize("text", ["DRADeviceTaints", "DRADeviceTaints=yes", "DRADeviceTaints=1"])
def test_parse_gates_rejects_malformed_items(text: str) -> None:
    """An item that is not Name=true or Name=false is an input error quoting the item."""
    with pytest.raises(errors.UnknownFeatureGateError, match="DRADeviceTaints"):
        parse_gates(text)


def test_parsed_unknown_gate_is_rejected_by_from_gates() -> None:
    """parse_gates accepts any name; from_gates rejects unknown ones."""
    with pytest.raises(errors.UnknownFeatureGateError):
        Features.from_gates(parse_gates("Bogus=true"))


class TestReleases:
    def test_default_release_is_1_37(self) -> None:
        """Without a release named, dralloc follows Kubernetes 1.37 (the current release)."""
        assert (Features().release, Features.only([]).release, Features.from_gates({}).release) == ("1.37",) * 3

    def test_release_is_kept_by_both_constructors(self) -> None:
        """from_gates and only carry the release through."""
        assert Features.from_gates({}, release="1.36").release == "1.36"
        assert Features.only(["DRAAdminAccess"], release="1.36") == Features(
            **{**{f: False for f in ("prioritized_list", "partitionable_devices", "device_taints",
                                     "consumable_capacity", "device_binding_conditions",
                                     "resource_claim_device_status")}, "release": "1.36"})

    def test_unknown_release_is_an_input_error_listing_the_supported_ones(self) -> None:
        """A release dralloc does not reproduce is refused, naming the supported ones."""
        with pytest.raises(errors.UnknownReleaseError, match=r"'1.35'; supported: 1.36, 1.37, 1.38"):
            Features(release="1.35")


class TestUpstreamVariant:
    """Which of upstream's allocator variants the gates select decides a few semantics."""

    def test_binding_conditions_count_only_with_both_gates(self) -> None:
        """DeviceBindingAndStatus needs both of its gates: one alone stays in the stable variant."""
        assert Features.only(["DRADeviceBindingConditions"]).beyond_stable_channel is False
        assert Features.only(["DRAResourceClaimDeviceStatus"]).beyond_stable_channel is False
        assert Features.only(["DRADeviceBindingConditions",
                              "DRAResourceClaimDeviceStatus"]).beyond_stable_channel is True

    @pytest.mark.parametrize(("gate", "variant"), [
        ("DRAConsumableCapacity", "incubating"), ("DRAFractionalCapacityRange", "incubating"),
        ("DRAListTypeAttributes", "experimental"), ("DRADeviceCompatibilityGroups", "experimental"),
        ("DRAOptionalNodeOperations", "experimental"), ("DRADerivedAttributes", "experimental"),
    ])
    def test_a_gate_beyond_the_stable_ones_selects_its_variant(self, gate: str, variant: str) -> None:
        """As upstream's NewAllocator: the first variant whose supported features cover the gates."""
        assert Features.only([gate]).variant == variant
        assert Features.only([gate]).beyond_stable_channel is True


@pytest.mark.parametrize(("version", "release", "warns"), [
    ((1, 37), "1.37", False), ((1, 36), "1.36", False), ((1, 38), "1.38", False), ((1, 39), "1.38", True),
    ((1, 35), "1.36", True)])
def test_the_release_of_an_api_server(version: tuple[int, int], release: str, warns: bool) -> None:
    """A server dralloc reproduces is followed as it is; any other by the nearest release, with a warning."""
    from dralloc.allocation.features import release_of_server

    found, warning = release_of_server(*version)
    assert (found, warning is not None) == (release, warns)
    if warning:
        assert f"Kubernetes {version[0]}.{version[1]}" in warning and release in warning


class TestKubernetes138:
    """1.38 (v0.38.0-beta.0): new defaults, locked gates, rotated variants."""

    def test_defaults(self) -> None:
        """1.37's defaults with DRAFractionalCapacityRange on (GA); the default release stays 1.37."""
        from dralloc.allocation.features import DEFAULT_RELEASE, DEFAULTS_1_38

        assert DEFAULT_RELEASE == "1.37"
        assert Features(release="1.38", fractional_capacity_range=True).gates() == dict(DEFAULTS_1_38)
        assert Features.from_gates({}, release="1.38").gates() == {**DEFAULTS_1_37, "DRAFractionalCapacityRange": True}

    @pytest.mark.parametrize("gate", ["DRADeviceBindingConditions", "DRADeviceTaints", "DRAPartitionableDevices",
                                      "DRAAdminAccess", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus"])
    def test_a_locked_gate_cannot_be_turned_off(self, gate: str) -> None:
        """kube-scheduler 1.38 refuses it in component-base's words; 1.37 still accepts it."""
        with pytest.raises(errors.UnknownFeatureGateError) as info:
            Features.from_gates({gate: False}, release="1.38")
        assert str(info.value) == f"cannot set feature gate {gate} to false, feature is locked to true"
        assert Features.from_gates({gate: True}, release="1.38") == Features.from_gates({}, release="1.38")
        # DRADeviceBindingConditions (on) depends on DRAResourceClaimDeviceStatus: both go off together.
        alone = {gate: False} if gate != "DRAResourceClaimDeviceStatus" else {gate: False,
                                                                              "DRADeviceBindingConditions": False}
        assert Features.from_gates(alone, release="1.37").gates()[gate] is False

    def test_several_locked_gates_are_refused_together(self) -> None:
        """As apimachinery's error aggregate prints several errors."""
        with pytest.raises(errors.UnknownFeatureGateError) as info:
            Features.from_gates({"DRADeviceTaints": False, "DRAAdminAccess": False}, release="1.38")
        assert str(info.value) == ("[cannot set feature gate DRAAdminAccess to false, feature is locked to true, "
                                   "cannot set feature gate DRADeviceTaints to false, feature is locked to true]")

    def test_unlocked_ga_gates_can_be_turned_off(self) -> None:
        """DRAConsumableCapacity and DRAFractionalCapacityRange are GA but not locked."""
        features = Features.from_gates({"DRAConsumableCapacity": False, "DRAFractionalCapacityRange": False},
                                       release="1.38")
        assert not features.consumable_capacity and not features.fractional_capacity_range

    def test_the_vectors_may_turn_locked_gates_off(self) -> None:
        """Features.only asks the library as the oracle does: every gate as stated."""
        assert Features.only([], release="1.38").gates()["DRADeviceTaints"] is False

    @pytest.mark.parametrize(("gates", "variant", "code"), [
        ([], "stable", "incubating"),
        (["DRAAdminAccess", "DRADeviceTaints"], "stable", "incubating"),
        (["DRAConsumableCapacity", "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"], "stable",
         "incubating"),
        (["DRAFractionalCapacityRange"], "stable", "incubating"),
        (["DRAListTypeAttributes"], "incubating", "experimental"),
        (["DRADerivedAttributes", "DRAConsumableCapacity"], "incubating", "experimental"),
    ])
    def test_variants_rotate(self, gates: list[str], variant: str, code: str) -> None:
        """1.38's stable is 1.37's incubating code, its incubating 1.37's experimental: none of the old
        stable code's quirks is left."""
        features = Features.only(gates, release="1.38")
        assert (features.variant, features.code) == (variant, code)
        assert features.beyond_stable_channel is True
        assert features.counter_slices_everywhere is False


@pytest.mark.parametrize(("release", "gates", "message"), [
    ("1.38", {"DRAConsumableCapacity": False},
     "DRAFractionalCapacityRange is enabled, but depends on features that are disabled: [DRAConsumableCapacity]"),
    ("1.37", {"DRAFractionalCapacityRange": True, "DRAConsumableCapacity": False},
     "DRAFractionalCapacityRange is enabled, but depends on features that are disabled: [DRAConsumableCapacity]"),
    ("1.37", {"DRADeviceCompatibilityGroups": True, "DRAPartitionableDevices": False},
     "DRADeviceCompatibilityGroups is enabled, but depends on features that are disabled: [DRAPartitionableDevices]"),
])
def test_a_gate_on_without_one_it_depends_on_is_refused(release: str, gates: dict[str, bool], message: str) -> None:
    """As kube-scheduler v1.37.2 / v1.38.0-beta.0 refuse --feature-gates (component-base's
    dependency check; each message read from the real binaries)."""
    with pytest.raises(errors.UnknownFeatureGateError) as refused:
        Features.from_gates(gates, release=release)
    assert str(refused.value) == message


def test_turning_off_both_ends_of_a_dependency_is_accepted() -> None:
    features = Features.from_gates({"DRAConsumableCapacity": False, "DRAFractionalCapacityRange": False},
                                    release="1.38")
    assert not features.consumable_capacity and not features.fractional_capacity_range
