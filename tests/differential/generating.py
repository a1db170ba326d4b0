"""Seeded random allocation cases in the conformance vector format, for differential testing.

`case(seed)` is a pure function of the seed: the same seed gives the same case on every
machine (only `random.Random(seed)` is used). Cases are small (at most 4 pools of 1-3
slices of 0-4 devices, 1-3 claims of 1-3 requests) so that both allocators answer fast,
and cover, with the gates that govern them randomly on or off:

- pools: slices on node-1, node-2, all nodes, a node selector, or per-device node
  selection; several slices per pool in any name order; incomplete pools
  (resourceSliceCount too high), invalid pools (a device name twice), outdated slices
  (older generation); two drivers that use the same pool name;
- devices: int/string/bool/version attributes, some missing, some fully qualified,
  list-typed attributes (ints, strings) with DRAListTypeAttributes on and off (with it off,
  some without their value, as kube-apiserver stores them then); capacity,
  `allowMultipleAllocations` with request policies (default, validRange, validValues);
  taints (NoSchedule, NoExecute); counters (a pool's sharedCounters slice and devices
  consuming from its counter sets; sometimes an unknown set); binding conditions;
- classes: no selector, a driver selector, a CEL selector on capacity; opaque config;
- requests: `exactly` or `firstAvailable`, ExactCount 1-3 or All, CEL selectors on
  attributes, capacity, versions, lists and `allowMultipleAllocations` (a few that fail to
  compile or fail at run time), adminAccess, tolerations, capacity requests, now and then
  an unknown class or more than 32 devices;
- constraints: matchAttribute / distinctAttribute over all or some requests (also
  subrequests), on scalar, list-typed and missing attributes; claim config;
- already-allocated claims: exclusive, admin-access and shared (shareID and
  consumedCapacity) results on devices anywhere in the cluster;
- now and then (with adminAccess and consumable capacity on) a small "admin tooling"
  case: a pool whose first device is shared, one claim of alike adminAccess requests;
- for 1.37 (`case(seed, "1.37")`, `_with_1_37`): its alpha gates, compatibility groups,
  fractional capacity ranges, skipNodeOperations with the node's declaredFeatures, and
  derived attributes (with their gate off: refused; on: computed for constraints);
- for 1.38 (`_with_1_38`): build metadata on versions, values 1.38 cannot convert, plain and
  qualified names for one attribute, selectors reading them, capacity request names.
"""

from __future__ import annotations

import copy
import random
import uuid
from typing import Any

DRIVERS = ("a.example.com", "b.example.com")
GATES = ("DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
         "DRAConsumableCapacity")
NODE = {"name": "node-1", "labels": {"zone": "z1", "rack": "r1"}}
OTHER_NODE = "node-2"

GUARDED = 'device.attributes[device.driver]'
SELECTORS = (
    'device.driver == "a.example.com"',
    'device.driver == "b.example.com"',
    f'"numa" in {GUARDED} && {GUARDED}.numa == 0',
    f'"numa" in {GUARDED} && {GUARDED}.numa > 0',
    f'"model" in {GUARDED} && {GUARDED}.model == "x"',
    f'"ecc" in {GUARDED} && {GUARDED}.ecc',
    f'"ver" in {GUARDED} && {GUARDED}.ver.isGreaterThan(semver("1.5.0"))',
    '"memory" in device.capacity[device.driver] && '
    'device.capacity[device.driver].memory.compareTo(quantity("8Gi")) >= 0',
    'has(device.attributes["a.example.com"].numa)',
    '!("model" in device.attributes["a.example.com"]) || device.attributes["a.example.com"].model != "y"',
    'device.allowMultipleAllocations',
    f'"tags" in {GUARDED} && "x" in {GUARDED}.tags',
    f'"numas" in {GUARDED} && {GUARDED}.numas.exists(n, n == 1)',
)
# Rare: these fail, at compile time or on some devices at run time.
BAD_SELECTORS = (
    f'{GUARDED}.model == "x"',  # a device without the attribute: runtime error
    f'{GUARDED}.numa ==',  # does not compile
    f'{GUARDED}.numa + 1',  # not a bool
)
# Derived attributes (DRADerivedAttributes): what a request computes for a constraint to compare.
DERIVED = (
    f'"numa" in {GUARDED} ? {GUARDED}.numa : -1',
    f'{GUARDED}.?numa.orValue(0) % 2',
    f'"model" in {GUARDED} ? {GUARDED}.model : "none"',
    'device.driver', '1', '"x"', 'true', '[0, 1]', '[1]', 'semver("1.0.0")',
    f'"numas" in {GUARDED} ? {GUARDED}.numas : [7]',
    f'{GUARDED}.?ver.orValue(semver("0.0.1"))',
    'device.allowMultipleAllocations',
)
BAD_DERIVED = (
    f'{GUARDED}.numa',  # fails on a device without the attribute
    '1.5',  # not an attribute type: does not compile
    'dyn(1.5)',  # compiles, fails at run time
    f'{GUARDED}.numa +',  # syntax error
)
CONSTRAINT_ATTRIBUTES = (
    "a.example.com/numa", "a.example.com/numa", "a.example.com/numa", "a.example.com/model",
    "a.example.com/model", "a.example.com/ecc", "a.example.com/ver", "a.example.com/tags",
    "a.example.com/numas", "b.example.com/numa", "a.example.com/missing",
)
MEMORY = ("4Gi", "8Gi", "16Gi")


def chance(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def _features(rng: random.Random) -> list[str]:
    on = [g for g in GATES if chance(rng, 0.75)]
    if chance(rng, 0.2):
        # Only what the stable channel supports: upstream then walks pools in map order.
        return on[:-1] if on and on[-1] == "DRAConsumableCapacity" else on
    roll = rng.random()
    if roll < 0.6:
        on += ["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"]
    elif roll < 0.7:
        on.append(rng.choice(["DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus"]))
    if chance(rng, 0.4):
        on.append("DRAListTypeAttributes")
    return on


def _placement(rng: random.Random, kind: str) -> dict[str, Any]:
    if kind == "node-1":
        return {"nodeName": "node-1"}
    if kind == "node-2":
        return {"nodeName": OTHER_NODE}
    if kind == "all":
        return {"allNodes": True}
    if kind == "selector":
        zone = rng.choice(["z1", "z1", "z2"])
        return {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": [zone]}]}]}}
    return {"perDeviceNodeSelection": True}


def _attributes(rng: random.Random, driver: str, lists: float, dropped: bool) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if chance(rng, 0.9):
        attrs["numa"] = {"int": rng.choice([0, 0, 1, 2])}
    if chance(rng, 0.8):
        attrs["model"] = {"string": rng.choice(["x", "x", "y"])}
    if chance(rng, 0.6):
        attrs["ecc"] = {"bool": chance(rng, 0.5)}
    if chance(rng, 0.5):
        attrs["ver"] = {"version": rng.choice(["1.0.0", "2.1.0", "2.1.0"])}
    if chance(rng, 0.15 * lists):
        attrs["tags"] = {"strings": rng.choice([["x", "y"], ["y", "z"], ["x"]])}
    if chance(rng, 0.1 * lists):
        attrs["numas"] = {"ints": rng.choice([[0, 1], [1], [1, 2]])}
    if chance(rng, 0.04 * lists) and "numa" in attrs:
        attrs["numa"] = {"ints": [attrs["numa"]["int"], 3]}  # the same name as a list on this device
    if chance(rng, 0.1) and "numa" in attrs:
        attrs[f"{driver}/numa"] = attrs.pop("numa")  # fully qualified in its own domain
    if dropped:
        # What kube-apiserver stores for a list attribute written with DRAListTypeAttributes off:
        # the attribute without its value.
        for name, value in attrs.items():
            if set(value) & {"ints", "strings", "bools", "versions"} and chance(rng, 0.5):
                attrs[name] = {}
    return attrs


def _capacity(rng: random.Random, shared: bool) -> dict[str, Any]:
    capacity: dict[str, Any] = {}
    if chance(rng, 0.7) or shared:
        memory: dict[str, Any] = {"value": rng.choice(MEMORY)}
        if shared and chance(rng, 0.6):
            policy = rng.choice(["default", "range", "values"])
            if policy == "default":
                memory["requestPolicy"] = {"default": "2Gi"}
            elif policy == "range":
                memory["requestPolicy"] = {"default": "1Gi", "validRange": {"min": "1Gi", "step": "1Gi"}}
            else:
                memory["requestPolicy"] = {"default": "1Gi", "validValues": ["1Gi", "2Gi", "4Gi"]}
        capacity["memory"] = memory
    if chance(rng, 0.25):
        capacity["cores"] = {"value": rng.choice(["2", "4"])}
    return capacity


def _device(rng: random.Random, name: str, driver: str, counter_sets: list[str],
            per_device: bool, lists: float) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name}
    attrs = _attributes(rng, driver, lists, dropped=lists < 1)
    if attrs:
        device["attributes"] = attrs
    shared = chance(rng, 0.2)
    capacity = _capacity(rng, shared)
    if capacity:
        device["capacity"] = capacity
    if shared:
        device["allowMultipleAllocations"] = True
    if chance(rng, 0.15):
        taints = [{"key": "k1", "value": "v1", "effect": rng.choice(["NoSchedule", "NoExecute"])}]
        if chance(rng, 0.2):
            taints.append({"key": "k2", "effect": "NoSchedule"})
        device["taints"] = taints
    if counter_sets and chance(rng, 0.75):
        if chance(rng, 0.015):
            device["consumesCounters"] = [{"counterSet": "cs-unknown", "counters": {"mem": {"value": "1Gi"}}}]
        else:
            device["consumesCounters"] = [{"counterSet": rng.choice(counter_sets),
                                           "counters": {"mem": {"value": rng.choice(["2Gi", "4Gi", "8Gi"])}}}]
    if chance(rng, 0.08):
        device["bindingConditions"] = ["ready"]
        device["bindingFailureConditions"] = ["failed"]
        if chance(rng, 0.5):
            device["bindsToNode"] = True
    if per_device:
        where = rng.choice(["node-1", "node-1", "node-2", "all"])
        device.update({"nodeName": "node-1"} if where == "node-1" else
                      {"nodeName": OTHER_NODE} if where == "node-2" else {"allNodes": True})
    return device


def _slice(name: str, driver: str, pool: str, generation: int, count: int,
           placement: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver,
                     "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
                     **placement, **spec}}


def _pools(rng: random.Random, features: list[str]) -> list[dict[str, Any]]:
    # List-typed attributes break most selectors with their gate off (upstream 1.36: an error):
    # fewer of them then, so that they do not hide everything else.
    lists = 1.0 if "DRAListTypeAttributes" in features else 0.25
    slices: list[dict[str, Any]] = []
    used_names: set[str] = set()
    for p in range(rng.choice([1, 2, 2, 3, 3, 4])):
        driver = DRIVERS[0] if p == 0 or chance(rng, 0.6) else DRIVERS[1]
        pool = f"pool-{p}"
        if p > 0 and chance(rng, 0.1):
            pool = "pool-0"  # the same pool name as another (maybe the other driver's) pool
            driver = DRIVERS[1] if slices and slices[0]["spec"]["driver"] == DRIVERS[0] else DRIVERS[0]
        kind = "node-1" if p == 0 else rng.choice(["node-1"] * 4 + ["node-2", "all", "selector", "per-device"])
        placement = _placement(rng, kind)
        n_device_slices = rng.choice([1, 1, 1, 2, 2, 3])
        counter_sets: list[str] = []
        counter_slice = None
        if chance(rng, 0.3):
            counter_sets = [f"cs-{i}" for i in range(rng.choice([1, 1, 2]))]
            where = placement if kind != "per-device" else {"allNodes": True}
            if chance(rng, 0.15):
                where = rng.choice([{"nodeName": OTHER_NODE}, {"allNodes": True}])
            counter_slice = (where, [{"name": cs, "counters": {"mem": {"value": rng.choice(["8Gi", "16Gi"])}}}
                                     for cs in counter_sets])
        total = n_device_slices + (1 if counter_slice else 0)
        declared = total + 1 if chance(rng, 0.07) else total
        names = [f"{pool}-{driver[0]}-s{i}" for i in rng.sample(range(10), total)]
        invalid = chance(rng, 0.05)
        device_index = 0
        for s in range(n_device_slices):
            devices = []
            for _ in range(rng.choice([0, 1, 2, 2, 3, 3, 4, 4])):
                devices.append(_device(rng, f"dev-{device_index}", driver, counter_sets, kind == "per-device",
                                       lists))
                device_index += 1
            if invalid and s == n_device_slices - 1 and device_index > 0:
                devices.append(_device(rng, "dev-0", driver, counter_sets, kind == "per-device", lists))
            slices.append(_slice(names[s], driver, pool, 1, declared, placement, devices=devices))
        if counter_slice is not None:
            slices.append(_slice(names[-1], driver, pool, 1, declared, counter_slice[0],
                                 sharedCounters=counter_slice[1]))
        if chance(rng, 0.05):
            # An outdated slice of an older generation: ignored when the newer one is complete.
            old = _device(rng, "dev-old", driver, [], kind == "per-device", lists)
            slices.append(_slice(f"{pool}-{driver[0]}-old", driver, pool, 0, 1, placement, devices=[old]))
        used_names.update(names)
    rng.shuffle(slices)
    return slices


def _classes(rng: random.Random) -> list[dict[str, Any]]:
    def cls(name: str, *expressions: str, config: bool = False) -> dict[str, Any]:
        spec: dict[str, Any] = {}
        if expressions:
            spec["selectors"] = [{"cel": {"expression": e}} for e in expressions]
        if config:
            spec["config"] = [{"opaque": {"driver": DRIVERS[0], "parameters": {"fromClass": name}}}]
        return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": spec}

    classes = [
        cls("class-any"),
        cls("class-a", 'device.driver == "a.example.com"', config=chance(rng, 0.2)),
        cls("class-b", 'device.driver == "b.example.com"'),
        cls("class-big", '"memory" in device.capacity[device.driver] && '
                         'device.capacity[device.driver].memory.compareTo(quantity("8Gi")) >= 0'),
    ]
    if chance(rng, 0.03):
        classes.append(cls("class-bad", rng.choice(BAD_SELECTORS)))
    return classes


def gated(rng: random.Random, features: list[str], gate: str, p: float) -> bool:
    """With probability p when the gate is on; a tenth of that when it is off (an error case)."""
    return chance(rng, p if gate in features else p / 10)


def _request_body(rng: random.Random, features: list[str], classes: list[str], *,
                  sub: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": "class-missing" if chance(rng, 0.015) else rng.choice(classes)}
    if chance(rng, 0.35):
        pool = BAD_SELECTORS if chance(rng, 0.04) else SELECTORS
        body["selectors"] = [{"cel": {"expression": rng.choice(pool)}}]
    if chance(rng, 0.12):
        body["allocationMode"] = "All"
    else:
        body["allocationMode"] = "ExactCount"
        body["count"] = 33 if chance(rng, 0.01) else rng.choice([1, 1, 1, 2, 2, 3])
    if not sub and gated(rng, features, "DRAAdminAccess", 0.08):
        body["adminAccess"] = True
    if chance(rng, 0.15):
        body["tolerations"] = [rng.choice([
            {"key": "k1", "operator": "Exists"},
            {"key": "k1", "operator": "Equal", "value": "v1", "effect": "NoSchedule"},
            {"operator": "Exists", "effect": "NoExecute"},
        ])]
    if gated(rng, features, "DRAConsumableCapacity", 0.2):
        body["capacity"] = {"requests": {"memory": rng.choice(["1Gi", "2Gi", "1500Mi", "4Gi"])}}
    return body


def _claim(rng: random.Random, name: str, features: list[str], classes: list[str]) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    names: list[str] = []
    admin_claim = gated(rng, features, "DRAAdminAccess", 0.1)  # every `exactly` request with adminAccess
    for r in range(rng.choice([2, 2, 3] if admin_claim else [1, 1, 1, 2, 2, 3])):
        request: dict[str, Any] = {"name": f"req-{r}"}
        if gated(rng, features, "DRAPrioritizedList", 0.25):
            subs = [{"name": f"sub-{s}", **_request_body(rng, features, classes, sub=True)}
                    for s in range(rng.choice([1, 2, 2, 3]))]
            request["firstAvailable"] = subs
            names += [f"req-{r}"] + [f"req-{r}/{s['name']}" for s in subs]
        else:
            first = next((q["exactly"] for q in requests if "exactly" in q), None)
            if admin_claim and first is not None and chance(rng, 0.7):
                request["exactly"] = copy.deepcopy(first)  # several alike admin requests
            else:
                request["exactly"] = _request_body(rng, features, classes, sub=False)
            if admin_claim:
                request["exactly"]["adminAccess"] = True
                if gated(rng, features, "DRAConsumableCapacity", 0.5):
                    request["exactly"]["capacity"] = {"requests": {"memory": rng.choice(["1Gi", "2Gi"])}}
            names.append(f"req-{r}")
        requests.append(request)
    devices: dict[str, Any] = {"requests": requests}
    constraints = []
    for _ in range(rng.choice([0, 0, 0, 0, 1, 1, 2])):
        constraint: dict[str, Any] = {}
        if chance(rng, 0.5):
            constraint["requests"] = sorted(set(rng.sample(names, rng.randint(1, min(2, len(names))))))
        distinct_ok = "DRAConsumableCapacity" in features or chance(rng, 0.15)
        kind = "matchAttribute" if chance(rng, 0.55) or not distinct_ok else "distinctAttribute"
        constraint[kind] = rng.choice(CONSTRAINT_ATTRIBUTES)
        constraints.append(constraint)
    if constraints:
        devices["constraints"] = constraints
    if chance(rng, 0.15):
        chosen = sorted(set(rng.sample(names, rng.randint(1, min(2, len(names)))))) if chance(rng, 0.6) else []
        devices["config"] = [{"requests": chosen,
                              "opaque": {"driver": rng.choice(DRIVERS), "parameters": {"claim": name}}}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def _allocated(rng: random.Random, slices: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    devices = [(s["spec"]["driver"], s["spec"]["pool"]["name"], d)
               for s in slices for d in s["spec"].get("devices") or []]
    claims = []
    for c in range(rng.choice([0, 0, 1, 1, 2]) if devices else 0):
        results = []
        for driver, pool, device in rng.sample(devices, min(len(devices), rng.choice([1, 1, 2]))):
            entry: dict[str, Any] = {"request": "req", "driver": driver, "pool": pool, "device": device["name"]}
            if chance(rng, 0.15):
                entry["adminAccess"] = True
            elif device.get("allowMultipleAllocations") and chance(rng, 0.8):
                entry["shareID"] = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                if chance(rng, 0.8):
                    entry["consumedCapacity"] = {"memory": rng.choice(["1Gi", "2Gi", "4Gi"])}
            results.append(entry)
        claims.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                       "metadata": {"name": f"allocated-{c}", "namespace": "default"},
                       "spec": {"devices": {"requests": [{"name": "req", "exactly": {"deviceClassName": "class-any"}}]}},
                       "status": {"allocation": {"devices": {"results": results}}}})
    return claims


def _admin_tooling(rng: random.Random, features: list[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A small pool whose first device is shared, and one claim of alike adminAccess requests
    (as a monitoring tool asks for every GPU): the shape where sharing and admin access meet."""
    devices = [_device(rng, f"dev-{i}", DRIVERS[0], [], False, 0.0) for i in range(rng.choice([2, 3]))]
    devices[0]["allowMultipleAllocations"] = True
    devices[0]["capacity"] = {"memory": {"value": rng.choice(MEMORY)}}
    slices = [_slice("pool-0-a-s0", DRIVERS[0], "pool-0", 1, 1, {"nodeName": "node-1"}, devices=devices)]
    body: dict[str, Any] = {"deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1,
                            "adminAccess": True}
    if chance(rng, 0.6):
        body["capacity"] = {"requests": {"memory": rng.choice(["1Gi", "2Gi"])}}
    requests = [{"name": f"req-{r}", "exactly": copy.deepcopy(body)} for r in range(rng.choice([2, 2, 3]))]
    if chance(rng, 0.3):
        requests.append({"name": f"req-{len(requests)}", "exactly": {"deviceClassName": "class-a",
                                                                      "allocationMode": "ExactCount", "count": 1}})
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "claim-0", "namespace": "default"}, "spec": {"devices": {"requests": requests}}}
    return slices, [claim]


GATES_1_37 = ("DRADeviceCompatibilityGroups", "DRAFractionalCapacityRange", "DRAOptionalNodeOperations",
              "DRADerivedAttributes")


def _with_1_37(case: dict[str, Any], rng: random.Random) -> None:
    """What only 1.37 has, added in place with its own random stream (so a seed's 1.36 case is the
    1.37 case without these): its alpha gates (each on or off), compatibility groups on counter
    consumption, fractional `validRange`s on a capacity (and milli-unit capacity requests),
    `skipNodeOperations` on slices and the node's declaredFeatures, and derived attributes on a
    request (with DRADerivedAttributes off: refused; on: named as one of the claim's constraint
    attributes, computed by CEL, now and then failing to compile or on some device)."""
    features = case["features"]
    features += [g for g in GATES_1_37 if chance(rng, 0.25)]
    features.sort()
    groups = (["g1"], ["g2"], ["g1", "g2"], [])
    for s in case["objects"]["resourceSlices"]:
        spec = s["spec"]
        if chance(rng, 0.12):
            spec["skipNodeOperations"] = rng.choice([["*"], ["NodePrepareResources", "NodeUnprepareResources"]])
        for d in spec.get("devices") or []:
            for consumption in d.get("consumesCounters") or []:
                if chance(rng, 0.4):
                    consumption["compatibilityGroups"] = rng.choice(groups)
            cores = (d.get("capacity") or {}).get("cores")
            if cores is not None and chance(rng, 0.5):
                cores["requestPolicy"] = {"default": "500m", "validRange": rng.choice([
                    {"min": "250m", "step": "250m"}, {"min": "500m", "max": "2", "step": "500m"},
                    {"min": "1", "step": "1"}, {"min": "100m", "step": "1500m"}])}
                d["allowMultipleAllocations"] = True
    if chance(rng, 0.5):
        case["node"] = {**case["node"], "declaredFeatures": ["DRAOptionalNodeOperations"]}
    for claim in case["objects"]["claims"]:
        for request in claim["spec"]["devices"].get("requests") or []:
            body = request.get("exactly") or (request.get("firstAvailable") or [{}])[0]
            if chance(rng, 0.15) and "DRAConsumableCapacity" in features:
                body.setdefault("capacity", {}).setdefault("requests", {})["cores"] = rng.choice(
                    ["300m", "750m", "1", "1200m", "2500m"])
            if "DRADerivedAttributes" not in features:
                if chance(rng, 0.03):
                    body["derivedAttributes"] = [{"name": "a.example.com/double", "expression": "2"}]
                continue
            constraints = claim["spec"]["devices"].get("constraints") or []
            names = sorted({c.get("matchAttribute") or c.get("distinctAttribute") for c in constraints} - {None})
            if names and chance(rng, 0.4):
                # Named as a constraint's attribute (the API requires a constraint to use each one).
                chosen = rng.sample(names, rng.choice([1, 1, min(2, len(names))]))
                body["derivedAttributes"] = [
                    {"name": name, "expression": rng.choice(DERIVED if chance(rng, 0.9) else BAD_DERIVED)}
                    for name in chosen]


# 1.38 (`_with_1_38`): selectors that read what 1.38 reads lazily (an attribute it could not
# convert fails only an expression that reads it; `has()` on it fails; `in` says false).
SELECTORS_1_38 = (
    f'has({GUARDED}.ver)',
    f'"tags" in {GUARDED}',
    f'{GUARDED}.?tags.orValue(["none"]).size() > 0',
    f'"ver" in {GUARDED} && {GUARDED}.ver == semver("2.1.0")',
    f'{GUARDED}.exists(name, name == "model")',
    f'{GUARDED}.?model.orValue("") == "y"',
)


def _with_1_38(case: dict[str, Any], rng: random.Random) -> None:
    """What 1.38 answers differently, added in place with its own random stream: versions with
    build metadata (equal for semver, as constraint values and list elements), a version that
    does not parse and an empty list (values 1.38 keeps none of), an attribute published both
    plain and qualified with different values (the qualified one wins), selectors that read
    those lazily, and capacity requests named by the driver's domain, named both ways (an
    error) or negative (an error)."""
    for s in case["objects"]["resourceSlices"]:
        driver = s["spec"]["driver"]
        for d in s["spec"].get("devices") or []:
            attrs = d.get("attributes")
            if attrs is None:
                continue
            if "ver" in attrs and chance(rng, 0.3):
                attrs["ver"] = {"version": rng.choice(["2.1.0+b1", "2.1.0+b2", "1.0.0+b1"])}
            if chance(rng, 0.04):
                attrs["ver"] = {"version": rng.choice(["1.2.3.4", "01.0.0"])}
            if chance(rng, 0.04):
                attrs["tags"] = {"strings": []}
            if "model" in attrs and chance(rng, 0.06):
                attrs[f"{driver}/model"] = {"string": "y" if attrs["model"].get("string") == "x" else "x"}
    for claim in case["objects"]["claims"]:
        for request in claim["spec"]["devices"].get("requests") or []:
            body = request.get("exactly") or (request.get("firstAvailable") or [{}])[0]
            if chance(rng, 0.15):
                body["selectors"] = [{"cel": {"expression": rng.choice(SELECTORS_1_38)}}]
            wanted = (body.get("capacity") or {}).get("requests")
            if not wanted or "memory" not in wanted:
                continue
            roll = rng.random()
            if roll < 0.2:
                wanted[f"{DRIVERS[0]}/memory"] = wanted.pop("memory")
            elif roll < 0.25:
                wanted[f"{DRIVERS[0]}/memory"] = wanted["memory"]
            elif roll < 0.28:
                wanted["memory"] = "-1"


def case(seed: int, release: str = "1.37") -> dict[str, Any]:
    """One random case in the vector format (no `expect`), named after its seed, for a
    Kubernetes release (1.36 cases have none of 1.37's fields or gates, 1.37 cases none of
    what 1.38 answers differently)."""
    generated = _case(seed)
    if release != "1.36":
        _with_1_37(generated, random.Random(seed * 2654435761 + 1))
    if release == "1.38":
        _with_1_38(generated, random.Random(seed * 2654435761 + 2))
    return generated


def _case(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    features = _features(rng)
    slices = _pools(rng, features)
    classes = _classes(rng)
    class_names = ["class-a"] * 5 + ["class-any", "class-any", "class-b", "class-big"]
    claims = [_claim(rng, f"claim-{i}", features, class_names) for i in range(rng.choice([1, 1, 1, 2, 2, 3]))]
    if "DRAAdminAccess" in features and "DRAConsumableCapacity" in features and chance(rng, 0.05):
        slices, claims = _admin_tooling(rng, features)
    if any(c["metadata"]["name"] == "class-bad" for c in classes) and claims:
        claims[0]["spec"]["devices"]["requests"][0].setdefault("exactly", {})["deviceClassName"] = "class-bad"
        claims[0]["spec"]["devices"]["requests"][0].pop("firstAvailable", None)
        claims[0]["spec"]["devices"]["requests"][0]["exactly"].setdefault("allocationMode", "ExactCount")
        claims[0]["spec"]["devices"]["requests"][0]["exactly"].setdefault("count", 1)
    return {
        "name": f"diff-{seed}",
        "features": sorted(features),
        "node": NODE,
        "objects": {"deviceClasses": classes, "resourceSlices": slices,
                    "allocatedClaims": _allocated(rng, slices, seed), "claims": claims},
    }
