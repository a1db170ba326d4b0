"""Device taints and tolerations (allocation.taints): one test per rule of upstream's ToleratesTaint."""

from __future__ import annotations

from dralloc.allocation import taints
from dralloc.model.taints import DeviceTaint, DeviceToleration

BROKEN = DeviceTaint(key="broken", value="yes", effect="NoSchedule")


def tol(**fields: str) -> DeviceToleration:
    return DeviceToleration(**fields)  # type: ignore[arg-type]


class TestTolerates:
    def test_empty_effect_matches_every_effect(self) -> None:
        """A toleration without effect tolerates the taint whatever its effect."""
        assert taints.tolerates(tol(key="broken", value="yes"), BROKEN) is True

    def test_other_effect_does_not_match(self) -> None:
        """A toleration for NoExecute does not tolerate a NoSchedule taint."""
        assert taints.tolerates(tol(key="broken", value="yes", effect="NoExecute"), BROKEN) is False

    def test_same_effect_matches(self) -> None:
        """A toleration naming the taint's effect tolerates it."""
        assert taints.tolerates(tol(key="broken", value="yes", effect="NoSchedule"), BROKEN) is True

    def test_other_key_does_not_match(self) -> None:
        """A toleration for another key does not tolerate the taint."""
        assert taints.tolerates(tol(key="other", operator="Exists"), BROKEN) is False

    def test_empty_key_with_exists_matches_every_taint(self) -> None:
        """Operator Exists without a key tolerates every taint."""
        assert taints.tolerates(tol(operator="Exists"), BROKEN) is True

    def test_exists_ignores_the_value(self) -> None:
        """Operator Exists tolerates the key whatever the taint's value."""
        assert taints.tolerates(tol(key="broken", operator="Exists"), BROKEN) is True

    def test_equal_needs_the_same_value(self) -> None:
        """Operator Equal with a different value does not tolerate."""
        assert taints.tolerates(tol(key="broken", operator="Equal", value="no"), BROKEN) is False

    def test_equal_with_the_same_value_matches(self) -> None:
        """Operator Equal with the taint's value tolerates it."""
        assert taints.tolerates(tol(key="broken", operator="Equal", value="yes"), BROKEN) is True

    def test_missing_operator_means_equal(self) -> None:
        """Without an operator the values must be equal, as with Equal."""
        assert taints.tolerates(tol(key="broken", value="no"), BROKEN) is False

    def test_missing_values_are_equal(self) -> None:
        """Equal without a value tolerates a taint without a value."""
        assert taints.tolerates(tol(key="flag"), DeviceTaint(key="flag", effect="NoSchedule")) is True

    def test_missing_value_does_not_match_a_value(self) -> None:
        """Equal without a value does not tolerate a taint that has one."""
        assert taints.tolerates(tol(key="broken"), BROKEN) is False

    def test_unknown_operator_never_matches(self) -> None:
        """An operator other than Exists or Equal tolerates nothing."""
        assert taints.tolerates(tol(key="broken", operator="Gt", value="yes"), BROKEN) is False


class TestBlockingTaint:
    def test_noschedule_blocks(self) -> None:
        """An untolerated NoSchedule taint blocks allocation."""
        assert taints.blocking_taint([BROKEN], []) == BROKEN

    def test_noexecute_blocks(self) -> None:
        """An untolerated NoExecute taint blocks allocation."""
        taint = DeviceTaint(key="gone", effect="NoExecute")
        assert taints.blocking_taint([taint], []) == taint

    def test_none_effect_never_blocks(self) -> None:
        """A taint with effect None leaves the device allocatable."""
        assert taints.blocking_taint([DeviceTaint(key="note", effect="None")], []) is None

    def test_unknown_effect_never_blocks(self) -> None:
        """A taint with an effect this allocator does not know never blocks (new effects must not strand claims)."""
        assert taints.blocking_taint([DeviceTaint(key="x", effect="PreferNoSchedule")], []) is None

    def test_tolerated_taint_does_not_block(self) -> None:
        """A tolerated taint does not block."""
        assert taints.blocking_taint([BROKEN], [tol(operator="Exists")]) is None

    def test_first_untolerated_taint_is_reported(self) -> None:
        """With several taints, the first one no toleration matches is returned."""
        second = DeviceTaint(key="hot", effect="NoExecute")
        assert taints.blocking_taint([BROKEN, second], [tol(key="broken", operator="Exists")]) == second

    def test_every_taint_needs_its_own_toleration(self) -> None:
        """Tolerating one taint does not tolerate another on the same device."""
        other = DeviceTaint(key="other", effect="NoSchedule")
        assert taints.blocking_taint([other, BROKEN], [tol(key="other", operator="Exists")]) == BROKEN
