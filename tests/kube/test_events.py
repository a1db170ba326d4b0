"""post_event: events.k8s.io/v1 Events that `kubectl describe` shows, written best effort."""

from __future__ import annotations

import logging
import pathlib

import pytest
from tests.kube.objects import claim, pod

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.session import Session
from dralloc.sandbox import ApiServer, kubeconfig


async def _events(session: Session, namespace: str = "default") -> list[dict[str, object]]:
    items, _ = await reading.list_objects(session, resources.EVENTS, namespace=namespace)
    return items


async def test_event_regarding_a_pod(session: Session) -> None:
    """The Event names the pod (apiVersion, kind, name, namespace, uid, resourceVersion) and a related claim."""
    p = await writing.create_object(session, resources.PODS, pod("p"))
    c = await writing.create_object(session, resources.RESOURCE_CLAIMS, claim("c"))
    await writing.post_event(session, regarding=p, related=c, reason="AllocationFailed", type_="Warning",
                             message="no node has 2 free gpus", action="Allocate", reporting_instance="dralloc-0")
    [event] = await _events(session)
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Pod", "name": "p", "namespace": "default",
                                  "uid": p["metadata"]["uid"], "resourceVersion": p["metadata"]["resourceVersion"]}
    assert event["related"]["name"] == "c" and event["related"]["kind"] == "ResourceClaim"  # type: ignore[index]
    assert (event["reason"], event["type"], event["note"], event["action"]) == (
        "AllocationFailed", "Warning", "no node has 2 free gpus", "Allocate")
    assert (event["reportingController"], event["reportingInstance"]) == ("dralloc.io/scheduler", "dralloc-0")
    assert event["eventTime"] and event["metadata"]["name"].startswith("p.")  # type: ignore[index]


async def test_long_message_is_cut(session: Session) -> None:
    """A note longer than the API's 1 kB limit is cut instead of the Event being refused."""
    p = await writing.create_object(session, resources.PODS, pod("p"))
    await writing.post_event(session, regarding=p, reason="AllocationFailed", message="é" * 5000)
    [event] = await _events(session)
    note = event["note"]
    assert isinstance(note, str) and note == "é" * 512


async def test_cluster_scoped_object_events_go_to_default(session: Session) -> None:
    """Events about cluster-scoped objects (a DeviceTaintRule, a Node) land in "default"."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-9", "uid": "u9"}}
    await writing.post_event(session, regarding=node, reason="DeviceTainted", message="gpu-3 unhealthy")
    [event] = await _events(session)
    assert event["regarding"] == {"apiVersion": "v1", "kind": "Node", "name": "node-9", "uid": "u9"}


async def test_refused_event_is_logged_not_raised(async_apiserver: ApiServer, session: Session,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """An API refusal (here an injected 403) never fails the caller; it is logged."""
    async_apiserver.faults.next("POST", "/apis/events.k8s.io/v1/namespaces/*/events", status=403)
    with caplog.at_level(logging.WARNING, logger="dralloc.kube.writing"):
        await writing.post_event(session, regarding=pod("p"), reason="Allocated", message="ok")
    assert "could not post event Allocated" in caplog.text
    assert await _events(session) == []


async def test_unreachable_api_raises_transport_error(tmp_path: pathlib.Path) -> None:
    """Only TransportError escapes: the caller is about to meet the dead connection anyway."""
    path = kubeconfig.write(tmp_path / "closed", "http://127.0.0.1:9")
    async with await Session.connect(kubeconfig=str(path)) as session:
        with pytest.raises(errors.TransportError):
            await writing.post_event(session, regarding=pod("p"), reason="Allocated", message="ok")
