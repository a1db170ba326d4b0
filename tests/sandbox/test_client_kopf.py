"""kopf 1.45, unchanged, against a sandbox in its own thread (kopf cancels its loop's tasks).

The operator (kopf_widgets.py) has create/update/delete handlers, kopf's finalizer and
an index. kopf patches with merge-patch and JSON patch, waits for the watch event
carrying each patch's resourceVersion, and posts Events; every one of these would stall
or fail if the sandbox got them wrong.
"""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable
from typing import Any

import kubernetes
import pytest
from kopf.testing import KopfRunner
from tests.sandbox.test_object_semantics import crd

from dralloc.sandbox import ThreadedApiServer, kopf_peering_objects

OPERATOR = str(pathlib.Path(__file__).with_name("kopf_widgets.py"))
WIDGET = ("example.dralloc.dev", "v1", "default", "widgets")


def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    """Poll `check` until it returns something truthy (bounded, not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


@pytest.mark.parametrize("peering", ["standalone", "peering"])
def test_kopf_operator_lifecycle(apiserver: ThreadedApiServer, monkeypatch: pytest.MonkeyPatch,
                                 peering: str) -> None:
    """Handlers, finalizer, index and events work, standalone and with kopf's peering CRDs."""
    monkeypatch.setenv("KUBECONFIG", str(apiserver.kubeconfig))
    apiserver.seed([crd()])
    mode = ["--standalone"] if peering == "standalone" else ["--peering=default"]
    if peering == "peering":
        apiserver.seed(kopf_peering_objects())
    with kubernetes.config.new_client_from_config(config_file=str(apiserver.kubeconfig)) as api:
        custom = kubernetes.client.CustomObjectsApi(api)
        with KopfRunner(["run", *mode, "-A", "--verbose", OPERATOR]) as runner:
            custom.create_namespaced_custom_object(*WIDGET, {
                "apiVersion": "example.dralloc.dev/v1", "kind": "Widget",
                "metadata": {"name": "w1"}, "spec": {"size": 1}})

            def stored() -> dict[str, Any]:
                return apiserver.get("example.dralloc.dev/v1", "Widget", "w1", "default") or {}

            created = wait_for(lambda: (stored().get("status") or {}).get("created"))
            assert created == {"size": 1}
            assert "kopf.zalando.org/KopfFinalizerMarker" in stored()["metadata"]["finalizers"]

            custom.patch_namespaced_custom_object(*WIDGET, "w1", {"spec": {"size": 3}})
            status = wait_for(lambda: (stored().get("status") or {}).get("known") and stored()["status"])
            assert status["size"] == 3 and status["known"] == ["w1"]

            custom.delete_namespaced_custom_object(*WIDGET, "w1")
            assert wait_for(lambda: not stored()) is True

            def posted() -> list[str]:
                return [e.get("reason", "") for e in apiserver.list_objects("v1", "Event", "default")
                        if e.get("involvedObject", {}).get("name") == "w1"]
            assert "Created" in wait_for(posted), "kopf posts Events"
            if peering == "peering":
                peers = apiserver.get("kopf.dev/v1", "ClusterKopfPeering", "default") or {}
                assert peers.get("status"), "kopf announced itself in the peering object"
        assert runner.exception is None
        assert runner.exit_code == 0
    assert "Handler 'removed' succeeded" in runner.output
