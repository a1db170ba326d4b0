"""The Kubernetes semver library and version attributes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dralloc.cel import library_semver, selectors

Evaluate = Callable[..., bool]


@pytest.mark.parametrize("expression", [
    pytest.param('semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3',
                 id="components"),
    pytest.param('semver("1.2.3").isLessThan(semver("1.10.0"))', id="numeric-not-lexical"),
    pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', id="prerelease-before-release"),
    pytest.param('semver("1.0.0-alpha").isLessThan(semver("1.0.0-alpha.1"))', id="shorter-prerelease-first"),
    pytest.param('semver("1.0.0-2").isLessThan(semver("1.0.0-10"))', id="numeric-prerelease-parts"),
    pytest.param('semver("1.0.0-9").isLessThan(semver("1.0.0-a"))', id="numeric-before-alphanumeric"),
    pytest.param('semver("1.0.0+build1") == semver("1.0.0+build2")', id="build-ignored-in-equality"),
    pytest.param('semver("1.2.3").compareTo(semver("1.2.3")) == 0', id="compare-equal"),
    pytest.param('semver("2.0.0").compareTo(semver("1.9.9")) == 1', id="compare-greater"),
    pytest.param('semver("2.0.0").isGreaterThan(semver("1.9.9"))', id="is-greater-than"),
    pytest.param('isSemver("1.0.0") && !isSemver("v1.0.0") && !isSemver("1.0")', id="is-semver-strict"),
    pytest.param('isSemver("v1.0", true) && semver("v01.02", true) == semver("1.2.0")', id="normalize"),
    pytest.param('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))',
                 id="version-attribute"),
    pytest.param('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3")',
                 id="version-attribute-equality"),
])
def test_semver_functions(evaluate: Evaluate, expression: str) -> None:
    """Each semver function behaves as upstream's library (blang/semver rules)."""
    assert evaluate(expression) is True


@pytest.mark.parametrize("text", [
    pytest.param("01.0.0", id="leading-zero"),
    pytest.param("1.0", id="two-parts"),
    pytest.param("v1.0.0", id="v-prefix"),
    pytest.param("1.0.0-", id="empty-prerelease"),
    pytest.param("1.0.0-01", id="numeric-prerelease-leading-zero"),
    pytest.param("1.0.0+", id="empty-build"),
    pytest.param("a.b.c", id="letters"),
])
def test_invalid_semver_is_runtime_error(evaluate: Evaluate, text: str) -> None:
    """semver() of an invalid string fails with a parse message."""
    with pytest.raises(selectors.CELRuntimeError, match=(r"No Major.Minor.Patch elements found|Invalid character|must not contain leading zeroes"
                                                    r"|strconv.ParseUint|is empty")):
        evaluate(f'semver("{text}").major() == 1')


def test_short_version_with_prerelease_cannot_be_normalized(evaluate: Evaluate) -> None:
    """Upstream refuses to pad a short version that carries prerelease data."""
    assert evaluate('isSemver("1.0-rc1", true)') is False


_VERSIONS = st.builds(
    lambda major, minor, patch, pre: f"{major}.{minor}.{patch}" + (f"-{pre}" if pre else ""),
    st.integers(0, 3), st.integers(0, 3), st.integers(0, 3),
    st.sampled_from(["", "alpha", "alpha.1", "beta", "1", "2", "rc.10", "rc.9"]),
)


@given(_VERSIONS, _VERSIONS)
def test_is_less_than_and_is_greater_than_are_mirror_images(left: str, right: str) -> None:
    """a < b exactly when b > a, and compareTo is consistent with both."""
    a, b = library_semver.Semver.parse(left), library_semver.Semver.parse(right)
    assert (a.compare(b) < 0) == (b.compare(a) > 0)
    assert (a.compare(b) == 0) == (a == b)
