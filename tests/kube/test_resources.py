"""Resource descriptors build the URLs the API server expects; API_CALLS is well-formed."""

from __future__ import annotations

import pytest

from dralloc.kube import resources

VERBS = {"get", "list", "watch", "create", "update", "patch", "delete"}


class TestPaths:
    def test_core_and_group_roots(self) -> None:
        assert resources.PODS.object_path("p", "ns", "binding") == "/api/v1/namespaces/ns/pods/p/binding"
        assert resources.RESOURCE_CLAIMS.collection_path("ns") == "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims"
        assert resources.RESOURCE_CLAIMS.collection_path() == "/apis/resource.k8s.io/v1/resourceclaims"
        assert resources.DEVICE_CLASSES.object_path("gpu") == "/apis/resource.k8s.io/v1/deviceclasses/gpu"

    def test_at_version(self) -> None:
        rules = resources.DEVICE_TAINT_RULES.at_version("v1beta2")
        assert rules.api_version == "resource.k8s.io/v1beta2" and rules.plural == "devicetaintrules"
        assert resources.DEVICE_TAINT_RULES.version == "v1"

    def test_scope_mistakes_are_refused(self) -> None:
        """A namespace for a cluster-scoped type (or none for a namespaced one) is a caller bug."""
        with pytest.raises(ValueError, match="namespaced"):
            resources.PODS.object_path("p")
        with pytest.raises(ValueError, match="cluster-scoped"):
            resources.NODES.object_path("n", "ns")

    def test_names_cannot_change_the_path(self) -> None:
        assert resources.NODES.object_path("a/../b") == "/api/v1/nodes/a%2F..%2Fb"


def test_api_calls_are_well_formed() -> None:
    """Every entry names a known group and resource, a real verb, and appears once."""
    known = {(r.group, r.plural) for r in (*resources.ALL, resources.LEASES)}
    assert len(set(resources.API_CALLS)) == len(resources.API_CALLS)
    for group, resource, verb in resources.API_CALLS:
        assert (group, resource.split("/")[0]) in known and verb in VERBS
    # The calls the allocator's commit path cannot work without:
    for call in [("resource.k8s.io", "resourceclaims/status", "update"), ("", "pods/binding", "create"),
                 ("events.k8s.io", "events", "create"), ("", "pods/eviction", "create"),
                 ("coordination.k8s.io", "leases", "update")]:
        assert call in resources.API_CALLS
