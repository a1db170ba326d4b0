"""Session login (kubeconfig, $KUBECONFIG, bearer token, context) and version discovery."""

from __future__ import annotations

import pathlib

import pytest

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.session import Session
from dralloc.sandbox import ApiServer
from dralloc.sandbox import kubeconfig as sandbox_kubeconfig


async def test_kubeconfig_login(async_apiserver: ApiServer) -> None:
    """connect(kubeconfig=...) talks to the server the file names."""
    async with await Session.connect(kubeconfig=str(async_apiserver.kubeconfig)) as session:
        assert session.server == async_apiserver.url
        items, rv = await reading.list_objects(session, resources.NAMESPACES)
        assert rv and "default" in {i["metadata"]["name"] for i in items}


async def test_kubeconfig_from_environment(async_apiserver: ApiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no arguments and no service host, $KUBECONFIG is used (read at connect time)."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(async_apiserver.kubeconfig))
    async with await Session.connect() as session:
        assert session.server == async_apiserver.url


async def test_named_context(async_apiserver: ApiServer) -> None:
    """context= selects a context of the kubeconfig; an unknown one is ConfigError."""
    path = str(async_apiserver.kubeconfig)
    async with await Session.connect(kubeconfig=path, context=sandbox_kubeconfig.NAME) as session:
        assert session.server == async_apiserver.url
    with pytest.raises(errors.ConfigError):
        await Session.connect(kubeconfig=path, context="no-such-context")


async def test_in_cluster_without_service_account_is_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """in_cluster=True outside a pod is ConfigError, not a library exception."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(errors.ConfigError):
        await Session.connect(in_cluster=True)


@pytest.mark.sandbox(token="s3cret")
async def test_token_login(async_apiserver: ApiServer) -> None:
    """A bearer token from the kubeconfig is sent with every request."""
    async with await Session.connect(kubeconfig=str(async_apiserver.kubeconfig)) as session:
        await reading.list_objects(session, resources.NODES)


@pytest.mark.sandbox(token="s3cret")
async def test_missing_token_is_unauthorized(async_apiserver: ApiServer, tmp_path: pathlib.Path) -> None:
    path = sandbox_kubeconfig.write(tmp_path / "anonymous", async_apiserver.url)
    async with await Session.connect(kubeconfig=str(path)) as session:
        with pytest.raises(errors.UnauthorizedError):
            await reading.list_objects(session, resources.NODES)


class TestServedVersion:
    async def test_device_taint_rules_prefer_v1(self, session: Session) -> None:
        """DeviceTaintRules served at v1, v1beta2 and v1alpha3: v1 is chosen."""
        assert await session.served_version("resource.k8s.io", "devicetaintrules") == "v1"

    async def test_claims_and_core(self, session: Session) -> None:
        assert await session.served_version("resource.k8s.io", "resourceclaims") == "v1"
        assert await session.served_version("", "pods") == "v1"
        assert await session.served_version("coordination.k8s.io", "leases") == "v1"

    async def test_unknown_group_or_resource_is_none(self, session: Session) -> None:
        assert await session.served_version("nothing.example.com", "widgets") is None
        assert await session.served_version("resource.k8s.io", "widgets") is None
        assert await session.served_version("", "widgets") is None

    async def test_at_version_builds_the_discovered_path(self, session: Session) -> None:
        """A descriptor at the discovered version lists at that version's URL."""
        version = await session.served_version("resource.k8s.io", "devicetaintrules")
        assert version is not None
        rules = resources.DEVICE_TAINT_RULES.at_version(version)
        items, _ = await reading.list_objects(session, rules)
        assert items == []

    async def test_falls_back_to_older_versions(self, session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
        """A cluster without v1 (Kubernetes < 1.37): v1beta2 is preferred over v1alpha3."""
        served = {"/apis/resource.k8s.io": {"versions": [{"version": "v1alpha3"}, {"version": "v1beta2"},
                                                         {"version": "v1"}]},
                  "/apis/resource.k8s.io/v1": {"resources": [{"name": "resourceclaims"}]},
                  "/apis/resource.k8s.io/v1beta2": {"resources": [{"name": "devicetaintrules"}]},
                  "/apis/resource.k8s.io/v1alpha3": {"resources": [{"name": "devicetaintrules"}]}}

        async def discovery(method: str, path: str, **kwargs: object) -> object:
            return served[path]

        monkeypatch.setattr(session, "request", discovery)
        assert await session.served_version("resource.k8s.io", "devicetaintrules") == "v1beta2"

    async def test_finds_our_crd_version(self, session: Session) -> None:
        """A CRD at v1alpha1 (not in the preference list) is found once installed."""
        crds = resources.Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                  "CustomResourceDefinition", False)
        assert await session.served_version("dralloc.io", "allocationpolicies") is None
        await writing.create_object(session, crds, {"metadata": {"name": "allocationpolicies.dralloc.io"}, "spec": {
            "group": "dralloc.io", "scope": "Cluster",
            "names": {"plural": "allocationpolicies", "singular": "allocationpolicy", "kind": "AllocationPolicy"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object",
                                                         "x-kubernetes-preserve-unknown-fields": True}}}]}})
        assert await session.served_version("dralloc.io", "allocationpolicies") == "v1alpha1"
        policy = {"metadata": {"name": "default"}, "spec": {"strategy": "binpack"}}
        created = await writing.create_object(session, resources.ALLOCATION_POLICIES, policy)
        assert (created["apiVersion"], created["kind"]) == ("dralloc.io/v1alpha1", "AllocationPolicy")
        patched = await writing.merge_patch(session, resources.ALLOCATION_POLICIES, "default",
                                            {"status": {"conditions": []}}, subresource="status")
        assert patched["status"] == {"conditions": []}
