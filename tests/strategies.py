"""Hypothesis strategies for small random clusters and claims.

Everything is kept small (at most 2 pools x 2 slices x 3 devices, 1-2 claims of
1-3 requests, counts 1-3) so that a test can afford an exhaustive search over
every assignment. Selectors come from fixed tables whose meaning is also given
as a Python predicate (`SELECTORS`), so tests can check results without
trusting the allocator's CEL path.

Devices always carry `numa` (int 0-2), `model` (string "x"/"y") and `ecc`
(bool), sometimes `zone` (string); some are tainted, some allow multiple
allocations. Pools are sometimes incomplete (one slice short). Slices are on
node-1, node-2 or all nodes; the cluster is always allocated for node-1.
Existing allocations make devices in use (admin-access ones never do).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from hypothesis import strategies as st
from tests.builders import (
    ClaimBuilder,
    ClassBuilder,
    SliceBuilder,
    claim,
    class_,
    device,
    result,
    slice_,
    subrequest,
    toleration,
)

from dralloc.allocation.features import Features
from dralloc.allocation.pools import NodeView

DRIVERS = ("a.example.com", "b.example.com")
NODE = NodeView("node-1", {"zone": "z1"})

# Attributes are published under short names, so they live in the device's driver domain.
Predicate = Callable[[str, Mapping[str, Any]], bool]
SELECTORS: dict[str, Predicate] = {
    'device.driver == "a.example.com"': lambda driver, a: driver == "a.example.com",
    "device.attributes[device.driver].numa == 0": lambda driver, a: a["numa"] == 0,
    'device.attributes[device.driver].model == "x"': lambda driver, a: a["model"] == "x",
    "device.attributes[device.driver].ecc": lambda driver, a: a["ecc"] is True,
    '"zone" in device.attributes[device.driver]': lambda driver, a: "zone" in a,
    "!device.attributes[device.driver].ecc || device.attributes[device.driver].numa > 0":
        lambda driver, a: a["ecc"] is False or a["numa"] > 0,
}
CLASSES: dict[str, tuple[str, ...]] = {
    "any": (),
    "driver-a": ('device.driver == "a.example.com"',),
    "ecc": ("device.attributes[device.driver].ecc",),
}
CONSTRAINT_ATTRIBUTES = (
    "a.example.com/model", "a.example.com/numa", "a.example.com/ecc", "a.example.com/zone", "b.example.com/numa",
)


def rare(n: int) -> st.SearchStrategy[bool]:
    """True about once in n+1 draws (Hypothesis favours the first element of sampled_from)."""
    return st.sampled_from([False] * n + [True])


@dataclasses.dataclass(frozen=True)
class Cluster:
    """One allocation problem: the cluster's objects and the claims to allocate together on `node`."""

    classes: tuple[ClassBuilder, ...]
    slices: tuple[SliceBuilder, ...]
    allocated: tuple[ClaimBuilder, ...]
    claims: tuple[ClaimBuilder, ...]
    node: NodeView = NODE
    features: Features = dataclasses.field(default_factory=Features)


def device_classes() -> tuple[ClassBuilder, ...]:
    return tuple(class_(name, selectors=list(exprs)) for name, exprs in CLASSES.items())


@st.composite
def devices(draw: st.DrawFn, name: str) -> Any:
    built = (device(name).attr("numa", draw(st.integers(0, 2))).attr("model", draw(st.sampled_from("xy")))
             .attr("ecc", draw(st.booleans())))
    if draw(st.booleans()):
        built = built.attr("zone", draw(st.sampled_from(["z1", "z2"])))
    if draw(rare(3)):
        built = built.taint(draw(st.sampled_from(["k1", "k2"])), draw(st.sampled_from([None, "v"])),
                            draw(st.sampled_from(["NoSchedule", "NoExecute", "None"])))
    if draw(rare(5)):
        built = built.shared()
    return built


@st.composite
def pools(draw: st.DrawFn, index: int) -> list[SliceBuilder]:
    """The 1-2 slices of one pool; sometimes one slice short of complete."""
    driver = draw(st.sampled_from([DRIVERS[0], *DRIVERS]))
    slice_count = draw(st.integers(1, 2))
    declared = slice_count + (1 if draw(rare(8)) else 0)
    slices = []
    for s in range(slice_count):
        where = draw(st.sampled_from(["node-1", "node-1", "node-1", "node-2", "all"]))
        names = [f"d{index}{s}{k}" for k in range(draw(st.integers(1, 3)))]
        slices.append(slice_(
            f"slice-{index}-{s}", driver=driver, pool=f"pool-{index}", slice_count=declared,
            node=None if where == "all" else where, all_nodes=where == "all",
            devices=[draw(devices(n)) for n in names],
        ))
    return slices


def tolerations() -> st.SearchStrategy[list[dict[str, Any]]]:
    one = st.builds(
        lambda key, op, value, effect: toleration(key, operator=op, value=value if op != "Exists" else None,
                                                  effect=effect),
        st.sampled_from([None, "k1"]), st.sampled_from([None, "Exists", "Equal"]),
        st.sampled_from([None, "v"]), st.sampled_from([None, "NoSchedule", "NoExecute"]),
    )
    return st.lists(one, max_size=1)


@st.composite
def request_fields(draw: st.DrawFn) -> dict[str, Any]:
    mode_all = draw(rare(6))
    return {
        "class_name": draw(st.sampled_from(list(CLASSES))),
        "count": None if mode_all else draw(st.sampled_from([1, 1, 1, 2, 3])),
        "all": mode_all,
        "selectors": draw(st.lists(st.sampled_from(list(SELECTORS)), max_size=1)),
        "tolerations": draw(tolerations()),
    }


@st.composite
def claims(draw: st.DrawFn, name: str) -> ClaimBuilder:
    built = claim(name, uid=f"uid-{name}")
    names = [f"r{i}" for i in range(draw(st.sampled_from([1, 1, 2, 3])))]
    has_all = False
    for request in names:
        if draw(rare(3)):
            subs = [draw(request_fields()) for _ in range(2)]
            has_all |= any(s["all"] for s in subs)
            built = built.first_available(request, *(
                subrequest(f"s{i}", s["class_name"], s["count"], all=s["all"], selectors=s["selectors"],
                           tolerations=s["tolerations"]) for i, s in enumerate(subs)))
        else:
            fields = draw(request_fields())
            has_all |= fields["all"]
            admin = True if draw(rare(7)) else None
            built = built.request(request, fields["class_name"], fields["count"], all=fields["all"],
                                  selectors=fields["selectors"], tolerations=fields["tolerations"], admin=admin)
    # An All request that breaks a constraint is an error, not "does not fit": keep them apart.
    if not has_all and draw(st.booleans()):
        attribute = draw(st.sampled_from(CONSTRAINT_ATTRIBUTES))
        covered = draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
        if draw(st.booleans()):
            built = built.constraint_match(attribute, *covered)
        else:
            built = built.constraint_distinct(attribute, *covered)
    return built


@st.composite
def clusters(draw: st.DrawFn, *, max_claims: int = 2) -> Cluster:
    """A small cluster, some devices in use, and 1-`max_claims` claims to allocate on node-1."""
    slices = [s for index in range(draw(st.integers(1, 2))) for s in draw(pools(index))]
    published = [(s.raw()["spec"]["driver"], s.raw()["spec"]["pool"]["name"], d["name"])
                 for s in slices for d in s.raw()["spec"].get("devices", [])]
    held = draw(st.lists(st.sampled_from(published), unique=True, max_size=2)) if published else []
    allocated: list[ClaimBuilder] = []
    if held:
        admin = draw(st.booleans()) and draw(st.booleans())
        allocated.append(claim("holder").request("r", "any").allocated(*(
            result("r", name, driver=driver, pool=pool, admin=admin) for driver, pool, name in held)))
    count = draw(st.sampled_from([1, 1, *range(2, max_claims + 1)]))
    features = Features(device_taints=not draw(rare(5)))
    return Cluster(
        classes=device_classes(),
        slices=tuple(slices),
        allocated=tuple(allocated),
        claims=tuple(draw(claims(f"c{i}")) for i in range(count)),
        features=features,
    )
