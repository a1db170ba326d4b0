"""DRA-backed extended resources (KEP-5004): one special claim for a pod's extended-resource requests.

A DeviceClass can stand for an extended resource: explicitly through
`spec.extendedResourceName` (e.g. `example.com/gpu`), and always implicitly as
`deviceclass.resource.kubernetes.io/<class name>`. A container that asks for
such a resource in `resources.requests` gets its devices through DRA, without
writing a ResourceClaim. Upstream's scheduler (dynamicresources plugin,
extendeddynamicresources.go, release 1.36) does it like this, and so do we:

- One claim per pod covers every such resource of every container. It is made
  for the chosen node: resources the node offers through a device plugin
  (allocatable > 0) are left to the device plugin; only the rest goes to DRA.
- Requests are per container and resource: `container-<i>-request-<j>`, where
  `i` indexes init containers followed by regular containers and `j` is the
  position of the resource among the container's request names, sorted. Each
  is `exactly` the class with `allocationMode: ExactCount` and the requested
  count. The requests are sorted by name (as strings).
- Init containers that run to completion (not sidecars: no
  `restartPolicy: Always`) run before the long-lived containers start, so they
  borrow the devices of the long-lived containers at their own index or later
  (sidecars declared after them, all regular containers), and ask only for what
  is still missing. Of what they ask for, only the largest request is kept (they
  run one at a time) and all of them map to it.
- `pod.status.extendedResourceClaimStatus` records the claim's name and, for
  each container and resource, the request serving it (`requestMappings`: long-
  lived containers first, then init containers, resource by resource).
- The claim: `generateName` `<pod>-extended-resources-`, owned by the pod as
  controller, annotated `resource.kubernetes.io/extended-resource-claim: "true"`.
  It is found again by that annotation and the controller owner's UID.
- When several classes name the same extended resource, the one created last
  wins; at equal creation times, the first by name.

Differences from upstream, deliberate:
- Upstream leaves an over-long `generateName` to the API server, which cuts it
  to 58 characters. We cut it the same way ourselves, so the value is the same,
  and an API server that does not cut (our sandbox may not) still gets a valid
  one.
- Who creates the claim: upstream's scheduler, in PreBind, once a node is
  chosen. Here `extended_resource_claim(..., node_allocatable=...)` is the
  decision for one node; dralloc's placement creates the claim and records the
  status. Deleting it when the pod is done is `claims.claim_plan`'s job: it is a
  claim whose controller is a pod, like any generated claim.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from dralloc.model.claims import ResourceClaim
from dralloc.model.classes import DeviceClass
from dralloc.model.pods import Container, Pod
from dralloc.model.quantities import Quantity

EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
IMPLICIT_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"
CLAIM_API_VERSION = "resource.k8s.io/v1"

# The API server appends 5 random characters to a generateName cut to this length (63 - 5).
_MAX_GENERATE_NAME_BASE = 58


def is_extended_resource_name(name: str) -> bool:
    """Whether a resource name can be DRA-backed: an extended resource, or a class's implicit name.

    Extended resources have a domain prefix outside kubernetes.io and are not quota
    `requests.` names; the implicit `deviceclass.resource.kubernetes.io/` names count too.
    """
    if name.startswith(IMPLICIT_RESOURCE_PREFIX):
        return True
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


def class_mapping(classes: Iterable[DeviceClass]) -> dict[str, DeviceClass]:
    """Extended resource name -> the class that serves it (explicit names and implicit ones)."""
    ordered = sorted(classes, key=lambda c: c.name)
    mapping: dict[str, DeviceClass] = {f"{IMPLICIT_RESOURCE_PREFIX}{c.name}": c for c in ordered}
    explicit: dict[str, DeviceClass] = {}
    for cls in ordered:
        resource = cls.spec.extended_resource_name
        if not resource:
            continue
        current = explicit.get(resource)
        # The newest class wins; names were sorted, so at equal times the first name stays.
        if current is None or (cls.metadata.creation_timestamp or "") > (current.metadata.creation_timestamp or ""):
            explicit[resource] = cls
    mapping.update(explicit)
    return mapping


def _count(quantity: Quantity | None) -> int:
    """The requested number of devices; 0 for missing, zero or fractional quantities (not a device count)."""
    if quantity is None or not quantity.is_integer() or quantity.sign() <= 0:
        return 0
    return int(quantity.value)


def _is_sidecar(container: Container) -> bool:
    return (container.model_extra or {}).get("restartPolicy") == "Always"


def _container_request(
    index: int,
    container: Container,
    resource: str,
    class_name: str,
    borrowable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The request a container adds for one resource (None if covered or not asked) and its mappings."""
    wanted = _count(container.resources.requests.get(resource))
    if wanted == 0:
        return None, []
    mappings: list[dict[str, Any]] = []
    covered = 0
    for request in borrowable:
        if request is None:
            continue
        covered += request["exactly"]["count"]
        mappings.append({"containerName": container.name, "resourceName": resource, "requestName": request["name"]})
        if covered >= wanted:
            return None, mappings
    position = sorted(container.resources.requests).index(resource)
    name = f"container-{index}-request-{position}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - covered},
    }
    mappings.append({"containerName": container.name, "resourceName": resource, "requestName": name})
    return request, mappings


def dra_resources(
    pod: Pod,
    classes: Iterable[DeviceClass],
    *,
    node_allocatable: Mapping[str, Quantity] | None = None,  # None: no device plugin anywhere, DRA serves all
) -> dict[str, DeviceClass]:
    """The pod's requested extended resources that DRA must serve on this node, with their classes."""
    mapping = class_mapping(classes)
    wanted: dict[str, DeviceClass] = {}
    for container in (*pod.spec.init_containers, *pod.spec.containers):
        for resource, quantity in container.resources.requests.items():
            if not is_extended_resource_name(resource) or resource not in mapping or _count(quantity) == 0:
                continue
            offered = (node_allocatable or {}).get(resource)
            if offered is not None and not offered.is_zero():
                continue  # a device plugin on this node provides it
            wanted[resource] = mapping[resource]
    return wanted


def requests_and_mappings(
    pod: Pod,
    classes: Iterable[DeviceClass],
    *,
    node_allocatable: Mapping[str, Quantity] | None = None,  # None: no device plugin anywhere, DRA serves all
) -> tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...]]:
    """The special claim's device requests and the pod's `requestMappings`, as upstream derives them."""
    containers = (*pod.spec.init_containers, *pod.spec.containers)
    first_regular = len(pod.spec.init_containers)
    short_lived = [i for i, c in enumerate(containers) if i < first_regular and not _is_sidecar(c)]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, Any]] = []
    resources = dra_resources(pod, classes, node_allocatable=node_allocatable)
    for resource in sorted(resources):
        class_name = resources[resource].name
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, Any]] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, ())
            long_requests[i] = request
            long_mappings.extend(found)
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, Any]] = []
        for i in short_lived:
            request, found = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings.extend(found)
        if largest is not None:
            # Init containers run one after the other: the largest request serves them all.
            replaced = short_names - {largest["name"]}
            short_mappings = [
                {**m, "requestName": largest["name"]} if m["requestName"] in replaced else m for m in short_mappings
            ]
            requests.append(largest)
        requests.extend(r for r in long_requests if r is not None)
        mappings.extend(long_mappings)
        mappings.extend(short_mappings)
    requests.sort(key=lambda r: str(r["name"]))
    return tuple(requests), tuple(mappings)


def generate_name(pod_name: str) -> str:
    return f"{pod_name}-extended-resources-"[:_MAX_GENERATE_NAME_BASE]


def extended_resource_claim(
    pod: Pod,
    classes: Iterable[DeviceClass],
    *,
    node_allocatable: Mapping[str, Quantity] | None = None,  # None: no device plugin anywhere, DRA serves all
) -> dict[str, Any] | None:
    """The special ResourceClaim (API JSON) for the pod on a node; None when DRA serves none of its requests."""
    requests, _ = requests_and_mappings(pod, classes, node_allocatable=node_allocatable)
    if not requests:
        return None
    return {
        "apiVersion": CLAIM_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": generate_name(pod.name),
            "namespace": pod.namespace,
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.metadata.uid or "", "controller": True}
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {"devices": {"requests": [dict(r) for r in requests]}},
    }


def extended_claim_status(claim_name: str, mappings: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The value of `pod.status.extendedResourceClaimStatus` once the claim exists."""
    return {"requestMappings": [dict(m) for m in mappings], "resourceClaimName": claim_name}


def find_extended_resource_claim(pod: Pod, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """The pod's special claim: annotated as such and controlled by this pod (same name and UID)."""
    for claim in claims:
        if claim.namespace != pod.namespace:
            continue
        if claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) != "true":
            continue
        for owner in claim.metadata.owner_references:
            if owner.controller and owner.name == pod.name and owner.uid and owner.uid == pod.metadata.uid:
                return claim
    return None


def recorded_claim_name(pod: Pod) -> str | None:
    """`pod.status.extendedResourceClaimStatus.resourceClaimName`, or None when not recorded."""
    status = (pod.status.model_extra or {}).get("extendedResourceClaimStatus")
    if isinstance(status, Mapping):
        name = status.get("resourceClaimName")
        return name if isinstance(name, str) and name else None
    return None
