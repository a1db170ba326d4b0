"""One scheduling pass, run by the test: what the operator's loop decides when the pods are pending together.

The operator's loop takes whatever is ready when a pass starts, so which pods share a pass depends on
when their events arrive. A test that needs them in one pass builds a Runtime, feeds it the API
server's objects (the test's nodes only), makes the pods' claims (this Runtime's lifecycle pass where
dralloc has that duty, else kube-controller-manager), and runs `scheduling.run_pass` once: its
decisions are written to the API server as the operator writes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, duty_owner, operator_settings, wait_for
from tests.handlers.test_fragmentation_aware_operator import _tainted

from dralloc.handlers import lifecycle, scheduling, watching
from dralloc.handlers.runtime import Runtime
from dralloc.kube.session import Session


async def run_one_pass(apiserver: Cluster, nodes: Sequence[str], pods: Sequence[str],
                       configure: Callable[[Runtime], None] = lambda rt: None) -> None:
    """One scheduling pass over the test's namespace, with `nodes` only; `configure` sets the runtime up
    (its policy, say) before the pass."""
    # A real cluster's new nodes are tainted not-ready until kube-controller-manager clears them.
    wait_for(lambda: not any(_tainted(apiserver, node) for node in nodes), timeout=60, what="the nodes untainted")
    rt = Runtime(operator_settings(apiserver))
    configure(rt)
    rt.session = await Session.connect(kubeconfig=os.fspath(apiserver.kubeconfig) if apiserver.kubeconfig else None)
    try:
        for kind, api_version, namespace in (("Node", "v1", None), ("ResourceSlice", "resource.k8s.io/v1", None),
                                             ("DeviceClass", "resource.k8s.io/v1", None),
                                             ("ResourceClaimTemplate", "resource.k8s.io/v1", apiserver.namespace)):
            for raw in apiserver.list_objects(api_version, kind, namespace):
                if kind == "Node" and raw["metadata"]["name"] not in nodes:
                    continue  # a real cluster's other nodes: this view has only the test's
                watching.feed(rt, kind, None, raw)
        await _claims_made(apiserver, rt, pods)
        for kind, api_version in (("ResourceClaim", "resource.k8s.io/v1"), ("Pod", "v1")):
            for raw in apiserver.list_objects(api_version, kind, apiserver.namespace):
                watching.feed(rt, kind, None, raw)
        await scheduling.run_pass(rt)
    finally:
        await rt.session.close()


async def _claims_made(apiserver: Cluster, rt: Runtime, pods: Sequence[str]) -> None:
    def made() -> bool:
        return all((helpers.pod(apiserver, name).get("status") or {}).get("resourceClaimStatuses") for name in pods)

    if duty_owner(apiserver, "claim-lifecycle") == "dralloc":
        for raw in apiserver.list_objects("v1", "Pod", apiserver.namespace):
            watching.feed(rt, "Pod", None, raw)
        await lifecycle.run_pass(rt)
    wait_for(made, timeout=60, what="every pod's claim made")
