"""Random scheduling scenarios for the differential test against kube-scheduler (pure, seeded).

`scenario(seed, index)` is a pure function of its arguments, plain data (YAML as it is):
  - 2-5 Nodes: hostname, zone (or none), a rack (a topology key of the twin's own), disk and a
    numeric rank label, taints (NoSchedule, NoExecute, PreferNoSchedule), unschedulable, cpu,
    memory and pod allocatable, 0-2 GPUs of which some may be held by an allocated claim;
  - pods already bound to them, in the twin's namespace or its second one: labels, cpu and
    memory requests, sidecars and init containers, pod-level requests, host ports (TCP/UDP,
    hostIP), required pod affinity and anti-affinity; some terminating, some Succeeded/Failed;
  - one pending pod: the same kinds of requests and ports, nodeSelector, required node affinity
    (In, NotIn, Exists, DoesNotExist, Gt, Lt, matchFields), tolerations, required pod affinity
    and anti-affinity (hostname, zone or rack; own namespace, listed namespaces, namespaceSelector,
    matchLabelKeys/mismatchLabelKeys; empty or absent label selectors), topology spread
    constraints (DoNotSchedule or ScheduleAnyway, maxSkew, minDomains, node inclusion policies,
    matchLabelKeys), with or without a claim for 1-2 GPUs;
  - in about a third of them, volumes (`_storage`): pre-bound local PVs with node or zone affinity,
    CSI PVs with a zone label, WaitForFirstConsumer claims with Available PVs on some nodes,
    ReadWriteOncePod claims an existing pod may hold, CSI volumes against CSINode limits. Each
    twin has its own StorageClasses (`$sc-bound`, `$sc-wffc`), PVs (named by the twin) and
    claims, so a claim binds only a PV of its twin; pre-bound claims are Bound before the
    pending pods are created.
Names that depend on where it runs are placeholders: `$n0` (a node), `$z0` (a zone value),
`$r0` (a rack), `$rack` (the rack label key), `$ns` and `$ns2` (the namespaces), `$twin`,
`$sc-bound` and `$sc-wffc` (the StorageClasses).

`setup_objects(scenario, twin, class)` and `pending_pod(scenario, twin, ...)` turn it into API
objects for one twin: a copy of the scenario in its own namespaces (labelled with the twin's
key), on its own nodes (`<k|d|p>-<run>-s<i>-n<j>`) whose hostname, zone and rack values are the
twin's own and which carry the label `diff.dralloc.io/twin=<key>`. The pending pod selects that
label, so the twins never see one another, and the verdict is the scenario's own:
  - node filters: the other twins' nodes fail the nodeSelector, this twin's pass or fail as in
    the scenario (the twin label is the only label they add);
  - pod affinity and anti-affinity read pods of the terms' namespaces (the pod's own, listed
    as `$ns`/`$ns2`, or selected by the twin's namespace label): only this twin's pods, only on
    this twin's nodes, whose hostname, zone and rack values no other twin's node has. Only an
    anti-affinity term may select every namespace (`namespaceSelector: {}`): other twins' pods
    then add domains no node of this twin is in; an affinity term may not (any matching pod in
    the cluster ends "the first pod of a series");
  - topology spread counts pods of the pod's namespace, on the nodes that pass the pod's
    nodeSelector and required node affinity: this twin's nodes (nodeAffinityPolicy is Honor,
    the default, or set to Honor: with Ignore every node of the cluster that has the key is a
    domain, so the generator writes Ignore only for the twin's own topology key `$rack`, a
    label key no other twin's node has);
  - host ports, cpu, pods and GPUs are per node.
Existing pods are bound at creation (spec.nodeName) and tolerate every taint, so that no
controller evicts them (NoExecute) during a run. An unschedulable node also carries the taint
node.kubernetes.io/unschedulable:NoSchedule from the start, as the node lifecycle controller
adds it (otherwise a spread constraint with nodeTaintsPolicy Honor would see it appear).

Every twin's node j advertises an extended resource `pin.dralloc.io/n<j>: 1` that no
scenario pod asks for: `pinned_pod` asks for one of them, which only that node has, so that
kube-scheduler can be asked about one node without changing anything its other filters read
(a nodeSelector or node affinity on the hostname would: topology spread counts only the nodes
the pod's node affinity selects).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

Obj = dict[str, Any]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
DISK = "example.com/disk"
RANK = "example.com/rank"  # a number, for Gt and Lt
PART_LABEL = "diff.dralloc.io/part"  # a twin's second namespace has part=b
RACK = "$rack"  # a topology key of the twin's own: <twin key>.diff.dralloc.io/rack
TWIN_LABEL = "diff.dralloc.io/twin"
ROLE_LABEL = "diff.dralloc.io/role"
RUN_LABEL = "diff.dralloc.io/run"
PIN_PREFIX = "pin.dralloc.io/"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
GPU_DRIVER = "gpu.example.com"
CLAIM = "gpu"
PENDING = "pending"
HOLD = "diff.dralloc.io/hold"  # keeps a deleted pod terminating
PINNED = "pinned"
PREBOUND_LABEL = "diff.dralloc.io/prebound"  # on claims: "true" when the twin waits for it to be Bound

APPS = ("a", "b", "c")
TIERS = ("x", "y")
# Node taints: at most one `dedicated` per node (a node's taints are unique by key and effect).
DEDICATED = ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
             {"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
OTHER_TAINTS = ({"key": "maint", "effect": "NoExecute"}, {"key": "soft", "effect": "PreferNoSchedule"})
TOLERATIONS = (
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "maint", "operator": "Exists", "effect": "NoExecute"},
    {"key": "maint", "operator": "Exists", "effect": "NoSchedule"},  # the wrong effect: tolerates nothing here
    {"key": "maint", "operator": "Equal", "effect": "NoExecute", "tolerationSeconds": 60},  # value "" != none
    {"key": "maint", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    {"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"},
    {"operator": "Exists"},
)
HOST_PORTS = (8080, 8081)
CSI_DRIVER = "csi.diff.dralloc.io"
# A twin's StorageClasses (`<twin key>-<kind>`): pre-bound claims are Immediate, the others
# WaitForFirstConsumer; neither provisions (nothing would), so a claim binds only to a PV of the twin.
STORAGE_CLASSES = ("$sc-bound", "$sc-wffc")


def node_name(index: int) -> str:
    return f"n{index}"


# ---- the generator --------------------------------------------------------------------------------


def _labels(rng: random.Random, *, app: float = 0.8, tier: float = 0.5) -> dict[str, str]:
    found = {}
    if rng.random() < app:
        found["app"] = rng.choice(APPS)
    if rng.random() < tier:
        found["tier"] = rng.choice(TIERS)
    return found


def _selector(rng: random.Random) -> Obj | None:
    """A label selector over the app label (not `tier`: matchLabelKeys use it), now and then empty
    (every pod; a spread constraint counts none) or absent (no pod)."""
    roll = rng.random()
    if roll < 0.05:
        return {}
    if roll < 0.08:
        return None
    roll = rng.random()
    if roll < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    if roll < 0.8:
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": sorted(rng.sample(APPS, 2))}]}
    if roll < 0.9:
        return {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    return {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": [rng.choice(APPS)]}]}


def _affinity_term(rng: random.Random, *, label_keys: bool, anti: bool) -> Obj:
    term: Obj = {"topologyKey": rng.choice((HOSTNAME, HOSTNAME, ZONE, RACK))}
    selector = _selector(rng)
    if selector is not None:
        term["labelSelector"] = selector
    roll = rng.random()
    if roll < 0.1:
        term["namespaces"] = ["$ns"]
    elif roll < 0.2:
        term["namespaces"] = rng.choice((["$ns2"], ["$ns", "$ns2"]))
    elif roll < 0.25:
        # namespaces and namespaceSelector together: their union
        term["namespaces"] = ["$ns"]
        term["namespaceSelector"] = {"matchLabels": {TWIN_LABEL: "$twin", PART_LABEL: "b"}}
    elif roll < 0.35:
        # the twin's two namespaces (both carry its label), or its second one
        term["namespaceSelector"] = rng.choice(({"matchLabels": {TWIN_LABEL: "$twin"}},
                                                {"matchLabels": {TWIN_LABEL: "$twin", PART_LABEL: "b"}}))
    elif roll < 0.4 and anti:
        # Every namespace: only anti-affinity may (other twins' pods add domains no node of this twin
        # has), not affinity (a matching pod anywhere ends "the first pod of a series").
        term["namespaceSelector"] = {}
    if label_keys and selector is not None and rng.random() < 0.15:  # the API wants a labelSelector with them
        term[rng.choice(("matchLabelKeys", "mismatchLabelKeys"))] = ["tier"]
    return term


def _pod_affinity(rng: random.Random, *, affinity: float, anti: float, label_keys: bool) -> Obj:
    found: Obj = {}
    if rng.random() < affinity:
        terms = [_affinity_term(rng, label_keys=label_keys, anti=False) for _ in range(rng.choice((1, 1, 2)))]
        found["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    if rng.random() < anti:
        terms = [_affinity_term(rng, label_keys=label_keys, anti=True) for _ in range(rng.choice((1, 1, 2)))]
        found["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": terms}
    return found


def _ports(rng: random.Random, chance: float) -> list[Obj]:
    if rng.random() >= chance:
        return []
    port: Obj = {"containerPort": 80, "hostPort": rng.choice(HOST_PORTS)}
    if rng.random() < 0.25:
        port["protocol"] = "UDP"
    if rng.random() < 0.25:
        port["hostIP"] = "127.0.0.1"
    return [port]


def _node_requirement(rng: random.Random, nodes: list[Obj], zones: int) -> Obj:
    roll = rng.random()
    if roll < 0.3:
        values = sorted(rng.sample([f"$z{z}" for z in range(zones)], rng.randint(1, zones)))
        return {"key": ZONE, "operator": rng.choice(("In", "NotIn")), "values": values}
    if roll < 0.45:
        return {"key": DISK, "operator": rng.choice(("Exists", "DoesNotExist"))}
    if roll < 0.55:
        return {"key": DISK, "operator": "In", "values": [rng.choice(("ssd", "hdd"))]}
    if roll < 0.7:
        return {"key": RANK, "operator": rng.choice(("Gt", "Lt")), "values": [str(rng.randint(1, 4))]}
    names = [f"${n['name']}" for n in nodes]
    return {"key": HOSTNAME, "operator": rng.choice(("In", "NotIn")),
            "values": sorted(rng.sample(names, rng.randint(1, len(names))))}


def _node_affinity(rng: random.Random, nodes: list[Obj], zones: int) -> Obj:
    terms = []
    for _ in range(rng.choice((1, 1, 2))):
        if rng.random() < 0.15:
            names = [f"${n['name']}" for n in nodes]
            # The API allows exactly one value for a field selector's In and NotIn.
            terms.append({"matchFields": [{"key": "metadata.name", "operator": rng.choice(("In", "NotIn")),
                                           "values": [rng.choice(names)]}]})
        else:
            terms.append({"matchExpressions": [_node_requirement(rng, nodes, zones)
                                               for _ in range(rng.choice((1, 1, 2)))]})
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}


def _spread(rng: random.Random) -> list[Obj]:
    found: list[Obj] = []
    used: set[tuple[str, str]] = set()  # the API refuses two constraints with one key and one policy
    for _ in range(rng.choice((1, 1, 2))):
        key = rng.choice((HOSTNAME, ZONE, RACK))
        when = "DoNotSchedule" if rng.random() < 0.85 else "ScheduleAnyway"
        if (key, when) in used:
            continue
        used.add((key, when))
        constraint: Obj = {"maxSkew": rng.choice((1, 1, 2)), "topologyKey": key, "whenUnsatisfiable": when}
        selector = _selector(rng)
        if selector is not None:
            constraint["labelSelector"] = selector
        if when == "DoNotSchedule" and rng.random() < 0.3:
            constraint["minDomains"] = rng.randint(2, 4)
        if rng.random() < 0.3:
            constraint["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        if rng.random() < 0.1:
            constraint["nodeAffinityPolicy"] = "Honor"
        elif key == RACK and rng.random() < 0.3:
            constraint["nodeAffinityPolicy"] = "Ignore"  # only this twin's nodes have the key
        if selector is not None and rng.random() < 0.15:  # the API wants a labelSelector with them
            constraint["matchLabelKeys"] = ["tier"]
        found.append(constraint)
    return found


def _millis(value: int) -> str:
    return str(value // 1000) if value % 1000 == 0 else f"{value}m"


def aggregate_cpu(workload: Obj) -> int:
    """The pod's cpu request from its containers in millicores, as upstream's PodRequests adds them up:
    the containers and the sidecars (restartable init containers) together, at least what each init
    container needs while it runs (beside the sidecars started before it)."""
    total = workload.get("cpu", 0)
    sidecars = 0
    most = 0
    for init in workload.get("init", ()):
        if init.get("sidecar"):
            total += init.get("cpu", 0)
            sidecars += init.get("cpu", 0)
            most = max(most, sidecars)
        else:
            most = max(most, init.get("cpu", 0) + sidecars)
    return max(total, most)


def _workload(rng: random.Random, *, cpu: tuple[int, ...], ports: float, init: float, pod_level: float) -> Obj:
    """Containers as numbers: the main container's cpu (millicores) and memory and host ports, init
    containers (some of them sidecars, restartPolicy Always, which may hold host ports too), and a
    pod-level cpu request (at least what the containers ask for, as the API requires)."""
    found: Obj = {}
    chosen = rng.choice(cpu)
    if chosen:
        found["cpu"] = chosen
    if rng.random() < 0.15:
        found["memory"] = rng.choice(("1Gi", "6Gi"))
    host = _ports(rng, ports)
    if host:
        found["ports"] = host
    if rng.random() < init:
        inits = []
        for _ in range(rng.choice((1, 1, 2))):
            entry: Obj = {"cpu": rng.choice((0, 500, 1000, 2500))}
            if rng.random() < 0.6:
                entry["sidecar"] = True
                sidecar_ports = _ports(rng, 0.6)
                if sidecar_ports:
                    entry["ports"] = sidecar_ports
            inits.append(entry)
        found["init"] = inits
    if rng.random() < pod_level:
        found["podCpu"] = aggregate_cpu(found) + rng.choice((0, 500, 1000, 2000))
    return found


def _storage(rng: random.Random, nodes: list[Obj], zones: int, existing: list[Obj], pending: Obj) -> Obj | None:
    """Volumes for the pending pod (and some existing pods), each kind a volume filter reads:
    a pre-bound local PV with node affinity (VolumeBinding's bound check), a pre-bound CSI PV with a
    zone label (VolumeZone), a WaitForFirstConsumer claim with Available local PVs on some nodes
    (VolumeBinding's matching: sizes, node affinity), a ReadWriteOncePod claim an existing pod may
    use already (VolumeRestrictions), CSI volumes of existing pods against CSINode limits
    (NodeVolumeLimits). Claims and PVs are the twin's own: `c<i>`, `v<i>` (PVs named by the twin)."""
    volumes: list[Obj] = []
    claims: list[Obj] = []
    names = [f"${n['name']}" for n in nodes]

    def new_claim(kind: str, *, mode: str = "ReadWriteOnce", size: str = "1Gi") -> Obj:
        found = {"name": f"c{len(claims)}", "class": kind, "mode": mode, "size": size}
        claims.append(found)
        return found

    def new_volume(claim: Obj | None, *, node: str | None = None, zone_affinity: str | None = None,
                   zone_label: str | None = None, csi: bool = False, size: str = "1Gi",
                   mode: str = "ReadWriteOnce") -> Obj:
        found: Obj = {"name": f"v{len(volumes)}", "mode": mode, "size": size, "csi": csi}
        for key, value in (("node", node), ("zoneAffinity", zone_affinity), ("zoneLabel", zone_label)):
            if value is not None:
                found[key] = value
        if claim is not None:
            found["claim"] = claim["name"]
            claim["volume"] = found["name"]
        volumes.append(found)
        return found

    wanted: list[str] = []
    for _ in range(rng.choice((1, 1, 2))):
        roll = rng.random()
        if roll < 0.25:  # bound, local, on one node or in one zone
            claim = new_claim("bound")
            if rng.random() < 0.7:
                new_volume(claim, node=rng.choice(names))
            else:
                new_volume(claim, zone_affinity=f"$z{rng.randrange(zones)}")
        elif roll < 0.4:  # bound, CSI, labelled with a zone
            claim = new_claim("bound")
            new_volume(claim, csi=True, zone_label=f"$z{rng.randrange(zones)}")
        elif roll < 0.7:  # WaitForFirstConsumer: some Available PVs on some nodes
            claim = new_claim("wffc", size=rng.choice(("1Gi", "2Gi")))
            for _ in range(rng.randint(0, 3)):
                new_volume(None, node=rng.choice(names), size=rng.choice(("1Gi", "2Gi", "4Gi")))
        elif roll < 0.85:  # ReadWriteOncePod, maybe in use by an existing pod
            claim = new_claim("bound", mode="ReadWriteOncePod")
            new_volume(claim, node=rng.choice(names), mode="ReadWriteOncePod")
            holders = [p for p in existing if "namespace" not in p]
            if holders and rng.random() < 0.6:
                rng.choice(holders).setdefault("claims", []).append(claim["name"])
        else:  # CSI, against the nodes' limits, with CSI volumes of existing pods counted
            claim = new_claim("bound")
            new_volume(claim, csi=True)
            for holder in [p for p in existing if "namespace" not in p]:
                if rng.random() < 0.5:
                    other = new_claim("bound")
                    new_volume(other, csi=True)
                    holder.setdefault("claims", []).append(other["name"])
        wanted.append(claim["name"])
    limits = {}
    if any(v["csi"] for v in volumes):
        limits = {n["name"]: rng.choice((0, 1, 1, 2, 4)) for n in nodes if rng.random() < 0.7}
    pending["claims"] = wanted
    return {"volumes": volumes, "claims": claims, "csiLimits": limits}


def scenario(seed: int, index: int) -> Obj:
    """Scenario `index` of the run `seed`: a pure function of both."""
    rng = random.Random(f"kube-scheduler-differential:{seed}:{index}")
    zones = rng.randint(1, 3)
    nodes: list[Obj] = []
    for i in range(rng.randint(2, 5)):
        node: Obj = {"name": node_name(i), "cpu": rng.choice(("2", "4")), "pods": "2" if rng.random() < 0.1 else "110",
                     "gpus": rng.choice((0, 1, 1, 2, 2))}
        if node["gpus"] and rng.random() < 0.25:
            node["gpusInUse"] = rng.randint(1, node["gpus"])
        if rng.random() < 0.15:
            node["memory"] = "8Gi"
        if rng.random() < 0.85:
            node["zone"] = f"$z{rng.randrange(zones)}"
        if rng.random() < 0.5:
            node["disk"] = rng.choice(("ssd", "hdd"))
        if rng.random() < 0.5:
            node["rank"] = str(rng.randint(1, 5))
        if rng.random() < 0.7:
            node["rack"] = f"$r{rng.randrange(2)}"
        taints = []
        if rng.random() < 0.12:
            taints.append(dict(rng.choice(DEDICATED)))
        taints += [dict(t) for t in OTHER_TAINTS if rng.random() < 0.06]
        if taints:
            node["taints"] = taints
        if rng.random() < 0.07:
            node["unschedulable"] = True
        nodes.append(node)
    existing: list[Obj] = []
    for i in range(rng.randint(0, min(8, 2 * len(nodes)))):
        pod: Obj = {"name": f"e{i}", "node": rng.choice(nodes)["name"], "labels": _labels(rng),
                    **_workload(rng, cpu=(100, 500, 1000, 1500), ports=0.2, init=0.15, pod_level=0.1)}
        if rng.random() < 0.2:
            pod["namespace"] = "$ns2"
        roll = rng.random()
        if roll < 0.06:
            pod["phase"] = rng.choice(("Succeeded", "Failed"))
        elif roll < 0.12:
            pod["terminating"] = True
        affinity = _pod_affinity(rng, affinity=0.1, anti=0.25, label_keys=False)
        if affinity:
            pod["affinity"] = affinity
        existing.append(pod)
    pending: Obj = {"labels": _labels(rng, app=0.85, tier=0.6), "gpus": rng.choice((0, 0, 0, 1, 1, 1, 2)),
                    **_workload(rng, cpu=(0, 500, 1000, 2000, 3000), ports=0.3, init=0.15, pod_level=0.1)}
    affinity = _pod_affinity(rng, affinity=0.25, anti=0.35, label_keys=True)
    if rng.random() < 0.2:
        affinity["nodeAffinity"] = _node_affinity(rng, nodes, zones)
    if affinity:
        pending["affinity"] = affinity
    if rng.random() < 0.15:
        pending["nodeSelector"] = rng.choice(({DISK: "ssd"}, {ZONE: f"$z{rng.randrange(zones)}"},
                                              {HOSTNAME: f"${rng.choice(nodes)['name']}"}))
    tolerations = [dict(t) for t in TOLERATIONS if rng.random() < 0.12]
    if tolerations:
        pending["tolerations"] = tolerations
    if rng.random() < 0.45:
        spread = _spread(rng)
        if spread:
            pending["topologySpreadConstraints"] = spread
    found = {"seed": seed, "index": index, "zones": zones, "nodes": nodes, "pods": existing, "pending": pending}
    # Drawn last, from a generator of its own: the scenarios of earlier runs (seeds replayed by
    # number) keep every other draw as it was.
    storage_rng = random.Random(f"kube-scheduler-differential-storage:{seed}:{index}")
    if storage_rng.random() < 0.35:
        found["storage"] = _storage(storage_rng, nodes, zones, existing, pending)
    return found


# ---- twins ----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Twin:
    """One copy of a scenario in a cluster: `side` k (kube-scheduler), d (dralloc) or p (kube-scheduler,
    pinned to dralloc's node); `run` names the run (a short token), `index` the scenario."""

    side: str
    run: str
    index: int

    @property
    def key(self) -> str:
        return f"{self.side}-{self.run}-s{self.index}"

    @property
    def namespace(self) -> str:
        """Where its pending pod and most of its pods are."""
        return f"diff-{self.key}"

    @property
    def second_namespace(self) -> str:
        """Where some of its pods are (`$ns2`): pod affinity terms reach them by namespace or selector."""
        return f"diff-{self.key}-b"

    @property
    def rack_key(self) -> str:
        """A label key only this twin's nodes have: a topology key nodeAffinityPolicy Ignore may use."""
        return f"{self.key}.diff.dralloc.io/rack"

    def node(self, name: str) -> str:
        """The twin's node for the scenario's node `name` (n0, n1, ...)."""
        return f"{self.key}-{name}"

    def zone(self, name: str) -> str:
        return f"{self.key}-{name}"

    def position(self, node: str) -> str | None:
        """The scenario's name of one of this twin's nodes (None: not this twin's)."""
        prefix = f"{self.key}-"
        return node[len(prefix):] if node.startswith(prefix) else None

    def substitutes(self, scenario_: Obj) -> dict[str, str]:
        found = {"$ns": self.namespace, "$ns2": self.second_namespace, "$twin": self.key,
                 RACK: self.rack_key, "$r0": self.zone("r0"), "$r1": self.zone("r1"),
                 **{name: f"{self.key}-{name[1:]}" for name in STORAGE_CLASSES}}
        for node in scenario_["nodes"]:
            found[f"${node['name']}"] = self.node(node["name"])
        for zone in range(scenario_["zones"]):
            found[f"$z{zone}"] = self.zone(f"z{zone}")
        return found


def _substituted(value: Any, table: dict[str, str]) -> Any:
    if isinstance(value, str):
        return table.get(value, value) if value.startswith("$") else value
    if isinstance(value, list):
        return [_substituted(v, table) for v in value]
    if isinstance(value, dict):
        return {k: _substituted(v, table) for k, v in value.items()}
    return value


def _node_object(twin: Twin, node: Obj, table: dict[str, str]) -> Obj:
    name = twin.node(node["name"])
    labels = {HOSTNAME: name, TWIN_LABEL: twin.key, RUN_LABEL: twin.run}
    if "zone" in node:
        labels[ZONE] = table[node["zone"]]
    for key, field in ((DISK, "disk"), (RANK, "rank")):
        if field in node:
            labels[key] = node[field]
    if "rack" in node:
        labels[twin.rack_key] = table[node["rack"]]
    taints = [dict(t) for t in node.get("taints", ())]
    spec: Obj = {}
    if node.get("unschedulable"):
        spec["unschedulable"] = True
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    if taints:
        spec["taints"] = taints
    amounts = {"cpu": node["cpu"], "memory": node.get("memory", "64Gi"), "pods": node["pods"],
               f"{PIN_PREFIX}{node['name']}": "1"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"allocatable": dict(amounts), "capacity": dict(amounts)}}


def _slice(node: str, count: int) -> Obj:
    devices = [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(count)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{node}-gpus"},
            "spec": {"driver": GPU_DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1}, "devices": devices}}


def _in_use(twin: Twin, node: Obj, class_name: str) -> Obj:
    """A claim holding the node's first `gpusInUse` GPUs: allocated, reserved for nobody (a claim no
    pod uses yet keeps its allocation: neither kube-controller-manager nor dralloc takes it back)."""
    name = twin.node(node["name"])
    count = node["gpusInUse"]
    results = [{"request": "gpu", "driver": GPU_DRIVER, "pool": name, "device": f"gpu-{i}"} for i in range(count)]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"in-use-{node['name']}", "namespace": twin.second_namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}}]}},
            "status": {"allocation": {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}}


def device_class(name: str) -> Obj:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}}


def _container(name: str, *, cpu: int = 0, memory: str | None = None, ports: list[Obj] | None = None,
               claim: bool = False, extra: dict[str, str] | None = None) -> Obj:
    container: Obj = {"name": name, "image": "busybox"}
    requests: Obj = {}
    if cpu:
        requests["cpu"] = _millis(cpu)
    if memory:
        requests["memory"] = memory
    resources: Obj = {}
    if extra:  # extended resources: requests equal to limits, as the API requires
        requests.update(extra)
        resources["limits"] = dict(extra)
    if requests:
        resources["requests"] = requests
    if claim:
        resources["claims"] = [{"name": CLAIM}]
    if resources:
        container["resources"] = resources
    if ports:
        container["ports"] = [dict(p) for p in ports]
    return container


def _workload_spec(workload: Obj, *, claim: bool = False, extra: dict[str, str] | None = None) -> Obj:
    """containers, initContainers and pod-level resources of a `_workload`."""
    spec: Obj = {"containers": [_container("main", cpu=workload.get("cpu", 0), memory=workload.get("memory"),
                                           ports=workload.get("ports"), claim=claim, extra=extra)]}
    inits = []
    for number, init in enumerate(workload.get("init", ())):
        container = _container(f"init-{number}", cpu=init.get("cpu", 0), ports=init.get("ports"))
        if init.get("sidecar"):
            container["restartPolicy"] = "Always"
        inits.append(container)
    if inits:
        spec["initContainers"] = inits
    if workload.get("podCpu"):
        spec["resources"] = {"requests": {"cpu": _millis(workload["podCpu"])}}
    return spec


def _pod_volumes(claims: list[str]) -> list[Obj]:
    return [{"name": f"vol-{name}", "persistentVolumeClaim": {"claimName": name}} for name in claims]


def _storage_objects(scenario_: Obj, twin: Twin, table: dict[str, str]) -> list[Obj]:
    """The twin's StorageClasses, PersistentVolumes (pre-bound to their claims, or Available), claims and
    CSINodes."""
    storage = scenario_.get("storage")
    if not storage:
        return []
    classes = {"bound": table["$sc-bound"], "wffc": table["$sc-wffc"]}
    objects: list[Obj] = [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": classes["bound"]},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "Immediate"},
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": classes["wffc"]},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
    ]
    claim_class = {c["name"]: classes[c["class"]] for c in storage["claims"]}
    unbound_class = classes["wffc"]
    for volume in storage["volumes"]:
        claim_name = volume.get("claim")
        spec: Obj = {"capacity": {"storage": volume["size"]}, "accessModes": [volume["mode"]],
                     "storageClassName": claim_class[claim_name] if claim_name else unbound_class,
                     "persistentVolumeReclaimPolicy": "Retain"}
        if claim_name:
            spec["claimRef"] = {"namespace": twin.namespace, "name": claim_name}
        term = None
        if "node" in volume:
            term = {"key": HOSTNAME, "operator": "In", "values": [table[volume["node"]]]}
        elif "zoneAffinity" in volume:
            term = {"key": ZONE, "operator": "In", "values": [table[volume["zoneAffinity"]]]}
        if term is not None:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}
        if volume["csi"]:
            spec["csi"] = {"driver": CSI_DRIVER, "volumeHandle": f"{twin.key}-{volume['name']}"}
        else:
            spec["local"] = {"path": f"/mnt/{volume['name']}"}
        labels = {RUN_LABEL: twin.run}
        if "zoneLabel" in volume:
            labels[ZONE] = table[volume["zoneLabel"]]
        objects.append({"apiVersion": "v1", "kind": "PersistentVolume",
                        "metadata": {"name": f"{twin.key}-{volume['name']}", "labels": labels}, "spec": spec})
    for claim in storage["claims"]:
        spec = {"accessModes": [claim["mode"]], "storageClassName": claim_class[claim["name"]],
                "resources": {"requests": {"storage": claim["size"]}}}
        if claim.get("volume"):
            spec["volumeName"] = f"{twin.key}-{claim['volume']}"
        objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                        "metadata": {"name": claim["name"], "namespace": twin.namespace, "labels": {
                            RUN_LABEL: twin.run, PREBOUND_LABEL: "true" if claim.get("volume") else "false"}},
                        "spec": spec})
    for node, count in storage.get("csiLimits", {}).items():
        name = twin.node(node)
        objects.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
                        "spec": {"drivers": [{"name": CSI_DRIVER, "nodeID": name, "allocatable": {"count": count}}]}})
    return objects


def setup_objects(scenario_: Obj, twin: Twin, class_name: str) -> list[Obj]:
    """The twin's Namespaces, Nodes, ResourceSlices, claims holding GPUs, pods already bound, and the
    pending pod's claim. Pods to be terminating carry the finalizer `HOLD` (delete them after)."""
    table = twin.substitutes(scenario_)
    objects: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": twin.namespace, "labels": {TWIN_LABEL: twin.key, PART_LABEL: "a"}}},
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": twin.second_namespace, "labels": {TWIN_LABEL: twin.key, PART_LABEL: "b"}}},
    ]
    for node in scenario_["nodes"]:
        objects.append(_node_object(twin, node, table))
        if node["gpus"]:
            objects.append(_slice(twin.node(node["name"]), node["gpus"]))
        if node.get("gpusInUse"):
            objects.append(_in_use(twin, node, class_name))
    for pod in scenario_["pods"]:
        spec: Obj = {"nodeName": twin.node(pod["node"]), "tolerations": [{"operator": "Exists"}],
                     **_workload_spec(pod), "terminationGracePeriodSeconds": 0}
        if pod.get("affinity"):
            spec["affinity"] = _substituted(pod["affinity"], table)
        if pod.get("claims"):
            spec["volumes"] = _pod_volumes(pod["claims"])
        meta: Obj = {"name": pod["name"], "namespace": table[pod.get("namespace", "$ns")],
                     "labels": {**pod["labels"], RUN_LABEL: twin.run}}
        if pod.get("terminating"):
            meta["finalizers"] = [HOLD]
        obj: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
        if pod.get("phase"):
            obj["status"] = {"phase": pod["phase"]}
        objects.append(obj)
    pending_claim = claim(scenario_, twin, class_name)
    if pending_claim is not None:
        objects.append(pending_claim)
    return objects + _storage_objects(scenario_, twin, table)


def terminating(scenario_: Obj, twin: Twin) -> list[tuple[str, str]]:
    """(namespace, name) of the twin's pods to delete once created: their finalizer keeps them terminating."""
    table = twin.substitutes(scenario_)
    return [(table[p.get("namespace", "$ns")], p["name"]) for p in scenario_["pods"] if p.get("terminating")]


def claim(scenario_: Obj, twin: Twin, class_name: str, name: str = CLAIM) -> Obj | None:
    """The pending pod's ResourceClaim (None when it asks for no GPU)."""
    count = scenario_["pending"].get("gpus", 0)
    if not count:
        return None
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": twin.namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": class_name, "allocationMode": "ExactCount", "count": count}}]}}}


def pending_pod(scenario_: Obj, twin: Twin, *, scheduler: str | None, name: str = PENDING,
                claim_name: str = CLAIM, pin: str | None = None) -> Obj:
    """The scenario's pending pod in the twin; `scheduler` its schedulerName (None: the default);
    `pin` a scenario node name: the pod also asks for that node's pin resource."""
    table = twin.substitutes(scenario_)
    wanted = scenario_["pending"]
    gpus = bool(wanted.get("gpus"))
    extra = {f"{PIN_PREFIX}{pin}": "1"} if pin else None
    spec: Obj = {**_workload_spec(wanted, claim=gpus, extra=extra),
                 "nodeSelector": {TWIN_LABEL: twin.key, **_substituted(wanted.get("nodeSelector", {}), table)},
                 "terminationGracePeriodSeconds": 0}
    if scheduler:
        spec["schedulerName"] = scheduler
    for field in ("affinity", "tolerations", "topologySpreadConstraints"):
        if wanted.get(field):
            spec[field] = _substituted(copy.deepcopy(wanted[field]), table)
    if gpus:
        spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimName": claim_name}]
    if wanted.get("claims"):
        spec["volumes"] = _pod_volumes(wanted["claims"])
    labels = {**wanted.get("labels", {}), ROLE_LABEL: name, RUN_LABEL: twin.run}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": twin.namespace, "labels": labels},
            "spec": spec}
