"""Selector tests evaluate against a typical GPU unless a test builds its own device."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from tests.cel import builders

from dralloc.cel import selectors


@pytest.fixture
def evaluate() -> Callable[..., bool]:
    """Compile `expression` and evaluate it against `device` (default: builders.gpu())."""

    def run(expression: str, device: object = None) -> bool:
        target = builders.gpu() if device is None else device
        return selectors.compile_selector(expression).evaluate(target)  # type: ignore[arg-type]

    return run
