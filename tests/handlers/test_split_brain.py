"""A handover while the old holder is cut off: it stops writing before the new one starts.

Replica A holds the Lease; then the API server refuses A's Lease reads and renewals and
keeps closing and delaying A's watches (faults aimed at A's token only). A must stop
writing at its renew deadline, B takes over a lease duration after A's last renewal,
and while pods keep arriving nothing is created or allocated twice. Every write A sent
is recorded on A's side (after the write fence), with A's and B's clocks being one.
"""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest
from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, operator_settings, wait_for

from dralloc.kube.session import Session
from dralloc.sandbox import Faults
from dralloc.settings import ConnectionSettings, Settings
from dralloc.testing import cluster
from dralloc.testing.cluster import crds

TOKENS = ["token-a", "token-b"]
TIMING = (3.0, 2.0, 0.5)  # lease duration, renew deadline, retry period


def _settings(apiserver: Cluster, identity: str, token: str, path: pathlib.Path) -> Settings:
    server = getattr(apiserver, "server")  # noqa: B009  (the sandbox handle: SandboxCluster.server)
    kubeconfig = server.write_kubeconfig(path, token=token)
    base = operator_settings(apiserver, elect=identity, timing=TIMING)
    return base.model_copy(update={"connection": ConnectionSettings(kubeconfig=str(kubeconfig))})


def _record_writes(session: Session, sent: list[tuple[float, str, str]], lease: str) -> None:
    """Wrap the session's transport: every write that passed the fence is noted with its time."""
    send = session._send

    async def recording(method: str, path: str, **kwargs: Any) -> Any:
        if method != "GET" and not path.endswith(lease):
            sent.append((time.monotonic(), method, path))
        return await send(method, path, **kwargs)

    session._send = recording  # type: ignore[method-assign]


def _entries(claims: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for c in claims:
        owners = [o["uid"] for o in c["metadata"].get("ownerReferences") or [] if o.get("controller")]
        entry = (c["metadata"].get("annotations") or {}).get("resource.kubernetes.io/pod-claim-name", "")
        out.extend((owner, entry) for owner in owners)
    return out


@pytest.mark.sandbox(token=TOKENS)
def test_cut_off_holder_stops_before_the_new_one_starts(apiserver: Cluster, faults: Faults,
                                                        tmp_path: pathlib.Path) -> None:
    node, gpu, lease = apiserver.name("node-0"), apiserver.name("gpu"), apiserver.name("dralloc")
    apiserver.seed([*crds(), cluster.namespace(apiserver.namespace), cluster.gpu_class(gpu),
                    cluster.template("one", device_class=gpu), cluster.node(node), cluster.gpu_slice(node, 64)])
    first = OperatorThread(_settings(apiserver, "replica-a", TOKENS[0], tmp_path / "a")).start()
    leadership_a = first.runtime.leadership
    assert leadership_a is not None and first.runtime.session is not None
    sent_by_a: list[tuple[float, str, str]] = []
    _record_writes(first.runtime.session, sent_by_a, lease)
    wait_for(lambda: leadership_a.acting, what="replica-a acts")
    second = OperatorThread(_settings(apiserver, "replica-b", TOKENS[1], tmp_path / "b")).start()
    leadership_b = second.runtime.leadership
    assert leadership_b is not None
    try:
        apiserver.seed([cluster.pod(f"early-{i}", template_name="one") for i in range(5)])
        wait_for(lambda: all(helpers.node_of(apiserver, f"early-{i}") for i in range(5)), what="A places")
        # Cut A off: no Lease reads or renewals, watches closed every second and lagging.
        lease_path = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases/{lease}"
        faults.load(f"GET {lease_path} 500 token={TOKENS[0]}; PUT {lease_path} 500 token={TOKENS[0]}; "
                    f"close-watches every=1 token={TOKENS[0]}; watch-lag delay=1.5 token={TOKENS[0]}")
        for i in range(30):  # pods keep coming through the handover
            apiserver.seed([cluster.pod(f"during-{i}", template_name="one")])
            time.sleep(0.2)
        wait_for(lambda: leadership_b.acting, timeout=30, what="replica-b acts")
        wait_for(lambda: all(helpers.node_of(apiserver, f"during-{i}") for i in range(30)), timeout=60,
                 what="every pod placed")
        assert not leadership_a.acting
    finally:
        faults.clear()
        second.stop()
        first.stop()
    a_deadline = (leadership_a.elector.renewed_at or 0.0) + TIMING[1]
    assert sent_by_a and all(at < a_deadline for at, _, _ in sent_by_a), "A wrote after its renew deadline"
    assert leadership_b.acting_since is not None and max(at for at, _, _ in sent_by_a) < leadership_b.acting_since
    claims = helpers.claims(apiserver)
    entries = _entries(claims)
    assert len(entries) == len(set(entries)) == 35, "a pod entry got two claims"
    assert set(helpers.allocated_devices(apiserver).values()) == {1}
