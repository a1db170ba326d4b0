"""The ClusterRole in manifests/rbac.yaml grants exactly the calls dralloc makes.

The calls come from three places, and the ClusterRole must cover each and grant nothing
beyond their union:

- `dralloc.kube.resources.API_CALLS`, the package's declared contract;
- a scan of the operator's code (handlers/, running.py) for the `dralloc.kube` reads and
  writes it actually calls — which catches a call the contract forgot;
- kopf's own calls for the handlers we register, derived from kopf's registry after
  `import dralloc.handlers`: list+watch of every resource a handler watches, patch (and
  status patch where the CRD has a status subresource) of the resources with changing
  handlers or daemons, and the CRDs it watches (kopf runs standalone and posts no Events:
  leader election is ours, on a Lease). kopf has no public accessor for handlers by kind, so this reads
  the registries `kopf._core.reactor.observation` itself reads (`registry._watching`, ...).

Last, the real operator runs with leader election against the sandbox (seeded from manifests/),
places pods in both modes, fails one, finishes one; every request it sent must be allowed.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Iterator
from typing import Any

import kopf
from tests.handlers import helpers
from tests.handlers.conftest import OperatorThread, wait_for
from tests.manifests.rendered import MANIFESTS, REPO, find, load

import dralloc.handlers
from dralloc import cli
from dralloc.handlers import operating
from dralloc.kube import resources
from dralloc.sandbox import ThreadedApiServer
from dralloc.sandbox.pytest_plugin import apiserver, pytest_configure
from dralloc.settings import ConnectionSettings, LeaderElectionSettings, RuntimeSettings, Settings
from dralloc.testing import cluster

__all__ = ["apiserver", "pytest_configure"]

Call = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


# ---- the ClusterRole -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Grant:
    group: str
    resource: str
    verb: str
    names: tuple[str, ...]  # resourceNames; () = any


def cluster_role() -> dict[str, Any]:
    return find(load("rbac.yaml"), "ClusterRole")


def grants() -> list[Grant]:
    return [Grant(group, resource, verb, tuple(rule.get("resourceNames") or ()))
            for rule in cluster_role()["rules"]
            for group in rule["apiGroups"] for resource in rule["resources"] for verb in rule["verbs"]]


def allowed(call: Call, name: str | None = None) -> bool:
    """Whether the ClusterRole grants the call; the Lease is only ever ours (--leader-elect-resource-name)."""
    group, resource, verb = call
    if resource == "leases" and name is None and verb != "create":
        name = deployment_args().leader_elect_resource_name
    return any(g.group == group and g.resource == resource and g.verb == verb
               and (not g.names or name in g.names) for g in grants())


def deployment_args() -> Any:
    container = find(load("deployment.yaml"), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return cli.build_parser().parse_args(container["args"])


# ---- what kopf does for our handlers ---------------------------------------------------------

def _candidates() -> list[kopf.Resource]:
    """Every resource the handlers could mean: dralloc's, with subresources from our CRDs."""
    crds = {doc["spec"]["group"] + "/" + doc["spec"]["names"]["plural"]: doc
            for path in sorted((MANIFESTS / "crds").glob("*.yaml")) for doc in load(f"crds/{path.name}")}
    out = []
    for r in resources.ALL:
        crd = crds.get(f"{r.group}/{r.plural}")
        subresources = frozenset(crd["spec"]["versions"][0].get("subresources") or ()) if crd else frozenset()
        out.append(kopf.Resource(r.group, r.version, r.plural, kind=r.kind, singular=r.kind.lower(),
                                 namespaced=r.namespaced, subresources=subresources))
    return out


def _resolve(selector: Any) -> kopf.Resource:
    matched = selector.select(_candidates())
    assert len(matched) == 1, f"kopf selector {selector} matches {matched}"
    return next(iter(matched))


def kopf_calls() -> set[Call]:
    from dralloc.handlers.registry import REGISTRY as registry

    watching = [*registry._indexing.get_all_handlers(), *registry._watching.get_all_handlers(),
                *registry._spawning.get_all_handlers(), *registry._changing.get_all_handlers()]
    patching = [*registry._spawning.get_all_handlers(), *registry._changing.get_all_handlers()]
    assert not registry._webhooks.get_all_handlers(), "admission webhooks need RBAC for webhook configurations"
    calls: set[Call] = set()
    for handler in watching:
        r = _resolve(handler.selector)
        calls |= {(r.group, r.plural, "list"), (r.group, r.plural, "watch")}
    for handler in patching:  # finalizers and progress annotations; handler `patch.status`
        r = _resolve(handler.selector)
        calls.add((r.group, r.plural, "patch"))
        if "status" in r.subresources:
            calls.add((r.group, f"{r.plural}/status", "patch"))
    calls |= {("apiextensions.k8s.io", "customresourcedefinitions", verb) for verb in ("list", "watch")}
    return calls


# ---- what dralloc's code calls ---------------------------------------------------------------

SCANNED = [*sorted((REPO / "operator/dralloc/handlers").glob("*.py")), REPO / "operator/dralloc/running.py"]
# function -> (verb, fixed resource or None: taken from the `resources.X` argument)
KUBE_FUNCTIONS: dict[str, tuple[str, str | None]] = {
    "get_object": ("get", None), "list_objects": ("list", None), "watch_objects": ("watch", None),
    "create_object": ("create", None), "replace_object": ("update", None), "delete_object": ("delete", None),
    "merge_patch": ("patch", None), "json_patch": ("patch", None),
    "replace_claim_status": ("update", "resource.k8s.io resourceclaims/status"),
    "bind_pod": ("create", " pods/binding"), "evict_pod": ("create", " pods/eviction"),
    "post_event": ("create", "events.k8s.io events"),
}
# Calls whose resource is a variable, and where its values come from.
DYNAMIC = {("scheduling.py", "list_objects"): [r for _, r in operating.RELISTED],
           # DeviceTaintRules at the version the cluster serves (Runtime.taint_rule_resource)
           **{(f, call): [resources.DEVICE_TAINT_RULES] for f, call in (
               ("watching.py", "list_objects"), ("watching.py", "watch_objects"), ("evicting.py", "merge_patch"),
               ("health.py", "create_object"), ("health.py", "delete_object"), ("health.py", "merge_patch"))},
           # the read-back of a write whose outcome is unknown: claims and pods, and PodGroups (a
           # gang's recorded binds; also the lifecycle's read-back after a conflict, through committing.read_back)
           ("committing.py", "get_object"): [resources.RESOURCE_CLAIMS, resources.PODS, resources.POD_GROUPS,
                                             resources.PERSISTENT_VOLUMES, resources.PERSISTENT_VOLUME_CLAIMS],
           # scheduler mode's volume binding: a PV's claimRef, a claim's selected-node annotation
           ("committing.py", "merge_patch"): [resources.PERSISTENT_VOLUMES, resources.PERSISTENT_VOLUME_CLAIMS],
           # a gang's binds and its scheduled condition on its PodGroup, at the served version (Runtime.pod_group_resource)
           ("intents.py", "merge_patch"): [resources.POD_GROUPS],
           # the names of a PodGroup's template claims recorded in its status, at the served version
           ("lifecycle.py", "merge_patch"): [resources.POD_GROUPS]}


def _code_calls() -> Iterator[tuple[str, int, Call]]:
    for path in SCANNED:
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id in ("reading", "writing")
                    and node.func.attr in KUBE_FUNCTIONS):
                continue
            verb, fixed = KUBE_FUNCTIONS[node.func.attr]
            if fixed is not None:
                group, plural = fixed.split(" ")
                yield path.name, node.lineno, (group, plural, verb)
                continue
            named = [a.attr for a in node.args if isinstance(a, ast.Attribute)
                     and isinstance(a.value, ast.Name) and a.value.id == "resources"]
            subresource = next((k.value.value for k in node.keywords
                                if k.arg == "subresource" and isinstance(k.value, ast.Constant)), None)
            if named:
                targets = [getattr(resources, named[0])]
            else:
                key = (path.name, node.func.attr)
                assert key in DYNAMIC, f"{path.name}:{node.lineno}: {node.func.attr} on a resource this scan " \
                    "cannot name: add where it comes from to DYNAMIC"
                targets = DYNAMIC[key]
            for r in targets:
                yield path.name, node.lineno, (r.group, f"{r.plural}/{subresource}" if subresource else r.plural, verb)


def code_calls() -> set[Call]:
    return {call for _, _, call in _code_calls()}


def needed() -> set[Call]:
    return set(resources.API_CALLS) | code_calls() | kopf_calls()


# ---- the static checks ----------------------------------------------------------------------

def test_no_wildcards_and_no_non_resource_urls() -> None:
    for rule in cluster_role()["rules"]:
        assert "nonResourceURLs" not in rule
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert all("*" not in value for value in rule.get(field) or ()), f"wildcard in {field}: {rule}"
    assert "aggregationRule" not in cluster_role()


def test_every_declared_api_call_is_allowed() -> None:
    missing = [call for call in resources.API_CALLS if not allowed(call)]
    assert not missing, f"API_CALLS not granted by the ClusterRole: {missing}"


def test_every_call_in_the_operator_code_is_allowed() -> None:
    found = list(_code_calls())
    assert len(found) >= 10, "the scan found too little: did the code move?"
    missing = [f"{file}:{line} {call}" for file, line, call in found if not allowed(call)]
    assert not missing, f"the operator calls what the ClusterRole does not grant: {missing}"


def test_every_kopf_call_is_allowed() -> None:
    calls = kopf_calls()
    watched = {(g, r) for g, r, v in calls if v == "watch"}
    assert {(g, r) for _, g, _, r in dralloc.handlers.watching.WATCHED} <= watched
    missing = [call for call in calls if not allowed(call)]
    assert not missing, f"kopf needs what the ClusterRole does not grant: {missing}"


def test_nothing_is_granted_beyond_what_is_used() -> None:
    extra = sorted({(g.group, g.resource, g.verb) for g in grants()} - needed())
    assert not extra, f"the ClusterRole grants calls nobody makes: {extra}"


def test_rules_are_not_repeated() -> None:
    keys = [(g.group, g.resource, g.verb, g.names) for g in grants()]
    assert len(keys) == len(set(keys))


def test_lease_writes_are_limited_to_our_lease() -> None:
    name = deployment_args().leader_elect_resource_name
    assert name == "dralloc"
    for verb in ("get", "update"):
        assert allowed(("coordination.k8s.io", "leases", verb), name=name)
        assert not allowed(("coordination.k8s.io", "leases", verb), name="kube-scheduler")


def test_api_calls_declare_every_call_in_the_code() -> None:
    undeclared = sorted(code_calls() - set(resources.API_CALLS))
    assert not undeclared, f"called but not in API_CALLS: {undeclared}"


# ---- the running operator ------------------------------------------------------------------

def _request_call(method: str, path: str, query: dict[str, str]) -> tuple[Call, str | None] | None:
    """(call, object name) for a resource request; None for discovery (non-resource URLs)."""
    parts = path.strip("/").split("/")
    if parts[0] == "api" and len(parts) >= 3:
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        rest = rest[2:]
    plural, name, sub = rest[0], (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
    watch = query.get("watch", "").lower() in ("1", "true")
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method)
    if method == "GET":
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    assert verb, f"unexpected method {method} {path}"
    return (group, f"{plural}/{sub}" if sub else plural, verb), name


def _operator(server: ThreadedApiServer) -> OperatorThread:
    args = deployment_args()
    assert not args.standalone
    settings = Settings(
        connection=ConnectionSettings(kubeconfig=str(server.kubeconfig)),
        runtime=RuntimeSettings(metrics_port=0, health_port=0, leader_election=LeaderElectionSettings(
            resource_name=args.leader_elect_resource_name, resource_namespace="dralloc-system",
            identity="dralloc-0")),
    )
    return OperatorThread(settings)


def _manifest_objects() -> Iterable[dict[str, Any]]:
    yield from load("namespace.yaml")
    for path in sorted((MANIFESTS / "crds").glob("*.yaml")):
        yield from load(f"crds/{path.name}")


def test_a_running_operator_makes_only_allowed_requests(apiserver: ThreadedApiServer) -> None:
    crds = [o for o in _manifest_objects() if o["kind"] == "CustomResourceDefinition"]
    apiserver.seed(crds)
    apiserver.seed([o for o in _manifest_objects() if o["kind"] != "CustomResourceDefinition"])
    apiserver.seed([cluster.gpu_class(), cluster.template("one-gpu"), cluster.template("too-many", count=8),
                    cluster.node("node-0"), cluster.gpu_slice("node-0", 4)])
    apiserver.requests.clear()
    ours: list[tuple[str, str]] = []  # requests this test makes itself
    operator = _operator(apiserver).start()
    try:
        wait_for(lambda: helpers.condition(
            apiserver.get("dralloc.io/v1alpha1", "AllocationPolicy", "default") or {}, "Accepted"),
            timeout=30, what="the active replica accepts AllocationPolicy default")
        apiserver.seed([cluster.pod("placed", template_name="one-gpu"),
                        cluster.pod("gated", template_name="one-gpu", scheduler=None, gate="dralloc.io/allocate"),
                        cluster.pod("stuck", template_name="too-many")])
        wait_for(lambda: helpers.node_of(apiserver, "placed"), what="pod placed bound")
        wait_for(lambda: not helpers.pod(apiserver, "gated")["spec"].get("schedulingGates"), what="gate removed")
        wait_for(lambda: helpers.condition(helpers.pod(apiserver, "stuck"), "PodScheduled"), what="stuck reported")
        ours.append(("PATCH", "/api/v1/namespaces/default/pods/placed/status"))
        helpers.set_pod_phase(apiserver, "placed", "Succeeded")
        wait_for(lambda: not any(c["metadata"]["name"].startswith("placed-") for c in helpers.claims(apiserver)),
                 what="the finished pod's claim deleted")
        # A watch the client drops is never logged: end them from the server side instead.
        apiserver.close_watches()
        wait_for(lambda: any(r.query.get("watch") in ("true", "1") for r in apiserver.requests.matching("GET", "/api/v1/pods")),
                 what="the pod watch logged")
    finally:
        operator.stop()
    requests = [r for r in apiserver.requests.all() if (r.method, r.path) not in ours]
    calls: dict[Call, set[str | None]] = {}
    for r in requests:
        found = _request_call(r.method, r.path, r.query)
        if found is None:
            assert r.method == "GET", f"non-resource {r.method} {r.path}"  # discovery: system:discovery
            continue
        call, name = found
        calls.setdefault(call, set()).add(name)
    print("observed:", *sorted(f"{c} {sorted(n or '' for n in names)}" for c, names in calls.items()), sep="\n  ")
    denied = sorted(f"{call} {name or ''}" for call, names in calls.items() for name in names
                    if not allowed(call, name))
    assert not denied, f"the running operator made requests the ClusterRole does not allow: {denied}"
    # The run exercised the main paths (so the check above means something).
    for call in [("coordination.k8s.io", "leases", "create"), ("coordination.k8s.io", "leases", "update"),
                 ("dralloc.io", "allocationpolicies", "create"),
                 ("dralloc.io", "allocationpolicies/status", "patch"), ("", "pods/binding", "create"),
                 ("resource.k8s.io", "resourceclaims", "create"), ("resource.k8s.io", "resourceclaims", "delete"),
                 ("events.k8s.io", "events", "create"), ("", "pods", "watch"), ("", "pods", "patch")]:
        assert call in calls, f"the run did not exercise {call}"
