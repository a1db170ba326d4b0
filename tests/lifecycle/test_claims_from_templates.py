"""Claims generated from ResourceClaimTemplates (lifecycle.templates).

Covers: the claim's shape (generateName and its upstream truncation, owner reference,
annotation, copied labels/annotations, spec), finding an already generated claim by
owner UID and annotation, the claim name a pod entry uses, and `pod_claim_plan` as a
table of named cases plus properties (planning again after executing never creates a
second claim for one entry). Nothing is mocked: inputs are model objects, outputs plans.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.lifecycle.objects import claim, claim_entry, pod, template, template_entry

from dralloc.lifecycle import plans, templates
from dralloc.model import conversion
from dralloc.model.claims import ResourceClaim, ResourceClaimTemplate
from dralloc.model.pods import Pod, PodResourceClaim

TPL = template("gpu-tpl", labels={"team": "ml"}, annotations={"note": "from-template"})
TEMPLATES = {"default/gpu-tpl": TPL}


def entry(name: str, template_name: str = "gpu-tpl") -> PodResourceClaim:
    return PodResourceClaim(name=name, resource_claim_template_name=template_name)


class TestGenerateName:
    def test_short_names_are_joined_with_a_trailing_hyphen(self) -> None:
        """`<pod>-<entry>-` is used as is when it fits in 57 characters."""
        assert templates.generate_name("train-0", "gpu") == "train-0-gpu-"

    def test_base_of_exactly_57_characters_is_kept(self) -> None:
        """The limit is inclusive: 57 characters leave room for the API server's suffix."""
        pod_name = "p" * 50
        assert templates.generate_name(pod_name, "gpu12") == pod_name + "-gpu12-"

    def test_long_names_shrink_in_proportion(self) -> None:
        """Both parts are cut by the same ratio and joined without a trailing hyphen, as upstream."""
        pod_name, entry_name = "a" * 60, "b" * 30
        generated = templates.generate_name(pod_name, entry_name)
        # base is 92 characters: keep 60*57//92 = 37 of the pod and 30*57//92 = 18 of the entry
        assert generated == "a" * 37 + "-" + "b" * 18

    def test_long_pod_name_keeps_some_of_the_entry(self) -> None:
        """A very long pod name does not push the entry name out entirely."""
        # base is 68 characters: keep 63*57//68 = 52 of the pod and 3*57//68 = 2 of the entry
        assert templates.generate_name("x" * 63, "gpu") == "x" * 52 + "-gp"

    @given(st.text("abc-", min_size=1, max_size=63), st.text("xyz", min_size=1, max_size=63))
    def test_never_longer_than_57(self, pod_name: str, entry_name: str) -> None:
        """Whatever the inputs, the base leaves room for the 5 random characters and a hyphen."""
        assert len(templates.generate_name(pod_name, entry_name)) <= 57


class TestClaimForTemplate:
    def raw(self) -> dict[str, Any]:
        return templates.claim_for_template(pod("train", uid="u-1"), entry("gpu"), TPL)

    def test_kind_and_namespace(self) -> None:
        """The claim is a resource.k8s.io/v1 ResourceClaim in the pod's namespace, named by the API server."""
        raw = self.raw()
        assert (raw["apiVersion"], raw["kind"]) == ("resource.k8s.io/v1", "ResourceClaim")
        assert raw["metadata"]["namespace"] == "default"
        assert raw["metadata"]["generateName"] == "train-gpu-"
        assert "name" not in raw["metadata"]

    def test_owner_is_the_pod_as_blocking_controller(self) -> None:
        """The pod owns the claim (controller, blockOwnerDeletion), so garbage collection follows the pod."""
        assert self.raw()["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": "u-1",
             "controller": True, "blockOwnerDeletion": True}
        ]

    def test_annotations_are_copied_and_name_the_entry(self) -> None:
        """Template annotations are copied and the pod-claim-name annotation is added."""
        assert self.raw()["metadata"]["annotations"] == {
            "note": "from-template", templates.POD_CLAIM_NAME_ANNOTATION: "gpu"}

    def test_our_annotation_wins_over_the_template(self) -> None:
        """A template cannot set the pod-claim-name annotation to something else."""
        tpl = template(annotations={templates.POD_CLAIM_NAME_ANNOTATION: "other"})
        raw = templates.claim_for_template(pod(), entry("gpu"), tpl)
        assert raw["metadata"]["annotations"][templates.POD_CLAIM_NAME_ANNOTATION] == "gpu"

    def test_labels_are_copied(self) -> None:
        """Template labels become the claim's labels."""
        assert self.raw()["metadata"]["labels"] == {"team": "ml"}

    def test_no_labels_means_no_labels_field(self) -> None:
        """A template without labels gives a claim without a labels field."""
        raw = templates.claim_for_template(pod(), entry("gpu"), template())
        assert "labels" not in raw["metadata"]

    def test_spec_is_the_template_spec(self) -> None:
        """The claim's spec is the template's spec, field for field."""
        assert self.raw()["spec"] == conversion.to_raw(TPL.spec.spec)
        assert self.raw()["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == "gpu.example.com"

    def test_result_parses_as_a_claim(self) -> None:
        """The raw claim is valid input for the model (what the API server would store)."""
        parsed = conversion.parse_as(ResourceClaim, self.raw())
        assert templates.is_controlled_by(parsed, pod("train", uid="u-1")) is True


class TestFindGeneratedClaim:
    def test_found_by_owner_uid_and_annotation(self) -> None:
        """The claim controlled by this pod's UID and annotated with the entry is found."""
        p = pod("train")
        mine = claim("train-gpu-abcde", owner=p, entry="gpu")
        assert templates.find_generated_claim(p, "gpu", [mine]) == mine

    def test_other_entry_is_not_found(self) -> None:
        """A claim generated for another entry of the same pod does not count."""
        p = pod("train")
        assert templates.find_generated_claim(p, "gpu", [claim("x", owner=p, entry="nic")]) is None

    def test_earlier_pod_with_same_name_does_not_count(self) -> None:
        """A claim of a deleted pod of the same name (other UID) is not this pod's claim."""
        old, new = pod("train", uid="old"), pod("train", uid="new")
        assert templates.find_generated_claim(new, "gpu", [claim("x", owner=old, entry="gpu")]) is None

    def test_claim_without_annotation_is_never_adopted(self) -> None:
        """A claim the pod controls but without the annotation is not taken as generated."""
        p = pod("train")
        assert templates.find_generated_claim(p, "gpu", [claim("x", owner=p)]) is None

    def test_oldest_wins_whatever_the_order(self) -> None:
        """With duplicates, the oldest is picked, independent of input order."""
        p = pod("train")
        old = claim("b", owner=p, entry="gpu", created_at="2030-01-01T00:00:00Z")
        young = claim("a", owner=p, entry="gpu", created_at="2030-01-02T00:00:00Z")
        assert templates.find_generated_claim(p, "gpu", [young, old]) == old
        assert templates.find_generated_claim(p, "gpu", [old, young]) == old


class TestClaimNameFor:
    def test_named_claim(self) -> None:
        """A resourceClaimName entry uses that claim."""
        p = pod(entries={"shared": claim_entry("team-gpu")})
        assert templates.claim_name_for(p, p.spec.resource_claims[0]) == "team-gpu"

    def test_template_entry_before_creation(self) -> None:
        """A template entry has no claim until the status records one."""
        p = pod(entries={"gpu": template_entry("gpu-tpl")})
        assert templates.claim_name_for(p, p.spec.resource_claims[0]) is None

    def test_template_entry_recorded(self) -> None:
        """A template entry uses the claim recorded in resourceClaimStatuses."""
        p = pod(entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": "p-gpu-x1y2z"})
        assert templates.claim_name_for(p, p.spec.resource_claims[0]) == "p-gpu-x1y2z"

    def test_recorded_without_name_means_none(self) -> None:
        """A status entry without resourceClaimName says no claim was needed."""
        p = pod(entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": None})
        assert templates.claim_name_for(p, p.spec.resource_claims[0]) is None


# --- pod_claim_plan as a table ------------------------------------------------------------

P = pod("p", entries={"gpu": template_entry("gpu-tpl")})
CREATE_GPU = plans.CreateClaim(raw=templates.claim_for_template(P, entry("gpu"), TPL))


@dataclasses.dataclass(frozen=True)
class Case:
    pod: Pod
    claims: tuple[ResourceClaim, ...] = ()
    templates: dict[str, ResourceClaimTemplate] = dataclasses.field(default_factory=lambda: dict(TEMPLATES))
    expect: tuple[plans.PlanStep, ...] | Callable[[tuple[plans.PlanStep, ...]], bool] = ()


def _status(p: Pod, **names: str) -> plans.SetPodClaimStatuses:
    return plans.SetPodClaimStatuses(
        p.namespace, p.name, tuple({"name": k, "resourceClaimName": v} for k, v in names.items()))


_MISSING = pod("p", entries={"gpu": template_entry("nope"), "nic": template_entry("gpu-tpl")})

CASES: dict[str, Case] = {
    "template-entry-creates-claim": Case(pod=P, expect=(CREATE_GPU,)),
    "named-claim-entry-creates-nothing": Case(pod=pod("p", entries={"gpu": claim_entry("shared")})),
    "no-entries-nothing-to-do": Case(pod=pod("p")),
    "created-but-unrecorded-is-recorded-not-recreated": Case(
        pod=P, claims=(claim("p-gpu-abcde", owner=P, entry="gpu"),), expect=(_status(P, gpu="p-gpu-abcde"),)),
    "created-and-recorded-nothing-to-do": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": "p-gpu-abcde"}),
        claims=(claim("p-gpu-abcde", owner=P, entry="gpu"),)),
    "recorded-claim-deleted-is-recreated": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": "p-gpu-abcde"}),
        expect=(CREATE_GPU,)),
    "recorded-claim-of-someone-else-is-replaced": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": "p-gpu-abcde"}),
        claims=(claim("p-gpu-abcde", owner=pod("p", uid="older"), entry="gpu"),),
        expect=(CREATE_GPU,)),
    "recorded-as-not-needed-creates-nothing": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, statuses={"gpu": None})),
    "claim-of-previous-pod-incarnation-ignored": Case(
        pod=P, claims=(claim("p-gpu-old", owner=pod("p", uid="older"), entry="gpu"),), expect=(CREATE_GPU,)),
    "missing-template-warns-and-creates-nothing-for-it": Case(
        pod=_MISSING,
        expect=lambda steps: (
            [type(s) for s in steps] == [plans.EmitEvent, plans.CreateClaim]
            and isinstance(steps[0], plans.EmitEvent)
            and steps[0].type_ == "Warning" and steps[0].reason == "FailedResourceClaimCreation"
            and steps[0].regarding_kind == "Pod" and "nope" in steps[0].message and "gpu" in steps[0].message
        )),
    "template-in-other-namespace-is-not-used": Case(
        pod=P, templates={"other/gpu-tpl": template("gpu-tpl", namespace="other")},
        expect=lambda steps: [type(s) for s in steps] == [plans.EmitEvent]),
    "deleting-pod-gets-nothing": Case(pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, deleting=True)),
    "finished-pod-gets-nothing": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, phase="Succeeded")),
    "failed-pod-gets-nothing": Case(pod=pod("p", entries={"gpu": template_entry("gpu-tpl")}, phase="Failed")),
    "two-entries-two-claims-in-entry-order": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl"), "nic": template_entry("gpu-tpl")}),
        expect=lambda steps: [
            s.raw["metadata"]["annotations"][templates.POD_CLAIM_NAME_ANNOTATION]
            for s in steps if isinstance(s, plans.CreateClaim)] == ["gpu", "nic"]),
    "one-found-one-created-status-after-creates": Case(
        pod=pod("p", entries={"gpu": template_entry("gpu-tpl"), "nic": template_entry("gpu-tpl")}),
        claims=(claim("p-nic-abcde", owner=P, entry="nic"),),
        expect=lambda steps: (
            [type(s) for s in steps] == [plans.CreateClaim, plans.SetPodClaimStatuses]
            and steps[1] == _status(P, nic="p-nic-abcde"))),
}


@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_pod_claim_plan(case: Case) -> None:
    steps = templates.pod_claim_plan(case.pod, case.templates, case.claims)
    if callable(case.expect):
        assert case.expect(steps), steps
    else:
        assert steps == case.expect


# --- properties ---------------------------------------------------------------------------

def _execute(p: Pod, steps: tuple[plans.PlanStep, ...], owned: list[ResourceClaim],
             counter: list[int], *, record: bool) -> Pod:
    """A tiny API server: creates get a name, status merges by entry name."""
    statuses = {s.name: s.resource_claim_name for s in p.status.resource_claim_statuses}
    for step in steps:
        if isinstance(step, plans.CreateClaim):
            counter[0] += 1
            raw = dict(step.raw)
            raw["metadata"] = {**raw["metadata"], "name": f"{raw['metadata']['generateName']}{counter[0]:05d}",
                               "uid": f"claim-{counter[0]}"}
            owned.append(conversion.parse_as(ResourceClaim, raw))
        elif isinstance(step, plans.SetPodClaimStatuses) and record:
            statuses.update({s["name"]: s["resourceClaimName"] for s in step.statuses})
    raw_pod = conversion.to_raw(p)
    raw_pod.setdefault("status", {})["resourceClaimStatuses"] = [
        {"name": k, **({"resourceClaimName": v} if v else {})} for k, v in statuses.items()]
    parsed: Pod = conversion.parse_as(Pod, raw_pod)
    return parsed


entry_names = st.lists(st.sampled_from(["gpu", "nic", "mem", "x"]), min_size=1, max_size=4, unique=True)


@settings(max_examples=60, deadline=None)
@given(entry_names, st.lists(st.booleans(), min_size=1, max_size=5))
def test_replanning_never_creates_two_claims_per_entry(names: list[str], record_flags: list[bool]) -> None:
    """However often we plan and execute, and whether or not the status writes land, one claim per entry."""
    p = pod("p", entries={n: template_entry("gpu-tpl") for n in names})
    owned: list[ResourceClaim] = []
    counter = [0]
    for record in record_flags:
        p = _execute(p, templates.pod_claim_plan(p, TEMPLATES, owned), owned, counter, record=record)
    annotations = [c.metadata.annotations[templates.POD_CLAIM_NAME_ANNOTATION] for c in owned]
    assert sorted(annotations) == sorted(names)


@settings(max_examples=60, deadline=None)
@given(entry_names)
def test_plan_converges_to_nothing(names: list[str]) -> None:
    """After executing a plan twice (create, then record), the third plan is empty and every entry is recorded."""
    p = pod("p", entries={n: template_entry("gpu-tpl") for n in names})
    owned: list[ResourceClaim] = []
    counter = [0]
    for _ in range(2):
        p = _execute(p, templates.pod_claim_plan(p, TEMPLATES, owned), owned, counter, record=True)
    assert templates.pod_claim_plan(p, TEMPLATES, owned) == ()
    recorded = {e.name: templates.claim_name_for(p, e) for e in p.spec.resource_claims}
    generated = {n: templates.find_generated_claim(p, n, owned) for n in names}
    assert recorded == {n: c.name if c else None for n, c in generated.items()}
    assert None not in recorded.values()
