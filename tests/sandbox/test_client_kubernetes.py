"""The official (synchronous) `kubernetes` client, unchanged, against a threaded sandbox."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes
import pytest

from dralloc.sandbox import ThreadedApiServer


@pytest.fixture
def api(apiserver: ThreadedApiServer) -> Iterator[kubernetes.client.ApiClient]:
    with kubernetes.config.new_client_from_config(config_file=str(apiserver.kubeconfig)) as api_client:
        yield api_client


def test_crud_and_conflict(api: kubernetes.client.ApiClient) -> None:
    core = kubernetes.client.CoreV1Api(api)
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "k"}, "data": {"a": "1"}})
    created.data = {"a": "2"}
    updated = core.replace_namespaced_config_map("k", "default", created)
    assert updated.data == {"a": "2"}
    created.data = {"a": "3"}
    with pytest.raises(kubernetes.client.ApiException) as err:
        core.replace_namespaced_config_map("k", "default", created)
    assert err.value.status == 409
    core.delete_namespaced_config_map("k", "default")
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == []


def test_resource_claims_and_watch(api: kubernetes.client.ApiClient, apiserver: ThreadedApiServer) -> None:
    res = kubernetes.client.ResourceV1Api(api)
    listed = res.list_namespaced_resource_claim("default")
    res.create_namespaced_resource_claim("default", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}})
    core = kubernetes.client.CoreV1Api(api)
    core.create_namespaced_pod("default", {"metadata": {"name": "p"},
                                           "spec": {"containers": [{"name": "c", "image": "i"}]}})
    # the client's watch cannot name the V1 ResourceClaim model (a client bug): watch pods
    w = kubernetes.watch.Watch()
    events = []
    for event in w.stream(core.list_namespaced_pod, "default",
                          resource_version=listed.metadata.resource_version, timeout_seconds=5):
        events.append((event["type"], event["object"].metadata.name))
        w.stop()
    assert events == [("ADDED", "p")]
    stored = apiserver.get("resource.k8s.io/v1", "ResourceClaim", "c", "default")
    assert stored is not None and stored["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1


def test_discovery_and_version(api: kubernetes.client.ApiClient) -> None:
    version = kubernetes.client.VersionApi(api).get_code()
    assert (version.major, version.minor) == ("1", "37")
    groups = kubernetes.client.ApisApi(api).get_api_versions()
    assert "resource.k8s.io" in [g.name for g in groups.groups]
    resources = kubernetes.client.ResourceV1Api(api).get_api_resources()
    assert {"resourceclaims", "resourceclaims/status", "resourceslices"} <= {r.name for r in resources.resources}
