"""The fuzz tests run the operator against the sandbox, as tests/handlers/ do."""

from tests.handlers.conftest import pytest_configure

__all__ = ["pytest_configure"]
