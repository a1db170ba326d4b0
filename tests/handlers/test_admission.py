"""Admission parity: bad objects get kube-apiserver 1.37's answer, from the sandbox as from the real one.

Each case is one object (or one update of it) that a user, a driver or the hostile
fuzz (tests/fuzz/hostile.py) sends, with what kube-apiserver 1.37.2 answered when it
was recorded: the HTTP code (a 400 when the body does not decode into the Go type, a
422 when the decoded object does not validate), the causes' field paths and reasons,
and the decisive part of the Status message (a substring; the message carries every
cause). In `make test` the `apiserver` fixture is the sandbox, under `make e2e`
(`--e2e-real`) the real server, so a case that drifts on either side fails.

The decisive part is the first cause's message, with two loosenings:

- for CEL selectors only its first line, `compilation failed: ERROR: <input>:L:C:
  <reason>`: the snippet and caret lines follow from it, and for syntax errors ANTLR
  may add follow-up recovery errors the sandbox does not reproduce (sandbox/celerrors.py);
- for an immutable template spec only `field is immutable`: upstream prints the new
  spec as its internal Go struct (`{"Spec":{"Devices":...,"Selectors":null,...}}`),
  which the sandbox does not rebuild.

For names of cluster-scoped objects (made unique per test) the detail after the value.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.error
from typing import Any

import pytest
from kubernetes.dynamic import exceptions as kube_errors
from tests.handlers.conftest import Cluster

Obj = dict[str, Any]
V1 = "resource.k8s.io/v1"

# plural -> (API prefix, namespaced)
RESOURCES = {
    "deviceclasses": ("/apis/resource.k8s.io/v1", False),
    "resourceclaims": ("/apis/resource.k8s.io/v1", True),
    "resourceclaimtemplates": ("/apis/resource.k8s.io/v1", True),
    "resourceslices": ("/apis/resource.k8s.io/v1", False),
    "devicetaintrules": ("/apis/resource.k8s.io/v1", False),
    "pods": ("/api/v1", True),
    "events": ("/api/v1", True),
    "namespaces": ("/api/v1", False),
    "nodes": ("/api/v1", False),
    "events.k8s.io": ("/apis/events.k8s.io/v1", True),
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One object (or update) and kube-apiserver 1.37.2's answer to it."""

    resource: str  # a key of RESOURCES
    body: Obj  # without metadata.name; "$NAMESPACE" stands for the test's namespace
    refused: int = 0  # the HTTP code of the refusal; 0: accepted
    causes: tuple[tuple[str, str], ...] = ()  # (field, reason without the "FieldValue" prefix), in order
    message: str = ""  # the decisive part of the Status message
    name: str = "x"  # metadata.name (cluster-scoped: made unique to the test)
    update: Obj | None = None  # a merge patch of the created object: the case is about this write
    subresource: str = ""  # of the update ("status")
    before: Obj | None = None  # a merge patch of the subresource that must succeed before `update`
    query: str = ""  # of the create: "fieldValidation=Strict"


# ---- objects --------------------------------------------------------------------------------------


def device_class(*expressions: str, **spec: Any) -> Obj:
    if expressions:
        spec["selectors"] = [{"cel": {"expression": e}} for e in expressions]
    return {"apiVersion": V1, "kind": "DeviceClass", "spec": spec}


def request(name: str = "gpu", **exactly: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": "gpu", **exactly}}


def claim(*requests: Obj, **devices: Any) -> Obj:
    return {"apiVersion": V1, "kind": "ResourceClaim",
            "spec": {"devices": {"requests": list(requests or [request()]), **devices}}}


def template(*requests: Obj, **devices: Any) -> Obj:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate", "spec": {"spec": claim(*requests, **devices)["spec"]}}


def labelled(obj: Obj, **metadata: Any) -> Obj:
    return {**obj, "metadata": metadata}


def device(name: str = "d0", **extra: Any) -> Obj:
    return {"name": name, **extra}


def resource_slice(*devices: Obj | None, **spec: Any) -> Obj:
    base: Obj = {"driver": "gpu.example.com", "nodeName": "node-a",
                 "pool": {"name": "pool-a", "generation": 1, "resourceSliceCount": 1}}
    if devices:
        base["devices"] = list(devices)
    return {"apiVersion": V1, "kind": "ResourceSlice", "spec": {**base, **spec}}


def taint_rule(**taint: Any) -> Obj:
    return {"apiVersion": V1, "kind": "DeviceTaintRule",
            "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": taint}}


def pod(**spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec}}


def opaque(*requests: str, driver: str = "gpu.example.com") -> Obj:
    config: Obj = {"opaque": {"driver": driver, "parameters": {}}}
    return {**config, "requests": list(requests)} if requests else config


ALLOCATION = {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "pool-a",
                                       "device": "gpu-0"}]}}


def reserved(count: int) -> list[Obj]:
    return [{"resource": "pods", "name": f"p{i}", "uid": f"uid-{i}"} for i in range(count)]


EVENT = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
         "regarding": {"kind": "Pod", "name": "p", "namespace": "$NAMESPACE"},
         "reason": "Started", "note": "n", "type": "Normal", "eventTime": "2026-01-01T00:00:00.000000Z",
         "reportingController": "dralloc.io/test", "reportingInstance": "x", "action": "Test"}
CORE_EVENT = {"apiVersion": "v1", "kind": "Event", "involvedObject": {"kind": "Pod", "name": "p", "namespace": "$NAMESPACE"},
              "reason": "Started", "message": "m", "type": "Normal"}


CASES: dict[str, Case] = {
    # -- DeviceClass -------------------------------------------------------------------------------
    "class-accepted": Case(
        "deviceclasses", device_class('device.driver == "gpu.example.com"'),
    ),
    "class-cel-syntax-error": Case(
        "deviceclasses", device_class("device.driver =="),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error: '
                 "mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                 "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ),
    "class-cel-not-bool": Case(
        "deviceclasses", device_class("device.driver"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message='Invalid value: "device.driver": must evaluate to bool or the unknown type, not string',
    ),
    "class-cel-undeclared-reference": Case(
        "deviceclasses", device_class("foo.bar == 1"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "foo.bar == 1": compilation failed: ERROR: <input>:1:1: undeclared '
                 "reference to 'foo' (in container '')"),
    ),
    "class-cel-unknown-function": Case(
        "deviceclasses", device_class("foo(device)"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "foo(device)": compilation failed: ERROR: <input>:1:4: undeclared reference '
                 "to 'foo' (in container '')"),
    ),
    "class-cel-empty": Case(
        "deviceclasses", device_class(""),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "": compilation failed: ERROR: <input>:1:0: Syntax error: mismatched input '
                 "'<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                 "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ),
    "class-cel-too-long": Case(
        "deviceclasses", device_class('device.driver == "' + "a" * 10240 + '"'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "TooLong"),),
        message="Too long: may not be more than 10240 bytes",
    ),
    "class-selector-without-cel": Case(
        "deviceclasses", device_class(selectors=[{}]),
        refused=422, causes=(("spec.selectors[0].cel", "Required"),),
        message="Required value",
    ),
    "class-32-selectors": Case(
        "deviceclasses", device_class(*["true"] * 32),
    ),
    "class-33-selectors": Case(
        "deviceclasses", device_class(*["true"] * 33),
        refused=422, causes=(("spec.selectors", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "class-33-configs": Case(
        "deviceclasses", device_class(config=[opaque()] * 33),
        refused=422, causes=(("spec.config", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "class-config-bad-driver": Case(
        "deviceclasses", device_class(config=[opaque(driver="Bad_Driver")]),
        refused=422, causes=(("spec.config[0].opaque.driver", "Invalid"),),
        message=('Invalid value: "Bad_Driver": an RFC 1123 subdomain must consist of alphanumeric '
                 "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                 "'Example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "class-name-not-a-subdomain": Case(
        "deviceclasses", device_class(), name="Bad_Name",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message=("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "class-name-too-long": Case(
        "deviceclasses", device_class(), name="a" * 254,
        refused=422, causes=(("metadata.name", "Invalid"),),
        message="must be no more than 253 bytes",
    ),
    "class-extended-resource-name": Case(
        "deviceclasses", device_class(extendedResourceName="not valid!"),
        refused=422, causes=(
            ("spec.extendedResourceName", "Invalid"),
            ("spec.extendedResourceName", "Invalid"),
        ),
        message=('Invalid value: "not valid!": a name must be a domain-prefixed path, such as '
                 "'example.com/my-prop'"),
    ),
    "class-cel-undefined-field": Case(
        "deviceclasses", device_class("device.foo"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.foo": compilation failed: ERROR: <input>:1:7: undefined field '
                 "'foo'"),
    ),
    "class-cel-no-matching-overload": Case(
        "deviceclasses", device_class("device.driver == 1"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.driver == 1": compilation failed: ERROR: <input>:1:15: found no '
                 "matching overload for '_==_' applied to '(string, int)'"),
    ),
    "class-cel-quantity-compared-to-int": Case(
        "deviceclasses", device_class('device.capacity["gpu.example.com"].memory > 1'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.capacity[\\"gpu.example.com\\"].memory > 1": compilation failed: '
                 "ERROR: <input>:1:43: found no matching overload for '_>_' applied to "
                 "'(kubernetes.Quantity, int)'"),
    ),
    "class-cel-has-not-a-field": Case(
        "deviceclasses", device_class('has(device.attributes["gpu.example.com"])'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "has(device.attributes[\\"gpu.example.com\\"])": compilation failed: ERROR: '
                 "<input>:1:22: invalid argument to has() macro"),
    ),
    "class-cel-quantities-ordered": Case(
        "deviceclasses", device_class('quantity("1") < quantity("2")'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "quantity(\\"1\\") < quantity(\\"2\\")": compilation failed: ERROR: '
                 "<input>:1:15: found no matching overload for '_<_' applied to '(kubernetes.Quantity, "
                 "kubernetes.Quantity)'"),
    ),
    "class-cel-device-indexed": Case(
        "deviceclasses", device_class('device["driver"] == "x"'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device[\\"driver\\"] == \\"x\\"": compilation failed: ERROR: <input>:1:7: '
                 "found no matching overload for '_[_]' applied to '(kubernetes.DRADevice, string)'"),
    ),
    "class-cel-bad-regex": Case(
        "deviceclasses", device_class('device.driver.matches("[")'),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.driver.matches(\\"[\\")": compilation failed: ERROR: <input>:1:23: '
                 "invalid matches argument"),
    ),
    "class-cel-macro-body-not-bool": Case(
        "deviceclasses", device_class("[1].all(x, x)"),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "[1].all(x, x)": compilation failed: ERROR: <input>:1:12: expected type '
                 "'bool' but found 'int'"),
    ),
    "class-cel-whitespace": Case(
        "deviceclasses", device_class("   "),
        refused=422, causes=(("spec.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "   ": compilation failed: ERROR: <input>:1:4: Syntax error: mismatched '
                 "input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, "
                 "NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ),
    "class-cel-libraries-accepted": Case(
        "deviceclasses",
        device_class(
        'device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("1Gi")) && '
        'semver(device.attributes["gpu.example.com"].driverVersion).major() >= 1 && '
        '"a,b".split(",").size() == 2 && device.driver in ["gpu.example.com"] && '
        '[1, 2].all(x, x > 0) && cel.bind(d, device.driver, d.startsWith("gpu"))'),
    ),
    "class-without-name": Case(
        "deviceclasses", device_class(), name="",
        refused=422, causes=(("metadata.name", "Required"),),
        message="Required value: name or generateName is required",
    ),
    "class-generate-name-invalid": Case(
        "deviceclasses", labelled(device_class(), generateName="Bad_"), name="",
        refused=422, causes=(("metadata.name", "Invalid"),),  # the generated name only, not generateName
        message=("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character"),
    ),
    "class-config-without-opaque": Case(
        "deviceclasses", device_class(config=[{}]),
        refused=422, causes=(("spec.config[0].opaque", "Required"),),
        message="Required value",
    ),
    "class-config-parameters-not-an-object": Case(
        "deviceclasses",
        device_class(config=[
        {"opaque": {"driver": "gpu.example.com", "parameters": [1]}}]),
        refused=422, causes=(("spec.config[0].opaque.parameters", "Invalid"),),
        message='Invalid value: "<value omitted>": must be a valid JSON object',
    ),
    "class-extended-resource-name-kubernetes-io": Case(
        "deviceclasses",
        device_class(
        extendedResourceName="kubernetes.io/gpu"),
        refused=422, causes=(("spec.extendedResourceName", "Invalid"),),
        message='Invalid value: "kubernetes.io/gpu": must not have "kubernetes.io/" domain',
    ),
    "class-expression-not-a-string": Case(
        "deviceclasses", device_class(selectors=[{"cel": {"expression": 7}}]),
        refused=400, causes=(),
        message=("json: cannot unmarshal number into Go struct field "
                 "CELDeviceSelector.spec.selectors.cel.expression of type string"),
    ),
    # -- ResourceClaim -----------------------------------------------------------------------------
    "claim-accepted": Case(
        "resourceclaims", claim(),
    ),
    "claim-count-zero": Case(
        "resourceclaims", claim(request(count=0)),
    ),
    "claim-count-negative": Case(
        "resourceclaims", claim(request(count=-1)),
        refused=422, causes=(("spec.devices.requests[0].exactly.count", "Invalid"),),
        message="Invalid value: -1: must be greater than zero",
    ),
    "claim-count-string": Case(
        "resourceclaims", claim(request(count="two")),
        refused=400, causes=(),
        message=("json: cannot unmarshal string into Go struct field "
                 "ExactDeviceRequest.spec.devices.requests.exactly.count of type int64"),
    ),
    "claim-count-fraction": Case(
        "resourceclaims", claim(request(count=1.5)),
        refused=400, causes=(),
        message=("json: cannot unmarshal number 1.5 into Go struct field "
                 "ExactDeviceRequest.spec.devices.requests.exactly.count of type int64"),
    ),
    "claim-count-past-int64": Case(
        "resourceclaims", claim(request(count=2**63)),
        refused=400, causes=(),
        message=("json: cannot unmarshal number 9223372036854775808 into Go struct field "
                 "ExactDeviceRequest.spec.devices.requests.exactly.count of type int64"),
    ),
    "claim-allocation-mode-unknown": Case(
        "resourceclaims", claim(request(allocationMode="Some")),
        refused=422, causes=(("spec.devices.requests[0].exactly.allocationMode", "NotSupported"),),
        message='Unsupported value: "Some": supported values: "All", "ExactCount"',
    ),
    "claim-all-with-count": Case(
        "resourceclaims", claim(request(allocationMode="All", count=2)),
        refused=422, causes=(("spec.devices.requests[0].exactly.count", "Invalid"),),
        message="Invalid value: 2: must not be specified when allocationMode is 'All'",
    ),
    "claim-32-requests": Case(
        "resourceclaims", claim(*[request(f"r{i}") for i in range(32)]),
    ),
    "claim-33-requests": Case(
        "resourceclaims", claim(*[request(f"r{i}") for i in range(33)]),
        refused=422, causes=(("spec.devices.requests", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "claim-duplicate-request-name": Case(
        "resourceclaims", claim(request("a"), request("a")),
        refused=422, causes=(("spec.devices.requests[1]", "Duplicate"),),
        message=("Duplicate value: "
                 '{"name":"a","exactly":{"deviceClassName":"gpu","allocationMode":"ExactCount","count":1}}'),
    ),
    "claim-request-name-invalid": Case(
        "resourceclaims", claim(request("Bad_Name")),
        refused=422, causes=(("spec.devices.requests[0].name", "Invalid"),),
        message=('Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
                 "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "claim-request-without-body": Case(
        "resourceclaims", claim({"name": "gpu"}),
        refused=422, causes=(("spec.devices.requests[0]", "Required"),),
        message="Required value: exactly one of `exactly` or `firstAvailable` is required",
    ),
    "claim-request-with-both": Case(
        "resourceclaims",
        claim({**request(), "firstAvailable": [
        {"name": "s", "deviceClassName": "gpu"}]}),
        refused=422, causes=(("spec.devices.requests[0]", "Invalid"),),
        message=("Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but "
                 "multiple fields are set"),
    ),
    "claim-first-available-empty": Case(
        "resourceclaims", claim({"name": "gpu", "firstAvailable": []}),
        refused=422, causes=(("spec.devices.requests[0]", "Required"),),
        message="Required value: exactly one of `exactly` or `firstAvailable` is required",
    ),
    "claim-first-available-9": Case(
        "resourceclaims",
        claim({"name": "gpu", "firstAvailable": [
        {"name": f"s{i}", "deviceClassName": "gpu"} for i in range(9)]}),
        refused=422, causes=(("spec.devices.requests[0].firstAvailable", "TooMany"),),
        message="Too many: 9: must have at most 8 items",
    ),
    "claim-first-available-duplicate": Case(
        "resourceclaims",
        claim({"name": "gpu", "firstAvailable": [
        {"name": "s", "deviceClassName": "gpu"}, {"name": "s", "deviceClassName": "gpu"}]}),
        refused=422, causes=(("spec.devices.requests[0].firstAvailable[1]", "Duplicate"),),
        message=("Duplicate value: "
                 '{"name":"s","deviceClassName":"gpu","allocationMode":"ExactCount","count":1}'),
    ),
    "claim-device-class-missing": Case(
        "resourceclaims", claim({"name": "gpu", "exactly": {}}),
        refused=422, causes=(("spec.devices.requests[0].exactly.deviceClassName", "Required"),),
        message="Required value",
    ),
    "claim-device-class-invalid": Case(
        "resourceclaims", claim(request(deviceClassName="Bad_Class")),
        refused=422, causes=(("spec.devices.requests[0].exactly.deviceClassName", "Invalid"),),
        message=('Invalid value: "Bad_Class": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "claim-17-tolerations": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": f"k{i}", "operator": "Exists"} for i in range(17)])),
    ),
    "claim-toleration-exists-with-value": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": "k", "operator": "Exists", "value": "v"}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.tolerations[0].value", "Invalid"),),
        message='Invalid value: "v": must be empty for operator `Exists`',
    ),
    "claim-toleration-no-key-equal": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"operator": "Equal", "value": "v"}])),
    ),
    "claim-toleration-effect-unknown": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": "k", "operator": "Exists", "effect": "Sometimes"}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.tolerations[0].effect", "NotSupported"),),
        message='Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"',
    ),
    "claim-toleration-operator-unknown": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": "k", "operator": "Near"}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.tolerations[0].operator", "NotSupported"),),
        message='Unsupported value: "Near": supported values: "Equal", "Exists"',
    ),
    "claim-toleration-key-invalid": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": "bad key", "operator": "Exists"}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.tolerations[0].key", "Invalid"),),
        message=('Invalid value: "bad key": name part must consist of alphanumeric characters, \'-\', \'_\' '
                 "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                 "'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ),
    "claim-33-constraints": Case(
        "resourceclaims",
        claim(constraints=[
        {"matchAttribute": "gpu.example.com/numa"}] * 33),
        refused=422, causes=(("spec.devices.constraints", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "claim-constraint-unknown-request": Case(
        "resourceclaims",
        claim(constraints=[
        {"requests": ["nope"], "matchAttribute": "gpu.example.com/numa"}]),
        refused=422, causes=(("spec.devices.constraints[0].requests[0]", "Invalid"),),
        message=('Invalid value: "nope": must be the name of a request in the claim or the name of a request '
                 "and a subrequest separated by '/'"),
    ),
    "claim-constraint-without-attribute": Case(
        "resourceclaims", claim(constraints=[{"requests": ["gpu"]}]),
        refused=422, causes=(("spec.devices.constraints[0]", "Required"),),
        message=('Required value: exactly one of "matchAttribute" or "distinctAttribute" is required, but '
                 "multiple fields are set"),
    ),
    "claim-constraint-attribute-invalid": Case(
        "resourceclaims",
        claim(constraints=[
        {"matchAttribute": "numa"}]),
        refused=422, causes=(("spec.devices.constraints[0].matchAttribute", "Invalid"),),
        message=('Invalid value: "numa": a fully qualified name must be a domain and a name separated by a '
                 "slash"),
    ),
    "claim-33-configs": Case(
        "resourceclaims", claim(config=[opaque()] * 33),
        refused=422, causes=(("spec.devices.config", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "claim-config-unknown-request": Case(
        "resourceclaims", claim(config=[opaque("nope")]),
        refused=422, causes=(("spec.devices.config[0].requests[0]", "Invalid"),),
        message=('Invalid value: "nope": must be the name of a request in the claim or the name of a request '
                 "and a subrequest separated by '/'"),
    ),
    "claim-admin-access-unlabelled": Case(
        "resourceclaims", claim(request(adminAccess=True)),
        refused=422, causes=(("spec.devices.requests[0].adminAccess", "Forbidden"),),
        message=("Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: "
                 "true` label on the containing namespace"),
    ),
    "claim-cel-syntax-error": Case(
        "resourceclaims",
        claim(request(selectors=[
        {"cel": {"expression": "device.driver =="}}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error: '
                 "mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                 "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ),
    "claim-cel-undeclared-reference": Case(
        "resourceclaims",
        claim(request(selectors=[
        {"cel": {"expression": "devices.driver == 'x'"}}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.selectors[0].cel.expression", "Invalid"),),
        message=('Invalid value: "devices.driver == \'x\'": compilation failed: ERROR: <input>:1:1: '
                 "undeclared reference to 'devices' (in container '')"),
    ),
    "claim-33-selectors": Case(
        "resourceclaims",
        claim(request(selectors=[
        {"cel": {"expression": "true"}}] * 33)),
        refused=422, causes=(("spec.devices.requests[0].exactly.selectors", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "claim-capacity-not-a-quantity": Case(
        "resourceclaims",
        claim(request(capacity={
        "requests": {"memory": "12abc"}})),
        refused=400, causes=(),
        message=("quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ),
    "claim-name-not-a-subdomain": Case(
        "resourceclaims", claim(), name="Bad_Name",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message=('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "claim-label-key-invalid": Case(
        "resourceclaims", labelled(claim(), labels={"bad key": "v"}),
        refused=422, causes=(("metadata.labels", "Invalid"),),
        message=('Invalid value: "bad key": name part must consist of alphanumeric characters, \'-\', \'_\' '
                 "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                 "'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ),
    "claim-label-value-invalid": Case(
        "resourceclaims", labelled(claim(), labels={"k": "bad value"}),
        refused=422, causes=(("metadata.labels", "Invalid"),),
        message=('Invalid value: "bad value": a valid label must be an empty string or consist of '
                 "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                 "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ),
    "claim-count-null": Case(
        "resourceclaims", claim(request(count=None)),
    ),
    "claim-requests-not-a-list": Case(
        "resourceclaims", {**claim(), "spec": {"devices": {"requests": {"name": "gpu"}}}},
        refused=400, causes=(),
        message=("json: cannot unmarshal object into Go struct field DeviceClaim.spec.devices.requests of "
                 "type []v1.DeviceRequest"),
    ),
    "claim-spec-not-an-object": Case(
        "resourceclaims", {**claim(), "spec": "gpu"},
        refused=400, causes=(),
        message=("json: cannot unmarshal string into Go struct field ResourceClaim.spec of type "
                 "v1.ResourceClaimSpec"),
    ),
    "claim-unknown-field-strict": Case(
        "resourceclaims", claim(request(colour="red")), query="fieldValidation=Strict",
        refused=400, causes=(),
        message='strict decoding error: unknown field "spec.devices.requests[0].exactly.colour"',
    ),
    "claim-unknown-field-dropped": Case(
        "resourceclaims", claim(request(colour="red")),
    ),
    "claim-null-request": Case(
        "resourceclaims", {**claim(), "spec": {"devices": {"requests": [None]}}},
        refused=422, causes=(
            ("spec.devices.requests[0].name", "Invalid"),
            ("spec.devices.requests[0]", "Required"),
        ),
        message=('Invalid value: "": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                 "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                 "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "claim-request-without-name": Case(
        "resourceclaims", claim({"exactly": {"deviceClassName": "gpu"}}),
        refused=422, causes=(("spec.devices.requests[0].name", "Invalid"),),
        message=('Invalid value: "": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                 "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                 "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "claim-request-name-too-long": Case(
        "resourceclaims", claim(request("a" * 64)),
        refused=422, causes=(("spec.devices.requests[0].name", "Invalid"),),
        message=('Invalid value: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": must be '
                 "no more than 63 characters"),
    ),
    "claim-subrequest-without-class": Case(
        "resourceclaims", claim({"name": "gpu", "firstAvailable": [{"name": "s"}]}),
        refused=422, causes=(("spec.devices.requests[0].firstAvailable[0].deviceClassName", "Required"),),
        message="Required value",
    ),
    "claim-100-tolerations": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": f"k{i}", "operator": "Exists"} for i in range(100)])),
    ),
    "claim-toleration-value-invalid": Case(
        "resourceclaims",
        claim(request(tolerations=[
        {"key": "k", "operator": "Equal", "value": "bad value"}])),
        refused=422, causes=(("spec.devices.requests[0].exactly.tolerations[0].value", "Invalid"),),
        message=('Invalid value: "bad value": a valid label must be an empty string or consist of '
                 "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                 "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ),
    "claim-constraint-with-both-attributes": Case(
        "resourceclaims",
        claim(constraints=[
        {"matchAttribute": "gpu.example.com/numa", "distinctAttribute": "gpu.example.com/index"}]),
    ),
    "claim-constraint-on-subrequest": Case(
        "resourceclaims",
        claim(
        {"name": "gpu", "firstAvailable": [{"name": "s", "deviceClassName": "gpu"}]},
        constraints=[{"requests": ["gpu/s"], "matchAttribute": "gpu.example.com/numa"}]),
    ),
    "claim-constraint-attribute-bad-domain": Case(
        "resourceclaims",
        claim(constraints=[
        {"matchAttribute": "Bad_Domain/numa"}]),
        refused=422, causes=(("spec.devices.constraints[0].matchAttribute", "Invalid"),),
        message=('Invalid value: "Bad_Domain": prefix: a lowercase RFC 1123 subdomain must consist of lower '
                 "case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "claim-admin-access-in-subrequest-dropped": Case(
        "resourceclaims",
        claim({"name": "gpu", "firstAvailable": [
        {"name": "s", "deviceClassName": "gpu", "adminAccess": True}]}),
    ),
    "claim-generate-name-invalid": Case(
        "resourceclaims", labelled(claim(), generateName="Bad_"), name="",
        refused=422, causes=(("metadata.generateName", "Invalid"), ("metadata.name", "Invalid")),
        message=('Invalid value: "Bad_": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"),
    ),
    "claim-spec-immutable": Case(
        "resourceclaims",
        claim(),
        update={"spec": {"devices": {"requests": [
        request(deviceClassName="other")]}}},
        refused=422, causes=(("spec", "Invalid"),),
        message="Invalid value: null: field is immutable",
    ),
    "claim-status-reserved-without-allocation": Case(
        "resourceclaims", claim(), subresource="status", update={"status": {"reservedFor": reserved(1)}},
        refused=422, causes=(("status.reservedFor", "Forbidden"),),
        message="Forbidden: may not be specified when `allocated` is not set",
    ),
    "claim-status-reserved-257": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={"status": {"allocation": ALLOCATION, "reservedFor": reserved(257)}},
        refused=422, causes=(("status.reservedFor", "TooMany"),),
        message="Too many: 257: must have at most 256 items",
    ),
    "claim-status-reserved-256": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={"status": {"allocation": ALLOCATION, "reservedFor": reserved(256)}},
    ),
    "claim-status-reserved-duplicate-uid": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={
        "status": {"allocation": ALLOCATION, "reservedFor": [*reserved(1), {**reserved(1)[0], "name": "q"}]}},
        refused=422, causes=(("status.reservedFor[1]", "Duplicate"),),
        message='Duplicate value: {"resource":"pods","name":"q","uid":"uid-0"}',
    ),
    "claim-status-result-unknown-request": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={
        "status": {"allocation": {"devices": {"results": [{**ALLOCATION["devices"]["results"][0],
                                                             "request": "nope"}]}}}},
        refused=422, causes=(("status.allocation.devices.results[0].request", "Invalid"),),
        message=('Invalid value: "nope": must be the name of a request in the claim or the name of a request '
                 "and a subrequest separated by '/'"),
    ),
    "claim-status-device-not-allocated": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={
        "status": {"allocation": ALLOCATION, "devices": [{"driver": "gpu.example.com", "pool": "pool-a",
                                                          "device": "gpu-9"}]}},
        refused=422, causes=(("status.devices[0]", "Invalid"),),
        message=('Invalid value: {"Driver":"gpu.example.com","Pool":"pool-a","Device":"gpu-9","ShareID":""}: '
                 "must be an allocated device in the claim"),
    ),
    "claim-status-allocation-immutable": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        before={"status": {"allocation": ALLOCATION}},
        update={"status": {"allocation": {"devices": {"results": [
            {**ALLOCATION["devices"]["results"][0], "device": "gpu-1"}]}}}},
        refused=422, causes=(("status.allocation", "Invalid"),),
        message="Invalid value: null: field cannot be modified once set",
    ),
    "claim-status-allocation-cleared": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        before={"status": {"allocation": ALLOCATION}},
        update={"status": {"allocation": None}},
    ),
    "claim-status-33-results": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={"status": {"allocation": {
        "devices": {"results": [{**ALLOCATION["devices"]["results"][0], "device": f"gpu-{i}"} for i in range(33)]}}}},
        refused=422, causes=(("status.allocation.devices.results", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "claim-status-result-fields-invalid": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={
        "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "Bad_Driver", "pool": "Bad_Pool",
                                                           "device": "Bad_Device"}]}}}},
        refused=422, causes=(
            ("status.allocation.devices.results[0].device", "Invalid"),
            ("status.allocation.devices.results[0].driver", "Invalid"),
            ("status.allocation.devices.results[0].pool", "Invalid"),
        ),
        message=('Invalid value: "Bad_Device": a lowercase RFC 1123 label must consist of lower case '
                 "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "claim-status-reserved-empty-reference": Case(
        "resourceclaims",
        claim(),
        subresource="status",
        update={"status": {"allocation": ALLOCATION, "reservedFor": [{}]}},
        refused=422, causes=(
            ("status.reservedFor[0].resource", "Required"),
            ("status.reservedFor[0].name", "Required"),
            ("status.reservedFor[0].uid", "Required"),
        ),
        message="Required value",
    ),
    # -- ResourceClaimTemplate ---------------------------------------------------------------------
    "template-cel-syntax-error-in-subrequest": Case(
        "resourceclaimtemplates",
        template({
        "name": "gpu", "firstAvailable": [{"name": "s", "deviceClassName": "gpu",
                                           "selectors": [{"cel": {"expression": "device.driver =="}}]}]}),
        refused=422, causes=(
            ("spec.spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression", "Invalid"),
        ),
        message=('Invalid value: "device.driver ==": compilation failed: ERROR: <input>:1:17: Syntax error: '
                 "mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', "
                 "NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ),
    "template-count-zero": Case(
        "resourceclaimtemplates", template(request(count=0)),
    ),
    "template-spec-immutable": Case(
        "resourceclaimtemplates",
        template(),
        update={"spec": {"spec": {"devices": {
        "requests": [request("other")]}}}},
        refused=422, causes=(("spec", "Invalid"),),
        message="field is immutable",
    ),
    # -- ResourceSlice -----------------------------------------------------------------------------
    "slice-128-devices": Case(
        "resourceslices", resource_slice(*[device(f"d{i}") for i in range(128)]),
    ),
    "slice-129-devices": Case(
        "resourceslices", resource_slice(*[device(f"d{i}") for i in range(129)]),
        refused=422, causes=(("spec.devices", "TooMany"),),
        message="Too many: 129: must have at most 128 items",
    ),
    "slice-65-devices-with-taints": Case(
        "resourceslices",
        resource_slice(*[
        device(f"d{i}", taints=[{"key": "k", "effect": "NoSchedule"}]) for i in range(65)]),
        refused=422, causes=(("spec.devices", "TooMany"),),
        message="Too many: 65: must have at most 64 items",
    ),
    "slice-device-name-invalid": Case(
        "resourceslices", resource_slice(device("Bad_Name")),
        refused=422, causes=(("spec.devices[0].name", "Invalid"),),
        message=('Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
                 "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "slice-device-duplicate": Case(
        "resourceslices", resource_slice(device("d0"), device("d0")),
        refused=422, causes=(("spec.devices[1]", "Duplicate"),),
        message='Duplicate value: "d0"',
    ),
    "slice-33-attributes": Case(
        "resourceslices",
        resource_slice(device(attributes={
        f"a{i}": {"int": i} for i in range(33)})),
        refused=422, causes=(("spec.devices[0]", "Invalid"),),
        message="Invalid value: 33: the total number of attributes and capacities must not exceed 32",
    ),
    "slice-attributes-and-capacity-33": Case(
        "resourceslices",
        resource_slice(device(
        attributes={f"a{i}": {"int": i} for i in range(32)}, capacity={"memory": {"value": "1Gi"}})),
        refused=422, causes=(("spec.devices[0]", "Invalid"),),
        message="Invalid value: 33: the total number of attributes and capacities must not exceed 32",
    ),
    "slice-attribute-name-invalid": Case(
        "resourceslices", resource_slice(device(attributes={"bad-name": {"int": 1}})),
        refused=422, causes=(("spec.devices[0].attributes", "Invalid"),),
        message=('Invalid value: "bad-name": a valid C identifier must start with alphabetic character or '
                 "'_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or "
                 "'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"),
    ),
    "slice-attribute-two-values": Case(
        "resourceslices",
        resource_slice(device(attributes={
        "a": {"int": 1, "string": "x"}})),
        refused=422, causes=(("spec.devices[0].attributes[a]", "Invalid"),),
        message=('Invalid value: "{int, string}": must specify exactly one of: `int`, `bool`, `string`, '
                 "`version`, `ints`, `bools`, `strings`, `versions`"),
    ),
    "slice-attribute-no-value": Case(
        "resourceslices", resource_slice(device(attributes={"a": {}})),
        refused=422, causes=(("spec.devices[0].attributes[a]", "Invalid"),),
        message=('Invalid value: "": must specify one of: `int`, `bool`, `string`, `version`, `ints`, '
                 "`bools`, `strings`, `versions`"),
    ),
    "slice-version-not-semver": Case(
        "resourceslices",
        resource_slice(device(attributes={
        "v": {"version": "not-semver"}})),
        refused=422, causes=(("spec.devices[0].attributes[v].version", "Invalid"),),
        message='Invalid value: "not-semver": must be a string compatible with semver.org spec 2.0.0',
    ),
    "slice-string-65": Case(
        "resourceslices", resource_slice(device(attributes={"s": {"string": "x" * 65}})),
        refused=422, causes=(("spec.devices[0].attributes[s].string", "TooLong"),),
        message="Too long: may not be more than 64 bytes",
    ),
    "slice-no-node-selection": Case(
        "resourceslices", resource_slice(device(), nodeName=None),
        refused=422, causes=(("spec", "Required"),),
        message=("Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                 "`perDeviceNodeSelection` is required"),
    ),
    "slice-two-node-selections": Case(
        "resourceslices", resource_slice(device(), allNodes=True),
        refused=422, causes=(("spec", "Invalid"),),
        message=('Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, '
                 "`allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"),
    ),
    "slice-devices-and-counters": Case(
        "resourceslices",
        resource_slice(device(), sharedCounters=[
        {"name": "c", "counters": {"memory": {"value": "1Gi"}}}]),
        refused=422, causes=(("spec", "Invalid"),),
        message='Invalid value: "": only one of `sharedCounters` or `devices` is allowed',
    ),
    "slice-slice-count-zero": Case(
        "resourceslices",
        resource_slice(device(), pool={
        "name": "pool-a", "generation": 1, "resourceSliceCount": 0}),
        refused=422, causes=(("spec.pool.resourceSliceCount", "Invalid"),),
        message="Invalid value: 0: must be greater than zero",
    ),
    "slice-generation-negative": Case(
        "resourceslices",
        resource_slice(device(), pool={
        "name": "pool-a", "generation": -1, "resourceSliceCount": 1}),
        refused=422, causes=(("spec.pool.generation", "Invalid"),),
        message="Invalid value: -1: must be greater than or equal to zero",
    ),
    "slice-pool-name-invalid": Case(
        "resourceslices",
        resource_slice(device(), pool={
        "name": "Bad_Pool", "generation": 1, "resourceSliceCount": 1}),
        refused=422, causes=(("spec.pool.name", "Invalid"),),
        message=('Invalid value: "Bad_Pool": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "slice-driver-invalid": Case(
        "resourceslices", resource_slice(device(), driver="Bad_Driver"),
        refused=422, causes=(("spec.driver", "Invalid"),),
        message=('Invalid value: "Bad_Driver": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "slice-capacity-not-a-quantity": Case(
        "resourceslices",
        resource_slice(device(capacity={
        "memory": {"value": "12abc"}})),
        refused=400, causes=(),
        message=("quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ),
    "slice-taint-effect-unknown": Case(
        "resourceslices",
        resource_slice(device(taints=[
        {"key": "k", "effect": "Sometimes"}])),
        refused=422, causes=(("spec.devices[0].taints[0].effect", "NotSupported"),),
        message='Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"',
    ),
    "slice-taint-without-key": Case(
        "resourceslices", resource_slice(device(taints=[{"effect": "NoSchedule"}])),
        refused=422, causes=(
            ("spec.devices[0].taints[0].key", "Invalid"),
            ("spec.devices[0].taints[0].key", "Invalid"),
        ),
        message='Invalid value: "": name part must be non-empty',
    ),
    "slice-17-taints": Case(
        "resourceslices",
        resource_slice(device(taints=[
        {"key": f"k{i}", "effect": "NoSchedule"} for i in range(17)])),
        refused=422, causes=(("spec.devices[0].taints", "TooMany"),),
        message="Too many: 17: must have at most 16 items",
    ),
    "slice-9-counter-sets": Case(
        "resourceslices",
        resource_slice(nodeName="node-a", sharedCounters=[
        {"name": f"c{i}", "counters": {"memory": {"value": "1Gi"}}} for i in range(9)]),
        refused=422, causes=(("spec.sharedCounters", "TooMany"),),
        message="Too many: 9: must have at most 8 items",
    ),
    "slice-3-counter-consumptions": Case(
        "resourceslices",
        resource_slice(device(consumesCounters=[
        {"counterSet": f"c{i}", "counters": {"memory": {"value": "1Gi"}}} for i in range(3)])),
        refused=422, causes=(("spec.devices[0].consumesCounters", "TooMany"),),
        message="Too many: 3: must have at most 2 items",
    ),
    "slice-null-device": Case(
        "resourceslices", resource_slice(None),
        refused=422, causes=(("spec.devices[0].name", "Invalid"),),
        message=('Invalid value: "": a lowercase RFC 1123 label must consist of lower case alphanumeric '
                 "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  "
                 "or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "slice-attribute-not-an-object": Case(
        "resourceslices", resource_slice(device(attributes={"a": 5})),
        refused=400, causes=(),
        message=("json: cannot unmarshal number into Go struct field Device.spec.devices.attributes of type "
                 "v1.DeviceAttribute"),
    ),
    "slice-generation-not-a-number": Case(
        "resourceslices",
        resource_slice(device(), pool={
        "name": "pool-a", "generation": "1", "resourceSliceCount": 1}),
        refused=400, causes=(),
        message=("json: cannot unmarshal string into Go struct field ResourcePool.spec.pool.generation of "
                 "type int64"),
    ),
    "slice-attribute-name-too-long": Case(
        "resourceslices", resource_slice(device(attributes={"a" * 33: {"int": 1}})),
        refused=422, causes=(("spec.devices[0].attributes", "TooLong"),),
        message="Too long: may not be more than 32 bytes",
    ),
    "slice-attribute-domain-invalid": Case(
        "resourceslices",
        resource_slice(device(attributes={
        "Bad_Domain/a": {"int": 1}})),
        refused=422, causes=(("spec.devices[0].attributes", "Invalid"),),
        message=('Invalid value: "Bad_Domain": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "slice-pool-name-too-long": Case(
        "resourceslices",
        resource_slice(device(), pool={
        "name": "a" * 254, "generation": 1, "resourceSliceCount": 1}),
        refused=422, causes=(("spec.pool.name", "TooLong"), ("spec.pool.name", "Invalid")),
        message="Too long: may not be more than 253 bytes",
    ),
    "slice-node-name-invalid": Case(
        "resourceslices", resource_slice(device(), nodeName="Bad_Node"),
        refused=422, causes=(("spec.nodeName", "Invalid"),),
        message=('Invalid value: "Bad_Node": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "slice-without-spec": Case(
        "resourceslices", {"apiVersion": V1, "kind": "ResourceSlice"},
        refused=422, causes=(
            ("spec.driver", "Required"),
            ("spec.pool.name", "Required"),
            ("spec.pool.resourceSliceCount", "Invalid"),
            ("spec", "Required"),
        ),
        message="Required value",
    ),
    "slice-counter-set-without-counters": Case(
        "resourceslices", resource_slice(sharedCounters=[{"name": "c"}]),
        refused=422, causes=(("spec.sharedCounters[0].counters", "Required"),),
        message="Required value",
    ),
    "slice-33-counters": Case(
        "resourceslices",
        resource_slice(sharedCounters=[
        {"name": "c", "counters": {f"c{i}": {"value": "1"} for i in range(33)}}]),
        refused=422, causes=(("spec.sharedCounters[0].counters", "TooMany"),),
        message="Too many: 33: must have at most 32 items",
    ),
    "slice-counter-consumption-empty": Case(
        "resourceslices", resource_slice(device(consumesCounters=[{}])),
        refused=422, causes=(
            ("spec.devices[0].consumesCounters[0].counterSet", "Required"),
            ("spec.devices[0].consumesCounters[0].counters", "Required"),
        ),
        message="Required value",
    ),
    "slice-taint-without-effect": Case(
        "resourceslices", resource_slice(device(taints=[{"key": "k"}])),
        refused=422, causes=(("spec.devices[0].taints[0].effect", "Required"),),
        message="Required value",
    ),
    "slice-taint-key-bad-prefix": Case(
        "resourceslices",
        resource_slice(device(taints=[
        {"key": "Bad_Domain/k", "effect": "NoSchedule"}])),
        refused=422, causes=(("spec.devices[0].taints[0].key", "Invalid"),),
        message=('Invalid value: "Bad_Domain/k": prefix part a lowercase RFC 1123 subdomain must consist of '
                 "lower case alphanumeric characters, '-' or '.', and must start and end with an "
                 "alphanumeric character (e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "slice-list-attributes-accepted": Case(
        "resourceslices",
        resource_slice(device(attributes={
        "ints": {"ints": [1, 2]}, "versions": {"versions": ["1.0.0"]}})),
    ),
    "slice-version-in-list-not-semver": Case(
        "resourceslices",
        resource_slice(device(attributes={
        "v": {"versions": ["1.0.0", "x"]}})),
        refused=422, causes=(("spec.devices[0].attributes[v].versions[1]", "Invalid"),),
        message='Invalid value: "x": must be a string compatible with semver.org spec 2.0.0',
    ),
    # -- DeviceTaintRule ---------------------------------------------------------------------------
    "rule-accepted": Case(
        "devicetaintrules", taint_rule(key="example.com/broken", effect="NoSchedule"),
    ),
    "rule-effect-unknown": Case(
        "devicetaintrules", taint_rule(key="example.com/broken", effect="Sometimes"),
        refused=422, causes=(("spec.taint.effect", "NotSupported"),),
        message='Unsupported value: "Sometimes": supported values: "NoExecute", "NoSchedule", "None"',
    ),
    "rule-without-key": Case(
        "devicetaintrules", taint_rule(effect="NoSchedule"),
        refused=422, causes=(("spec.taint.key", "Invalid"), ("spec.taint.key", "Invalid")),
        message='Invalid value: "": name part must be non-empty',
    ),
    "rule-key-invalid": Case(
        "devicetaintrules", taint_rule(key="bad key", effect="NoSchedule"),
        refused=422, causes=(("spec.taint.key", "Invalid"),),
        message=('Invalid value: "bad key": name part must consist of alphanumeric characters, \'-\', \'_\' '
                 "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                 "'my.name',  or '123-abc', regex used for validation is "
                 "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    ),
    "rule-without-spec": Case(
        "devicetaintrules", {"apiVersion": V1, "kind": "DeviceTaintRule"},
        refused=422, causes=(
            ("spec.taint.key", "Invalid"),
            ("spec.taint.key", "Invalid"),
            ("spec.taint.effect", "Required"),
        ),
        message='Invalid value: "": name part must be non-empty',
    ),
    "rule-driver-invalid": Case(
        "devicetaintrules",
        {**taint_rule(key="k", effect="NoSchedule"), "spec": {
        "deviceSelector": {"driver": "Bad_Driver"}, "taint": {"key": "k", "effect": "NoSchedule"}}},
        refused=422, causes=(("spec.deviceSelector.driver", "Invalid"),),
        message=('Invalid value: "Bad_Driver": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "rule-value-invalid": Case(
        "devicetaintrules", taint_rule(key="k", value="bad value", effect="NoSchedule"),
        refused=422, causes=(("spec.taint.value", "Invalid"),),
        message=('Invalid value: "bad value": a valid label must be an empty string or consist of '
                 "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                 "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                 "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
    ),
    # -- Pods ---------------------------------------------------------------------------------------
    "pod-without-containers": Case(
        "pods", {**pod(), "spec": {}},
        refused=422, causes=(("spec.containers", "Required"),),
        message="Required value",
    ),
    "pod-container-without-image": Case(
        "pods", {**pod(), "spec": {"containers": [{"name": "main"}]}},
        refused=422, causes=(("spec.containers[0].image", "Required"),),
        message="Required value",
    ),
    "pod-duplicate-container": Case(
        "pods",
        {**pod(), "spec": {"containers": [
        {"name": "main", "image": "busybox"}, {"name": "main", "image": "busybox"}]}},
        refused=422, causes=(("spec.containers[1].name", "Duplicate"),),
        message='Duplicate value: "main"',
    ),
    "pod-claim-without-source": Case(
        "pods", pod(resourceClaims=[{"name": "gpu"}]),
        refused=422, causes=(("spec.resourceClaims[0]", "Invalid"),),
        message=('Invalid value: {"Name":"gpu","ResourceClaimName":null,"ResourceClaimTemplateName":null}: '
                 "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"),
    ),
    "pod-claim-with-both-sources": Case(
        "pods",
        pod(resourceClaims=[
        {"name": "gpu", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]),
        refused=422, causes=(("spec.resourceClaims[0]", "Invalid"),),
        message=('Invalid value: {"Name":"gpu","ResourceClaimName":"a","ResourceClaimTemplateName":"b"}: at '
                 "most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"),
    ),
    "pod-container-claim-unknown": Case(
        "pods",
        {**pod(), "spec": {"containers": [
        {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}]}},
        refused=422, causes=(("spec.containers[0].resources.claims[0]", "NotFound"),),
        message='Not found: "gpu": must be one of the names in pod.spec.resourceClaims which is empty',
    ),
    "pod-cpu-not-a-quantity": Case(
        "pods",
        {**pod(), "spec": {"containers": [
        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "12abc"}}}]}},
        refused=400, causes=(),
        message=("quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ),
    "pod-claim-name-invalid": Case(
        "pods", pod(resourceClaims=[{"name": "Bad_Name", "resourceClaimName": "c"}]),
        refused=422, causes=(("spec.resourceClaims[0].name", "Invalid"),),
        message=('Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case '
                 "alphanumeric characters or '-', and must start and end with an alphanumeric character "
                 "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "pod-claim-duplicate": Case(
        "pods",
        pod(resourceClaims=[{"name": "a", "resourceClaimName": "c"},
                            {"name": "a", "resourceClaimName": "c"}]),
        refused=422, causes=(("spec.resourceClaims[1].name", "Duplicate"),),
        message='Duplicate value: "a"',
    ),
    "pod-claim-reference-invalid": Case(
        "pods", pod(resourceClaims=[{"name": "a", "resourceClaimName": "Bad_Claim"}]),
        refused=422, causes=(("spec.resourceClaims[0].resourceClaimName", "Invalid"),),
        message=('Invalid value: "Bad_Claim": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "pod-container-claim-unknown-among-two": Case(
        "pods",
        {**pod(), "spec": {
        "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "a", "resourceClaimName": "c"}, {"name": "b", "resourceClaimName": "c"}]}},
        refused=422, causes=(("spec.containers[0].resources.claims[0]", "NotFound"),),
        message='Not found: "gpu": must be one of the names in pod.spec.resourceClaims: a, b',
    ),
    "pod-containers-not-a-list": Case(
        "pods", {**pod(), "spec": {"containers": "busybox"}},
        refused=400, causes=(),
        message=("json: cannot unmarshal string into Go struct field PodSpec.spec.containers of type "
                 "[]v1.Container"),
    ),
    "pod-port-past-int32": Case(
        "pods",
        {**pod(), "spec": {"containers": [
        {"name": "main", "image": "busybox", "ports": [{"containerPort": 2**31}]}]}},
        refused=400, causes=(),
        message=("json: cannot unmarshal number 2147483648 into Go struct field "
                 "ContainerPort.spec.containers.ports.containerPort of type int32"),
    ),
    "pod-null-container": Case(
        "pods", {**pod(), "spec": {"containers": [None]}},
        refused=422, causes=(
            ("spec.containers[0].name", "Required"),
            ("spec.containers[0].image", "Required"),
        ),
        message="Required value",
    ),
    "pod-unknown-field-strict": Case(
        "pods",
        {**pod(), "spec": {"containers": [
        {"name": "main", "image": "busybox", "colour": "red"}]}},
        query="fieldValidation=Strict",
        refused=400, causes=(),
        message='strict decoding error: unknown field "spec.containers[0].colour"',
    ),
    # -- names of other kinds ------------------------------------------------------------------------
    "namespace-name-not-a-label": Case(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace"}, name="bad.name",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message="must not contain dots",
    ),
    "core-event-name-lenient": Case(
        "events", CORE_EVENT, name="Bad_Name.1",
    ),
    "namespace-name-uppercase": Case(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace"}, name="Bad",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message=("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                 "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
                 "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"),
    ),
    "namespace-name-too-long": Case(
        "namespaces", {"apiVersion": "v1", "kind": "Namespace"}, name="a" * 64,
        # the second cause is the `kubernetes.io/metadata.name` label upstream gives every namespace
        refused=422, causes=(("metadata.name", "Invalid"), ("metadata.labels", "Invalid")),
        message="must be no more than 63 characters",
    ),
    "node-name-not-a-subdomain": Case(
        "nodes", {"apiVersion": "v1", "kind": "Node"}, name="Bad_Node",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message=("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                 "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
                 "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
    "core-event-name-with-slash": Case(
        "events", CORE_EVENT, name="a/b",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message='Invalid value: "a/b": may not contain \'/\'',
    ),
    "core-event-other-namespace": Case(
        "events",
        {**CORE_EVENT, "involvedObject": {"kind": "Pod", "name": "p",
                                         "namespace": "elsewhere"}},
        refused=422, causes=(("involvedObject.namespace", "Invalid"),),
        message='Invalid value: "elsewhere": does not match event.namespace',
    ),
    "event-other-namespace": Case(
        "events.k8s.io",
        {**EVENT, "regarding": {"kind": "Pod", "name": "p",
                               "namespace": "elsewhere"}},
        name="e.1",
    ),
    "event-name-strict": Case(
        "events.k8s.io", EVENT, name="Bad_Name.1",
        refused=422, causes=(("metadata.name", "Invalid"),),
        message=('Invalid value: "Bad_Name.1": a lowercase RFC 1123 subdomain must consist of lower case '
                 "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                 "(e.g. 'example.com', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ),
}

REASONS = {400: "BadRequest", 422: "Invalid"}


def send(server: Cluster, method: str, path: str, body: Obj, content_type: str) -> tuple[int, Obj]:
    """(0, the object) when the server takes the request, else (HTTP code, the Status), in either mode."""
    try:
        return 0, server.request(method, path, body, content_type)
    except urllib.error.HTTPError as exc:  # the sandbox, over urllib
        return exc.code, json.loads(exc.read() or b"{}")
    except kube_errors.DynamicApiError as exc:  # a real cluster, through the kubernetes client
        return int(exc.status), json.loads(exc.body or b"{}")


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_admission_answers_as_kube_apiserver(apiserver: Cluster, case: Case) -> None:
    if apiserver.get("v1", "Namespace", apiserver.namespace) is None:  # the sandbox makes it on first use only
        apiserver.seed([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": apiserver.namespace}}])
    prefix, namespaced = RESOURCES[case.resource]
    plural = case.resource.partition(".")[0]
    collection = f"{prefix}/namespaces/{apiserver.namespace}/{plural}" if namespaced else f"{prefix}/{plural}"
    name = case.name if namespaced or not case.name else apiserver.name(case.name)
    body = json.loads(json.dumps(case.body).replace("$NAMESPACE", apiserver.namespace))
    body["metadata"] = {**(body.get("metadata") or {}), "name": name}
    query = f"?{case.query}" if case.query else ""
    code, answer = send(apiserver, "POST", collection + query, body, "application/json")
    created = code == 0
    try:
        if case.update is not None:
            assert created, f"creating the object to update failed: {answer}"
            path = f"{collection}/{name}" + (f"/{case.subresource}" if case.subresource else "")
            if case.before is not None:
                first, answer = send(apiserver, "PATCH", path, case.before, "application/merge-patch+json")
                assert first == 0, f"the write before the case's failed: {answer}"
            code, answer = send(apiserver, "PATCH", path, case.update, "application/merge-patch+json")
        assert code == case.refused, answer
        if case.refused:
            assert answer["reason"] == REASONS[case.refused]
            causes = (answer.get("details") or {}).get("causes") or []
            assert [(c.get("field"), c["reason"].removeprefix("FieldValue")) for c in causes] == list(case.causes)
            assert case.message in answer["message"]
    finally:
        if created:  # cluster-scoped objects outlive the test's namespace
            send(apiserver, "DELETE", f"{collection}/{name}", {}, "application/json")
