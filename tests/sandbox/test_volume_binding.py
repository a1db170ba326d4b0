"""The PV controller's binding as kube-controller-manager 1.37.2 does it (sandbox/volumebinding.py).

Every outcome here (objects, annotations, phases, the order of the writes) was recorded from the
real 1.37.2 control plane (`make e2e`'s, its PV controller on), less what the sandbox leaves out:
the `Unused` claim condition, events, and the up to 15 s upstream may wait for its resync.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
PVS = "/api/v1/persistentvolumes"
SCS = "/apis/storage.k8s.io/v1/storageclasses"
BOUND_BY = "pv.kubernetes.io/bound-by-controller"
COMPLETED = "pv.kubernetes.io/bind-completed"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"


def volume(name: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), labels: Obj | None = None,
           annotations: Obj | None = None, **spec: Any) -> Obj:
    meta: Obj = {"name": name, **({"labels": labels} if labels else {}),
                 **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta,
            "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "hostPath": {"path": f"/d/{name}"},
                     **spec}}


def claim(name: str, size: str = "1Gi", modes: tuple[str, ...] = ("ReadWriteOnce",), annotations: Obj | None = None,
          **spec: Any) -> Obj:
    meta: Obj = {"name": name, **({"annotations": annotations} if annotations else {})}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}}


def storage_class(name: str, provisioner: str, mode: str = "Immediate", default: bool = False) -> Obj:
    meta: Obj = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": meta, "provisioner": provisioner,
            "volumeBindingMode": mode}


async def eventually(http: Http, path: str, check: Callable[[Obj], bool], tries: int = 200) -> Obj:
    obj: Any = None
    for _ in range(tries):
        code, obj = await http.get(path)
        if code == 200 and check(obj):
            return dict(obj)
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path}: {obj}")


def phase(wanted: str) -> Callable[[Obj], bool]:
    return lambda obj: (obj.get("status") or {}).get("phase") == wanted


async def settled(http: Http) -> None:
    """Give the binder its turn (it runs on the server's loop once a write is answered)."""
    await asyncio.sleep(0.2)


async def test_an_unbound_volume_becomes_available(http: Http) -> None:
    _, listed = await http.get(PVS)
    code, created = await http.post(PVS, volume("v"))
    assert code == 201 and created["status"]["phase"] == "Pending"  # the controller writes next
    available = await eventually(http, f"{PVS}/v", phase("Available"))
    assert available["status"]["lastPhaseTransitionTime"]
    events = await http.watch(PVS, count=2, resourceVersion=listed["metadata"]["resourceVersion"])
    assert [(e["type"], e["object"]["status"]["phase"]) for e in events] == [("ADDED", "Pending"),
                                                                              ("MODIFIED", "Available")]


async def test_an_immediate_claim_binds_the_smallest_volume_of_the_fewest_access_modes(http: Http) -> None:
    """Upstream's index searches the volumes whose access modes hold the claim's, fewest modes first:
    the 5Gi ReadWriteOnce volume wins over a smaller ReadWriteOnce+ReadWriteMany one."""
    for body in (volume("big", "10Gi"), volume("small", "5Gi"), volume("tiny", "512Mi"),
                 volume("multi", "2Gi", ("ReadWriteOnce", "ReadWriteMany"))):
        await http.post(PVS, body)
    await eventually(http, f"{PVS}/multi", phase("Available"))
    _, listed = await http.get(PVS)
    start = listed["metadata"]["resourceVersion"]
    _, made = await http.post(PVCS, claim("c", storageClassName=""))
    bound = await eventually(http, f"{PVCS}/c", phase("Bound"))
    assert bound["spec"]["volumeName"] == "small"
    assert bound["metadata"]["annotations"] == {COMPLETED: "yes", BOUND_BY: "yes"}
    assert bound["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"}}
    _, small = await http.get(f"{PVS}/small")
    assert small["metadata"]["annotations"] == {BOUND_BY: "yes"}
    assert small["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "c",
                                         "uid": made["metadata"]["uid"], "apiVersion": "v1",
                                         "resourceVersion": made["metadata"]["resourceVersion"]}
    assert small["status"]["phase"] == "Bound"
    # upstream's order: the volume's claimRef, its phase, the claim's volumeName, the claim's status
    events = await http.watch(PVS, count=2, resourceVersion=start)
    assert [(e["object"]["status"]["phase"], "claimRef" in e["object"]["spec"]) for e in events] == [
        ("Available", True), ("Bound", True)]
    events = await http.watch(PVCS, count=3, resourceVersion=start)
    assert [(e["type"], e["object"]["status"]["phase"], e["object"]["spec"].get("volumeName")) for e in events] == [
        ("ADDED", "Pending", None), ("MODIFIED", "Pending", "small"), ("MODIFIED", "Bound", "small")]
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) < int(
        small["metadata"]["resourceVersion"]) < int(events[1]["object"]["metadata"]["resourceVersion"])
    for name in ("big", "tiny", "multi"):
        _, other = await http.get(f"{PVS}/{name}")
        assert other["status"]["phase"] == "Available" and "claimRef" not in other["spec"]


async def test_what_an_immediate_claim_is_matched_on(http: Http) -> None:
    await http.post(PVS, volume("gold", "3Gi", labels={"tier": "gold"}))
    await http.post(PVS, volume("rwx", "3Gi", ("ReadWriteOnce", "ReadWriteMany")))
    await http.post(PVS, volume("classy", "3Gi", storageClassName="fast"))
    await http.post(PVS, volume("block", "3Gi", volumeMode="Block"))
    await eventually(http, f"{PVS}/block", phase("Available"))
    await http.post(PVCS, claim("sel", selector={"matchExpressions": [{"key": "tier", "operator": "In",
                                                                        "values": ["gold"]}]}, storageClassName=""))
    await http.post(PVCS, claim("many", modes=("ReadWriteMany",), storageClassName=""))
    await http.post(PVCS, claim("blk", volumeMode="Block", storageClassName=""))
    await http.post(PVCS, claim("big", "4Gi", storageClassName=""))
    await http.post(PVCS, claim("fast", storageClassName="fast"))  # no such class: Immediate
    for name, wanted in (("sel", "gold"), ("many", "rwx"), ("blk", "block"), ("fast", "classy")):
        bound = await eventually(http, f"{PVCS}/{name}", phase("Bound"))
        assert bound["spec"]["volumeName"] == wanted
    await settled(http)
    _, big = await http.get(f"{PVCS}/big")
    assert big["status"] == {"phase": "Pending"} and "volumeName" not in big["spec"]  # nothing fits


async def test_a_wait_for_first_consumer_claim_waits_for_a_scheduler_to_pre_bind_a_volume(http: Http) -> None:
    """As kube-scheduler's VolumeBinding (and dralloc's scheduler mode) write it: the volume's claimRef with
    the claim's uid and bound-by-controller; the controller then binds the claim and leaves the claimRef
    as it is (no resourceVersion added)."""
    await http.post(SCS, storage_class("wait", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"))
    await http.post(PVS, volume("disk", storageClassName="wait"))
    _, made = await http.post(PVCS, claim("data", storageClassName="wait"))
    await eventually(http, f"{PVS}/disk", phase("Available"))
    await settled(http)
    _, waiting = await http.get(f"{PVCS}/data")
    assert waiting["status"] == {"phase": "Pending"} and "annotations" not in waiting["metadata"]
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "default", "name": "data",
           "uid": made["metadata"]["uid"]}
    code, _ = await http.patch(f"{PVS}/disk", {"metadata": {"annotations": {BOUND_BY: "yes"}},
                                               "spec": {"claimRef": ref}})
    assert code == 200
    bound = await eventually(http, f"{PVCS}/data", phase("Bound"))
    assert bound["spec"]["volumeName"] == "disk"
    assert bound["metadata"]["annotations"] == {COMPLETED: "yes", BOUND_BY: "yes"}
    assert bound["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}
    disk = await eventually(http, f"{PVS}/disk", phase("Bound"))
    assert disk["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data",
                                        "uid": made["metadata"]["uid"], "apiVersion": "v1"}


async def test_a_users_pre_binding_is_completed(http: Http) -> None:
    """A volume pre-bound by name only gets the claim's uid and resourceVersion, and no bound-by-controller
    (the claim does: the controller gave it the volume)."""
    await http.post(PVS, volume("mine", claimRef={"namespace": "default", "name": "c"}))
    await eventually(http, f"{PVS}/mine", phase("Available"))  # pre-bound by name: still Available
    _, made = await http.post(PVCS, claim("c", storageClassName=""))
    bound = await eventually(http, f"{PVCS}/c", phase("Bound"))
    assert bound["metadata"]["annotations"] == {COMPLETED: "yes", BOUND_BY: "yes"}
    mine = await eventually(http, f"{PVS}/mine", phase("Bound"))
    assert "annotations" not in mine["metadata"]
    assert mine["spec"]["claimRef"]["uid"] == made["metadata"]["uid"] and mine["spec"]["claimRef"]["resourceVersion"]


async def test_a_claim_naming_its_volume(http: Http) -> None:
    await http.post(PVS, volume("wide", "3Gi", ("ReadWriteOnce", "ReadOnlyMany")))
    await http.post(PVS, volume("narrow", "1Gi"))
    await eventually(http, f"{PVS}/narrow", phase("Available"))
    await http.post(PVCS, claim("named", volumeName="wide", storageClassName=""))
    await http.post(PVCS, claim("too-big", "2Gi", volumeName="narrow", storageClassName=""))
    await http.post(PVCS, claim("missing", volumeName="nowhere", storageClassName=""))
    bound = await eventually(http, f"{PVCS}/named", phase("Bound"))
    assert bound["metadata"]["annotations"] == {COMPLETED: "yes"}  # the user chose the volume
    assert bound["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
                               "capacity": {"storage": "3Gi"}}
    wide = await eventually(http, f"{PVS}/wide", phase("Bound"))
    assert wide["metadata"]["annotations"] == {BOUND_BY: "yes"}
    await settled(http)
    for name in ("too-big", "missing"):
        _, pending = await http.get(f"{PVCS}/{name}")
        assert pending["status"] == {"phase": "Pending"} and "annotations" not in pending["metadata"]
    _, narrow = await http.get(f"{PVS}/narrow")
    assert narrow["status"]["phase"] == "Available" and "claimRef" not in narrow["spec"]


async def test_claims_to_provision_only_get_the_provisioner_annotations(http: Http) -> None:
    """No provisioner runs in the sandbox: a claim to provision by an external provisioner is annotated for
    it and stays Pending; one of an in-tree class (kubernetes.io/no-provisioner) is left alone."""
    await http.post(SCS, storage_class("ext-wait", "csi.example.com", "WaitForFirstConsumer"))
    await http.post(SCS, storage_class("ext-now", "csi.example.com"))
    await http.post(SCS, storage_class("local", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"))
    await http.post(PVCS, claim("selected", storageClassName="ext-wait", annotations={SELECTED_NODE: "node-0"}))
    await http.post(PVCS, claim("not-yet", storageClassName="ext-wait"))
    await http.post(PVCS, claim("now", storageClassName="ext-now"))
    await http.post(PVCS, claim("local", storageClassName="local", annotations={SELECTED_NODE: "node-0"}))
    for name in ("selected", "now"):
        got = await eventually(http, f"{PVCS}/{name}", lambda o: PROVISIONER in (o["metadata"].get("annotations") or {}))
        assert got["metadata"]["annotations"][BETA_PROVISIONER] == got["metadata"]["annotations"][PROVISIONER] == \
            "csi.example.com"
        assert got["status"] == {"phase": "Pending"}
    await settled(http)
    _, not_yet = await http.get(f"{PVCS}/not-yet")
    _, local = await http.get(f"{PVCS}/local")
    assert "annotations" not in not_yet["metadata"] and local["metadata"]["annotations"] == {SELECTED_NODE: "node-0"}


async def test_a_claim_without_a_class_gets_the_default_class_later(http: Http) -> None:
    await http.post(PVCS, claim("late"))  # no default class yet: no class at all
    await settled(http)
    _, late = await http.get(f"{PVCS}/late")
    assert "storageClassName" not in late["spec"]
    await http.post(SCS, storage_class("std", "csi.example.com", default=True))
    late = await eventually(http, f"{PVCS}/late", lambda o: o["spec"].get("storageClassName") == "std")
    assert late["status"] == {"phase": "Pending"}


async def test_a_deleted_claim_releases_its_volume_and_a_deleted_volume_loses_its_claim(http: Http) -> None:
    await http.post(PVS, volume("a"))
    await http.post(PVS, volume("b"))
    await eventually(http, f"{PVS}/b", phase("Available"))
    await http.post(PVCS, claim("keep", volumeName="a", storageClassName=""))
    await http.post(PVCS, claim("drop", volumeName="b", storageClassName=""))
    await eventually(http, f"{PVCS}/keep", phase("Bound"))
    await eventually(http, f"{PVCS}/drop", phase("Bound"))
    await http.delete(f"{PVCS}/drop")
    released = await eventually(http, f"{PVS}/b", phase("Released"))
    assert released["spec"]["claimRef"]["name"] == "drop"  # Retain: the volume keeps its claimRef
    await http.delete(f"{PVS}/a")  # pv-protection holds it while Bound: drop the finalizer by hand
    await http.patch(f"{PVS}/a", {"metadata": {"finalizers": None}})
    lost = await eventually(http, f"{PVCS}/keep", phase("Lost"))
    assert lost["status"] == {"phase": "Lost"} and lost["spec"]["volumeName"] == "a"


async def test_a_volume_the_controller_gave_a_claim_bound_elsewhere_is_unbound(http: Http) -> None:
    """The claim is bound to the volume it names; a volume the controller (or a scheduler) had given the claim
    loses its claimRef and bound-by-controller; one a user pre-bound to it only loses the uid."""
    await http.post(PVS, volume("named"))
    await http.post(PVS, volume("user"))
    await eventually(http, f"{PVS}/user", phase("Available"))
    _, made = await http.post(PVCS, claim("c", volumeName="named", storageClassName=""))
    await eventually(http, f"{PVCS}/c", phase("Bound"))
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "c", "uid": made["metadata"]["uid"]}
    await http.post(PVS, volume("given", annotations={BOUND_BY: "yes"}, claimRef=ref))
    await http.patch(f"{PVS}/user", {"spec": {"claimRef": ref}})
    given = await eventually(http, f"{PVS}/given", lambda o: "claimRef" not in o["spec"])
    assert "annotations" not in given["metadata"] and given["status"]["phase"] == "Available"
    user = await eventually(http, f"{PVS}/user", lambda o: "uid" not in o["spec"]["claimRef"])
    assert user["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "c"}
    assert user["status"]["phase"] == "Available"


@pytest.mark.sandbox(pv_binder=False)
async def test_the_binder_can_be_turned_off(http: Http) -> None:
    await http.post(PVS, volume("v"))
    await http.post(PVCS, claim("c", storageClassName=""))
    await settled(http)
    _, still = await http.get(f"{PVS}/v")
    _, pending = await http.get(f"{PVCS}/c")
    assert still["status"]["phase"] == "Pending" and pending["status"] == {"phase": "Pending"}
