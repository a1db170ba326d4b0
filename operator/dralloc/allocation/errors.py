"""Input errors of the allocator: bad input, never "does not fit".

"Nothing fits" is a value (`outcomes.Unsatisfiable`). These exceptions mean the
input cannot be allocated as given and retrying on another node will not help:
unknown class, CEL that does not compile or fails at run time, a gate that is
off while the claim uses its feature, limits exceeded. Messages name the claim
(`namespace/name`), the request and the field, like upstream's.
"""

from __future__ import annotations


class AllocationInputError(Exception):
    """The claims, classes or slices cannot be allocated as given."""


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
