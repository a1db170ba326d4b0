"""The demo's objects (`make run`) place as the demo says, on the sandbox and on a real control plane.

`dralloc demo` seeds the sandbox with the demo cluster (`dralloc.sandbox.demo_objects()`:
Nodes, DeviceClasses, the drivers' ResourceSlices) and applies examples/demo (read by
the demo's own `demo.load_yaml_dir`). This test takes the same objects, moves them
into its scope and seeds them with the operator running:

- namespaced objects go to the test's namespace (the examples' Namespace is dropped:
  the test's namespace stands in for it);
- cluster-scoped objects are renamed through `apiserver.name(...)`, and every reference
  to them with them: a slice's name, nodeName and pool (a pool is a node), the Nodes'
  `kubernetes.io/hostname`, the DeviceClass names in templates and claims; node labels
  that demo pods select on get the same suffix on the Nodes and in the pods'
  nodeSelector, so a pod can only land on this test's nodes;
- the demo's node heartbeat Leases are left out (on a real cluster the harness keeps
  its own for the nodes it seeds).

Anything in the demo this scoping does not understand (a new kind, a pod with
`nodeName` or affinity, a slice with a node selector) fails loudly instead of leaking
out of the test's scope.

The demo expects every one of its pods to be placed (`dralloc demo --once` exits 0 only
then), so there is no pod it expects to stay unschedulable; the test checks every pod
with the demo's own notion of placed (`demo.outcome(...).placed`: bound, each claim
allocated and reserved for it), then the devices: from the driver the request's class
selects, on the pod's node, no device in two claims, and no shared counter or
consumable capacity handed out beyond what the slices publish.
"""

from __future__ import annotations

import copy
from collections import Counter, defaultdict
from typing import Any

from tests.handlers import helpers
from tests.handlers.conftest import Cluster, OperatorThread, wait_for

from dralloc import demo
from dralloc.model import quantities
from dralloc.sandbox import demo_objects, seeds

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"
CLUSTER_KINDS = {"Node", "ResourceSlice", "DeviceClass"}
NAMESPACED_KINDS = {"Pod", "ResourceClaim", "ResourceClaimTemplate", "PodGroup"}
# The demo's classes: the driver each selects and, for the GPU driver, the device `type` attribute.
CLASSES = {"gpu": (seeds.GPU_DRIVER, "gpu"), "gpu-partition": (seeds.GPU_DRIVER, "partition"),
           "nic": (seeds.NIC_DRIVER, None)}


class Scope:
    """The demo's objects renamed into one test's scope (see the module docstring)."""

    def __init__(self, server: Cluster, cluster_objects: list[Obj], examples: list[Obj]) -> None:
        self.server = server
        self.cluster_objects = [o for o in cluster_objects if o["kind"] != "Lease"]
        self.examples = examples
        for obj in [*self.cluster_objects, *examples]:
            kind = obj["kind"]
            if kind not in CLUSTER_KINDS | NAMESPACED_KINDS | {"Namespace"}:
                raise AssertionError(f"test_demo_objects does not know how to scope a {kind} of the demo")
        self.nodes = {o["metadata"]["name"] for o in self.cluster_objects if o["kind"] == "Node"}
        self.classes = {o["metadata"]["name"] for o in self.cluster_objects if o["kind"] == "DeviceClass"}
        self.selected_labels = {HOSTNAME} | {key for o in examples if o["kind"] == "Pod"
                                             for key in (o["spec"].get("nodeSelector") or {})}

    def name(self, base: str) -> str:
        return self.server.name(base)

    def node(self, name: str) -> str:
        assert name in self.nodes, f"the demo refers to a node it does not have: {name}"
        return self.name(name)

    def device_class(self, name: str) -> str:
        assert name in self.classes, f"the demo refers to a DeviceClass it does not have: {name}"
        return self.name(name)

    def objects(self) -> list[Obj]:
        """What to seed, in the demo's order: its cluster first, then examples/demo."""
        adapted = [self._adapt(copy.deepcopy(o)) for o in [*self.cluster_objects, *self.examples]]
        return [o for o in adapted if o is not None]

    def _adapt(self, obj: Obj) -> Obj | None:
        kind, meta = obj["kind"], obj["metadata"]
        if kind == "Namespace":
            return None  # the test's namespace stands in for the demo's
        if kind in NAMESPACED_KINDS:
            meta.pop("namespace", None)
        else:
            meta["name"] = self.name(meta["name"])
        if kind == "Node":
            labels = meta.setdefault("labels", {})
            for key in self.selected_labels & set(labels):
                labels[key] = self.name(labels[key])
            assert labels[HOSTNAME] == meta["name"]
        elif kind == "ResourceSlice":
            spec = obj["spec"]
            unknown = {"nodeSelector", "perDeviceNodeSelection"} & set(spec)
            assert not unknown, f"ResourceSlice {meta['name']}: cannot scope {sorted(unknown)}"
            if spec.get("nodeName"):
                spec["nodeName"] = self.node(spec["nodeName"])
            assert spec["pool"]["name"] in self.nodes, "the demo's pools are its nodes"
            spec["pool"]["name"] = self.node(spec["pool"]["name"])
        elif kind == "ResourceClaimTemplate":
            self._requests(obj["spec"]["spec"]["devices"]["requests"])
        elif kind == "ResourceClaim":
            self._requests(obj["spec"]["devices"]["requests"])
        elif kind == "Pod":
            spec = obj["spec"]
            unknown = {"nodeName", "affinity"} & set(spec)
            assert not unknown, f"Pod {meta['name']}: cannot scope {sorted(unknown)}"
            if spec.get("nodeSelector"):
                spec["nodeSelector"] = {k: self.name(v) for k, v in spec["nodeSelector"].items()}
        return obj

    def _requests(self, requests: list[Obj]) -> None:
        for request in requests:
            for exact in [request.get("exactly"), *(request.get("firstAvailable") or [])]:
                if exact:
                    exact["deviceClassName"] = self.device_class(exact["deviceClassName"])


def published(server: Cluster, scope: Scope) -> tuple[dict[tuple[str, str, str], Obj], dict[tuple[str, str, str], Any]]:
    """The test's devices by (driver, pool, device), and each shared counter's value by (pool, set, counter)."""
    devices: dict[tuple[str, str, str], Obj] = {}
    counters: dict[tuple[str, str, str], Any] = {}
    pools = {scope.name(n) for n in scope.nodes}
    for slice_ in server.list_objects("resource.k8s.io/v1", "ResourceSlice"):
        spec = slice_["spec"]
        if spec["pool"]["name"] not in pools:
            continue
        for device in spec.get("devices") or []:
            devices[(spec["driver"], spec["pool"]["name"], device["name"])] = device
        for counter_set in spec.get("sharedCounters") or []:
            for counter, value in counter_set["counters"].items():
                counters[(spec["pool"]["name"], counter_set["name"], counter)] = quantities.Quantity.parse(
                    value["value"]).value
    return devices, counters


def request_classes(claim: Obj) -> dict[str, str]:
    """A claim's request (and `request/subrequest`) names -> the DeviceClass each names (scoped, as stored)."""
    found = {}
    for request in claim["spec"]["devices"]["requests"]:
        if request.get("exactly"):
            found[request["name"]] = request["exactly"]["deviceClassName"]
        for sub in request.get("firstAvailable") or []:
            found[f"{request['name']}/{sub['name']}"] = sub["deviceClassName"]
    return found


def test_every_demo_pod_is_placed_on_the_demo_cluster(apiserver: Cluster, operator: OperatorThread) -> None:
    """Every pod of examples/demo is bound with its claims allocated from the right drivers, nothing double-booked."""
    examples = demo.load_yaml_dir(demo.DEFAULT_EXAMPLES)
    pods = [name for _, name in demo.demo_pods(examples)]
    assert pods, "examples/demo has no pods"
    scope = Scope(apiserver, demo_objects(), examples)
    apiserver.seed(scope.objects())

    def placed() -> list[demo.PodOutcome] | None:
        # demo.outcome only reads through server.get(apiVersion, kind, name, namespace), which both modes offer.
        results = [demo.outcome(apiserver, apiserver.namespace, name) for name in pods]
        return results if all(r.placed for r in results) else None

    try:
        results = wait_for(placed, timeout=180 if apiserver.real else 60, what="every demo pod placed")
    except AssertionError:
        late = [r for r in (demo.outcome(apiserver, apiserver.namespace, n) for n in pods)
                if not r.placed]
        raise AssertionError("demo pods not placed: " + "; ".join(
            f"{r.name}: node={r.node} claims={r.claims} message={r.message!r}" for r in late)) from None

    nodes = {scope.name(n) for n in scope.nodes}
    devices, counters = published(apiserver, scope)
    node_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                   for n in apiserver.list_objects("v1", "Node") if n["metadata"]["name"] in nodes}
    used: Counter[tuple[str, str, str]] = Counter()
    consumed: dict[tuple[str, str, str], Any] = defaultdict(int)
    capacity_used: dict[tuple[str, str, str, str], Any] = defaultdict(int)
    claims_seen: set[str] = set()
    for result in results:
        assert result.node in nodes, f"{result.name} on {result.node}, not one of the test's nodes"
        pod = helpers.pod(apiserver, result.name)
        for selector_key, value in (pod["spec"].get("nodeSelector") or {}).items():
            assert node_labels[result.node].get(selector_key) == value, f"{result.name}: nodeSelector not honoured"
        for outcome in result.claims:
            assert outcome.claim is not None
            claim = helpers.claim(apiserver, outcome.claim)
            classes = request_classes(claim)
            allocation = claim["status"]["allocation"]
            pinned = [f["values"] for term in allocation["nodeSelector"]["nodeSelectorTerms"]
                      for f in term.get("matchFields") or []]
            assert pinned == [[result.node]], f"{outcome.claim}: allocated for {pinned}, the pod is on {result.node}"
            for r in allocation["devices"]["results"]:
                demo_class = next(c for c in scope.classes if scope.name(c) == classes[r["request"]])
                driver, device_type = CLASSES[demo_class]
                key = (r["driver"], r["pool"], r["device"])
                assert r["driver"] == driver, f"{outcome.claim} {r['request']}: {key} is not from {driver}"
                assert r["pool"] == result.node, f"{outcome.claim}: {key} is not on {result.node}"
                device = devices[key]
                if device_type is not None:
                    assert device["attributes"]["type"]["string"] == device_type, f"{key} is not a {device_type}"
                if outcome.claim in claims_seen:
                    continue  # a shared claim: its devices count once
                if device.get("allowMultipleAllocations"):
                    assert r.get("shareID"), f"{key}: a share without a shareID"
                    for name, value in (r.get("consumedCapacity") or {}).items():
                        capacity_used[(*key, name)] += quantities.Quantity.parse(value).value
                else:
                    used[key] += 1
                for consumption in device.get("consumesCounters") or []:
                    for counter, value in consumption["counters"].items():
                        consumed[(r["pool"], consumption["counterSet"], counter)] += quantities.Quantity.parse(
                            value["value"]).value
            claims_seen.add(outcome.claim)
    assert [key for key, count in used.items() if count > 1] == [], "devices in two claims"
    assert {k: v for k, v in consumed.items() if v > counters[k]} == {}, "shared counters overcommitted"
    over = {k: v for k, v in capacity_used.items()
            if v > quantities.Quantity.parse(devices[k[:3]]["capacity"][k[3]]["value"]).value}
    assert over == {}, "consumable capacity overcommitted"

    # What the demo's comments promise beyond placement.
    by_name = {r.name: r for r in results}
    trainers = [r for r in results if r.name.startswith("trainer-")]
    assert len(trainers) == 4
    for trainer in trainers:
        (claim_outcome,) = trainer.claims
        claim = helpers.claim(apiserver, claim_outcome.claim or "")
        domains = {devices[(r["driver"], r["pool"], r["device"])]["attributes"]["nvlinkDomain"]["string"]
                   for r in claim["status"]["allocation"]["devices"]["results"]}
        assert len(domains) == 1, f"{trainer.name}: GPUs of several NVLink domains {domains}"
    ampere = by_name["inference-ampere"]
    assert node_labels[ampere.node or ""]["gpu.dralloc.dev/architecture"] == scope.name("ampere")
    assert [d.split("=")[0] for d in ampere.claims[0].devices] == ["gpu/slice"], "no H100 there: the 3g.40gb slice"
    assert by_name["shared-writer"].node == by_name["shared-reader"].node
