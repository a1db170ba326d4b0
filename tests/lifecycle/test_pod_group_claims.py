"""PodGroup claims from ResourceClaimTemplates (lifecycle.templates, KEP-5729).

Covers, against upstream's resourceclaim controller of 1.37 (`handlePodGroupClaim`,
`handleClaim`, `resourceclaim.BindTo`): the generated claim's shape (generateName
`<podgroup>-<entry>-`, the PodGroup as controller owner without blockOwnerDeletion, the
entry annotation, the template's labels/annotations/spec), recording it in the PodGroup's
status, finding it again instead of creating a second, a missing template as a Warning
Event on the PodGroup, and the member pods: an entry matching the PodGroup's gets no claim
of its own and records the PodGroup's claim; an entry that does not match keeps its own;
a pod whose PodGroup is not there yet gets nothing yet. Nothing is mocked.
"""

from __future__ import annotations

from typing import Any

from tests.lifecycle.objects import NAMESPACE, pod, template, template_entry

from dralloc.lifecycle import plans, templates
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim
from dralloc.model.pods import Pod, PodSchedulingGroup
from dralloc.model.scheduling import PodGroup

API_VERSION = "scheduling.k8s.io/v1beta1"
TEMPLATES = {f"{NAMESPACE}/fabric": template("fabric", labels={"team": "ml"}, annotations={"note": "t"}),
             f"{NAMESPACE}/gpu": template("gpu")}


def group(name: str = "trainers", *, entries: dict[str, dict[str, str]] | None = None,
          statuses: dict[str, str] | None = None) -> PodGroup:
    raw: dict[str, Any] = {
        "apiVersion": API_VERSION, "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                 "resourceClaims": [{"name": e, **src} for e, src in (entries or {"link": template_entry("fabric")}
                                                                      ).items()]},
        "status": {"resourceClaimStatuses": [{"name": e, "resourceClaimName": c} for e, c in (statuses or {}).items()]},
    }
    parsed: PodGroup = conversion.parse_as(PodGroup, raw)
    return parsed


def generated(owner: PodGroup, entry: str, name: str) -> ResourceClaim:
    raw = templates.claim_for_pod_group_template(owner, owner.spec.resource_claims[0], TEMPLATES[f"{NAMESPACE}/fabric"],
                                                 API_VERSION)
    raw["metadata"]["name"] = name
    raw["metadata"]["annotations"][templates.POD_CLAIM_NAME_ANNOTATION] = entry
    parsed: ResourceClaim = conversion.parse_as(ResourceClaim, raw)
    return parsed


def member(name: str, **entries: dict[str, str]) -> Pod:
    """A pod of the PodGroup `trainers` with these entries."""
    p = pod(name, entries=entries)
    return p.model_copy(update={"spec": p.spec.model_copy(
        update={"scheduling_group": PodSchedulingGroup(pod_group_name="trainers")})})


class TestPodGroupClaimPlan:
    def test_a_template_entry_gets_one_claim_owned_by_the_podgroup(self) -> None:
        """The claim upstream's controller would create: name base, owner, annotation, labels, spec."""
        (step,) = templates.pod_group_claim_plan(group(), TEMPLATES, [], api_version=API_VERSION)
        assert isinstance(step, plans.CreateClaim)
        meta = step.raw["metadata"]
        assert meta["generateName"] == "trainers-link-"
        assert meta["namespace"] == NAMESPACE
        assert meta["ownerReferences"] == [{"apiVersion": API_VERSION, "kind": "PodGroup", "name": "trainers",
                                            "uid": "uid-trainers", "controller": True}]
        assert meta["annotations"] == {"note": "t", templates.POD_CLAIM_NAME_ANNOTATION: "link"}
        assert meta["labels"] == {"team": "ml"}
        assert step.raw["spec"] == conversion.to_raw(TEMPLATES[f"{NAMESPACE}/fabric"].spec.spec)

    def test_a_created_claim_is_recorded_not_created_again(self) -> None:
        """Planning again with the created claim (not yet in the status) records it in the PodGroup's status."""
        owner = group()
        plan = templates.pod_group_claim_plan(owner, TEMPLATES, [generated(owner, "link", "trainers-link-x7k2m")],
                                              api_version=API_VERSION)
        assert plan == (plans.SetPodGroupClaimStatuses(NAMESPACE, "trainers", (
            {"name": "link", "resourceClaimName": "trainers-link-x7k2m"},)),)

    def test_recorded_and_present_needs_nothing(self) -> None:
        owner = group(statuses={"link": "trainers-link-x7k2m"})
        assert templates.pod_group_claim_plan(owner, TEMPLATES, [generated(owner, "link", "trainers-link-x7k2m")],
                                              api_version=API_VERSION) == ()

    def test_a_claim_of_another_podgroup_is_not_taken(self) -> None:
        """Owner UID and annotation decide: another PodGroup's claim for an entry of the same name is not ours."""
        other = group("others")
        (step,) = templates.pod_group_claim_plan(group(), TEMPLATES, [generated(other, "link", "others-link-abcde")],
                                                 api_version=API_VERSION)
        assert isinstance(step, plans.CreateClaim)

    def test_a_missing_template_is_a_warning_on_the_podgroup(self) -> None:
        (step,) = templates.pod_group_claim_plan(group(entries={"link": template_entry("nowhere")}), TEMPLATES, [],
                                                 api_version=API_VERSION)
        assert isinstance(step, plans.EmitEvent)
        assert (step.regarding_kind, step.name, step.reason) == ("PodGroup", "trainers", "FailedResourceClaimCreation")
        assert step.message == "PodGroupResourceClaim link: ResourceClaimTemplate 'nowhere' not found"

    def test_an_entry_by_claim_name_needs_no_claim(self) -> None:
        entries = {"link": {"resourceClaimName": "made-by-hand"}}
        assert templates.pod_group_claim_plan(group(entries=entries), TEMPLATES, [], api_version=API_VERSION) == ()


class TestMembers:
    def test_a_matching_entry_records_the_podgroups_claim_and_gets_none_of_its_own(self) -> None:
        """Same name and template as the PodGroup's entry (upstream's BindTo): the group's claim; the pod's
        other template entry gets its own claim as usual."""
        owner = group()
        shared = generated(owner, "link", "trainers-link-x7k2m")
        p = member("w0", link=template_entry("fabric"), gpus=template_entry("gpu"))
        plan = templates.pod_claim_plan(p, TEMPLATES, [], group=owner, group_claims=[shared])
        creates = [s for s in plan if isinstance(s, plans.CreateClaim)]
        assert [c.raw["metadata"]["generateName"] for c in creates] == ["w0-gpus-"]
        assert plans.SetPodClaimStatuses(NAMESPACE, "w0", (
            {"name": "link", "resourceClaimName": "trainers-link-x7k2m"},)) in plan

    def test_a_matching_entry_waits_for_the_podgroups_claim(self) -> None:
        p = member("w0", link=template_entry("fabric"))
        assert templates.pod_claim_plan(p, TEMPLATES, [], group=group(), group_claims=[]) == ()

    def test_an_entry_of_the_same_name_and_another_template_is_the_pods_own(self) -> None:
        """BindTo compares the template name too: a different one makes it the pod's claim."""
        p = member("w0", link=template_entry("gpu"))
        (step,) = templates.pod_claim_plan(p, TEMPLATES, [], group=group(), group_claims=[])
        assert isinstance(step, plans.CreateClaim) and step.raw["metadata"]["generateName"] == "w0-link-"

    def test_a_pod_whose_podgroup_is_not_there_yet_gets_no_claims_yet(self) -> None:
        p = member("w0", link=template_entry("fabric"))
        assert templates.pod_claim_plan(p, TEMPLATES, [], group_missing=True) == ()
