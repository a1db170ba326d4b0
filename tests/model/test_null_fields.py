"""A JSON null field is an absent one, as Go decodes it (found by the hostile-object fuzz:
a template with `requests: null`, which the API accepts, could not be read)."""

from __future__ import annotations

import pytest

from dralloc.model import claims, conversion


def test_null_lists_and_fields_are_absent() -> None:
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "n"},
           "spec": {"devices": {"requests": None, "constraints": None, "config": None}}}
    claim = conversion.parse_as(claims.ResourceClaim, raw)
    assert claim.spec.devices.requests == () and claim.spec.devices.constraints == ()
    template = conversion.parse_as(claims.ResourceClaimTemplate, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "n", "labels": None}, "spec": {"spec": {"devices": {"requests": None}}}})
    assert template.spec.spec.devices.requests == ()


def test_a_wrong_type_is_still_an_error_naming_the_field() -> None:
    raw = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "n"},
           "spec": {"devices": {"requests": "dev", "constraints": None}}}
    with pytest.raises(conversion.ObjectError, match=r"spec\.devices\.requests"):
        conversion.parse_as(claims.ResourceClaim, raw)
