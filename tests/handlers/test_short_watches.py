"""A server that ends every claim watch at once, with nothing sent: the view must not stay stale.

Found by the chaos run (tests/chaos): while a replica's claim watches were held back and
closed before anything came through, each re-watch from the same resourceVersion ended
at once again, the operator resumed at once, thousands of times a second, and its view
of the claims never moved: every lifecycle write met 409 (its resourceVersion was old),
so a finished pod's devices stayed allocated as long as the replica led. client-go's
reflector treats a watch that ends within a second without any event as a failure and
relists; so does the operator now.

Here: claim watch events are held back 30 s and every watch is closed every 0.3 s, so
no claim event ever arrives. The first pod's deletion makes the server change its claim
(garbage collection marks it deleting); only a relist shows that change, and only then
can the claim be released for the second pod.
"""

from __future__ import annotations

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc.sandbox import Faults
from dralloc.testing import cluster


def test_claims_released_and_reused_while_every_claim_watch_ends_empty(
        apiserver: Cluster, faults: Faults, operator: OperatorThread) -> None:
    node, gpu = apiserver.name("node-a"), apiserver.name("gpu")
    apiserver.seed([cluster.node(node), cluster.gpu_slice(node, 1), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu)])
    apiserver.seed([cluster.pod("first", template_name="one")])
    wait_for(lambda: helpers.node_of(apiserver, "first"), timeout=30, what="the first pod bound")
    (claim,) = helpers.claims(apiserver)
    faults.watch_lag(30.0, path="*resourceclaims*")
    faults.every("close-watches", 0.3)
    apiserver.request("DELETE", f"/api/v1/namespaces/{apiserver.namespace}/pods/first")
    apiserver.seed([cluster.pod("second", template_name="one")])
    wait_for(lambda: not apiserver.get("resource.k8s.io/v1", "ResourceClaim", claim["metadata"]["name"],
                                       apiserver.namespace),
             timeout=30, what="the deleted pod's claim released and gone")
    wait_for(lambda: helpers.node_of(apiserver, "second"), timeout=30, what="the second pod bound to the freed GPU")
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
    faults.clear()
