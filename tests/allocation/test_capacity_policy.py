"""Consumable capacity (allocation.capacity): defaults, validRange/validValues rounding, violations, fit."""

from __future__ import annotations

from typing import Any

from tests.builders import device

from dralloc.allocation import capacity
from dralloc.model.devices import CapacityRequestPolicy, DeviceCapacity
from dralloc.model.quantities import Quantity


def q(text: str) -> Quantity:
    return Quantity.parse(text)


def cap(value: str, **policy: Any) -> DeviceCapacity:
    return device("d").capacity("memory", value, **policy).build().capacity["memory"]


def amount(requested: str | None, declared: DeviceCapacity) -> str:
    return str(capacity.consumed_amount(None if requested is None else q(requested), declared))


class TestConsumedAmount:
    def test_no_request_takes_the_default(self) -> None:
        """Without a request, the policy's default is consumed."""
        assert amount(None, cap("40Gi", default="8Gi")) == "8Gi"

    def test_no_request_without_default_takes_everything(self) -> None:
        """Without a request or default, the whole capacity is consumed."""
        assert amount(None, cap("40Gi")) == "40Gi"

    def test_request_without_policy_is_taken_as_given(self) -> None:
        """A request on a capacity without policy consumes exactly the request."""
        assert amount("3Gi", cap("40Gi")) == "3Gi"

    def test_request_below_min_takes_min(self) -> None:
        """A request below validRange.min consumes min."""
        assert amount("100Mi", cap("40Gi", min="1Gi", step="1Gi")) == "1Gi"

    def test_request_rounds_up_to_the_step_grid(self) -> None:
        """A request between grid points rounds up to min + k*step."""
        assert amount("1500Mi", cap("40Gi", min="1Gi", step="1Gi")) == "2Gi"

    def test_request_on_the_grid_stays(self) -> None:
        """A request on the grid is consumed as is."""
        assert amount("3Gi", cap("40Gi", min="1Gi", step="1Gi")) == "3Gi"

    def test_grid_starts_at_min(self) -> None:
        """The grid is min + k*step, not k*step."""
        assert amount("5", cap("100", min="2", step="4")) == "6"

    def test_range_without_step_keeps_the_request(self) -> None:
        """validRange with min only keeps a request above min."""
        assert amount("1500Mi", cap("40Gi", min="1Gi")) == "1500Mi"

    def test_fractional_request_rounds_on_integer_values(self) -> None:
        """Rounding works on integer values (Go's Quantity.Value rounds up)."""
        assert amount("2500m", cap("10", min="1", step="1")) == "3"

    def test_valid_values_take_the_first_not_below(self) -> None:
        """With validValues the first listed value >= the request is consumed."""
        assert amount("3Gi", cap("40Gi", valid_values=["2Gi", "4Gi", "8Gi"])) == "4Gi"

    def test_valid_values_keep_a_request_above_all(self) -> None:
        """A request above every valid value is kept as is (and then violates the policy)."""
        assert amount("9Gi", cap("40Gi", valid_values=["2Gi", "4Gi"])) == "9Gi"


class TestViolations:
    def test_default_never_violates(self) -> None:
        """Consuming exactly the default always satisfies the policy."""
        policy = CapacityRequestPolicy.model_validate({"default": "3", "validRange": {"min": "4", "step": "2"}})
        assert capacity.violates_policy(q("3"), policy) is False

    def test_above_max_violates(self) -> None:
        """An amount above validRange.max violates the policy."""
        policy = cap("40Gi", min="1Gi", max="4Gi").request_policy
        assert capacity.violates_policy(q("5Gi"), policy) is True

    def test_off_the_grid_violates(self) -> None:
        """An amount not on min + k*step violates the policy."""
        policy = cap("100", min="2", step="4").request_policy
        assert capacity.violates_policy(q("5"), policy) is True

    def test_unlisted_value_violates(self) -> None:
        """An amount that is not one of validValues violates the policy."""
        policy = cap("40Gi", valid_values=["2Gi", "4Gi"]).request_policy
        assert capacity.violates_policy(q("3Gi"), policy) is True

    def test_no_policy_never_violates(self) -> None:
        """Without a requestPolicy every amount is allowed."""
        assert capacity.violates_policy(q("1Ei"), None) is False


class TestConsumption:
    def test_unknown_capacity_name_cannot_be_consumed(self) -> None:
        """A request for a capacity the device does not declare gives None (device skipped)."""
        declared = device("d").capacity("memory", "40Gi").build().capacity
        assert capacity.consumption({"cores": q("1")}, declared) is None

    def test_every_declared_capacity_is_consumed(self) -> None:
        """Consumption lists every declared capacity, requested or not."""
        declared = device("d").capacity("memory", "40Gi", default="4Gi").capacity("cores", "8").build().capacity
        consumed = capacity.consumption({"cores": q("2")}, declared)
        assert consumed is not None
        assert {k: str(v) for k, v in consumed.items()} == {"memory": "4Gi", "cores": "2"}

    def test_policy_violation_cannot_be_consumed(self) -> None:
        """A request that rounds to a value above max gives None."""
        declared = device("d").capacity("memory", "40Gi", min="1Gi", max="4Gi", step="1Gi").build().capacity
        assert capacity.consumption({"memory": q("4500Mi")}, declared) is None


class TestFits:
    def test_fits_exactly_at_the_limit(self) -> None:
        """Existing shares plus picks of this call plus the amount may reach the capacity."""
        declared = device("d").capacity("memory", "10").build().capacity
        assert capacity.fits({"memory": q("4")}, declared, already={"memory": q("3").value},
                             in_call={"memory": q("3").value}) is True

    def test_does_not_fit_above_the_limit(self) -> None:
        """One unit more than the capacity does not fit."""
        declared = device("d").capacity("memory", "10").build().capacity
        assert capacity.fits({"memory": q("5")}, declared, already={"memory": q("3").value},
                             in_call={"memory": q("3").value}) is False

    def test_fits_without_other_consumers(self) -> None:
        """With nothing consumed yet, the amount alone must fit."""
        declared = device("d").capacity("memory", "10").build().capacity
        assert capacity.fits({"memory": q("10")}, declared, already=None, in_call=None) is True
