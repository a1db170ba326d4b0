"""Pure lifecycle decisions: what kube-controller-manager's resourceclaim controller would do.

Every function here looks at observed objects (pods, claims, templates, classes)
and returns a plan: a tuple of `plans.PlanStep` values saying what to write.
Nothing is executed here. No I/O, no asyncio, no clock (time comes in as an
argument), no randomness, no logging, no kopf, no kubernetes_asyncio; only
`dralloc.model` and `dralloc.allocation` (device taints and selectors, for eviction and
health) are imported. The handlers execute plans through `dralloc.kube`.

Modules:
- `plans`: the plan steps (frozen values) and their execution contract;
- `templates`: ResourceClaims generated from ResourceClaimTemplates for pod entries;
- `claims`: reservation cleanup, deallocation, deletion of generated claims, the
  `resource.kubernetes.io/delete-protection` finalizer;
- `extended`: the special claim for DRA-backed extended resources (KEP-5004).

Semantics follow upstream (kubernetes/kubernetes pkg/controller/resourceclaim and
the dynamicresources scheduler plugin, release 1.34-1.36); every deliberate
difference is listed in the docstring of the module that makes it.

Plans are functions of observed state: executing a prefix of a plan and planning
again from what the watch shows next is always correct, which is what makes the
handlers restart-safe.
"""
