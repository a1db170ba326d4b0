"""Hostile and malformed API objects for the operator fuzz test, from a seeded generator.

Everything here is plain data: raw API objects (dicts) and the steps that create, patch
or delete them, grouped in `Case`s. A case is one "bad input" (the object it is about
is marked `bad=True`) plus the scaffolding that makes the operator meet it (a pod
using the claim, the class, the slice), and what may legitimately become of its pods:

- `causes`: substrings of which at least one must appear in the pod's
  `PodScheduled=False` message (the claim, class, template or field it is about);
- `may_place`: the "bad" object may turn out valid, so the pod may also be placed.

The cluster a case runs in (`Scope`) has nodes with two kinds of devices: the *good*
GPUs (driver `gpu.example.com`, class `scope.gpu_class`) that only valid pods use, so
that room for every valid pod is guaranteed whatever the hostile objects do, and
*spare* devices (driver `spare.example.com`, class `scope.spare_class`) that bad
objects which turn out valid may take. Cases that bring devices of their own use a
driver of their own (`c<N>.fuzz.example.com`), so a broken pool breaks only them.

`generate(rng, scope, count)` draws `count` cases; the same seed gives the same cases.
`valid_pods(rng, scope, budget)` draws valid pods that together need at most `budget`
good GPUs.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]

GOOD_DRIVER = "gpu.example.com"
SPARE_DRIVER = "spare.example.com"
SPARE_PER_NODE = 4
V1 = "resource.k8s.io/v1"


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where the cases go: the test's namespace, cluster-scoped name suffix, nodes, classes."""

    namespace: str
    token: str
    nodes: tuple[str, ...]

    def name(self, base: str) -> str:
        return f"{base}-{self.token}"

    @property
    def gpu_class(self) -> str:
        return self.name("gpu")

    @property
    def spare_class(self) -> str:
        return self.name("spare")


@dataclasses.dataclass
class Step:
    """One API action: `create` (POST obj), `status` (merge-patch obj's status), `delete` (obj),
    `own-self` (make obj its own controlling owner, by its uid)."""

    action: str
    obj: Obj
    bad: bool = False
    note: str = ""


@dataclasses.dataclass
class Case:
    kind: str
    detail: str
    steps: list[Step]
    pods: list[str] = dataclasses.field(default_factory=list)  # bad pods whose outcome is checked
    causes: tuple[str, ...] = ()
    may_place: bool = False
    preallocated: tuple[str, ...] = ()  # claims whose allocation the case wrote itself (not dralloc)

    def describe(self) -> str:
        return f"{self.kind}: {self.detail}"


# --- objects ------------------------------------------------------------------------------------


def node(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "256Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def device_slice(name: str, *, driver: str, pool: str, devices: list[Obj], node_name: str | None = None,
                 slice_count: int = 1, generation: int = 1) -> Obj:
    spec: Obj = {"driver": driver, "pool": {"name": pool, "generation": generation,
                                             "resourceSliceCount": slice_count}, "devices": devices}
    if node_name:
        spec["nodeName"] = node_name
    else:
        spec["allNodes"] = True
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def device(name: str, index: int = 0, **extra: Any) -> Obj:
    return {"name": name, "attributes": {"index": {"int": index}, "model": {"string": "fuzz"}},
            "capacity": {"memory": {"value": "40Gi"}}, **extra}


def device_class(name: str, *expressions: str) -> Obj:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": e}} for e in expressions]}}


def driver_class(name: str, driver: str) -> Obj:
    return device_class(name, f'device.driver == "{driver}"')


def request(name: str, device_class_name: str, *, count: Any = 1, mode: str | None = None,
            selectors: list[str] | None = None, **extra: Any) -> Obj:
    body: Obj = {"deviceClassName": device_class_name}
    if mode == "All":
        body["allocationMode"] = "All"
    else:
        body.update({"allocationMode": "ExactCount", "count": count})
    if selectors:
        body["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    body.update(extra)
    return {"name": name, "exactly": body}


def claim_spec(*requests: Obj, constraints: list[Obj] | None = None) -> Obj:
    devices: Obj = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"devices": devices}


def template(name: str, namespace: str, spec: Obj) -> Obj:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": namespace}, "spec": {"spec": spec}}


def claim(name: str, namespace: str, spec: Obj, **metadata: Any) -> Obj:
    return {"apiVersion": V1, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace, **metadata}, "spec": spec}


def pod(name: str, namespace: str, *, templates: dict[str, str] | None = None,
        claims: dict[str, str] | None = None, gate: bool = False, cpu: str | None = None) -> Obj:
    """A pod of ours: `templates`/`claims` map pod claim entry names to template/claim names."""
    entries = [{"name": e, "resourceClaimTemplateName": t} for e, t in (templates or {}).items()]
    entries += [{"name": e, "resourceClaimName": c} for e, c in (claims or {}).items()]
    container: Obj = {"name": "main", "image": "busybox"}
    resources: Obj = {}
    if entries:
        resources["claims"] = [{"name": e["name"]} for e in entries]
    if cpu is not None:
        resources["requests"] = {"cpu": cpu}
    if resources:
        container["resources"] = resources
    spec: Obj = {"containers": [container]}
    if entries:
        spec["resourceClaims"] = entries
    if gate:
        spec["schedulingGates"] = [{"name": "dralloc.io/allocate"}]
        spec["schedulerName"] = "default-scheduler"
    else:
        spec["schedulerName"] = "dralloc"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def allocation(node_name: str | None, results: list[Obj]) -> Obj:
    found: Obj = {"devices": {"results": results}}
    if node_name:
        found["nodeSelector"] = {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    return found


# --- the cluster every round starts from ----------------------------------------------------------


def base_objects(scope: Scope, gpus_per_node: int) -> list[Obj]:
    objects: list[Obj] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scope.namespace}}]
    for n in scope.nodes:
        objects.append(node(n))
        objects.append(device_slice(f"{n}-gpus", driver=GOOD_DRIVER, pool=n, node_name=n,
                                    devices=[device(f"gpu-{i}", i) for i in range(gpus_per_node)]))
        objects.append(device_slice(f"{n}-spare", driver=SPARE_DRIVER, pool=f"spare-{n}", node_name=n,
                                    devices=[device(f"spare-{i}", i) for i in range(SPARE_PER_NODE)]))
    objects.append(driver_class(scope.gpu_class, GOOD_DRIVER))
    objects.append(driver_class(scope.spare_class, SPARE_DRIVER))
    return objects


@dataclasses.dataclass
class ValidPod:
    name: str
    steps: list[Step]
    gpus: int


def valid_pods(rng: random.Random, scope: Scope, budget: int, *, first: int = 0) -> list[ValidPod]:
    """Valid pods (template claims, some sharing one claim) needing at most `budget` good GPUs."""
    found: list[ValidPod] = []
    i = first
    while budget > 0:
        ns = scope.namespace
        if rng.random() < 0.2 and budget >= 1:
            shared = f"valid-shared-{i}"
            spec = claim_spec(request("gpu", scope.gpu_class))
            found.append(ValidPod(f"valid-{i}", [Step("create", claim(shared, ns, spec)),
                                                 Step("create", pod(f"valid-{i}", ns, claims={"gpu": shared}))], 1))
            found.append(ValidPod(f"valid-{i}b", [Step("create", pod(f"valid-{i}b", ns, claims={"gpu": shared},
                                                                      gate=rng.random() < 0.3))], 0))
            budget -= 1
        else:
            count = min(budget, rng.choice((1, 1, 2)))
            spec = claim_spec(request("gpu", scope.gpu_class, count=count))
            found.append(ValidPod(f"valid-{i}", [
                Step("create", template(f"valid-{i}", ns, spec)),
                Step("create", pod(f"valid-{i}", ns, templates={"gpu": f"valid-{i}"}, gate=rng.random() < 0.3)),
            ], count))
            budget -= count
        i += 1
    return found


# --- the hostile cases ---------------------------------------------------------------------------


class _Ctx:
    """Names for one case: everything it creates is unique to it."""

    def __init__(self, rng: random.Random, scope: Scope, index: int) -> None:
        self.rng, self.scope, self.index = rng, scope, index
        self.ns = scope.namespace
        self.pod = f"bad-{index}"
        self.driver = f"c{index}.fuzz.example.com"

    def cluster_name(self, base: str) -> str:
        return self.scope.name(f"c{self.index}-{base}")

    def node(self) -> str:
        return self.rng.choice(self.scope.nodes)

    def gate(self) -> bool:
        return self.rng.random() < 0.25

    def template_pod(self, spec: Obj, *, bad_template: bool = False, entry: str = "dev",
                     cpu: str | None = None) -> tuple[list[Step], tuple[str, ...]]:
        """A template with `spec` and a pod using it; the causes naming its claim."""
        name = f"bad-{self.index}-tpl"
        steps = [Step("create", template(name, self.ns, spec), bad=bad_template),
                 Step("create", pod(self.pod, self.ns, templates={entry: name}, gate=self.gate(), cpu=cpu))]
        return steps, (f"{self.ns}/{self.pod}-{entry}-", f"ResourceClaimTemplate {self.ns}/{name} ")

    def own_devices(self, count: int, **extra: Any) -> list[Obj]:
        return [device(f"d{i}", i, **extra) for i in range(count)]


Generator = Callable[[_Ctx], Case]


def wrong_type(c: _Ctx) -> Case:
    """A field of the wrong JSON type somewhere in a claim, template, class, slice or pod."""
    spare = c.scope.spare_class
    choice = c.rng.randrange(9)
    if choice == 0:
        value = c.rng.choice(["two", 1.5, True, [1], {"n": 1}, None])
        spec = claim_spec({"name": "dev", "exactly": {"deviceClassName": spare, "allocationMode": "ExactCount",
                                                      "count": value}})
        steps, causes = c.template_pod(spec, bad_template=True)
        return Case("wrong-type", f"template count={value!r}", steps, [c.pod], causes, may_place=value is None)
    if choice == 1:
        requests = c.rng.choice([{"name": "dev"}, "dev", 7, [["dev"]], [None], None])
        spec = {"devices": {"requests": requests}}
        steps, causes = c.template_pod(spec, bad_template=True)
        # `requests: null` is valid: a claim that needs no device, allocated empty; the pod is placed.
        return Case("wrong-type", f"template requests={requests!r}", steps, [c.pod], causes,
                    may_place=requests is None)
    if choice == 2:
        expression = c.rng.choice([7, True, ["device.driver"], {"x": 1}])
        name = c.cluster_name("class")
        cls = {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
               "spec": {"selectors": [{"cel": {"expression": expression}}]}}
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("wrong-type", f"class expression={expression!r}", [Step("create", cls, bad=True), *steps],
                    [c.pod], (name, *causes))
    if choice == 3:
        attribute = c.rng.choice([{"int": "5"}, {"bool": "yes"}, {"string": 5}, {"version": 1},
                                  {"int": 1, "string": "x"}, {}, "5", 5])
        dev = {"name": "d0", "attributes": {"index": attribute}}
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=c.cluster_name("pool"),
                         node_name=c.node(), devices=[dev])
        name = c.cluster_name("class")
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("wrong-type", f"slice attribute={attribute!r}",
                    [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps],
                    [c.pod], causes, may_place=True)
    if choice == 4:
        entries = c.rng.choice(["dev", [{"name": 5, "resourceClaimName": "x"}], [{"name": "dev"}], {"dev": "x"},
                                [None], [{"name": None, "resourceClaimName": "x"}],
                                [{"name": "dev", "resourceClaimName": "a", "resourceClaimTemplateName": "b"}]])
        p = pod(c.pod, c.ns)
        p["spec"]["resourceClaims"] = entries
        return Case("wrong-type", f"pod resourceClaims={entries!r}", [Step("create", p, bad=True)], [c.pod],
                    ("resourceClaims", c.pod))
    if choice == 5:
        p = pod(c.pod, c.ns)
        field, value = c.rng.choice([("priority", "high"), ("nodeSelector", ["a"]), ("tolerations", "all"),
                                     ("schedulingGates", [{"name": 5}]), ("containers", {"main": {}})])
        p["spec"][field] = value
        return Case("wrong-type", f"pod spec.{field}={value!r}", [Step("create", p, bad=True)], [c.pod],
                    (field, c.pod))
    if choice == 6:
        constraint = c.rng.choice([{"matchAttribute": 5}, {"requests": "dev", "matchAttribute": "x/y"},
                                   {"distinctAttribute": ["a"]}])
        spec = claim_spec(request("dev", spare), constraints=[constraint])
        steps, causes = c.template_pod(spec, bad_template=True)
        return Case("wrong-type", f"template constraint={constraint!r}", steps, [c.pod], causes)
    if choice == 7:
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=c.cluster_name("pool"),
                         node_name=c.node(), devices=c.own_devices(1))
        s["spec"]["pool"]["generation"] = c.rng.choice(["1", -1, 1.5, None])
        name = c.cluster_name("class")
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("wrong-type", f"slice generation={s['spec']['pool']['generation']!r}",
                    [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps],
                    [c.pod], causes, may_place=True)
    # a claim status of the wrong shape, written by "a driver"
    name = f"bad-{c.index}-claim"
    status = c.rng.choice([{"allocation": "yes"}, {"reservedFor": "me"},
                           {"allocation": {"devices": {"results": {"r": 1}}}},
                           {"devices": [{"driver": 5}]}])
    cl = claim(name, c.ns, claim_spec(request("dev", spare)))
    return Case("wrong-type", f"claim status={status!r}",
                [Step("create", cl), Step("status", {**cl, "status": status}, bad=True),
                 Step("create", pod(c.pod, c.ns, claims={"dev": name}, gate=c.gate()))],
                [c.pod], (name,), may_place=True)


def huge_count(c: _Ctx) -> Case:
    """Counts no cluster has: huge, past int64, All of a class that matches nothing."""
    choice = c.rng.randrange(5)
    if choice == 0:
        count = c.rng.choice([10**6, 2**31, 2**62, 2**63 - 1])
        steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class, count=count)))
        return Case("huge-count", f"count={count}", steps, [c.pod], causes)
    if choice == 1:
        count = c.rng.choice([2**63, 2**64 + 1, 10**30])
        steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class, count=count)),
                                       bad_template=True)
        return Case("huge-count", f"count={count} (past int64)", steps, [c.pod], causes)
    if choice == 2:
        name = c.cluster_name("nothing")
        steps, causes = c.template_pod(claim_spec(request("dev", name, mode="All")))
        return Case("huge-count", "allocationMode All of a class matching nothing",
                    [Step("create", device_class(name, 'device.driver == "nobody.example.com"'), bad=True), *steps],
                    [c.pod], causes, may_place=True)
    if choice == 3:
        requests = [request(f"r{i}", c.scope.spare_class, count=c.rng.choice((1, 2, 3)))
                    for i in range(c.rng.choice((8, 32, 33, 64)))]
        steps, causes = c.template_pod(claim_spec(*requests), bad_template=True)
        return Case("huge-count", f"{len(requests)} requests in one claim", steps, [c.pod], causes)
    devices = [device(f"d{i}", i) for i in range(c.rng.choice((128, 129, 500)))]
    s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=c.cluster_name("pool"), node_name=c.node(),
                     devices=devices)
    name = c.cluster_name("class")
    steps, causes = c.template_pod(claim_spec(request("dev", name, count=len(devices) + 1)))
    return Case("huge-count", f"slice with {len(devices)} devices, ask for one more",
                [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps], [c.pod], causes)


def _deep(c: _Ctx, inner: str) -> tuple[str, str]:
    depth = c.rng.choice((20, 100, 250, 400, 1200, 3000))
    shape = c.rng.randrange(6)
    if shape == 0:
        return f"parentheses x{depth}", "(" * depth + inner + ")" * depth
    if shape == 1:
        return f"!! x{depth}", "!!" * depth + f"({inner})"
    if shape == 2:
        return f"&& chain of {depth}", " && ".join([inner] * depth)
    if shape == 3:
        return f"nested lists x{depth}", "[" * depth + "1" + "]" * depth + f" != [] && {inner}"
    if shape == 4:
        return f"ternaries x{depth}", "false ? false : " * depth + inner
    return f"cel.bind x{depth}", "".join(f"cel.bind(v{i}, {i}, " for i in range(depth)) + inner + ")" * depth


def deep_cel(c: _Ctx) -> Case:
    inner = f'device.driver == "{SPARE_DRIVER}"'
    detail, expression = _deep(c, inner)
    if c.rng.random() < 0.5:
        name = c.cluster_name("deep")
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("deep-cel", f"class: {detail} ({len(expression)} bytes)",
                    [Step("create", device_class(name, expression), bad=True), *steps], [c.pod],
                    (name, *causes), may_place=True)
    steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class, selectors=[expression])),
                                   bad_template=True)
    return Case("deep-cel", f"request selector: {detail} ({len(expression)} bytes)", steps, [c.pod], causes,
                may_place=True)


def unknown_class(c: _Ctx) -> Case:
    name = c.rng.choice([c.cluster_name("no-such-class"), "gpu", "x" * 253, "a.b.c"])
    steps, causes = c.template_pod(claim_spec(request("dev", name)))
    if c.rng.random() < 0.3:  # firstAvailable: every alternative names a missing class
        spec = {"devices": {"requests": [{"name": "dev", "firstAvailable": [
            {"name": "a", "deviceClassName": name, "allocationMode": "ExactCount", "count": 1},
            {"name": "b", "deviceClassName": c.cluster_name("also-missing"), "allocationMode": "ExactCount",
             "count": 1}]}]}}
        steps, causes = c.template_pod(spec)
    return Case("unknown-class", f"class {name!r}", steps, [c.pod], (name, *causes))


NON_COMPILING = [
    "device.driver ==", ")(", "device.driver == 'x", "1 +", "device..driver", "{{", "device.driver = 'x'",
    "foo(device)", "device.driver + 1 > 0", "device.driver", "devices.driver == 'x'", "1",
    "device.attributes['x'].y.z(", "device.capacity['a'].memory.isGreaterThan(1)",
    "'a' in 1", "[1, 'a'] == 2", "device.driver.size()", "quantity('abc').isZero()",
    "device.attributes[1] == 2", "has(device)", "\x00",
]


def non_compiling_cel(c: _Ctx) -> Case:
    expression = c.rng.choice(NON_COMPILING)
    if c.rng.random() < 0.5:
        name = c.cluster_name("broken")
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("non-compiling-cel", f"class: {expression!r}",
                    [Step("create", device_class(name, expression), bad=True), *steps], [c.pod], (name, *causes))
    steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class, selectors=[expression])),
                                   bad_template=True)
    return Case("non-compiling-cel", f"request selector: {expression!r}", steps, [c.pod], causes)


RUNTIME_FAILING = [
    f'device.attributes["{SPARE_DRIVER}"].missing > 1',
    f'device.attributes["{SPARE_DRIVER}"].index > "five"',
    f'device.attributes["{SPARE_DRIVER}"].index / 0 == 1',
    f'device.attributes["{SPARE_DRIVER}"].index % 0 == 1',
    'int("seven") == 7',
    f'device.capacity["{SPARE_DRIVER}"].memory.compareTo(quantity("1Gi")) > 0 && '
    f'device.capacity["{SPARE_DRIVER}"].nothing.isZero()',
    f'device.attributes["{SPARE_DRIVER}"].model.matches("[")',
    f'quantity(device.attributes["{SPARE_DRIVER}"].model).isZero()',
    f'semver(device.attributes["{SPARE_DRIVER}"].model).major() == 1',
    '9223372036854775807 + 1 > 0',
    f'[1, 2][device.attributes["{SPARE_DRIVER}"].index + 5] == 1',
    f'device.attributes["{SPARE_DRIVER}"].model.substring(100) == ""',
]


def runtime_failing_cel(c: _Ctx) -> Case:
    expression = c.rng.choice(RUNTIME_FAILING)
    if c.rng.random() < 0.5:
        name = c.cluster_name("fails")
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("runtime-failing-cel", f"class: {expression!r}",
                    [Step("create", device_class(name, f'device.driver == "{SPARE_DRIVER}"', expression),
                          bad=True), *steps], [c.pod], (name, *causes))
    steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class, selectors=[expression])),
                                   bad_template=True)
    return Case("runtime-failing-cel", f"request selector: {expression!r}", steps, [c.pod], causes)


def duplicate_devices(c: _Ctx) -> Case:
    """Two slices of one pool publish the same device (or one slice twice the same name)."""
    pool, n = c.cluster_name("pool"), c.node()
    name = c.cluster_name("class")
    if c.rng.random() < 0.2:
        devices = [device("d0", 0), device("d0", 1)]
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=pool, node_name=n, devices=devices)
        slices = [Step("create", s, bad=True)]
        detail = "one slice, the same device twice"
    else:
        first = device_slice(c.cluster_name("a"), driver=c.driver, pool=pool, node_name=n, slice_count=2,
                             devices=c.own_devices(2))
        second = device_slice(c.cluster_name("b"), driver=c.driver, pool=pool, node_name=n, slice_count=2,
                              devices=c.own_devices(c.rng.choice((1, 2, 3))))
        if c.rng.random() < 0.3:  # the second on another node: the pool spans nodes
            other = [x for x in c.scope.nodes if x != n] or [n]
            second["spec"]["nodeName"] = c.rng.choice(other)
        slices = [Step("create", first), Step("create", second, bad=True)]
        # Upstream gathers a pool per node: on two nodes each sees an incomplete pool without
        # duplicates, whose devices ExactCount requests may use.
        two_nodes = second["spec"]["nodeName"] != n
        detail = f"pool across 2 slices, duplicated devices ({'two nodes' if two_nodes else 'one node'})"
    steps, causes = c.template_pod(claim_spec(request("dev", name)))
    return Case("duplicate-devices", detail, [*slices, Step("create", driver_class(name, c.driver)), *steps],
                [c.pod], (*causes, pool), may_place="two nodes" in detail)


def missing_pool(c: _Ctx) -> Case:
    """resourceSliceCount larger than the slices present; or a stale generation left behind."""
    pool, name = c.cluster_name("pool"), c.cluster_name("class")
    choice = c.rng.randrange(3)
    if choice == 0:
        count = c.rng.choice((2, 3, 1000, 2**31))
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=pool, node_name=c.node(),
                         slice_count=count, devices=c.own_devices(2))
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("missing-pool", f"resourceSliceCount={count}, 1 slice",
                    [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps],
                    [c.pod], (*causes, pool))
    if choice == 1:
        count = c.rng.choice((0, -1))
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=pool, node_name=c.node(),
                         slice_count=count, devices=c.own_devices(2))
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("missing-pool", f"resourceSliceCount={count}",
                    [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps],
                    [c.pod], (*causes, pool))
    n = c.node()  # two generations: the older is ignored, the newer incomplete
    old = device_slice(c.cluster_name("old"), driver=c.driver, pool=pool, node_name=n, generation=1,
                       devices=c.own_devices(2))
    new = device_slice(c.cluster_name("new"), driver=c.driver, pool=pool, node_name=n, generation=2,
                       slice_count=2, devices=[device("e0", 0)])
    steps, causes = c.template_pod(claim_spec(request("dev", name)))
    return Case("missing-pool", "generation 2 of 2 slices, only one present; generation 1 complete",
                [Step("create", old), Step("create", new, bad=True), Step("create", driver_class(name, c.driver)),
                 *steps], [c.pod], (*causes, pool))


ABSURD_QUANTITIES = ["1e1000000", "99999999999999999999999999999Ei", "-5", "12abc", "0.0000000001n", "1.5.5",
                     "", " 1", "1 Gi", "1e", "9223372036854775808", "Infinity", "NaN", "0x10", "1Ki1"]


def absurd_quantity(c: _Ctx) -> Case:
    value = c.rng.choice(ABSURD_QUANTITIES)
    choice = c.rng.randrange(3)
    name = c.cluster_name("class")
    if choice == 0:  # a device capacity
        devices = [device("d0", 0, capacity={"memory": {"value": value}})]
        s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=c.cluster_name("pool"),
                         node_name=c.node(), devices=devices)
        steps, causes = c.template_pod(claim_spec(request("dev", name)))
        return Case("absurd-quantity", f"device capacity {value!r}",
                    [Step("create", s, bad=True), Step("create", driver_class(name, c.driver)), *steps],
                    [c.pod], causes, may_place=True)
    if choice == 1:  # a claim's capacity request
        body = request("dev", c.scope.spare_class, capacity={"requests": {"memory": value}})
        steps, causes = c.template_pod(claim_spec(body), bad_template=True)
        return Case("absurd-quantity", f"capacity request {value!r}", steps, [c.pod], causes, may_place=True)
    steps, causes = c.template_pod(claim_spec(request("dev", c.scope.spare_class)), cpu=value)
    steps[-1].bad = True
    return Case("absurd-quantity", f"pod cpu request {value!r}", steps, [c.pod], (*causes, "cpu", c.pod),
                may_place=True)


def self_reference(c: _Ctx) -> Case:
    """A claim that owns itself, or is reserved for itself, or allocated to devices nobody has."""
    name = f"bad-{c.index}-claim"
    spec = claim_spec(request("dev", c.scope.spare_class))
    choice = c.rng.randrange(3)
    if choice == 0:
        cl = claim(name, c.ns, spec)
        steps = [Step("create", cl), Step("own-self", cl, bad=True)]
        detail = "owned by itself"
        pre: tuple[str, ...] = ()
    else:
        n = c.node()
        if choice == 1:
            result = {"request": "dev", "driver": SPARE_DRIVER, "pool": f"ghost-{c.index}", "device": "nope"}
            detail = "allocated to a device that does not exist, reserved for itself"
        else:
            result = {"request": "dev", "driver": c.driver, "pool": f"ghost-{c.index}", "device": "nope"}
            detail = "allocated to a pool that does not exist, reserved for itself"
        cl = claim(name, c.ns, spec)
        status = {"allocation": allocation(n, [result]),
                  "reservedFor": [{"resource": "resourceclaims", "group": "resource.k8s.io", "name": name,
                                   "uid": f"self-{c.index}"}]}
        steps = [Step("create", cl), Step("status", {**cl, "status": status}, bad=True)]
        pre = (name,)
    steps.append(Step("create", pod(c.pod, c.ns, claims={"dev": name}, gate=c.gate())))
    return Case("self-reference", detail, steps, [c.pod], (name,), may_place=True, preallocated=pre)


def many_reservations(c: _Ctx) -> Case:
    """A claim reserved for 255..300 consumers, then a pod that wants it too."""
    kind = c.rng.choice(("pods", "widgets"))
    # 256 consumers that are not pods (nobody drops them): see full_reservations.
    count = c.rng.choice((255, 256, 257, 300) if kind == "pods" else (255, 257, 300))
    return _reserved(c, count, kind)


def full_reservations(c: _Ctx) -> Case:
    """A claim reserved for the maximum of 256 consumers (not pods, so they stay), and a pod wanting it."""
    return _reserved(c, 256, "widgets")


def _reserved(c: _Ctx, count: int, kind: str) -> Case:
    name = f"bad-{c.index}-claim"
    reserved = [{"resource": kind, "name": f"consumer-{i}", "uid": f"uid-{c.index}-{i}",
                 **({"group": "example.com"} if kind == "widgets" else {})} for i in range(count)]
    cl = claim(name, c.ns, claim_spec(request("dev", c.scope.spare_class)))
    n = c.node()
    status = {"allocation": allocation(n, [{"request": "dev", "driver": SPARE_DRIVER, "pool": f"spare-{n}",
                                            "device": f"spare-{SPARE_PER_NODE - 1}"}]), "reservedFor": reserved}
    steps = [Step("create", cl), Step("status", {**cl, "status": status}, bad=True),
             Step("create", pod(c.pod, c.ns, claims={"dev": name}, gate=c.gate()))]
    return Case("many-reservations", f"{count} reservations for {kind}", steps, [c.pod], (name,),
                may_place=True, preallocated=(name,))


def many_claims(c: _Ctx) -> Case:
    """A pod with many claims, all or none."""
    count = c.rng.choice((8, 16, 33, 64, 150))
    name = f"bad-{c.index}-tpl"
    each = c.rng.choice((1, 2))
    spec = claim_spec(request("dev", c.cluster_name("class"), count=each))
    devices = c.own_devices(c.rng.choice((4, 16)))
    s = device_slice(c.cluster_name("slice"), driver=c.driver, pool=c.cluster_name("pool"), node_name=c.node(),
                     devices=devices)
    p = pod(c.pod, c.ns, templates={f"c{i}": name for i in range(count)}, gate=c.gate())
    steps = [Step("create", s), Step("create", driver_class(c.cluster_name("class"), c.driver)),
             Step("create", template(name, c.ns, spec)), Step("create", p, bad=True)]
    return Case("many-claims", f"{count} claims x {each} devices, {len(devices)} devices", steps, [c.pod],
                (f"{c.ns}/{c.pod}-c",), may_place=count * each <= len(devices))


GENERATORS: dict[str, Generator] = {
    "wrong-type": wrong_type,
    "huge-count": huge_count,
    "deep-cel": deep_cel,
    "unknown-class": unknown_class,
    "non-compiling-cel": non_compiling_cel,
    "runtime-failing-cel": runtime_failing_cel,
    "duplicate-devices": duplicate_devices,
    "missing-pool": missing_pool,
    "absurd-quantity": absurd_quantity,
    "self-reference": self_reference,
    "many-reservations": many_reservations,
    "many-claims": many_claims,
}


def generate(rng: random.Random, scope: Scope, count: int, *, first: int = 0,
             kinds: tuple[str, ...] = tuple(GENERATORS)) -> list[Case]:
    return [GENERATORS[rng.choice(kinds)](_Ctx(rng, scope, first + i)) for i in range(count)]


# --- objects that are missing or go away: the pod must still be told why it waits -----------------


def missing_claim(c: _Ctx) -> Case:
    """A pod whose resourceClaimName names a claim that does not exist (and never will)."""
    name = f"bad-{c.index}-nowhere"
    return Case("missing-claim", f"resourceClaimName {name} does not exist",
                [Step("create", pod(c.pod, c.ns, claims={"dev": name}, gate=c.gate()), bad=True)], [c.pod], (name,))


def vanishing_template(c: _Ctx) -> Case:
    """A template deleted right after (or before) the pod using it was created."""
    name = f"bad-{c.index}-tpl"
    tpl = template(name, c.ns, claim_spec(request("dev", c.scope.spare_class)))
    p = pod(c.pod, c.ns, templates={"dev": name}, gate=c.gate())
    steps = [Step("create", tpl), Step("delete", tpl), Step("create", p, bad=True)]
    return Case("vanishing-template", "deleted before the pod was created", steps, [c.pod], (name,))


# Objects a pod waits for that are missing, or a claim it can no longer join: the pod must say
# so (test_pods_waiting_for_missing_objects_are_told_why).
MISSING_OBJECTS: dict[str, Generator] = {
    "missing-claim": missing_claim,
    "vanishing-template": vanishing_template,
    "full-reservations": full_reservations,
}
