"""A bound on the work one selector evaluation may do, in the spirit of upstream's cost limit.

Upstream runs every selector with a runtime cost limit (`CELSelectorExpressionMaxCost`,
1,000,000) and aborts it with "operation cancelled: actual cost limit exceeded" when the
count passes that. celpy cannot count cel-go's costs, and without a bound a selector such
as `lists.range(1000).all(i, lists.range(1000).all(j, true))` would run for minutes. We
charge the work that can grow without bound, one unit per element: comprehension
iterations and the elements `lists.range` builds, and abort with upstream's message past
the same limit. cel-go charges every operation (calls, comparisons, each element twice
over), so our count is lower: a selector upstream cancels may still finish here, never
the other way round.

Library calls whose cel-go cost grows with their input are charged what cel-go's
`library.CostEstimator` charges for them at run time, a lower bound of its total: `url()`
one string traversal, `<format>.validate(s)` a regular-expression match of the format's
size (`string_traversal`, `regex_match`).

The budget lives in a context variable set by `evaluation()` around each evaluation
(`selectors.CompiledSelector.evaluate`), so concurrent evaluations do not share it.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator

LIMIT = 1_000_000  # resourceapi.CELSelectorExpressionMaxCost
# cel-go's common.StringTraversalCostFactor and RegexStringLengthCostFactor.
STRING_TRAVERSAL_FACTOR = 0.1
REGEX_LENGTH_FACTOR = 0.25


class CostLimitExceeded(Exception):
    """Raised through the transpiled code (not a CEL error value: nothing absorbs it)."""

    def __init__(self) -> None:
        super().__init__("operation cancelled: actual cost limit exceeded")


class _Budget:
    __slots__ = ("left",)

    def __init__(self, units: int) -> None:
        self.left = units


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("dralloc_cel_budget", default=None)


@contextlib.contextmanager
def evaluation(limit: int = LIMIT) -> Iterator[None]:
    """A fresh budget for one evaluation."""
    token = _budget.set(_Budget(limit))
    try:
        yield
    finally:
        _budget.reset(token)


def charge(units: int) -> None:
    """Spend `units`; raises CostLimitExceeded when the evaluation's budget is gone."""
    budget = _budget.get()
    if budget is None:
        return
    budget.left -= units
    if budget.left < 0:
        raise CostLimitExceeded


def string_traversal(size: int) -> int:
    """cel-go's cost of reading a string of `size` characters once."""
    return math.ceil(size * STRING_TRAVERSAL_FACTOR)


def regex_match(size: int, pattern_size: int) -> int:
    """cel-go's cost of matching a string of `size` characters against a pattern of
    `pattern_size` (one more character, so that an empty string still costs)."""
    return math.ceil((1 + size) * STRING_TRAVERSAL_FACTOR) * math.ceil(pattern_size * REGEX_LENGTH_FACTOR)
