"""A claim's references name objects of its own namespace only (issue 26).

`ownerReferences` and `status.reservedFor` carry a name and a UID, and the object they mean is
in the claim's namespace: kube-controller-manager looks a reserving pod up by the claim's
namespace and the entry's name and then compares the UID (pkg/controller/resourceclaim), the
garbage collector an owner the same way. A tenant can write any UID into its own claims; a
claim in namespace `b` naming the UID of a pod (or PodGroup) of namespace `a` names nothing:
its reservation is dropped as that of a consumer that does not exist, its "generated" claim is
one whose pod is gone, and it is never taken for one of `a`'s pod's own claims. The same
references within one namespace keep working as before.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.lifecycle.objects import by_uid, claim, consumer, pod, template, template_entry

from dralloc.lifecycle import claims, plans, templates
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim
from dralloc.model.scheduling import PodGroup
from dralloc.state.cluster import ClusterState, PodsByUid

A, B = "team-a", "team-b"
VICTIM = pod("train", namespace=A, phase="Running", node="n1")
VIEW = by_uid(VICTIM)
API_VERSION = "scheduling.k8s.io/v1beta1"


class TestReservations:
    @pytest.mark.parametrize("namespace", [A, B])
    def test_a_reservation_names_a_pod_of_the_claims_namespace(self, namespace: str) -> None:
        """In `a` the running pod keeps its reservation; the same entry in a claim of `b` names nothing:
        dropped, and the claim deallocated (as kube-controller-manager, which finds no pod b/train)."""
        c = claim("shared", namespace=namespace, reserved=[consumer(VICTIM)], allocated=True)
        planned = claims.claim_plan(c, pods_by_uid=VIEW)
        if namespace == A:
            assert planned == ()
        else:
            assert planned[:2] == (plans.DropReservations(B, "shared", ()), plans.Deallocate(B, "shared"))

    def test_the_victims_pod_is_not_a_consumer_of_the_tenants_claim(self) -> None:
        (ref,) = claim("shared", reserved=[consumer(VICTIM)]).status.reserved_for
        assert claims.pod_consumer_valid(ref, A, VIEW) is True
        assert claims.pod_consumer_valid(ref, B, VIEW) is False

    def test_a_pod_of_the_same_namespace_under_another_name_is_not_the_consumer(self) -> None:
        """The entry's name counts as the UID does (upstream looks the pod up by name)."""
        entry = {**consumer(VICTIM), "name": "someone-else"}
        c = claim("shared", namespace=A, reserved=[entry], allocated=True)
        assert plans.DropReservations(A, "shared", ()) in claims.claim_plan(c, pods_by_uid=VIEW)

    @pytest.mark.parametrize("namespace", [A, B])
    def test_a_pod_group_reservation_names_a_pod_group_of_the_claims_namespace(self, namespace: str) -> None:
        entry = {"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "gang", "uid": "uid-gang"}
        c = claim("fabric", namespace=namespace, reserved=[entry], allocated=True)
        planned = claims.claim_plan(c, pods_by_uid=VIEW, pod_groups={(A, "gang", "uid-gang")})
        if namespace == A:
            assert planned == ()
        else:
            assert planned[:2] == (plans.DropReservations(B, "fabric", ()), plans.Deallocate(B, "fabric"))

    def test_through_the_clusters_pod_view(self) -> None:
        """The same with the operator's own view (PodsByUid over the cluster state, all namespaces)."""
        cluster = ClusterState()
        cluster.apply("Pod", "ADDED", conversion.to_raw(VICTIM))
        c = claim("shared", namespace=B, reserved=[consumer(VICTIM)], allocated=True)
        assert plans.DropReservations(B, "shared", ()) in claims.claim_plan(c, pods_by_uid=PodsByUid(cluster))


class TestOwners:
    @pytest.mark.parametrize("namespace", [A, B])
    def test_a_generated_claim_belongs_to_a_pod_of_its_namespace(self, namespace: str) -> None:
        """In `a` the claim of a running pod stays; in `b` the pod it names does not exist: deleted, as
        a generated claim whose pod is gone (the garbage collector would delete it as well)."""
        c = claim("train-gpu-x", uid="uid-c", namespace=namespace, owner=VICTIM, entry="gpu")
        planned = claims.claim_plan(c, pods_by_uid=VIEW)
        assert planned == (() if namespace == A else (plans.DeleteClaim(B, "train-gpu-x", "uid-c"),))

    def test_is_controlled_by_needs_the_pods_namespace(self) -> None:
        assert templates.is_controlled_by(claim("x", namespace=A, owner=VICTIM), VICTIM) is True
        assert templates.is_controlled_by(claim("x", namespace=B, owner=VICTIM), VICTIM) is False

    def test_a_claim_of_another_namespace_is_not_taken_for_the_pods_own(self) -> None:
        """Pod a/train recorded claim `train-gpu-x`, which is gone. A claim `train-gpu-x` in `b` owned by
        the pod's UID must not make its claim look present: a new one is created in `a`."""
        p = pod("train", namespace=A, entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": "train-gpu-x"})
        tpl = {f"{A}/gpu-tpl": template("gpu-tpl", namespace=A)}
        forged = claim("train-gpu-x", namespace=B, owner=p, entry="gpu")
        (step,) = templates.pod_claim_plan(p, tpl, [forged])
        assert isinstance(step, plans.CreateClaim) and step.raw["metadata"]["namespace"] == A
        assert templates.pod_claim_plan(p, tpl, [claim("train-gpu-x", namespace=A, owner=p, entry="gpu")]) == ()

    def test_a_pod_groups_claim_is_in_the_pod_groups_namespace(self) -> None:
        group = _group(A)
        tpl = {f"{A}/fabric": template("fabric", namespace=A)}
        mine, forged = _group_claim(group, A), _group_claim(group, B)
        assert templates.is_controlled_by_group(mine, group) is True
        assert templates.is_controlled_by_group(forged, group) is False
        (step,) = templates.pod_group_claim_plan(group, tpl, [forged], api_version=API_VERSION)
        assert isinstance(step, plans.CreateClaim) and step.raw["metadata"]["namespace"] == A
        assert templates.pod_group_claim_plan(group, tpl, [mine], api_version=API_VERSION) == ()


class TestClusterIndex:
    def test_claims_naming_keeps_to_the_namespace(self) -> None:
        """The UID index the lifecycle loop reads (`claims_of`) holds claims of every namespace;
        `claims_naming` and `pod_in` answer only within one."""
        cluster = ClusterState()
        cluster.apply("Pod", "ADDED", conversion.to_raw(VICTIM))
        for namespace in (A, B):
            cluster.apply("ResourceClaim", "ADDED",
                          conversion.to_raw(claim("c", namespace=namespace, owner=VICTIM, reserved=[consumer(VICTIM)])))
        uid = VICTIM.metadata.uid or ""
        assert cluster.claims_of[uid] == {(A, "c"), (B, "c")}
        assert cluster.claims_naming(A, uid) == [(A, "c")]
        assert cluster.claims_naming(B, uid) == [(B, "c")]
        assert cluster.pod_in(A, uid) == VICTIM and cluster.pod_key_in(A, uid) == (A, "train")
        assert cluster.pod_in(B, uid) is None and cluster.pod_key_in(B, uid) is None


def _group(namespace: str) -> PodGroup:
    raw: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "PodGroup",
        "metadata": {"name": "gang", "namespace": namespace, "uid": "uid-gang"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "resourceClaims": [{"name": "link", **template_entry("fabric")}]},
        "status": {"resourceClaimStatuses": [{"name": "link", "resourceClaimName": "gang-link-x"}]},
    }
    parsed: PodGroup = conversion.parse_as(PodGroup, raw)
    return parsed


def _group_claim(group: PodGroup, namespace: str) -> ResourceClaim:
    """The PodGroup's generated claim `gang-link-x`, put into `namespace`."""
    raw = templates.claim_for_pod_group_template(group, group.spec.resource_claims[0],
                                                 template("fabric", namespace=group.namespace), API_VERSION)
    raw["metadata"].update(name="gang-link-x", namespace=namespace)
    parsed: ResourceClaim = conversion.parse_as(ResourceClaim, raw)
    return parsed
