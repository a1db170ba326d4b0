"""ResourceSlices listed by pool: the `spec.pool.name` field selector of resource.k8s.io/v1 in 1.37.

Run on the sandbox by default and on a real control plane with `--e2e-real`, as the rest of
tests/handlers (see conftest.py)."""

from __future__ import annotations

from tests.handlers.conftest import Cluster


def _slice(name: str, pool: str) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "allNodes": True,
                     "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "d0"}]}}


def test_a_field_selector_on_the_pool_name_lists_only_that_pools_slices(apiserver: Cluster) -> None:
    wanted, other = apiserver.name("pool-a"), apiserver.name("pool-b")
    names = [apiserver.name("slice-a"), apiserver.name("slice-b")]
    apiserver.seed([_slice(names[0], wanted), _slice(names[1], other)])
    try:
        found = apiserver.request("GET", f"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.pool.name%3D{wanted}")
        assert [item["metadata"]["name"] for item in found["items"]] == [names[0]]
    finally:
        for name in names:
            apiserver.request("DELETE", f"/apis/resource.k8s.io/v1/resourceslices/{name}")
