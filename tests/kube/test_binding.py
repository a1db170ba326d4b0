"""pods/binding: the scheduler-mode commit. The pod's uid rides along as a precondition."""

from __future__ import annotations

import pytest
from tests.kube.objects import pod

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.session import Session


async def test_bind_sets_node_name(session: Session) -> None:
    """Binding (whose answer is a Status, not a Pod) sets spec.nodeName."""
    created = await writing.create_object(session, resources.PODS, pod("p", schedulerName="dralloc"))
    await writing.bind_pod(session, "default", "p", created["metadata"]["uid"], "node-0")
    assert (await reading.get_object(session, resources.PODS, "p", "default"))["spec"]["nodeName"] == "node-0"


async def test_binding_a_bound_pod_conflicts(session: Session) -> None:
    """A second binding (even to the same node) is ConflictError and the first node stays."""
    created = await writing.create_object(session, resources.PODS, pod("p"))
    uid = created["metadata"]["uid"]
    await writing.bind_pod(session, "default", "p", uid, "node-0")
    with pytest.raises(errors.ConflictError) as caught:
        await writing.bind_pod(session, "default", "p", uid, "node-1")
    assert "already assigned" in caught.value.message
    assert (await reading.get_object(session, resources.PODS, "p", "default"))["spec"]["nodeName"] == "node-0"


async def test_binding_with_another_uid_conflicts(session: Session) -> None:
    """A uid from a deleted namesake does not bind the new pod."""
    await writing.create_object(session, resources.PODS, pod("p"))
    with pytest.raises(errors.ConflictError):
        await writing.bind_pod(session, "default", "p", "uid-of-an-older-p", "node-0")
    assert "nodeName" not in (await reading.get_object(session, resources.PODS, "p", "default"))["spec"]


async def test_binding_a_missing_pod_is_not_found(session: Session) -> None:
    with pytest.raises(errors.NotFoundError):
        await writing.bind_pod(session, "default", "nobody", "uid", "node-0")
