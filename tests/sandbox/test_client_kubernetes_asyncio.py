"""kubernetes_asyncio 36, unchanged, against the sandbox (the client dralloc.kube uses)."""

from __future__ import annotations

import json
import pathlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from kubernetes_asyncio import client, config, watch

from dralloc.sandbox import ApiServer, demo_objects


@pytest_asyncio.fixture
async def api(async_apiserver: ApiServer, tmp_path: pathlib.Path) -> AsyncIterator[client.ApiClient]:
    async_apiserver.seed(demo_objects())
    conf = client.Configuration()
    await config.load_kube_config(config_file=str(tmp_path / "kubeconfig"), client_configuration=conf)
    async with client.ApiClient(conf) as api_client:
        yield api_client


def claim_body(name: str) -> dict[str, object]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}


async def test_list_resource_slices(api: client.ApiClient) -> None:
    slices = await client.ResourceV1Api(api).list_resource_slice(field_selector="spec.nodeName=node-1")
    assert len(slices.items) == 5
    gpus = next(s for s in slices.items if s.metadata.name == "node-1-gpus")
    assert gpus.spec.driver == "gpu.dralloc.dev" and len(gpus.spec.devices) == 8


async def test_watch_sends_capital_true_and_streams(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    listed = await core.list_namespaced_config_map("default")
    await core.create_namespaced_config_map("default", {"metadata": {"name": "w"}, "data": {"a": "1"}})
    async with watch.Watch() as w:
        async for event in w.stream(core.list_namespaced_config_map, "default",
                                    resource_version=listed.metadata.resource_version, timeout_seconds=5):
            assert event["type"] == "ADDED" and event["object"].metadata.name == "w"
            break


async def test_patch_claim_status_and_conflict(api: client.ApiClient) -> None:
    res = client.ResourceV1Api(api)
    created = await res.create_namespaced_resource_claim("default", claim_body("c"))
    alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "node-0",
                                      "device": "gpu-0"}]}}
    patched = await res.patch_namespaced_resource_claim_status(
        "c", "default", {"metadata": {"resourceVersion": created.metadata.resource_version},
                         "status": {"allocation": alloc}},
        _content_type="application/merge-patch+json")
    assert patched.status.allocation.devices.results[0].device == "gpu-0"
    with pytest.raises(client.ApiException) as err:
        await res.patch_namespaced_resource_claim_status(
            "c", "default", {"metadata": {"resourceVersion": created.metadata.resource_version},
                             "status": {"reservedFor": []}},
            _content_type="application/merge-patch+json")
    assert err.value.status == 409


async def test_binding_with_preload_content_false(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod("default", {"metadata": {"name": "p"},
                                                 "spec": {"containers": [{"name": "c", "image": "i"}]}})
    body = client.V1Binding(metadata=client.V1ObjectMeta(name="p"),
                            target=client.V1ObjectReference(kind="Node", name="node-0"))
    response = await core.create_namespaced_pod_binding("p", "default", body, _preload_content=False)
    status = json.loads(await response.read())
    assert response.status == 201 and status["status"] == "Success"
    pod = await core.read_namespaced_pod("p", "default")
    assert pod.spec.node_name == "node-0"


async def test_strategic_patch_is_the_default_for_dicts(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod("default", {"metadata": {"name": "s"}, "spec": {
        "containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}})
    pod = await core.patch_namespaced_pod("s", "default", {"spec": {"containers": [{"name": "b", "image": "j"}]}})
    assert [c.image for c in pod.spec.containers] == ["i", "j"]


@pytest.mark.parametrize("version", ["v1alpha3", "v1beta2"])
async def test_device_taint_rules_in_older_versions(api: client.ApiClient, version: str) -> None:
    cls = getattr(client, f"Resource{version[0].upper()}{version[1:]}Api")
    rules = cls(api)
    body = {"apiVersion": f"resource.k8s.io/{version}", "kind": "DeviceTaintRule", "metadata": {"name": "r"},
            "spec": {"deviceSelector": {"driver": "gpu.dralloc.dev", "pool": "node-0", "device": "gpu-1"},
                     "taint": {"key": "dralloc.io/unhealthy", "value": "xid", "effect": "NoSchedule"}}}
    created = await rules.create_device_taint_rule(body)
    assert created.spec.taint.effect == "NoSchedule"
    listed = await client.CustomObjectsApi(api).list_cluster_custom_object("resource.k8s.io", "v1",
                                                                           "devicetaintrules")
    assert [i["apiVersion"] for i in listed["items"]] == ["resource.k8s.io/v1"]


async def test_not_found_and_invalid_map_to_api_exceptions(api: client.ApiClient) -> None:
    res = client.ResourceV1Api(api)
    with pytest.raises(client.ApiException) as err:
        await res.read_namespaced_resource_claim("missing", "default")
    assert err.value.status == 404
    bad = claim_body("bad")
    bad["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [{"cel": {"expression": "1 +"}}]  # type: ignore[index]
    with pytest.raises(client.ApiException) as err:
        await res.create_namespaced_resource_claim("default", bad)
    assert err.value.status == 422
    assert json.loads(err.value.body)["details"]["causes"][0]["field"].endswith("cel.expression")


async def test_watch_after_compaction_raises_410_then_relist_works(async_apiserver: ApiServer,
                                                                  api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    old = (await core.list_namespaced_config_map("default")).metadata.resource_version
    await core.create_namespaced_config_map("default", {"metadata": {"name": "gone"}})
    async_apiserver.compact()
    with pytest.raises(client.ApiException) as err:
        async with watch.Watch() as w:
            async for _ in w.stream(core.list_namespaced_config_map, "default", resource_version=old,
                                    timeout_seconds=5):
                pass
    assert err.value.status == 410
    fresh = await core.list_namespaced_config_map("default")
    assert [c.metadata.name for c in fresh.items] == ["gone"]
