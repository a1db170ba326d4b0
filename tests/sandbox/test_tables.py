"""Server-side printing: the Tables kubectl asks for, columns and cells as kube-apiserver prints them."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from tests.sandbox.conftest import Http

from dralloc.sandbox import tables

Obj = dict[str, Any]
KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
                  "g=meta.k8s.io,application/json")
RES = "/apis/resource.k8s.io/v1"
PODS = "/api/v1/namespaces/default/pods"
CLAIMS = f"{RES}/namespaces/default/resourceclaims"
NOW = datetime.datetime(2026, 6, 1, 12, 0, 0, tzinfo=datetime.UTC)


async def get_table(http: Http, path: str, accept: str = KUBECTL_ACCEPT, **params: str) -> tuple[int, Obj]:
    async with http.session.get(http.url + path, params=params, headers={"Accept": accept}) as resp:
        return resp.status, await resp.json()


def columns(table: Obj) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table["columnDefinitions"]]


def by_name(table: Obj) -> dict[str, list[Any]]:
    """Rows keyed by their Name cell."""
    index = [c["name"] for c in table["columnDefinitions"]].index("Name")
    return {row["cells"][index]: row["cells"] for row in table["rows"]}


@pytest.mark.parametrize(("seconds", "text"), [
    (-2, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"), (599, "9m59s"),
    (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 1800, "3h30m"), (8 * 3600, "8h"),
    (47 * 3600 + 59 * 60, "47h"), (48 * 3600, "2d"), (49 * 3600, "2d1h"), (8 * 86400, "8d"),
    (2 * 365 * 86400, "2y"), (2 * 365 * 86400 + 86400, "2y1d"), (8 * 365 * 86400 + 86400, "8y"),
])
def test_human_duration(seconds: int, text: str) -> None:
    assert tables.human_duration(seconds) == text


@pytest.mark.parametrize(("accept", "version"), [
    (KUBECTL_ACCEPT, "meta.k8s.io/v1"),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", "meta.k8s.io/v1beta1"),
    ("application/json", None),
    ("", None),
    ("application/json;as=Table;v=v1;g=example.com,application/json", None),
    ("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", None),
])
def test_negotiation_takes_the_first_acceptable_choice(accept: str, version: str | None) -> None:
    assert tables.negotiate(accept) == version


async def test_pod_table_has_wide_columns_and_partial_metadata(http: Http) -> None:
    await http.post(PODS, {"metadata": {"name": "p"}, "spec": {
        "nodeName": "node-1", "containers": [{"name": "a", "image": "i"}, {"name": "b", "image": "i"}]}})
    code, table = await get_table(http, PODS)
    assert code == 200 and table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert columns(table) == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0),
                              ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert table["columnDefinitions"][0]["format"] == "name"
    assert table["columnDefinitions"][0]["description"].startswith("Name must be unique within a namespace.")
    assert table["columnDefinitions"][6]["description"].startswith("NodeName indicates in which node")
    [row] = table["rows"]
    name, ready, status, restarts, _age, ip, node, nominated, gates = row["cells"]
    assert (name, ready, status, restarts, ip, node, nominated, gates) == (
        "p", "0/2", "Pending", "0", "<none>", "node-1", "<none>", "<none>")
    assert row["object"]["kind"] == "PartialObjectMetadata"
    assert row["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert row["object"]["metadata"]["name"] == "p" and "spec" not in row["object"]
    assert table["metadata"]["resourceVersion"]


async def test_include_object_and_single_get(http: Http) -> None:
    _, created = await http.post(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a",
                                                                                             "image": "i"}]}})
    _, full = await get_table(http, PODS, includeObject="Object")
    assert full["rows"][0]["object"]["spec"]["containers"][0]["name"] == "a"
    _, bare = await get_table(http, PODS, includeObject="None")
    assert bare["rows"][0]["object"] is None
    code, status = await get_table(http, PODS, includeObject="Everything")
    assert code == 400 and status["message"] == 'unrecognized includeObject value: "Everything"'
    _, single = await get_table(http, f"{PODS}/p")
    assert len(single["rows"]) == 1 and single["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    _, beta = await get_table(http, f"{PODS}/p", accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1" and beta["rows"][0]["object"]["apiVersion"] == \
        "meta.k8s.io/v1beta1"
    code, plain = await get_table(http, f"{PODS}/p", accept="application/json")
    assert code == 200 and plain["kind"] == "Pod"


def pod(status: Obj, **spec: Any) -> Obj:
    return {"metadata": {"name": "p", "creationTimestamp": "2026-06-01T11:00:00Z"},
            "spec": {"containers": [{"name": "a"}], **spec}, "status": status}


def running(name: str = "a", restarts: int = 0, finished: str | None = None) -> Obj:
    status: Obj = {"name": name, "ready": True, "restartCount": restarts, "state": {"running": {}}}
    if finished:
        status["lastState"] = {"terminated": {"exitCode": 1, "finishedAt": finished}}
    return status


@pytest.mark.parametrize(("obj", "ready", "status", "restarts"), [
    (pod({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                              "reason": "SchedulingGated"}]}), "0/1", "SchedulingGated", "0"),
    (pod({"phase": "Running", "containerStatuses": [running(restarts=2, finished="2026-06-01T11:55:00Z")]}),
     "1/1", "Running", "2 (5m ago)"),
    (pod({"phase": "Running", "containerStatuses": [
        {"name": "a", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}),
     "0/1", "CrashLoopBackOff", "4"),
    (pod({"phase": "Failed", "containerStatuses": [
        {"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 9}}}]}), "0/1", "Signal:9", "0"),
    (pod({"phase": "Pending", "initContainerStatuses": [{"name": "init", "state": {"waiting": {}}}]},
         initContainers=[{"name": "init"}]), "0/1", "Init:0/1", "0"),
    (pod({"phase": "Pending", "initContainerStatuses": [
        {"name": "init", "state": {"terminated": {"exitCode": 3}}}]}, initContainers=[{"name": "init"}]),
     "0/1", "Init:ExitCode:3", "0"),
    (pod({"phase": "Running", "initContainerStatuses": [
        {"name": "side", "started": True, "ready": True, "state": {"running": {}}}],
        "containerStatuses": [running()], "conditions": [{"type": "Initialized", "status": "True"}]},
        initContainers=[{"name": "side", "restartPolicy": "Always"}]), "2/2", "Running", "0"),
    (pod({"phase": "Running", "containerStatuses": [
        {"name": "a", "ready": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        running("b")], "conditions": [{"type": "Ready", "status": "False"}]},
        containers=[{"name": "a"}, {"name": "b"}]), "1/2", "NotReady", "0"),
])
def test_pod_status_cells(obj: Obj, ready: str, status: str, restarts: str) -> None:
    cells, _ = tables.PRINTERS[("", "pods")][1](obj, NOW)
    assert cells[1:5] == [ready, status, restarts, "60m"]


def test_terminating_and_completed_pods() -> None:
    printer = tables.PRINTERS[("", "pods")][1]
    deleting = pod({"phase": "Running", "containerStatuses": [running()]})
    deleting["metadata"]["deletionTimestamp"] = "2026-06-01T11:59:00Z"
    assert printer(deleting, NOW)[0][2] == "Terminating"
    done = pod({"phase": "Succeeded"})
    done["metadata"]["deletionTimestamp"] = "2026-06-01T11:59:00Z"
    cells, conditions = printer(done, NOW)
    assert cells[2] == "Succeeded"
    assert conditions == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                           "message": "The pod has completed successfully."}]
    gated = pod({}, readinessGates=[{"conditionType": "x"}, {"conditionType": "y"}])
    gated["status"] = {"conditions": [{"type": "x", "status": "True"}], "podIPs": [{"ip": "10.0.0.7"}]}
    assert printer(gated, NOW)[0][5:] == ["10.0.0.7", "<none>", "<none>", "1/2"]


async def test_node_table(http: Http) -> None:
    await http.post("/api/v1/nodes", {"metadata": {"name": "n1", "labels": {
        "node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/worker": "",
        "kubernetes.io/role": "gpu"}}, "spec": {"unschedulable": True}})
    await http.post("/api/v1/nodes", {"metadata": {"name": "n2"}})
    await http.patch("/api/v1/nodes/n1/status", {"status": {
        "conditions": [{"type": "Ready", "status": "False"}], "nodeInfo": {"kubeletVersion": "v1.37.0",
                                                                         "osImage": "Linux"},
        "addresses": [{"type": "InternalIP", "address": "10.1.0.1"}]}})
    _, table = await get_table(http, "/api/v1/nodes")
    assert columns(table) == [("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0),
                              ("Internal-IP", 1), ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1),
                              ("Container-Runtime", 1)]
    rows = by_name(table)
    assert rows["n1"][1:3] == ["NotReady,SchedulingDisabled", "control-plane,gpu,worker"]
    assert rows["n1"][4:] == ["v1.37.0", "10.1.0.1", "<none>", "Linux", "<unknown>", "<unknown>"]
    assert rows["n2"][1:3] == ["Unknown", "<none>"]


async def test_resource_claim_states(http: Http) -> None:
    def body(name: str) -> Obj:
        return {"metadata": {"name": name, "finalizers": ["example.dev/hold"]},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}

    allocation = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "x"}]}}
    for name in ("pending", "allocated", "reserved", "gone"):
        await http.post(CLAIMS, body(name))
    for name in ("allocated", "reserved", "gone"):
        await http.patch(f"{CLAIMS}/{name}/status", {"status": {"allocation": allocation}})
    await http.patch(f"{CLAIMS}/reserved/status", {"status": {"reservedFor": [
        {"resource": "pods", "name": "p", "uid": "u1"}]}})
    await http.delete(f"{CLAIMS}/gone")
    _, table = await get_table(http, CLAIMS)
    assert columns(table) == [("Name", 0), ("State", 0), ("Age", 0)]
    states = {name: cells[1] for name, cells in by_name(table).items()}
    assert states == {"pending": "pending", "allocated": "allocated", "reserved": "allocated,reserved",
                      "gone": "deleted,allocated"}


async def test_dra_cluster_objects(http: Http) -> None:
    await http.post(f"{RES}/deviceclasses", {"metadata": {"name": "gpu"}, "spec": {}})
    await http.post(f"{RES}/resourceslices", {"metadata": {"name": "s"}, "spec": {
        "driver": "gpu.example.com", "nodeName": "node-0", "pool": {"name": "pool-a", "generation": 1,
                                                                     "resourceSliceCount": 1},
        "devices": [{"name": "gpu-0"}]}})
    _, classes = await get_table(http, f"{RES}/deviceclasses")
    assert columns(classes) == [("Name", 0), ("Age", 0)] and by_name(classes)["gpu"][0] == "gpu"
    _, slices = await get_table(http, f"{RES}/resourceslices")
    assert columns(slices) == [("Name", 0), ("Node", 0), ("Driver", 0), ("Pool", 0), ("Age", 0)]
    assert by_name(slices)["s"][:4] == ["s", "node-0", "gpu.example.com", "pool-a"]
    assert slices["columnDefinitions"][2]["description"].startswith("Driver identifies the DRA driver")


async def test_events_print_alike_in_both_groups(http: Http) -> None:
    await http.post("/api/v1/namespaces/default/events", {
        "metadata": {"name": "e1"}, "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.x"},
        "reason": "Scheduled", "message": " assigned \n", "type": "Normal",
        "source": {"component": "default-scheduler", "host": "h"}, "count": 3,
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"})
    await http.post("/apis/events.k8s.io/v1/namespaces/default/events", {
        "metadata": {"name": "e2"}, "regarding": {"kind": "ResourceClaim", "name": "c"}, "reason": "Allocated",
        "note": "ok", "type": "Warning", "action": "Allocate", "reportingController": "dralloc.dev/x",
        "reportingInstance": "replica-a", "eventTime": "2026-01-01T00:00:00.000000Z"})
    _, core = await get_table(http, "/api/v1/namespaces/default/events")
    _, modern = await get_table(http, "/apis/events.k8s.io/v1/namespaces/default/events")
    assert columns(core) == [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                             ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)]
    assert [r["cells"][1:] for r in core["rows"]] == [r["cells"][1:] for r in modern["rows"]]
    rows = by_name(core)
    assert rows["e1"][1:7] == ["Normal", "Scheduled", "pod/web", "spec.x", "default-scheduler, h", "assigned"]
    assert rows["e1"][8] == 3
    assert rows["e2"][1:7] == ["Warning", "Allocated", "resourceclaim/c", "", "dralloc.dev/x, replica-a", "ok"]
    assert rows["e2"][8] == 1 and rows["e2"][0] == rows["e2"][7]


async def test_table_watch_sends_columns_once(http: Http) -> None:
    await http.post(PODS, {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    await http.post(PODS, {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    events = []
    async with http.session.get(http.url + PODS, params={"watch": "true", "resourceVersion": "0"},
                                headers={"Accept": KUBECTL_ACCEPT}) as resp:
        async for line in resp.content:
            events.append(json.loads(line))
            if len(events) == 2:
                break
    assert [e["object"]["kind"] for e in events] == ["Table", "Table"]
    assert columns(events[0]["object"])[0] == ("Name", 0)
    assert events[1]["object"]["columnDefinitions"] is None
    assert sorted(e["object"]["rows"][0]["cells"][0] for e in events) == ["a", "b"]


async def test_generic_and_custom_resource_tables(http: Http) -> None:
    await http.post(f"{RES}/devicetaintrules", {"metadata": {"name": "t"}, "spec": {
        "deviceSelector": {"driver": "d"}, "taint": {"key": "k", "effect": "NoSchedule"}}})
    _, generic = await get_table(http, f"{RES}/devicetaintrules")
    assert [(c["name"], c["type"]) for c in generic["columnDefinitions"]] == [("Name", "string"),
                                                                              ("Created At", "date")]
    assert generic["rows"][0]["cells"][1].endswith("Z")
    crd = {"metadata": {"name": "widgets.example.dev"}, "spec": {
        "group": "example.dev", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                      "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                                   {"name": "Tag", "type": "string", "jsonPath": ".spec.tags[1]",
                                                    "priority": 1}]}]}}
    await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await http.post("/apis/example.dev/v1/namespaces/default/widgets",
                    {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                     "spec": {"size": 3, "tags": ["a", "b"]}})
    _, custom = await get_table(http, "/apis/example.dev/v1/namespaces/default/widgets")
    assert columns(custom) == [("Name", 0), ("Size", 0), ("Tag", 1)]
    assert custom["rows"][0]["cells"] == ["w", 3, "b"]


async def test_printer_columns_with_a_filter_show_the_condition(http: Http) -> None:
    """dralloc's own CRDs print a condition's status (`.status.conditions[?(@.type=="Ready")].status`), as
    kube-apiserver's table convertor does: the first match, empty when there is none (issue 32: the
    sandbox left ACCEPTED and READY empty)."""
    crd = {"metadata": {"name": "gadgets.example.dev"}, "spec": {
        "group": "example.dev", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                      "additionalPrinterColumns": [
                          {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                          {"name": "Seen", "type": "string", "jsonPath": ".status.conditions[?(@.type=='Seen')].reason"}]}]}}
    await http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    await http.post("/apis/example.dev/v1/gadgets", {"apiVersion": "example.dev/v1", "kind": "Gadget",
                                                     "metadata": {"name": "g"}})
    _, before = await get_table(http, "/apis/example.dev/v1/gadgets")
    assert before["rows"][0]["cells"] == ["g", None, None]
    await http.put("/apis/example.dev/v1/gadgets/g/status", {
        "apiVersion": "example.dev/v1", "kind": "Gadget", "metadata": {"name": "g"},
        "status": {"conditions": [{"type": "Seen", "status": "True", "reason": "Looked"},
                                  {"type": "Ready", "status": "False", "reason": "Waiting"}]}})
    _, after = await get_table(http, "/apis/example.dev/v1/gadgets")
    assert after["rows"][0]["cells"] == ["g", "False", "Looked"]
