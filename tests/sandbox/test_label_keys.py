"""matchLabelKeys / mismatchLabelKeys merged into a new pod's selectors, as kube-apiserver 1.37.2 does it
(MatchLabelKeysInPodAffinity, MatchLabelKeysInPodTopologySpreadSelectorMerge; sandbox/pods.py).

Recorded from the real 1.37.2 server (`make e2e`'s control plane): the merged selectors and the refusals.
"""

from __future__ import annotations

from typing import Any

from tests.sandbox.conftest import Http

Obj = dict[str, Any]
PODS = "/api/v1/namespaces/default/pods"
REQUIRED, PREFERRED = "requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"
NAME_PART = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")


def pod(labels: dict[str, str], **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def spread(key: str, selector: Obj | None, *label_keys: str) -> Obj:
    constraint: Obj = {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule",
                       "matchLabelKeys": list(label_keys)}
    if selector is not None:
        constraint["labelSelector"] = selector
    return constraint


async def test_label_keys_become_requirements_of_the_selectors(http: Http) -> None:
    affinity = {
        "podAffinity": {
            REQUIRED: [{"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone",
                        "matchLabelKeys": ["tenant", "missing"], "mismatchLabelKeys": ["team"]}],
            PREFERRED: [{"weight": 1, "podAffinityTerm": {
                "labelSelector": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}, "topologyKey": "zone",
                "matchLabelKeys": ["tenant"]}}]},
        "podAntiAffinity": {
            REQUIRED: [{"labelSelector": {}, "topologyKey": "zone", "mismatchLabelKeys": ["tenant"]}],
            PREFERRED: [{"weight": 5, "podAffinityTerm": {"topologyKey": "zone"}}]}}
    body = pod({"tenant": "t1", "team": "a", "app": "web"}, affinity=affinity,
               topologySpreadConstraints=[spread("zone", {"matchLabels": {"app": "web"}}, "tenant", "pod-template-hash")])
    code, created = await http.post(PODS, body)
    assert code == 201, created
    merged = created["spec"]["affinity"]
    assert merged["podAffinity"][REQUIRED][0]["labelSelector"] == {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tenant", "operator": "In", "values": ["t1"]}, {"key": "team", "operator": "NotIn", "values": ["a"]}]}
    assert merged["podAffinity"][PREFERRED][0]["podAffinityTerm"]["labelSelector"] == {"matchExpressions": [
        {"key": "x", "operator": "Exists"}, {"key": "tenant", "operator": "In", "values": ["t1"]}]}
    assert merged["podAntiAffinity"][REQUIRED][0]["labelSelector"] == {"matchExpressions": [
        {"key": "tenant", "operator": "NotIn", "values": ["t1"]}]}
    assert merged["podAntiAffinity"][PREFERRED][0]["podAffinityTerm"] == {"topologyKey": "zone"}
    assert created["spec"]["topologySpreadConstraints"][0]["labelSelector"] == {
        "matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tenant", "operator": "In", "values": ["t1"]}]}
    # the keys stay: the selectors are merged once, on create
    assert created["spec"]["topologySpreadConstraints"][0]["matchLabelKeys"] == ["tenant", "pod-template-hash"]
    code, patched = await http.patch(f"{PODS}/p", {"metadata": {"labels": {"tenant": "t2"}}})
    assert code == 200 and patched["spec"]["affinity"] == merged


async def test_a_key_the_pod_has_no_label_for_changes_nothing(http: Http) -> None:
    code, created = await http.post(PODS, pod({}, topologySpreadConstraints=[
        spread("zone", {"matchLabels": {"a": "b"}}, "tenant")]))
    assert code == 201 and created["spec"]["topologySpreadConstraints"][0]["labelSelector"] == {"matchLabels": {"a": "b"}}


async def test_bad_label_keys_are_refused_with_upstreams_causes(http: Http) -> None:
    affinity = {"podAffinity": {REQUIRED: [{"labelSelector": {"matchLabels": {"tenant": "x"}}, "topologyKey": "zone",
                                            "matchLabelKeys": ["tenant"], "mismatchLabelKeys": ["tenant", "bad key"]}]},
                "podAntiAffinity": {PREFERRED: [{"weight": 1, "podAffinityTerm": {"topologyKey": "zone",
                                                                                  "matchLabelKeys": ["tenant"]}}]}}
    body = pod({"tenant": "t1", "app": "web"}, affinity=affinity, topologySpreadConstraints=[
        spread("zone", {"matchLabels": {"tenant": "x"}}, "tenant"), spread("rack", None, "tenant")])
    code, answer = await http.post(PODS, body)
    assert code == 422, answer
    term = f"spec.affinity.podAffinity.{REQUIRED}[0]"
    assert [(c["field"], c["reason"], c["message"]) for c in answer["details"]["causes"]] == [
        (f"{term}.mismatchLabelKeys[1]", "FieldValueInvalid", f'Invalid value: "bad key": {NAME_PART}'),
        (f"{term}[0]", "FieldValueInvalid", 'Invalid value: "tenant": exists in both matchLabelKeys and labelSelector'),
        (f"{term}.matchLabelKeys[0]", "FieldValueInvalid",
         'Invalid value: "tenant": exists in both matchLabelKeys and mismatchLabelKeys'),
        (f"spec.affinity.podAntiAffinity.{PREFERRED}[0].podAffinityTerm.matchLabelKeys", "FieldValueForbidden",
         "Forbidden: must not be specified when labelSelector is not set"),
        ("spec.topologySpreadConstraints[0][0]", "FieldValueInvalid",
         'Invalid value: "tenant": exists in both matchLabelKeys and labelSelector'),
        ("spec.topologySpreadConstraints[1].matchLabelKeys", "FieldValueForbidden",
         "Forbidden: must not be specified when labelSelector is not set")]
