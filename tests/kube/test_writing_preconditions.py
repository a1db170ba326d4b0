"""Writes carry their preconditions, and a failed one writes nothing.

Covers the claim status write the allocator commits with (stale resourceVersion →
ConflictError; two concurrent writers → exactly one wins), JSON patch `test` ops,
merge patch semantics (lists replaced, not merged by key), delete preconditions,
generateName, and eviction. Outcomes are checked by reading back over HTTP.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.kube.objects import ALLOCATION, claim, pod

from dralloc.kube import errors, reading, resources, writing
from dralloc.kube.session import Session

CLAIMS = resources.RESOURCE_CLAIMS


def _reserved(pod_name: str, uid: str) -> dict[str, Any]:
    return {"resource": "pods", "name": pod_name, "uid": uid}


class TestReplaceClaimStatus:
    async def test_writes_allocation_and_reserved_for_together(self, session: Session) -> None:
        """One PUT sets allocation and reservedFor; the stored claim comes back with a new version."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        status = {"allocation": ALLOCATION, "reservedFor": [_reserved("p", "uid-p")]}
        stored = await writing.replace_claim_status(session, created, status)
        assert stored["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
        assert stored["status"]["reservedFor"] == [_reserved("p", "uid-p")]
        assert stored["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        assert (await reading.get_object(session, CLAIMS, "c", "default"))["status"] == stored["status"]

    async def test_stale_version_conflicts_and_writes_nothing(self, session: Session) -> None:
        """A claim read before someone else's write gets ConflictError, and its status is not stored."""
        stale = await writing.create_object(session, CLAIMS, claim("c"))
        await writing.merge_patch(session, CLAIMS, "c", {"metadata": {"labels": {"touched": "yes"}}}, "default")
        with pytest.raises(errors.ConflictError):
            await writing.replace_claim_status(session, stale, {"allocation": ALLOCATION})
        assert "allocation" not in ((await reading.get_object(session, CLAIMS, "c", "default")).get("status") or {})

    async def test_concurrent_writers_exactly_one_wins(self, session: Session) -> None:
        """Two writers holding the same version: one stores, the other gets ConflictError."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        results = await asyncio.gather(
            writing.replace_claim_status(session, created, {"allocation": ALLOCATION,
                                                            "reservedFor": [_reserved("a", "uid-a")]}),
            writing.replace_claim_status(session, created, {"allocation": ALLOCATION,
                                                            "reservedFor": [_reserved("b", "uid-b")]}),
            return_exceptions=True)
        winners = [r for r in results if isinstance(r, dict)]
        losers = [r for r in results if isinstance(r, BaseException)]
        assert len(winners) == 1 and len(losers) == 1 and isinstance(losers[0], errors.ConflictError)
        stored = await reading.get_object(session, CLAIMS, "c", "default")
        assert stored["status"]["reservedFor"] == winners[0]["status"]["reservedFor"]

    async def test_needs_a_resource_version(self, session: Session) -> None:
        """Without a resourceVersion there is no precondition, so the write is refused locally."""
        with pytest.raises(ValueError, match="resourceVersion"):
            await writing.replace_claim_status(session, claim("c"), {})


class TestPatches:
    async def test_json_patch_failed_test_is_invalid_and_writes_nothing(self, session: Session) -> None:
        """A `test` op on a stale resourceVersion fails with InvalidError (422); the patch is not applied."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion", "value": "0"},
               {"op": "add", "path": "/metadata/finalizers", "value": ["dralloc.io/x"]}]
        with pytest.raises(errors.InvalidError):
            await writing.json_patch(session, CLAIMS, "c", ops, "default")
        assert not (await reading.get_object(session, CLAIMS, "c", "default"))["metadata"].get("finalizers")
        ops[0]["value"] = created["metadata"]["resourceVersion"]
        patched = await writing.json_patch(session, CLAIMS, "c", ops, "default")
        assert patched["metadata"]["finalizers"] == ["dralloc.io/x"]

    async def test_merge_patch_replaces_lists(self, session: Session) -> None:
        """A merge patch replaces a list whole: naming one remaining gate drops the other.

        (A strategic merge patch, which a plain dict body would be, merges schedulingGates
        by name and would keep both: the gate would never be removed.)
        """
        gates = [{"name": "dralloc.io/allocate"}, {"name": "example.com/other"}]
        await writing.create_object(session, resources.PODS, pod("p", schedulingGates=gates))
        patched = await writing.merge_patch(session, resources.PODS, "p",
                                            {"spec": {"schedulingGates": [{"name": "example.com/other"}]}},
                                            "default")
        assert patched["spec"]["schedulingGates"] == [{"name": "example.com/other"}]

    async def test_merge_patch_null_removes_key(self, session: Session) -> None:
        """null in a merge patch deletes the key (how a scheduling gate's label or annotation goes away)."""
        await writing.create_object(session, CLAIMS, claim("c", annotations={"a": "1", "b": "2"}))
        patched = await writing.merge_patch(session, CLAIMS, "c", {"metadata": {"annotations": {"a": None}}},
                                            "default")
        assert patched["metadata"]["annotations"] == {"b": "2"}

    async def test_merge_patch_status_subresource(self, session: Session) -> None:
        """subresource="status" patches the status and leaves spec alone."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        patched = await writing.merge_patch(session, CLAIMS, "c", {"status": {"allocation": ALLOCATION}}, "default",
                                            subresource="status")
        assert patched["status"]["allocation"]["devices"] == ALLOCATION["devices"]
        assert patched["spec"] == created["spec"]


class TestCreateDelete:
    async def test_generate_name(self, session: Session) -> None:
        """create_object honours generateName: the server picks the name from the prefix."""
        body = claim("")
        del body["metadata"]["name"]
        body["metadata"]["generateName"] = "pod-gpu-"
        created = await writing.create_object(session, CLAIMS, body)
        assert created["metadata"]["name"].startswith("pod-gpu-") and created["metadata"]["name"] != "pod-gpu-"
        assert created["metadata"]["uid"]

    async def test_delete_with_wrong_uid_conflicts(self, session: Session) -> None:
        """A uid precondition naming another object (a re-created namesake) is ConflictError; nothing deleted."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        with pytest.raises(errors.ConflictError):
            await writing.delete_object(session, CLAIMS, "c", "default", uid="not-this-one")
        await reading.get_object(session, CLAIMS, "c", "default")
        await writing.delete_object(session, CLAIMS, "c", "default", uid=created["metadata"]["uid"])
        with pytest.raises(errors.NotFoundError):
            await reading.get_object(session, CLAIMS, "c", "default")

    async def test_delete_with_stale_resource_version_conflicts(self, session: Session) -> None:
        """A resourceVersion precondition from before a change is ConflictError."""
        created = await writing.create_object(session, CLAIMS, claim("c"))
        await writing.merge_patch(session, CLAIMS, "c", {"metadata": {"labels": {"x": "y"}}}, "default")
        with pytest.raises(errors.ConflictError):
            await writing.delete_object(session, CLAIMS, "c", "default",
                                        resource_version=created["metadata"]["resourceVersion"])

    async def test_delete_missing_is_not_found(self, session: Session) -> None:
        """Deleting what is gone passes NotFoundError through: the caller decides if that is success."""
        with pytest.raises(errors.NotFoundError):
            await writing.delete_object(session, CLAIMS, "gone", "default", propagation="Background",
                                        grace_period_seconds=0)

    async def test_create_namespaced_without_namespace_is_refused(self, session: Session) -> None:
        """A namespaced object without metadata.namespace is a caller bug, refused before sending."""
        body = claim("c")
        del body["metadata"]["namespace"]
        with pytest.raises(ValueError, match="namespace"):
            await writing.create_object(session, CLAIMS, body)


class TestEviction:
    async def test_evict_deletes_the_pod(self, session: Session) -> None:
        """An Eviction with the pod's uid removes the pod."""
        created = await writing.create_object(session, resources.PODS, pod("p"))
        await writing.evict_pod(session, "default", "p", uid=created["metadata"]["uid"])
        with pytest.raises(errors.NotFoundError):
            await reading.get_object(session, resources.PODS, "p", "default")

    async def test_evict_missing_pod_is_not_found(self, session: Session) -> None:
        with pytest.raises(errors.NotFoundError):
            await writing.evict_pod(session, "default", "nobody")


class TestReplaceObject:
    async def test_lease_replace_and_stale_conflict(self, session: Session) -> None:
        """A Lease renewed from a fresh read is stored; one from a stale read is ConflictError."""
        lease = {"metadata": {"name": "dralloc", "namespace": "default"},
                 "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
        created = await writing.create_object(session, resources.LEASES, lease)
        renewed = await writing.replace_object(session, resources.LEASES,
                                               {**created, "spec": {**created["spec"], "holderIdentity": "b"}})
        assert renewed["spec"]["holderIdentity"] == "b" and renewed["kind"] == "Lease"
        with pytest.raises(errors.ConflictError):
            await writing.replace_object(session, resources.LEASES,
                                         {**created, "spec": {**created["spec"], "holderIdentity": "c"}})

    async def test_device_taint_rule_status(self, session: Session) -> None:
        """replace_object(subresource="status") writes a DeviceTaintRule's status at the discovered version."""
        version = await session.served_version("resource.k8s.io", "devicetaintrules")
        assert version is not None
        rules = resources.DEVICE_TAINT_RULES.at_version(version)
        created = await writing.create_object(session, rules, {"metadata": {"name": "r"}, "spec": {
            "deviceSelector": {"driver": "gpu.dralloc.dev", "pool": "node-0", "device": "gpu-1"},
            "taint": {"key": "dralloc.io/unhealthy", "value": "xid", "effect": "NoSchedule"}}})
        condition = {"type": "EvictionInProgress", "status": "False", "reason": "NotApplicable",
                     "message": "NoSchedule never evicts", "lastTransitionTime": "2026-01-01T00:00:00Z",
                     "observedGeneration": created["metadata"].get("generation", 1)}
        stored = await writing.replace_object(session, rules, {**created, "status": {"conditions": [condition]}},
                                              subresource="status")
        assert stored["status"]["conditions"][0]["type"] == "EvictionInProgress"
        assert stored["spec"]["taint"]["effect"] == "NoSchedule"
