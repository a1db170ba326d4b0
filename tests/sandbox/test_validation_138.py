"""The sandbox running as Kubernetes 1.38 (`ApiServer(kubernetes_version="1.38")`): the DRA and
PodGroup rules 1.38 changed, each next to what 1.37 (the default) still answers.

The 1.38 answers follow k8s.io/kubernetes v1.38.0-beta.0 (pkg/apis/resource/validation,
pkg/apis/scheduling/validation, the Priority admission plugin) and k8s.io/api v0.38.0-beta.0's
declarative tags; every case here was also run against the real servers (the 1.38 ones against
`e2e/controlplane.py --kube-version 1.38`, v1.38.0-beta.0; the 1.37 ones against 1.37.2) and
answered the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.sandbox.conftest import Http

Obj = dict[str, Any]
RES = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RES}/namespaces/default/resourceclaims"
TEMPLATES = f"{RES}/namespaces/default/resourceclaimtemplates"
SLICES = f"{RES}/resourceslices"
PG = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"

V137 = pytest.mark.sandbox(kubernetes_version="1.37")
V138 = pytest.mark.sandbox(kubernetes_version="1.38")


def both(*cases: Any) -> list[Any]:
    """Each case once per release; the case's last two items are 1.37's and 1.38's expected causes
    (1.37's None: not pinned here)."""
    out = []
    for n, case in enumerate(cases):
        *args, old, new = case
        if old is not None:
            out.append(pytest.param(*args, old, marks=V137, id=f"1.37-{n}"))
        out.append(pytest.param(*args, new, marks=V138, id=f"1.38-{n}"))
    return out


def causes(body: Obj) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in (body.get("details") or {}).get("causes") or []]


def claim(capacity: Obj | None = None, sub_capacity: Obj | None = None) -> Obj:
    exactly: Obj = {"deviceClassName": "gpu"}
    if capacity is not None:
        exactly["capacity"] = {"requests": capacity}
    requests: list[Obj] = [{"name": "gpu", "exactly": exactly}]
    if sub_capacity is not None:
        requests.append({"name": "alt", "firstAvailable": [
            {"name": "one", "deviceClassName": "gpu", "capacity": {"requests": sub_capacity}}]})
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
            "spec": {"devices": {"requests": requests}}}


EXACT = "spec.devices.requests[0].exactly.capacity.requests"
SUB = "spec.devices.requests[1].firstAvailable[0].capacity.requests"


@pytest.mark.parametrize(("capacity", "sub_capacity", "expected"), both(
    ({"memory": "1Gi", "example.com/bandwidth": "10"}, None, [], []),
    ({"a/b/c": "1"}, None, [],
     [(EXACT, 'Invalid value: "a/b/c": must not contain more than one slash')]),
    ({"Bad-Name": "1"}, None, [],
     [(EXACT, 'Invalid value: "Bad-Name": a valid C identifier must start with alphabetic character or \'_\', '
              "followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
              "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")]),
    ({"memory": "-1Gi"}, None, [],
     [(f"{EXACT}[memory]", 'Invalid value: "-1Gi": must be greater than or equal to 0')]),
    ({f"c{i}": "1" for i in range(33)}, None, [],
     [(EXACT, "Too many: 33: must have at most 32 items")]),
    (None, {"x/y/z": "-1"}, [],
     [(SUB, 'Invalid value: "x/y/z": must not contain more than one slash'),
      (f"{SUB}[x/y/z]", 'Invalid value: "-1": must be greater than or equal to 0')]),
))
async def test_capacity_requests_of_a_claim_are_checked_from_1_38(
        http: Http, capacity: Obj | None, sub_capacity: Obj | None, expected: list[tuple[str, str]]) -> None:
    code, body = await http.post(CLAIMS, claim(capacity, sub_capacity))
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


@V138
async def test_a_template_update_keeps_unchanged_old_capacity_names_and_checks_changed_ones(
        http: Http) -> None:
    """1.38 validates a template's spec again on update (ratcheting the new capacity-name check);
    the spec stays immutable."""
    template = {"metadata": {"name": "t"}, "spec": {"spec": claim({"memory": "1"})["spec"]}}
    code, _ = await http.post(TEMPLATES, template)
    assert code == 201
    code, body = await http.patch(f"{TEMPLATES}/t", {"metadata": {"labels": {"a": "b"}}})
    assert code == 200, body
    changed = claim({"a/b/c": "1"})["spec"]
    code, body = await http.patch(f"{TEMPLATES}/t", {"spec": {"spec": changed}})
    assert code == 422
    assert [f for f, _ in causes(body)] == ["spec.spec.devices.requests[0].exactly.capacity.requests", "spec"]
    assert causes(body)[1][1].endswith(": field is immutable")


def slice_(*devices: Obj, **spec: Any) -> Obj:
    return {"metadata": {"name": "s"}, "spec": {
        "driver": "gpu.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
        **({"nodeName": "n1"} if "perDeviceNodeSelection" not in spec else {}), **spec,
        "devices": list(devices)}}


def version(text: str) -> Obj:
    return {"name": "d", "attributes": {"v": {"version": text}}}


VERSION = "spec.devices[0].attributes[v].version"
NINETEEN = "1" * 19


@pytest.mark.parametrize(("device", "expected"), both(
    (version("1.2.3-rc.1+build.5"), [], []),
    (version(f"{NINETEEN}.0.0"), [],
     [(VERSION, f'Invalid value: "{NINETEEN}.0.0": must be a string compatible with semver.org spec 2.0.0, '
                "with at most 18 digits in numbers")]),
    (version(f"1.0.0-{NINETEEN}"), [],
     [(VERSION, f'Invalid value: "1.0.0-{NINETEEN}": must be a string compatible with semver.org spec 2.0.0, '
                "with at most 18 digits in numbers")]),
    (version("1.0.0-x" + NINETEEN), [], []),  # an identifier with a letter is a string: no limit
    # Real 1.37 accepts a name with two slashes (its TODO in validateQualifiedName); the
    # sandbox's 1.37 refuses it (the domain "a/b" is no subdomain): not pinned.
    ({"name": "d", "attributes": {"a/b/c": {"int": 1}}}, None,
     [("spec.devices[0].attributes", 'Invalid value: "a/b/c": must not contain more than one slash')]),
))
async def test_device_attributes_as_each_release_checks_them(
        http: Http, device: Obj, expected: list[tuple[str, str]]) -> None:
    code, body = await http.post(SLICES, slice_(device))
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


def term(value: str) -> Obj:
    return {"matchExpressions": [{"key": "zone", "operator": "In", "values": [value]}]}


@pytest.mark.parametrize(("terms", "expected"), both(
    ([term("a")], [], []),
    ([term("a"), term("b")], [],
     [("spec.devices[0].nodeSelector.nodeSelectorTerms",
       'Invalid value: [{"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["a"]}],"MatchFields":null},'
       '{"MatchExpressions":[{"Key":"zone","Operator":"In","Values":["b"]}],"MatchFields":null}]: '
       "must have exactly one node selector term")]),
))
async def test_a_per_device_node_selector_has_one_term_from_1_38(
        http: Http, terms: list[Obj], expected: list[tuple[str, str]]) -> None:
    body_ = slice_({"name": "d", "nodeSelector": {"nodeSelectorTerms": terms}}, perDeviceNodeSelection=True)
    code, body = await http.post(SLICES, body_)
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


@V138
async def test_a_slice_update_that_leaves_the_devices_alone_is_not_checked_again(http: Http) -> None:
    code, _ = await http.post(SLICES, slice_(version("1.0.0")))
    assert code == 201
    code, body = await http.patch(f"{SLICES}/s", {"metadata": {"labels": {"a": "b"}}})
    assert code == 200, body
    code, body = await http.patch(f"{SLICES}/s", {"spec": {"devices": [version(f"{NINETEEN}.0.0")]}})
    assert code == 422 and [f for f, _ in causes(body)] == [VERSION]


PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def preempting_group(**spec: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec}}


@pytest.mark.parametrize(("sent", "stored"), [
    pytest.param("Never", None, marks=V137, id="1.37-dropped"),
    pytest.param(None, None, marks=V137, id="1.37-unset"),
    pytest.param(None, "PreemptLowerPriority", marks=V138, id="1.38-from-no-class"),
    pytest.param("PreemptLowerPriority", "PreemptLowerPriority", marks=V138, id="1.38-matching"),
])
async def test_pod_group_preemption_policy_comes_from_the_priority_class_from_1_38(
        http: Http, sent: str | None, stored: str | None) -> None:
    """1.38 removed the PodGroupPreemptionPolicy gate (off in 1.37: the field is dropped on create);
    the Priority admission plugin then sets it from the class (none: PreemptLowerPriority)."""
    code, created = await http.post(PG, preempting_group(**({"preemptionPolicy": sent} if sent else {})))
    assert code == 201, created
    assert created["spec"].get("preemptionPolicy") == stored


@V138
async def test_a_pod_group_preemption_policy_must_match_its_class_in_1_38(http: Http) -> None:
    code, _ = await http.post(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                 "metadata": {"name": "batch-never"}, "value": 10,
                                                 "preemptionPolicy": "Never"})
    assert code == 201
    code, created = await http.post(PG, preempting_group(priorityClassName="batch-never"))
    assert code == 201 and created["spec"]["preemptionPolicy"] == "Never", created
    code, body = await http.post(PG, preempting_group(preemptionPolicy="Never") | {"metadata": {"name": "h"}})
    assert code == 403
    assert body["message"] == (
        'podgroups.scheduling.k8s.io "h" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod group spec; priority admission controller computed PreemptLowerPriority from the given "
        "PriorityClass name")


@V138
async def test_version_says_1_38(http: Http) -> None:
    _, info = await http.get("/version")
    assert (info["major"], info["minor"]) == ("1", "38")


def mapping(**fields: Any) -> Obj:
    return {"name": "d", "capacity": {"memory": {"value": "1Gi"}},
            "nodeAllocatableResources": {"memory": {"mapping": fields}}}


MAPPING = "spec.devices[0].nodeAllocatableResources[memory].mapping"


@pytest.mark.parametrize(("device", "expected"), both(
    (mapping(capacityKey="a/b/c", capacityMultiplier="1"), None,
     [(f"{MAPPING}.capacityKey", 'Invalid value: "a/b/c": must not contain more than one slash')]),
    (mapping(capacityKey="memory"),
     [(f"{MAPPING}.capacityMultiplier", "Required value: capacityMultiplier is required when capacityKey is set")],
     [(f"{MAPPING}.capacityMultiplier", "Required value: must be set when capacityKey is set")]),
    (mapping(capacityMultiplier="1", deviceMultiplier="1"),
     [(f"{MAPPING}.capacityKey", "Required value: capacityKey is required when capacityMultiplier is set")],
     [(f"{MAPPING}.capacityKey", "Required value: must be set when capacityMultiplier is set")]),
))
async def test_a_node_allocatable_mapping_as_each_release_words_it(
        http: Http, device: Obj, expected: list[tuple[str, str]]) -> None:
    """1.38 checks capacityKey's format before looking it up; its dependentRequired pair is
    declarative (beta) there, worded by the generic rule."""
    code, body = await http.post(SLICES, slice_(device))
    assert causes(body) == expected
    assert code == 422, body


WORKLOADS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/workloads"
NON_GANG_ALL = 'Invalid value: cannot have "all" disruption mode when scheduling policy is other than "gang"'


def pod_group_(**spec: Any) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"basic": {}}, **spec}}


@pytest.mark.parametrize(("spec", "expected"), both(
    ({"disruptionMode": {"all": {}}}, [], [("spec.disruptionMode", NON_GANG_ALL)]),
    ({"schedulingPolicy": {"gang": {"minCount": 2}}, "disruptionMode": {"all": {}}}, [], []),
))
async def test_a_pod_group_with_all_disruption_needs_a_gang_from_1_38(
        http: Http, spec: Obj, expected: list[tuple[str, str]]) -> None:
    code, body = await http.post(PG, pod_group_(**spec))
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


def template(name: str, **fields: Any) -> Obj:
    return {"name": name, "schedulingPolicy": {"gang": {"minCount": 1}}, **fields}


MULTIPLE_137 = [("spec", "Invalid value: null: detected multiple priority configurations")]
MULTIPLE_138 = [("spec", "Invalid value: null: all priority, priorityClassName, and preemptionPolicy values must "
                         "be identical, detected multiple values")]


@pytest.mark.parametrize(("templates", "expected"), both(
    ([template("a", priority=1), template("b", priority=2)], MULTIPLE_137, MULTIPLE_138),
    # 1.37 drops preemptionPolicy on create (its gate is off): nothing left to differ.
    ([template("a", preemptionPolicy="Never"), template("b")], [], MULTIPLE_138),
    ([{"name": "a", "schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}}], [],
     [("spec.podGroupTemplates[0].disruptionMode", NON_GANG_ALL)]),
))
async def test_workload_templates_as_each_release_checks_them(
        http: Http, templates: list[Obj], expected: list[tuple[str, str]]) -> None:
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"podGroupTemplates": templates}}
    code, body = await http.post(WORKLOADS, workload)
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


@pytest.mark.parametrize(("expected",), [
    pytest.param([("spec.podGroupTemplates[0].priority",
                   "Invalid value: 1000000001: must be less than or equal to 1000000000")], marks=V137, id="1.37"),
    pytest.param([], marks=V138, id="1.38")])
async def test_a_template_priority_above_the_user_maximum_passes_from_1_38(
        http: Http, expected: list[tuple[str, str]]) -> None:
    """1.38 dropped the declarative `maximum` of PodGroup and template priorities."""
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"podGroupTemplates": [template("a", priority=1_000_000_001)]}}
    code, body = await http.post(WORKLOADS, workload)
    assert causes(body) == expected
    assert code == (422 if expected else 201), body


@pytest.mark.parametrize(("message",), [
    pytest.param("Forbidden: may not be changed in an update.", marks=V137, id="1.37"),
    pytest.param("Invalid value: 11: field is immutable", marks=V138, id="1.38")])
async def test_a_priority_class_value_change_as_each_release_words_it(http: Http, message: str) -> None:
    code, _ = await http.post(PRIORITY_CLASSES, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                                 "metadata": {"name": "batch-never"}, "value": 10})
    assert code == 201
    code, body = await http.patch(f"{PRIORITY_CLASSES}/batch-never", {"value": 11})
    assert code == 422 and causes(body) == [("value", message)]


CONDITION = {"type": "Ready", "status": "True", "reason": "R", "message": "",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}


@V138
async def test_a_repeated_pod_group_condition_type_is_printed_whole_in_1_38(http: Http) -> None:
    """1.38 checks the conditions' list-map key declaratively (beta) and prints the whole item.
    (Real 1.37.2 answers `status.conditions[1]: Duplicate value: "Ready"`; the sandbox's 1.37 puts
    it on `.type`: not pinned here.)"""
    expected = [("status.conditions[1]", 'Duplicate value: {"type":"Ready","status":"False","lastTransitionTime":'
                                         '"2026-01-01T00:00:00Z","reason":"R","message":""}')]
    code, _ = await http.post(PG, preempting_group())
    assert code == 201
    code, body = await http.patch(f"{PG}/g/status", {"status": {"conditions": [
        CONDITION, dict(CONDITION, status="False")]}})
    assert code == 422 and causes(body) == expected


@pytest.mark.parametrize(("expected",), [
    pytest.param([("spec.devices[0].attributes[s].strings[0]", "Too long: may not be more than 64 bytes"),
                  ("spec.devices[0].attributes[v].version", 'Invalid value: "x": must be a string compatible with '
                                                            "semver.org spec 2.0.0")], marks=V137, id="1.37"),
    pytest.param([("spec.devices[0].attributes[v].version", 'Invalid value: "x": must be a string compatible with '
                                                            "semver.org spec 2.0.0, with at most 18 digits in numbers"),
                  ("spec.devices[0].attributes[s].strings[0]", "Too long: may not be more than 64 bytes")],
                 marks=V138, id="1.38")])
async def test_a_too_long_strings_item_is_reported_last_in_1_38(http: Http, expected: list[tuple[str, str]]) -> None:
    """1.38 enforces the `strings` items' maxBytes declaratively (beta): after the hand-written rules."""
    device = {"name": "d", "attributes": {"s": {"strings": ["x" * 65]}, "v": {"version": "x"}}}
    code, body = await http.post(SLICES, slice_(device))
    assert code == 422 and causes(body) == expected


@V138
async def test_a_repeated_claim_device_condition_type_prints_the_condition_in_go_order(http: Http) -> None:
    code, _ = await http.post(CLAIMS, claim())
    assert code == 201
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0"}
    code, body = await http.patch(f"{CLAIMS}/c/status", {"status": {
        "allocation": {"devices": {"results": [result]}},
        "devices": [{"driver": "gpu.example.com", "pool": "p", "device": "d0",
                     "conditions": [CONDITION, dict(CONDITION, status="False")]}]}})
    assert code == 422 and causes(body) == [(
        "status.devices[0].conditions[1]",
        'Duplicate value: {"type":"Ready","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z",'
        '"reason":"R","message":""}')]


@pytest.mark.parametrize(("consumed", "expected"), both(
    ({"memory": "1Gi"}, [], []),
    ({"a/b/c": "1", "memory": "-1"}, None,
     [("status.allocation.devices.results[0].consumedCapacity",
       'Invalid value: "a/b/c": must not contain more than one slash'),
      ("status.allocation.devices.results[0].consumedCapacity[memory]",
       'Invalid value: "-1": must be greater than or equal to 0')]),
))
async def test_a_results_consumed_capacity_is_checked_from_1_38(
        http: Http, consumed: Obj, expected: list[tuple[str, str]]) -> None:
    code, _ = await http.post(CLAIMS, claim())
    assert code == 201
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d0",
              "consumedCapacity": consumed}
    code, body = await http.patch(f"{CLAIMS}/c/status", {"status": {"allocation": {"devices": {
        "results": [result]}}}})
    assert causes(body) == expected
    assert code == (422 if expected else 200), body
