"""policy/v1 PodDisruptionBudgets, their status and the eviction subresource, as kube-apiserver and
kube-controller-manager 1.37.2 do them (sandbox/disruptionbudgets.py, disruption.py, evictions.py).

Every answer, refusal, status and table cell here was recorded from the real 1.37.2 control plane
(`make e2e`'s, with KCM's disruption controller), with pods made Ready by writing their status as a
kubelet would. Only the timeouts the tests shorten (upstream's 2 minutes) are the sandbox's.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import Any

import pytest
from tests.sandbox.conftest import Http

from dralloc.sandbox import ApiServer

Obj = dict[str, Any]
GV = "/apis/policy/v1"
PDBS = f"{GV}/namespaces/default/poddisruptionbudgets"
PODS = "/api/v1/namespaces/default/pods"
PERCENT = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
           "used for validation is '[0-9]+%')")
LABEL_KEY = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
               "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
               "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
REASON = ("a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric "
          "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  "
          "or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is "
          "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')")
MARKER = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
ZERO = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
APP = {"matchLabels": {"app": "x"}}


def budget(name: str = "b", **spec: Any) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}, "spec": spec}


def pod(name: str, labels: Obj | None = None, owner: Obj | None = None, finalizer: bool = False) -> Obj:
    meta: Obj = {"name": name, "labels": labels or {"app": "x"}}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    if finalizer:
        meta["finalizers"] = ["example.com/hold"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def eviction(name: str, **extra: Any) -> Obj:
    return {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **extra}


def causes(body: Obj) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


def allowed(reason: str, generation: int = 1) -> Obj:
    """The DisruptionAllowed condition the controller writes (its time left out)."""
    return {"type": "DisruptionAllowed", "status": "True" if reason == "SufficientPods" else "False",
            "observedGeneration": generation, "reason": reason, "message": ""}


def failed(message: str) -> Obj:
    return {"type": "DisruptionAllowed", "status": "False", "reason": "SyncFailed", "message": message}


def synced(allowed_: int, healthy: int, desired: int, expected: int, generation: int = 1) -> Obj:
    reason = "SufficientPods" if allowed_ > 0 else "InsufficientPods"
    return {"observedGeneration": generation, "disruptionsAllowed": allowed_, "currentHealthy": healthy,
            "desiredHealthy": desired, "expectedPods": expected, "conditions": [allowed(reason, generation)]}


def timeless(status: Obj) -> Obj:
    """The status without the conditions' transition times (checked to be there) and eviction times."""
    out = dict(status)
    conditions = []
    for condition in status.get("conditions") or []:
        assert condition.pop("lastTransitionTime").endswith("Z")
        conditions.append(condition)
    if conditions:
        out["conditions"] = conditions
    if "disruptedPods" in out:
        out["disruptedPods"] = sorted(out["disruptedPods"])
    return out


async def status_of(http: Http, name: str, wanted: Obj | Callable[[Obj], bool], tries: int = 150) -> Obj:
    """The budget's status (timeless) once it is `wanted`, or fail showing the last one."""
    found: Obj = {}
    for _ in range(tries):
        code, body = await http.get(f"{PDBS}/{name}")
        assert code == 200, body
        found = timeless(body["status"])
        if (wanted(found) if callable(wanted) else found == wanted):
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name}: {found}")


async def make_pods(http: Http, *pods: Obj, ready: tuple[str, ...] = (), unready: tuple[str, ...] = ()) -> None:
    for body in pods:
        code, answer = await http.post(PODS, body)
        assert code == 201, answer
    for name in ready + unready:
        await set_ready(http, name, "True" if name in ready else "False")


async def set_ready(http: Http, name: str, value: str = "True", phase: str = "Running") -> None:
    code, answer = await http.patch(f"{PODS}/{name}/status", {"status": {
        "phase": phase, "conditions": [{"type": "Ready", "status": value}]}})
    assert code == 200, answer


# ---- the API ----------------------------------------------------------------------------------------


async def test_discovery_lists_poddisruptionbudgets_with_their_status(http: Http) -> None:
    _, listing = await http.get(GV)
    assert [(r["name"], r["kind"], r["namespaced"], r.get("shortNames"), r["verbs"]) for r in listing["resources"]] == [
        ("poddisruptionbudgets", "PodDisruptionBudget", True, ["pdb"],
         ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        ("poddisruptionbudgets/status", "PodDisruptionBudget", True, None, ["get", "patch", "update"])]


async def test_a_new_budget_has_a_zero_status_until_the_controller_fills_it(http: Http) -> None:
    code, created = await http.post(PDBS, budget("a", selector={"matchLabels": {"z": "1", "a": "2"}}, minAvailable=2))
    assert code == 201, created
    assert created["metadata"]["generation"] == 1
    assert list(created) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert created["spec"] == {"minAvailable": 2, "selector": {"matchLabels": {"a": "2", "z": "1"}}}
    assert list(created["spec"]["selector"]["matchLabels"]) == ["a", "z"] and created["status"] == ZERO
    await status_of(http, "a", synced(0, 0, 2, 0))
    code, created = await http.post(PDBS, budget("empty") | {"spec": None})
    assert code == 201 and created["spec"] == {} and created["status"] == ZERO  # no defaults: no policy either


async def test_a_status_given_on_create_is_cleared(http: Http) -> None:
    body = budget(minAvailable=1) | {"status": {"disruptionsAllowed": 7, "observedGeneration": 9}}
    code, created = await http.post(PDBS, body)
    assert code == 201 and created["status"] == ZERO


BOTH = ('Invalid value: {"MinAvailable":1,"Selector":{"matchLabels":{"a":"b"}},"MaxUnavailable":"50%",'
        '"UnhealthyPodEvictionPolicy":null}: minAvailable and maxUnavailable cannot be both set')
CREATE_REFUSALS = {
    "both": (budget(minAvailable=1, maxUnavailable="50%", selector={"matchLabels": {"a": "b"}}), [
        ("spec", "FieldValueInvalid", BOTH)]),
    "both-without-selector": (budget(minAvailable="1%", maxUnavailable=0, unhealthyPodEvictionPolicy="AlwaysAllow"), [
        ("spec", "FieldValueInvalid", 'Invalid value: {"MinAvailable":"1%","Selector":null,"MaxUnavailable":0,'
                                      '"UnhealthyPodEvictionPolicy":"AlwaysAllow"}: minAvailable and maxUnavailable '
                                      "cannot be both set")]),
    "not-a-percentage": (budget(minAvailable="abc"), [
        ("spec.minAvailable", "FieldValueInvalid", f'Invalid value: "abc": {PERCENT}')]),
    "fraction-of-a-percent": (budget(maxUnavailable="5.5%"), [
        ("spec.maxUnavailable", "FieldValueInvalid", f'Invalid value: "5.5%": {PERCENT}')]),
    "empty-string": (budget(minAvailable=""), [
        ("spec.minAvailable", "FieldValueInvalid", f'Invalid value: "": {PERCENT}')]),
    "over-100-percent": (budget(minAvailable="150%"), [
        ("spec.minAvailable", "FieldValueInvalid", 'Invalid value: "150%": must not be greater than 100%')]),
    "max-over-100-percent": (budget(maxUnavailable="101%"), [
        ("spec.maxUnavailable", "FieldValueInvalid", 'Invalid value: "101%": must not be greater than 100%')]),
    "negative": (budget(minAvailable=-1), [
        ("spec.minAvailable", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]),
    "negative-max": (budget(maxUnavailable=-3), [
        ("spec.maxUnavailable", "FieldValueInvalid", "Invalid value: -3: must be greater than or equal to 0")]),
    "unknown-policy": (budget(unhealthyPodEvictionPolicy="Sometimes"), [
        ("spec.unhealthyPodEvictionPolicy", "FieldValueNotSupported",
         'Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"')]),
    "empty-policy": (budget(unhealthyPodEvictionPolicy=""), [
        ("spec.unhealthyPodEvictionPolicy", "FieldValueNotSupported",
         'Unsupported value: "": supported values: "AlwaysAllow", "IfHealthyBudget"')]),
    "bad-selector": (budget(selector={
        "matchLabels": {"bad key": "bad value!"},
        "matchExpressions": [{"key": "k", "operator": "Bogus"}, {"key": "k", "operator": "In"},
                             {"key": "k", "operator": "Exists", "values": ["x"]},
                             {"key": "k", "operator": "Gt", "values": ["1"]}]}), [
        ("spec.selector.matchLabels", "FieldValueInvalid", f'Invalid value: "bad key": {LABEL_KEY}'),
        ("spec.selector.matchLabels", "FieldValueInvalid", f'Invalid value: "bad value!": {LABEL_VALUE}'),
        ("spec.selector.matchExpressions[0].operator", "FieldValueInvalid",
         'Invalid value: "Bogus": not a valid selector operator'),
        ("spec.selector.matchExpressions[1].values", "FieldValueRequired",
         "Required value: must be specified when `operator` is 'In' or 'NotIn'"),
        ("spec.selector.matchExpressions[2].values", "FieldValueForbidden",
         "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
        ("spec.selector.matchExpressions[3].operator", "FieldValueInvalid",
         'Invalid value: "Gt": not a valid selector operator')]),
    "everything-in-upstreams-order": (budget(minAvailable="x", maxUnavailable=-1, selector={"matchLabels": {"a": "b c"}},
                                             unhealthyPodEvictionPolicy="No"), [
        ("spec", "FieldValueInvalid", 'Invalid value: {"MinAvailable":"x","Selector":{"matchLabels":{"a":"b c"}},'
                                      '"MaxUnavailable":-1,"UnhealthyPodEvictionPolicy":"No"}: minAvailable and '
                                      "maxUnavailable cannot be both set"),
        ("spec.minAvailable", "FieldValueInvalid", f'Invalid value: "x": {PERCENT}'),
        ("spec.maxUnavailable", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0"),
        ("spec.selector.matchLabels", "FieldValueInvalid", f'Invalid value: "b c": {LABEL_VALUE}'),
        ("spec.unhealthyPodEvictionPolicy", "FieldValueNotSupported",
         'Unsupported value: "No": supported values: "AlwaysAllow", "IfHealthyBudget"')]),
    "metadata-only-once-the-spec-passed": (budget("Bad/Name", minAvailable=-1), [
        ("spec.minAvailable", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0")]),
    "name-not-a-path-segment": (budget("a/b"), [
        ("metadata.name", "FieldValueInvalid", "Invalid value: \"a/b\": may not contain '/'")]),
    "name-dot-dot": (budget(".."), [("metadata.name", "FieldValueInvalid", "Invalid value: \"..\": may not be '..'")]),
    "bad-label": (budget() | {"metadata": {"name": "b", "labels": {"a": "b c"}}}, [
        ("metadata.labels", "FieldValueInvalid", f'Invalid value: "b c": {LABEL_VALUE}')]),
}


@pytest.mark.parametrize(("body", "expected"), CREATE_REFUSALS.values(), ids=CREATE_REFUSALS.keys())
async def test_invalid_budgets_are_refused_with_upstreams_causes(http: Http, body: Obj,
                                                                 expected: list[tuple[str, str, str]]) -> None:
    code, answer = await http.post(PDBS, body)
    assert code == 422, answer
    assert causes(answer) == expected
    assert answer["message"].startswith(f'PodDisruptionBudget.policy "{body["metadata"]["name"]}" is invalid: ')


DECODE_REFUSALS = {
    "fraction": (1.5, "json: cannot unmarshal number 1.5 into Go struct field PodDisruptionBudgetSpec.spec.minAvailable "
                      "of type int32"),
    "boolean": (True, "json: cannot unmarshal bool into Go struct field PodDisruptionBudgetSpec.spec.minAvailable of "
                      "type int32"),
    "object": ({}, "json: cannot unmarshal object into Go struct field PodDisruptionBudgetSpec.spec.minAvailable of "
                   "type int32"),
    "past-int32": (3000000000, "json: cannot unmarshal number 3000000000 into Go struct field PodDisruptionBudgetSpec."
                               "spec.minAvailable of type int32"),
}


@pytest.mark.parametrize(("value", "detail"), DECODE_REFUSALS.values(), ids=DECODE_REFUSALS.keys())
async def test_an_int_or_string_decodes_as_go_does(http: Http, value: Any, detail: str) -> None:
    code, answer = await http.post(PDBS, budget(minAvailable=value))
    assert code == 400 and answer["message"] == (
        f'PodDisruptionBudget in version "v1" cannot be handled as a PodDisruptionBudget: {detail}')


async def test_a_policy_of_the_wrong_type_names_its_go_type(http: Http) -> None:
    code, answer = await http.post(PDBS, budget(unhealthyPodEvictionPolicy=5))
    assert code == 400 and answer["message"].endswith(
        "json: cannot unmarshal number into Go struct field PodDisruptionBudgetSpec.spec.unhealthyPodEvictionPolicy of "
        "type v1.UnhealthyPodEvictionPolicyType")


ACCEPTED = {
    "leading-zeros": (budget(minAvailable="007%"), {"minAvailable": "007%"}),
    "any-name-of-a-path-segment": (budget("Bad_Name"), {}),
    "a-long-name": (budget("a" * 300), {}),
    "the-v1beta1-marker-is-stripped": (budget(selector={"matchLabels": {"a": "b"}, "matchExpressions": [
        {"key": MARKER, "operator": "Exists"}]}), {"selector": {"matchLabels": {"a": "b"}}}),
    "unless-it-is-the-whole-selector": (budget(selector={"matchExpressions": [{"key": MARKER, "operator": "Exists"}]}),
                                        {"selector": {"matchExpressions": [{"key": MARKER, "operator": "Exists"}]}}),
    "empty-parts-dropped": (budget(selector={"matchLabels": {}, "matchExpressions": [
        {"key": "k", "operator": "In", "values": ["a"]}, {"key": "e", "operator": "Exists", "values": []}]}),
        {"selector": {"matchExpressions": [{"key": "k", "operator": "In", "values": ["a"]},
                                           {"key": "e", "operator": "Exists"}]}}),
    "go-field-order": (budget(unhealthyPodEvictionPolicy="AlwaysAllow", maxUnavailable="10%", selector={}),
                       {"selector": {}, "maxUnavailable": "10%", "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
}


@pytest.mark.parametrize(("body", "spec"), ACCEPTED.values(), ids=ACCEPTED.keys())
async def test_what_is_accepted_and_how_it_comes_back(http: Http, body: Obj, spec: Obj) -> None:
    code, created = await http.post(PDBS, body)
    assert code == 201, created
    assert created["spec"] == spec and list(created["spec"]) == list(spec)


async def test_a_generated_name_is_only_a_path_segment_too(http: Http) -> None:
    code, created = await http.post(PDBS, budget() | {"metadata": {"generateName": "Bad_"}})
    assert code == 201 and created["metadata"]["name"].startswith("Bad_")


async def test_the_spec_stays_mutable_and_is_checked_again(http: Http) -> None:
    await http.post(PDBS, budget("a", selector={"matchLabels": {"z": "1", "a": "2"}}, minAvailable=2))
    code, changed = await http.patch(f"{PDBS}/a", {"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"q": "r"}}}})
    assert code == 200 and changed["metadata"]["generation"] == 2
    assert changed["spec"] == {"minAvailable": "50%", "selector": {"matchLabels": {"a": "2", "q": "r", "z": "1"}}}
    await status_of(http, "a", synced(0, 0, 0, 0, generation=2))
    code, same = await http.patch(f"{PDBS}/a", {"spec": {"selector": {"matchExpressions": []}}})
    assert code == 200 and same["metadata"]["generation"] == 2  # semantically the same spec
    code, changed = await http.patch(f"{PDBS}/a", {"spec": {"minAvailable": None, "maxUnavailable": 1}})
    assert code == 200 and changed["metadata"]["generation"] == 3
    assert list(changed["spec"]) == ["selector", "maxUnavailable"]
    code, answer = await http.patch(f"{PDBS}/a", {"spec": {"minAvailable": -1}})
    assert code == 422 and answer["message"] == (
        'PodDisruptionBudget.policy "a" is invalid: [spec: Invalid value: {"MinAvailable":-1,"Selector":{"matchLabels":'
        '{"a":"2","q":"r","z":"1"}},"MaxUnavailable":1,"UnhealthyPodEvictionPolicy":null}: minAvailable and '
        "maxUnavailable cannot be both set, spec.minAvailable: Invalid value: -1: must be greater than or equal to 0]")
    code, changed = await http.patch(f"{PDBS}/a", {"spec": {"selector": {"matchExpressions": [
        {"key": MARKER, "operator": "Exists"}, {"key": "x", "operator": "DoesNotExist"}]}}})
    assert code == 200 and changed["spec"]["selector"] == {"matchLabels": {"a": "2", "q": "r", "z": "1"},
                                                           "matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}


async def test_status_writes_are_checked_and_keep_the_spec(http: Http) -> None:
    await http.post(PDBS, budget("a", maxUnavailable=1))
    await status_of(http, "a", synced(0, 0, 0, 0))
    code, answer = await http.patch(f"{PDBS}/a/status", {"status": {
        "disruptionsAllowed": -1, "currentHealthy": -2, "desiredHealthy": -3, "expectedPods": -4, "conditions": [
            {"type": "X"}, {"type": "X", "status": "Maybe", "reason": "a b", "lastTransitionTime": "2020-01-01T00:00:00Z"},
            {"type": "bad type!", "status": "True", "reason": "R", "observedGeneration": -1,
             "lastTransitionTime": "2020-01-01T00:00:00Z"}]}})
    assert code == 422 and causes(answer) == [
        ("status.conditions[0].status", "FieldValueRequired", "Required value"),
        ("status.conditions[0].lastTransitionTime", "FieldValueRequired", "Required value"),
        ("status.conditions[0].reason", "FieldValueRequired", "Required value"),
        ("status.conditions[1]", "FieldValueDuplicate", 'Duplicate value: "X"'),
        ("status.conditions[1].status", "FieldValueNotSupported",
         'Unsupported value: "Maybe": supported values: "False", "True", "Unknown"'),
        ("status.conditions[1].reason", "FieldValueInvalid", f'Invalid value: "a b": {REASON}'),
        ("status.conditions[2].type", "FieldValueInvalid", f'Invalid value: "bad type!": {LABEL_KEY}'),
        ("status.conditions[2].observedGeneration", "FieldValueInvalid",
         "Invalid value: -1: must be greater than or equal to zero"),
        ("status.disruptionsAllowed", "FieldValueInvalid", "Invalid value: -1: must be greater than or equal to 0"),
        ("status.currentHealthy", "FieldValueInvalid", "Invalid value: -2: must be greater than or equal to 0"),
        ("status.desiredHealthy", "FieldValueInvalid", "Invalid value: -3: must be greater than or equal to 0"),
        ("status.expectedPods", "FieldValueInvalid", "Invalid value: -4: must be greater than or equal to 0")]
    code, written = await http.patch(f"{PDBS}/a/status", {"spec": {"minAvailable": 7}, "status": {
        "disruptedPods": {"gone": "2020-01-01T00:00:00Z"}, "disruptionsAllowed": 5}})
    assert code == 200 and written["spec"] == {"maxUnavailable": 1} and written["metadata"]["generation"] == 1
    assert timeless(written["status"]) == {**synced(0, 0, 0, 0), "disruptedPods": ["gone"], "disruptionsAllowed": 5}
    await status_of(http, "a", synced(0, 0, 0, 0))  # the controller puts it right: that pod does not exist


async def test_the_table_shows_min_max_and_allowed_disruptions(http: Http) -> None:
    await http.post(PDBS, budget("max", maxUnavailable=1))
    await http.post(PDBS, budget("neither"))
    await http.post(PDBS, budget("pct", minAvailable="007%"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    async with http.session.get(http.url + PDBS, headers={"Accept": accept}) as resp:
        table = await resp.json()
    assert [(c["name"], c["type"], c["format"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name", 0), ("Min Available", "string", "", 0), ("Max Unavailable", "string", "", 0),
        ("Allowed Disruptions", "integer", "", 0), ("Age", "string", "", 0)]
    assert table["columnDefinitions"][3]["description"] == "Calculated number of pods that may be disrupted at this time."
    assert [r["cells"][:4] for r in table["rows"]] == [["max", "N/A", "1", 0], ["neither", "N/A", "N/A", 0],
                                                       ["pct", "007%", "N/A", 0]]


# ---- the disruption controller ------------------------------------------------------------------------


async def test_ready_pods_count_toward_a_budget_of_whole_pods(http: Http) -> None:
    await make_pods(http, pod("p0"), pod("p1"), pod("p2"), ready=("p0", "p1"), unready=("p2",))
    wanted = {
        "min1": (dict(minAvailable=1, selector=APP), synced(1, 2, 1, 3)),
        "min3": (dict(minAvailable=3, selector=APP), synced(0, 2, 3, 3)),
        "everyone": (dict(minAvailable=1, selector={}), synced(1, 2, 1, 3)),
        "no-selector": (dict(minAvailable=0), synced(0, 0, 0, 0)),  # a null selector selects no pod
        "zero": (dict(minAvailable=0, selector={}), synced(2, 2, 0, 3)),
        "neither": (dict(selector={}), synced(0, 2, 0, 0)),
        "expressions": (dict(minAvailable=0, selector={"matchExpressions": [
            {"key": "app", "operator": "NotIn", "values": ["y"]}, {"key": "own", "operator": "DoesNotExist"}]}),
            synced(2, 2, 0, 3)),
    }
    for name, (spec, _) in wanted.items():
        await http.post(PDBS, budget(name, **spec))
    for name, (_, status) in wanted.items():
        await status_of(http, name, status)


async def test_percentages_and_max_unavailable_count_controllers_not_bare_pods(http: Http) -> None:
    await make_pods(http, pod("p0"), pod("p1"), pod("p2"), ready=("p0", "p1"), unready=("p2",))
    await http.post(PDBS, budget("pct", minAvailable="50%", selector=APP))
    await http.post(PDBS, budget("max", maxUnavailable=1, selector=APP))
    await status_of(http, "pct", synced(0, 2, 0, 0))  # no controller: no expected pods, no disruption
    await status_of(http, "max", synced(0, 2, 0, 0))


async def test_the_status_follows_pods_as_they_come_become_ready_and_go(http: Http) -> None:
    await http.post(PDBS, budget("min1", minAvailable=1, selector=APP))
    await status_of(http, "min1", synced(0, 0, 1, 0))
    await make_pods(http, pod("p0"), pod("p1"), pod("other", {"app": "y"}), ready=("other",))
    await status_of(http, "min1", synced(0, 0, 1, 2))
    await set_ready(http, "p0")
    await status_of(http, "min1", synced(0, 1, 1, 2))
    await set_ready(http, "p1", phase="Pending")  # only the Ready condition counts
    await status_of(http, "min1", synced(1, 2, 1, 2))
    code, _ = await http.delete(f"{PODS}/p0")
    assert code == 200
    await status_of(http, "min1", synced(0, 1, 1, 1))


async def test_pods_being_deleted_are_expected_but_not_healthy(http: Http) -> None:
    await make_pods(http, *(pod(f"t{i}", finalizer=True) for i in range(3)), ready=("t0", "t1", "t2"))
    await http.post(PDBS, budget("t", minAvailable=1, selector=APP))
    await status_of(http, "t", synced(2, 3, 1, 3))
    await http.delete(f"{PODS}/t0")
    await status_of(http, "t", synced(1, 2, 1, 3))
    for i in range(3):
        await http.patch(f"{PODS}/t{i}", {"metadata": {"finalizers": None}})


async def test_a_controller_without_a_scale_fails_the_sync(http: Http) -> None:
    _, config = await http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    uid = config["metadata"]["uid"]
    owners = {
        "cm": ({"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": uid, "controller": True},
               "configmaps does not implement the scale subresource"),
        "v2": ({"apiVersion": "v2", "kind": "ConfigMap", "name": "cm", "uid": uid, "controller": True},
               'no matches for kind "ConfigMap" in version "v2"'),
    }
    for key, (owner, _) in owners.items():
        await make_pods(http, pod(f"{key}-0", {"own": key}, owner), pod(f"{key}-1", {"own": key}, owner),
                        ready=(f"{key}-0", f"{key}-1"))
        await http.post(PDBS, budget(f"max-{key}", maxUnavailable=1, selector={"matchLabels": {"own": key}}))
        await http.post(PDBS, budget(f"pct-{key}", minAvailable="50%", selector={"matchLabels": {"own": key}}))
        await http.post(PDBS, budget(f"int-{key}", minAvailable=1, selector={"matchLabels": {"own": key}}))
    for key, (_, message) in owners.items():
        for name in (f"max-{key}", f"pct-{key}"):  # the status as it was, with no disruption and why
            await status_of(http, name, {**ZERO, "conditions": [failed(message)]})
        await status_of(http, f"int-{key}", synced(1, 2, 1, 2))  # whole pods need no controller
    code, _ = await http.patch(f"{PDBS}/max-cm", {"spec": {"maxUnavailable": None, "minAvailable": 1}})
    assert code == 200
    await status_of(http, "max-cm", synced(1, 2, 1, 2, generation=2))  # the same condition, its reason put right


async def test_a_pod_controlled_by_a_non_controller_owner_is_a_bare_pod(http: Http) -> None:
    _, config = await http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": config["metadata"]["uid"]}
    await make_pods(http, pod("p0", owner=owner), pod("p1", owner=owner), ready=("p0", "p1"))
    await http.post(PDBS, budget("max", maxUnavailable=1, selector=APP))
    await status_of(http, "max", synced(0, 2, 0, 0))


SCALER_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "scalers.example.dralloc.dev"},
    "spec": {"group": "example.dralloc.dev", "scope": "Namespaced",
             "names": {"plural": "scalers", "singular": "scaler", "kind": "Scaler", "listKind": "ScalerList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                           "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                      "statusReplicasPath": ".status.replicas"}}}]}}
SCALERS = "/apis/example.dralloc.dev/v1/namespaces/default/scalers"


async def test_a_custom_resource_with_a_scale_subresource_gives_the_expected_pods(http: Http) -> None:
    code, _ = await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", SCALER_CRD)
    assert code == 201
    for name, spec in (("s", {"replicas": 4}), ("unset", {})):
        code, scaler = await http.post(SCALERS, {"apiVersion": "example.dralloc.dev/v1", "kind": "Scaler",
                                                 "metadata": {"name": name}, "spec": spec})
        assert code == 201, scaler
        owner = {"apiVersion": "example.dralloc.dev/v1", "kind": "Scaler", "name": name,
                 "uid": scaler["metadata"]["uid"], "controller": True}
        await make_pods(http, pod(f"{name}-0", {"own": name}, owner), pod(f"{name}-1", {"own": name}, owner),
                        ready=(f"{name}-0", f"{name}-1"))
        await http.post(PDBS, budget(f"max-{name}", maxUnavailable=1, selector={"matchLabels": {"own": name}}))
        await http.post(PDBS, budget(f"pct-{name}", minAvailable="50%", selector={"matchLabels": {"own": name}}))
    await status_of(http, "max-s", synced(0, 2, 3, 4))
    await status_of(http, "pct-s", synced(0, 2, 2, 4))
    unset = failed('Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    await status_of(http, "max-unset", {**ZERO, "conditions": [unset]})
    await http.patch(f"{SCALERS}/s", {"spec": {"replicas": 1}})
    await asyncio.sleep(0.2)  # as upstream: a change of the scale alone is not watched
    await status_of(http, "max-s", synced(0, 2, 3, 4))


async def test_an_evictions_entry_keeps_its_pod_out_of_the_count_until_it_expires(async_apiserver: ApiServer,
                                                                                  http: Http) -> None:
    controller = async_apiserver.disruption_controller
    assert controller is not None
    controller.deletion_timeout = 1.0
    await make_pods(http, pod("p0"), pod("p1"), ready=("p0", "p1"))
    await http.post(PDBS, budget("min1", minAvailable=1, selector=APP))
    await status_of(http, "min1", synced(1, 2, 1, 2))
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, _ = await http.patch(f"{PDBS}/min1/status", {"status": {"disruptedPods": {
        "p0": now, "p1": "2020-01-01T00:00:00Z", "gone": now}}})
    assert code == 200
    await status_of(http, "min1", {**synced(0, 1, 1, 2), "disruptedPods": ["p0"]})  # old and unknown pods dropped
    await status_of(http, "min1", synced(1, 2, 1, 2), tries=250)  # not deleted in time: counted again


# ---- the eviction subresource ---------------------------------------------------------------------


async def test_an_eviction_uses_up_the_budget_then_is_refused(http: Http) -> None:
    await make_pods(http, pod("p0"), pod("p1"), pod("p2"), pod("p3"), ready=("p0", "p1"), unready=("p2",))
    await http.post(PDBS, budget("min1", minAvailable=1, selector=APP))
    await status_of(http, "min1", synced(1, 2, 1, 4))
    code, answer = await http.post(f"{PODS}/p0/eviction", eviction("p0"))
    assert code == 201 and answer == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                                      "code": 201}
    assert (await http.get(f"{PODS}/p0"))[0] == 404  # an unbound pod goes at once
    await status_of(http, "min1", synced(0, 1, 1, 3))
    code, answer = await http.post(f"{PODS}/p1/eviction", eviction("p1"))
    assert code == 429 and answer["reason"] == "TooManyRequests" and answer["message"] == VIOLATION
    assert answer["details"] == {"causes": [
        {"reason": "DisruptionBudget", "message": "The disruption budget min1 needs 1 healthy pods and has 1 currently"}]}
    code, _ = await http.post(f"{PODS}/p3/eviction", eviction("p3"))  # Pending: budgets do not apply
    assert code == 201
    code, _ = await http.post(f"{PODS}/p2/eviction", eviction("p2"))  # not Ready, and the budget is met
    assert code == 201
    await status_of(http, "min1", synced(0, 1, 1, 1))


async def test_an_evicted_pod_is_marked_and_recorded_until_it_is_being_deleted(http: Http) -> None:
    await make_pods(http, *(pod(f"f{i}", finalizer=True) for i in range(3)), ready=("f0", "f1", "f2"))
    await http.post(PDBS, budget("fin", minAvailable=1, selector=APP))
    await status_of(http, "fin", synced(2, 3, 1, 3))
    _, listed = await http.get(PDBS)
    code, _ = await http.post(f"{PODS}/f0/eviction", eviction("f0"))
    assert code == 201
    events = await http.watch(PDBS, count=2, resourceVersion=listed["metadata"]["resourceVersion"])
    assert timeless(events[0]["object"]["status"]) == {**synced(1, 3, 1, 3), "disruptedPods": ["f0"]}  # the eviction's
    assert timeless(events[1]["object"]["status"]) == synced(1, 2, 1, 3)  # the controller's: f0 is being deleted
    _, evicted = await http.get(f"{PODS}/f0")
    assert evicted["metadata"]["deletionTimestamp"] and evicted["metadata"]["deletionGracePeriodSeconds"] == 0
    target = evicted["status"]["conditions"][-1]
    assert target["lastTransitionTime"].endswith("Z")
    assert {k: v for k, v in target.items() if k != "lastTransitionTime"} == {
        "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting"}
    code, _ = await http.post(f"{PODS}/f0/eviction", eviction("f0"))  # already being deleted: no budget
    assert code == 201
    code, _ = await http.post(f"{PODS}/f1/eviction", eviction("f1"))
    assert code == 201
    await status_of(http, "fin", synced(0, 1, 1, 3))
    code, _ = await http.post(f"{PODS}/f2/eviction", eviction("f2"))
    assert code == 429
    for i in range(3):
        await http.patch(f"{PODS}/f{i}", {"metadata": {"finalizers": None}})


async def test_unready_pods_follow_the_unhealthy_pod_eviction_policy(http: Http) -> None:
    await make_pods(http, pod("u0", finalizer=True), pod("u1", finalizer=True), unready=("u0", "u1"))
    await http.post(PDBS, budget("u", minAvailable=0, selector=APP))
    await status_of(http, "u", synced(0, 0, 0, 2))
    code, answer = await http.post(f"{PODS}/u0/eviction", eviction("u0"))  # IfHealthyBudget wants desiredHealthy > 0
    assert code == 429 and answer["details"]["causes"][0]["message"] == (
        "The disruption budget u needs 0 healthy pods and has 0 currently")
    await http.patch(f"{PDBS}/u", {"spec": {"unhealthyPodEvictionPolicy": "AlwaysAllow"}})
    await status_of(http, "u", synced(0, 0, 0, 2, generation=2))
    code, _ = await http.post(f"{PODS}/u0/eviction", eviction("u0"))
    assert code == 201
    await status_of(http, "u", synced(0, 0, 0, 2, generation=2))  # nothing used up
    for name in ("u0", "u1"):
        await http.patch(f"{PODS}/{name}", {"metadata": {"finalizers": None}})


async def test_a_pod_under_two_budgets_cannot_be_evicted(http: Http) -> None:
    await make_pods(http, pod("p0"), ready=("p0",))
    await http.post(PDBS, budget("one", minAvailable=0, selector=APP))
    await http.post(PDBS, budget("two", minAvailable=0, selector={}))
    await status_of(http, "two", synced(1, 1, 0, 1))
    code, answer = await http.post(f"{PODS}/p0/eviction", eviction("p0"))
    assert code == 500 and answer == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "code": 500,
        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}


async def test_a_budget_that_failed_sync_says_so(http: Http) -> None:
    _, config = await http.post("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "cm"}})
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": config["metadata"]["uid"], "controller": True}
    await make_pods(http, pod("p0", owner=owner), ready=("p0",))
    await http.post(PDBS, budget("s", maxUnavailable=1, selector=APP))
    await status_of(http, "s", {**ZERO, "conditions": [failed("configmaps does not implement the scale subresource")]})
    async with http.session.post(f"{http.url}{PODS}/p0/eviction", json=eviction("p0")) as resp:
        answer = await resp.json()  # never synced: its observedGeneration is still 0
        assert resp.status == 429 and resp.headers["Retry-After"] == "10"
    assert answer["details"] == {"retryAfterSeconds": 10, "causes": [
        {"reason": "DisruptionBudget", "message": "The disruption budget s is still being processed by the server."}]}
    await http.patch(f"{PDBS}/s/status", {"status": {"observedGeneration": 1}})  # as if it had synced once
    code, answer = await http.post(f"{PODS}/p0/eviction", eviction("p0"))
    assert code == 429 and answer["details"]["causes"][0]["message"] == (
        "The disruption budget s does not allow evicting pods currently because it failed sync: configmaps does not "
        "implement the scale subresource")


@pytest.mark.sandbox(disruption_controller=False)
async def test_without_the_controller_a_new_budget_blocks_evictions(http: Http) -> None:
    await make_pods(http, pod("p0"), ready=("p0",))
    await http.post(PDBS, budget("min0", minAvailable=0, selector=APP))
    code, answer = await http.post(f"{PODS}/p0/eviction", eviction("p0"))
    assert code == 429 and answer["details"]["retryAfterSeconds"] == 10
    _, listed = await http.get(PDBS)
    assert listed["items"][0]["status"] == ZERO


async def test_a_dry_run_eviction_checks_and_writes_nothing(http: Http) -> None:
    await make_pods(http, pod("p0"), pod("p1"), ready=("p0", "p1"))
    await http.post(PDBS, budget("min1", minAvailable=1, selector=APP))
    await status_of(http, "min1", synced(1, 2, 1, 2))
    code, _ = await http.post(f"{PODS}/p0/eviction", eviction("p0"), dryRun="All")
    assert code == 201
    code, _ = await http.post(f"{PODS}/p0/eviction", eviction("p0", deleteOptions={"dryRun": ["All"]}))
    assert code == 201
    await status_of(http, "min1", synced(1, 2, 1, 2))
    _, kept = await http.get(f"{PODS}/p0")
    assert [c["type"] for c in kept["status"]["conditions"]] == ["Ready"]


EVICTION_REFUSALS = {
    "unknown-pod": ("nope", eviction("nope"), 404, 'pods "nope" not found'),
    "another-name": ("p0", eviction("other"), 400, "name in URL does not match name in Eviction object"),
    "no-name": ("p0", {"apiVersion": "policy/v1", "kind": "Eviction"}, 400,
                "name in URL does not match name in Eviction object"),
    "ignore-store-read-error": ("p0", eviction("p0", deleteOptions={
        "ignoreStoreReadErrorWithClusterBreakingPotential": True}), 422,
        'Eviction.policy "p0" is invalid: deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: '
        "true: can not be set for pod eviction, try after removing the option"),
}


@pytest.mark.parametrize(("name", "body", "code", "message"), EVICTION_REFUSALS.values(), ids=EVICTION_REFUSALS.keys())
async def test_evictions_that_are_refused_before_any_budget(http: Http, name: str, body: Obj, code: int,
                                                            message: str) -> None:
    await make_pods(http, pod("p0"), ready=("p0",))
    answer_code, answer = await http.post(f"{PODS}/{name}/eviction", body)
    assert (answer_code, answer["message"]) == (code, message)


async def test_an_eviction_checks_the_uid_precondition_first(http: Http) -> None:
    await make_pods(http, pod("p0"), ready=("p0",))
    _, current = await http.get(f"{PODS}/p0")
    code, answer = await http.post(f"{PODS}/p0/eviction", eviction("p0", deleteOptions={"preconditions": {"uid": "nope"}}))
    assert code == 409 and answer["message"] == (
        f'Operation cannot be fulfilled on Pod "p0": the UID in the precondition (nope) does not match the UID in record '
        f'({current["metadata"]["uid"]}). The object might have been deleted and then recreated')
    code, _ = await http.post(f"{PODS}/p0/eviction", eviction("p0", deleteOptions={"preconditions": {
        "uid": current["metadata"]["uid"], "resourceVersion": current["metadata"]["resourceVersion"]}}))
    assert code == 201  # the condition's write moves the resourceVersion on, and the eviction knows it


# ---- the stale DisruptionTarget ---------------------------------------------------------------------


async def test_a_disruption_target_nothing_acted_on_is_reset(async_apiserver: ApiServer, http: Http) -> None:
    old = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "m",
           "lastTransitionTime": "2020-01-01T00:00:00Z"}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cases = {"stale": ({}, old), "failed": ({"phase": "Failed"}, old),
             "by-kubelet": ({}, {**old, "reason": "TerminationByKubelet"}), "recent": ({}, {**old, "lastTransitionTime": now})}
    controller = async_apiserver.disruption_controller
    assert controller is not None
    controller.stale_timeout = 1.5
    for name, (status, condition) in cases.items():
        await make_pods(http, pod(name))
        code, _ = await http.patch(f"{PODS}/{name}/status", {"status": {**status, "conditions": [condition]}})
        assert code == 200

    async def target(name: str) -> Obj:
        _, found = await http.get(f"{PODS}/{name}")
        condition: Obj = found["status"]["conditions"][0]
        return {k: v for k, v in condition.items() if k != "lastTransitionTime"}

    reset = {"type": "DisruptionTarget", "observedGeneration": 1, "status": "False"}
    for _ in range(100):
        if await target("stale") == reset:
            break
        await asyncio.sleep(0.02)
    assert await target("stale") == reset
    for name in ("failed", "by-kubelet", "recent"):
        assert (await target(name))["status"] == "True"
    for _ in range(150):
        if await target("recent") == reset:
            break
        await asyncio.sleep(0.02)
    assert await target("recent") == reset  # reset once the (shortened) timeout passed
    assert (await target("failed"))["status"] == "True"
