"""Does a node pass a pod's scheduling constraints (everything except devices)?

The checks kube-scheduler's default filters make for a pod on its own, in the
order its default profile runs them, each reported in kube-scheduler's words:
NodeName (`spec.nodeName`), NodeUnschedulable (`spec.unschedulable`),
TaintToleration (NoSchedule/NoExecute taints against the pod's tolerations),
NodeAffinity (`nodeSelector` and required node affinity), and NodeResourcesFit
(pods, cpu, memory, ephemeral-storage and the rest against allocatable minus
what pods already on the node request; every resource that is short is listed).
The filters that look at other pods and volumes (NodePorts, the volume filters,
PodTopologySpread, InterPodAffinity) are in their own modules and run after these.

Other resources (extended resources such as `nvidia.com/gpu`, hugepages) are
checked against allocatable when the node advertises them. When it does not,
the caller decides by passing `dra_backed`, the resource names a DeviceClass
serves (`dralloc.lifecycle.extended.class_mapping`): those are left to DRA (the
pod's extended-resource claim), any other is insufficient, as kube-scheduler's
NodeResourcesFit reports it. Without `dra_backed` (None) every such resource is
left to devices.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence

from dralloc.allocation import nodeaffinity, taints
from dralloc.model import nodes, pods
from dralloc.model.quantities import Quantity, QuantityError
from dralloc.scheduling import nodeallocatable

FIT_RESOURCES = ("cpu", "memory", "ephemeral-storage")
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# An unschedulable node behaves as if it had this taint (kube-scheduler's NodeUnschedulable).
_UNSCHEDULABLE = nodes.Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule")


# kube-scheduler 1.37's reasons (its plugins' ErrReason strings), so a pod's condition reads the same
# whichever scheduler wrote it.
REASON_NODE_NAME = "node(s) didn't match the requested node name"  # NodeName
REASON_UNSCHEDULABLE = "node(s) were unschedulable"  # NodeUnschedulable
REASON_TAINT = "node(s) had untolerated taint(s)"  # TaintToleration
REASON_NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"  # NodeAffinity
REASON_TOO_MANY_PODS = "Too many pods"  # NodeResourcesFit, beside "Insufficient <resource>"


# The resources a pod-level request (spec.resources, PodLevelResources, beta and on by default since
# 1.34) sets for the whole pod: upstream's IsSupportedPodLevelResource.
POD_LEVEL_RESOURCES = ("cpu", "memory")
HUGEPAGES_PREFIX = "hugepages-"


def is_sidecar(container: pods.Container) -> bool:
    """A restartable init container (`restartPolicy: Always`): it runs beside the pod's containers."""
    return (container.model_extra or {}).get("restartPolicy") == "Always"


def pod_level_requests(pod: pods.Pod) -> dict[str, int]:
    """The pod-level requests (spec.resources.requests) of the resources a pod may set there, in
    nano-units; empty when it sets none (an unparsable quantity, which the API refuses, is left out)."""
    raw = (pod.spec.model_extra or {}).get("resources")
    requests = raw.get("requests") if isinstance(raw, dict) else None
    found: dict[str, int] = {}
    for name, value in (requests or {}).items() if isinstance(requests, dict) else ():
        if name in POD_LEVEL_RESOURCES or str(name).startswith(HUGEPAGES_PREFIX):
            try:
                found[name] = Quantity.parse(value).nanos
            except (QuantityError, TypeError):
                continue
    return found


def pod_requests(pod: pods.Pod) -> dict[str, int]:
    """Effective requests in nano-units, as upstream's PodRequests (k8s.io/component-helpers/resource)
    adds them up: the containers and the sidecars together; at least, per resource, what each init
    container needs while it runs beside the sidecars started before it; then the pod-level requests
    (cpu, memory, hugepages) replace the containers' sum for their resources; plus the overhead."""
    total: dict[str, int] = {}
    for container in pod.spec.containers:
        for name, q in container.resources.requests.items():
            total[name] = total.get(name, 0) + q.nanos
    sidecars: dict[str, int] = {}
    most: dict[str, int] = {}
    for container in pod.spec.init_containers:
        own = {name: q.nanos for name, q in container.resources.requests.items()}
        if is_sidecar(container):
            for name, value in own.items():
                total[name] = total.get(name, 0) + value
                sidecars[name] = sidecars.get(name, 0) + value
            running = dict(sidecars)
        else:
            running = dict(own)
            for name, value in sidecars.items():
                running[name] = running.get(name, 0) + value
        for name, value in running.items():
            most[name] = max(most.get(name, value), value)
    for name, value in most.items():
        total[name] = max(total.get(name, value), value)
    total.update(pod_level_requests(pod))
    for name, q in pod.spec.overhead.items():
        total[name] = total.get(name, 0) + q.nanos
    return total


def bound_pod_requests(pod: pods.Pod) -> dict[str, int]:
    """What a bound pod takes of its node: its requests plus the node resources its claims' devices
    map or cost, as the scheduler recorded them (DRANodeAllocatableResources)."""
    total = pod_requests(pod)
    if pod.status.node_allocatable_resource_claim_statuses:
        for name, amount in nodeallocatable.status_demand(pod.status.node_allocatable_resource_claim_statuses).items():
            total[name] = total.get(name, 0) + amount
    return total


def tolerates(toleration: pods.Toleration, taint: nodes.Taint) -> bool:
    return taints.toleration_matches(
        key=toleration.key, operator=toleration.operator, value=toleration.value, effect=toleration.effect,
        taint_key=taint.key, taint_value=taint.value, taint_effect=taint.effect,
    )


SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")  # the taint effects that keep a pod off a node


def untolerated_taint(node: nodes.Node, tolerations: Iterable[pods.Toleration],
                      effects: tuple[str, ...] = SCHEDULING_EFFECTS) -> nodes.Taint | None:
    tolerations = tuple(tolerations)
    for taint in node.spec.taints:
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


@dataclasses.dataclass
class NodeUsage:
    """What pods already bound to a node request (nano-units), and how many there are."""

    requests: dict[str, int] = dataclasses.field(default_factory=dict)
    pods: int = 0

    def add(self, requests: Mapping[str, int]) -> None:
        for name, value in requests.items():
            self.requests[name] = self.requests.get(name, 0) + value
        self.pods += 1

    def remove(self, requests: Mapping[str, int]) -> None:
        for name, value in requests.items():
            self.requests[name] = self.requests.get(name, 0) - value
        self.pods -= 1


# A node's allocatable pods (rounded up) and resources in nano-units, for callers that ask node
# fit of one node many times (a Placer keeps one per node: `misfit(..., allocatable=...)`).
Allocatable = tuple[int | None, dict[str, int]]


def allocatable_amounts(node: nodes.Node) -> Allocatable:
    amounts = node.status.allocatable
    pods_limit = amounts["pods"].as_int_ceil() if "pods" in amounts else None
    return pods_limit, {name: q.nanos for name, q in amounts.items()}


def misfit(pod: pods.Pod, node: nodes.Node, usage: NodeUsage | None, requests: Mapping[str, int], *,
           dra_backed: Collection[str] | None = None, allocatable: Allocatable | None = None,
           binding: bool = False) -> str | None:
    """Why the pod cannot run on the node, ignoring devices; None when it can.

    `dra_backed`: the resource names DeviceClasses serve; with it, a resource the node does
    not advertise and no class serves is insufficient (None: left to devices).
    `allocatable`: `allocatable_amounts(node)`, when the caller keeps it (converted otherwise).
    `binding`: the check before completing a bind decided earlier (a gang's recorded binds):
    a cordon or a NoSchedule taint that came since does not stop it, as it does not stop
    kube-scheduler's binding cycle or a running pod; everything else is checked.
    """
    reason = static_misfit(pod, node, binding=binding)
    if reason is not None:
        return reason
    reasons = insufficient(node, usage or NodeUsage(), requests, dra_backed=dra_backed, allocatable=allocatable)
    return ", ".join(reasons) if reasons else None


def static_misfit(pod: pods.Pod, node: nodes.Node, *, binding: bool = False) -> str | None:
    """`misfit` without the resources: what no pod leaving the node can change (node name, cordon, taints,
    node affinity), upstream's UnschedulableAndUnresolvable filters among these."""
    name = node.metadata.name
    spec = pod.spec
    if spec.node_name and spec.node_name != name:
        return REASON_NODE_NAME
    if not binding and node.spec.unschedulable and not any(tolerates(t, _UNSCHEDULABLE) for t in spec.tolerations):
        return REASON_UNSCHEDULABLE
    if untolerated_taint(node, spec.tolerations, effects=("NoExecute",) if binding else SCHEDULING_EFFECTS):
        return REASON_TAINT
    labels = node.metadata.labels
    for key, value in spec.node_selector.items():
        if labels.get(key) != value:
            return REASON_NODE_AFFINITY
    affinity = spec.affinity.node_affinity if spec.affinity else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity else None
    if required is not None and required.node_selector_terms:
        try:
            if not nodeaffinity.selector_matches(required, name, labels):
                return REASON_NODE_AFFINITY
        except ValueError as exc:
            return f"invalid node affinity: {exc}"
    return None


def is_resources_reason(reason: str) -> bool:
    """Whether a `misfit` reason is NodeResourcesFit's (the node is short of something)."""
    return reason.startswith(("Insufficient ", REASON_TOO_MANY_PODS))


def insufficient(node: nodes.Node, used: NodeUsage, requests: Mapping[str, int], *,
                 dra_backed: Collection[str] | None = None, allocatable: Allocatable | None = None) -> list[str]:
    """Every resource the node lacks for the pod, as kube-scheduler's NodeResourcesFit lists them:
    "Too many pods", then cpu, memory, ephemeral-storage, then the others (by name here; Go's map
    order there). A resource the node does not advertise is insufficient unless DRA serves it (see
    `misfit`); the reason then says why."""
    reasons = []
    allocatable_pods, amounts = allocatable if allocatable is not None else allocatable_amounts(node)
    if allocatable_pods is not None and used.pods + 1 > allocatable_pods:
        reasons.append(REASON_TOO_MANY_PODS)
    others = sorted(r for r in requests if r not in FIT_RESOURCES)
    for resource in (*(r for r in FIT_RESOURCES if r in requests), *others):
        wanted = requests[resource]
        if wanted <= 0:
            continue
        available = amounts.get(resource)
        if available is None:
            if resource in FIT_RESOURCES:
                reasons.append(f"Insufficient {resource}")
            elif dra_backed is not None and resource not in dra_backed:
                reasons.append(f"Insufficient {resource} (the node does not advertise it in status.allocatable and "
                               f"no DeviceClass names it in spec.extendedResourceName)")
            # else: served by DRA: the pod's extended-resource claim is allocated with its others
        elif used.requests.get(resource, 0) + wanted > available:
            reasons.append(f"Insufficient {resource}")
    return reasons


NO_NEED = -(2**63)  # a resource the pod does not ask for: any node has enough


class FreeResources:
    """The CPU and memory each node has left, in nano-units (allocatable minus what pods use;
    -1 where the node does not advertise the resource, which node fit then finds insufficient
    for any request of it).

    First-fit walks past thousands of full nodes per pod: two numbers per node tell most of
    them apart without `misfit`, which reads the whole pod and node each time. A necessary
    condition of `misfit` only (other resources, selectors and taints are checked there).
    """

    def __init__(self, allocatable: Sequence[Allocatable], usage: Sequence[NodeUsage]) -> None:
        self.cpu = [0] * len(allocatable)
        self.memory = [0] * len(allocatable)
        for index, (amounts, used) in enumerate(zip(allocatable, usage, strict=True)):
            self.update(index, amounts, used)

    def update(self, index: int, allocatable: Allocatable, used: NodeUsage) -> None:
        """Set node `index`'s values (after its usage changed: a pod placed or gone)."""
        amounts = allocatable[1]
        cpu, memory = amounts.get("cpu"), amounts.get("memory")
        self.cpu[index] = -1 if cpu is None else cpu - used.requests.get("cpu", 0)
        self.memory[index] = -1 if memory is None else memory - used.requests.get("memory", 0)

    def has_room(self, index: int, cpu: int, memory: int) -> bool:
        """Whether node `index` has `cpu` and `memory` left (NO_NEED: any amount will do)."""
        return self.cpu[index] >= cpu and self.memory[index] >= memory
