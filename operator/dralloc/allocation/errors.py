"""Input errors of the allocator: bad input, never "does not fit".

"Nothing fits" is a value (`outcomes.Unsatisfiable`). These exceptions mean the
input cannot be allocated as given: unknown class, CEL that does not compile or
fails at run time, a gate that is off while the claim uses its feature, limits
exceeded. Messages name the claim (`namespace/name`), the request and the field,
like upstream's.

Most of them hold on every node. Those that are also a `DeviceError` were met on one
device (CEL that fails on its attributes, its slice's node selector, an `All` request
that must take it and cannot): a node whose devices differ may not meet them. Upstream
fails the pod's whole attempt on such an error from any node it tries; a caller that
tries nodes one by one may decide otherwise (dralloc's placer does, see
scheduling/placement.py), and must then say so.
"""

from __future__ import annotations


class AllocationInputError(Exception):
    """The claims, classes or slices cannot be allocated as given.

    `hint`: what dralloc adds for a person reading it (a "did you mean" for a name that is one typo
    away from one that exists), kept out of the message itself, which is upstream's to the letter
    (the differential compares it): `for_users` joins the two where a person reads them.
    """

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


def for_users(exc: BaseException) -> str:
    """The error's message with its hint, if it has one."""
    hint = getattr(exc, "hint", "")
    return f"{exc}{hint}" if isinstance(hint, str) else str(exc)


class UnknownFeatureGateError(AllocationInputError):
    """A feature gate name we do not know, or a malformed gate setting."""


class UnknownReleaseError(AllocationInputError):
    """A Kubernetes release whose allocator semantics dralloc does not reproduce."""


class UnknownClassError(AllocationInputError):
    """A request names a DeviceClass that does not exist."""


class InvalidSelectorError(AllocationInputError):
    """A CEL selector is empty, does not compile, or fails at run time."""


class InvalidDerivedAttributeError(AllocationInputError):
    """A request's derived attribute does not compile, or fails (or gives no attribute) on a device."""


class FeatureDisabledError(AllocationInputError):
    """A claim uses a field whose feature gate is off."""


class LimitExceededError(AllocationInputError):
    """A claim needs more results than the API allows, or a count is absurd."""


class UnsupportedFieldError(AllocationInputError):
    """An allocation mode, constraint or selector type this allocator does not know."""


class ConstraintError(AllocationInputError):
    """An `allocationMode: All` request cannot satisfy a claim constraint, or an attribute has no value."""


class CapacityRequestError(AllocationInputError):
    """1.38: a capacity request that cannot be honoured (negative, or one capacity named twice)."""


class InvalidPoolError(AllocationInputError):
    """An `All` request met an incomplete or invalid pool, or no solution exists and an invalid pool was seen."""


class InvalidPoolOnNodeError(InvalidPoolError):
    """No solution on this node, and an invalid pool was seen there.

    Upstream's `ErrFailedAllocationOnNode`: not fatal, other nodes may still fit. A caller
    that tries several nodes treats it as "does not fit here" and reports it only when no
    node fits; `allocate` on one node raises it like any other input error.
    """


class InvalidSliceError(AllocationInputError):
    """A ResourceSlice that the API should not have admitted (e.g. a node selector we cannot evaluate)."""


class DeviceError(AllocationInputError):
    """Met on one device (see the module docstring): raised as a subclass of another error here too."""


class DeviceSelectorError(InvalidSelectorError, DeviceError):
    """A CEL selector that fails at run time on one device's attributes."""


class DeviceDerivedAttributeError(InvalidDerivedAttributeError, DeviceError):
    """A derived attribute that fails (or gives no attribute) on one device."""


class DeviceConstraintError(ConstraintError, DeviceError):
    """An `allocationMode: All` request that must take a device a claim constraint refuses."""


class DeviceSliceError(InvalidSliceError, DeviceError):
    """A device's slice node selector that cannot be evaluated."""


class DeviceCapacityError(CapacityRequestError, DeviceError):
    """1.38: a capacity request met on one device that stops the allocation."""
