"""`pods/eviction` (policy/v1 Eviction) as kube-apiserver 1.37.2's EvictionREST does it.

Upstream's pkg/registry/core/pod/storage/eviction.go, checked against the real server
(tests/sandbox/test_disruption_budgets.py):

- the Eviction's `metadata.name` must be the pod's (400 `name in URL does not match name in
  Eviction object`, also when it has none); `deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential`
  is a 422; an unknown pod a 404;
- a pod that is Pending, Succeeded, Failed or already being deleted is deleted without looking at
  budgets;
- otherwise the budgets of its namespace whose selector matches it decide: more than one is a
  Status with code 500 (`This pod has more than one PodDisruptionBudget, which the eviction
  subresource does not support.`, no reason); none lets it go. A pod that is not Ready goes without
  using up the budget when the budget's `unhealthyPodEvictionPolicy` is AlwaysAllow, or when it is
  unset or IfHealthyBudget and currentHealthy >= desiredHealthy > 0. Else the budget must allow
  it: a status older than the spec (observedGeneration < generation) is a 429 with Retry-After 10
  (`The disruption budget X is still being processed by the server.`); no disruption allowed is a
  429 `Cannot evict pod as it would violate the pod's disruption budget.` whose DisruptionBudget
  cause says why (`The disruption budget X needs 2 healthy pods and has 1 currently`, or the
  controller's SyncFailed message); a negative count or more than 2000 pending evictions a 403.
  When allowed, the budget's status is written first (`/status`, conditioned on its version):
  disruptionsAllowed less one (the DisruptionAllowed condition False once it reaches 0) and the
  pod in `disruptedPods` at the current time;
- then the pod gets the condition `DisruptionTarget` True, reason EvictionByEvictionAPI, message
  `Eviction API: evicting` (a `/status` write), and is deleted with the Eviction's deleteOptions
  (their uid and resourceVersion preconditions are checked first: a 409 naming the resource
  `Pod`); the answer is a Status Success with code 201.

`dryRun=All` (the query or deleteOptions.dryRun) checks all of it and writes nothing. The
sandbox's writes cannot interleave with others (the store is single-threaded), so upstream's
retries on conflicts, and the 429 it answers when a pod turned Ready between its look and the
deletion, never happen here.
"""

from __future__ import annotations

import json
from typing import Any

from dralloc.sandbox import disruptionbudgets as budgets
from dralloc.sandbox import errors, resources
from dralloc.sandbox import store as store_

Obj = dict[str, Any]

MAX_DISRUPTED_PODS = 2000
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET = "DisruptionBudget"  # the causes' reason (policyv1.DisruptionBudgetCause)
EVICTION_REASON = "EvictionByEvictionAPI"


def too_many_requests(cause: str, retry_after: int = 0) -> errors.ApiError:
    """errors.NewTooManyRequests with a DisruptionBudget cause."""
    details: Obj = {"causes": [{"reason": DISRUPTION_BUDGET, "message": cause}]}
    if retry_after:
        details["retryAfterSeconds"] = retry_after
    return errors.ApiError(429, VIOLATION, details=details)


def forbidden(name: str, why: str, cause: str) -> errors.ApiError:
    """errors.NewForbidden on the resource `poddisruptionbudget.policy`, with a DisruptionBudget cause."""
    return errors.ApiError(403, f'poddisruptionbudget.policy "{name}" is forbidden: {why}', details={
        "name": name, "group": budgets.GROUP, "kind": "poddisruptionbudget",
        "causes": [{"reason": DISRUPTION_BUDGET, "message": f"The disruption budget {name} does not allow evicting "
                                                            f"pods currently: {cause}"}]})


def _ignores_budgets(pod: Obj) -> bool:
    """canIgnorePDB: Pending, Succeeded or Failed, or already being deleted."""
    return (pod.get("status") or {}).get("phase") in ("Pending", "Succeeded", "Failed") \
        or bool(pod["metadata"].get("deletionTimestamp"))


class Eviction:
    """One eviction request against the store."""

    def __init__(self, store: store_.Store, pods: resources.ResourceType) -> None:
        self.store = store
        self.pods = pods

    def evict(self, namespace: str, name: str, body: Obj, *, dry_run: bool = False) -> Obj:
        """Evict the pod, or raise the refusal; the Status to answer (201, or the 500 of a pod under
        several budgets)."""
        if not isinstance(body, dict) or (body.get("metadata") or {}).get("name") != name:
            raise errors.ApiError(400, "name in URL does not match name in Eviction object")
        given = body.get("deleteOptions")
        options: Obj = dict(given) if isinstance(given, dict) else {}
        if options.get("ignoreStoreReadErrorWithClusterBreakingPotential"):
            raise errors.invalid("Eviction", budgets.GROUP, name, [(
                "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential",
                "Invalid value: true: can not be set for pod eviction, try after removing the option")])
        dry_run = dry_run or "All" in (options.get("dryRun") or [])
        pod = self.store.entry(self.pods, namespace, name).obj
        if not _ignores_budgets(pod):
            found = [e.obj for _, e in self.store.scan(budgets.STORAGE, namespace)
                     if budgets.selects((e.obj.get("spec") or {}).get("selector"), pod["metadata"].get("labels") or {})]
            if len(found) > 1:
                return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                   "does not support.", "code": 500}
            if found and not self._unhealthy_may_go(pod, found[0]):
                self._check_and_decrement(found[0], name, dry_run)
        self._delete(pod, options, dry_run)
        return errors.status_body(201)

    @staticmethod
    def _unhealthy_may_go(pod: Obj, pdb: Obj) -> bool:
        """A pod that is not Ready need not use up the budget (unhealthyPodEvictionPolicy)."""
        if budgets.pod_ready(pod):
            return False
        if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == budgets.ALWAYS_ALLOW:
            return True
        status = pdb.get("status") or {}
        return bool(status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0) > 0)

    def _check_and_decrement(self, pdb: Obj, pod_name: str, dry_run: bool) -> None:
        """checkAndDecrement: refuse unless a disruption is allowed, then record this one."""
        name = pdb["metadata"]["name"]
        status = pdb.get("status") or {}
        allowed = status.get("disruptionsAllowed", 0)
        if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 0):
            raise too_many_requests(f"The disruption budget {name} is still being processed by the server.", 10)
        if allowed < 0:
            raise forbidden(name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
        if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
            raise forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
                            "too many pending evictions not confirmed by PDB controller")
        if allowed == 0:
            raise too_many_requests(self._why_not(name, status))
        new: Obj = json.loads(json.dumps(status))
        new["disruptionsAllowed"] = allowed - 1
        if new["disruptionsAllowed"] == 0:
            budgets.update_allowed_condition(new)
        if dry_run:
            return
        new["disruptedPods"] = {**(new.get("disruptedPods") or {}), pod_name: store_.now()}
        rt = self.store.registry.get(budgets.GROUP, "v1", "poddisruptionbudgets")
        assert rt is not None
        self.store.update(rt, pdb["metadata"]["namespace"], name, {**pdb, "status": new}, subresource="status",
                          precondition=pdb["metadata"]["resourceVersion"])

    @staticmethod
    def _why_not(name: str, status: Obj) -> str:
        """The cause of a refusal for want of disruptions, as upstream picks it."""
        found = next((c for c in status.get("conditions") or [] if c.get("type") == budgets.CONDITION), None)
        failed = found is not None and found.get("status") == "False" and bool(found.get("message"))
        if failed and found is not None and found.get("reason") == budgets.SYNC_FAILED:
            return (f"The disruption budget {name} does not allow evicting pods currently because it failed sync: "
                    f"{found['message']}")
        current, desired = status.get("currentHealthy", 0), status.get("desiredHealthy", 0)
        if current <= desired:
            return f"The disruption budget {name} needs {desired} healthy pods and has {current} currently"
        if failed and found is not None:
            return (f"The disruption budget {name} does not allow evicting pods currently ({found.get('reason')}): "
                    f"{found['message']}")
        return f"The disruption budget {name} does not allow evicting pods currently"

    def _delete(self, pod: Obj, options: Obj, dry_run: bool) -> None:
        """addConditionAndDeletePod: the preconditions, the DisruptionTarget condition, the deletion."""
        meta = pod["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        preconditions = options.get("preconditions") or {}
        if not dry_run:
            if preconditions.get("uid") and preconditions["uid"] != meta["uid"]:
                raise errors.conflict("Pod", name, why=(
                    f"the UID in the precondition ({preconditions['uid']}) does not match the UID in record "
                    f"({meta['uid']}). The object might have been deleted and then recreated"))
            if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != meta["resourceVersion"]:
                raise errors.conflict("Pod", name, why=(
                    f"the ResourceVersion in the precondition ({preconditions['resourceVersion']}) does not match the "
                    f"ResourceVersion in record ({meta['resourceVersion']}). The object might have been modified"))
            changed: Obj = json.loads(json.dumps(pod))
            _set_disruption_target(changed)
            written = self.store.update(self.pods, namespace, name, changed, subresource="status")
            if preconditions.get("resourceVersion"):  # the condition's write is ours: the precondition moves on
                options = {**options, "preconditions": {**preconditions,
                                                        "resourceVersion": written["metadata"]["resourceVersion"]}}
        self.store.delete(self.pods, namespace, name, options, dry_run=dry_run)


def _set_disruption_target(pod: Obj) -> None:
    """podutil.UpdatePodCondition with DisruptionTarget True (the transition time kept when the status was)."""
    status = pod.setdefault("status", {})
    conditions = status.setdefault("conditions", [])
    condition: Obj = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                      "lastTransitionTime": store_.now(), "reason": EVICTION_REASON,
                      "message": "Eviction API: evicting"}
    at = next((i for i, c in enumerate(conditions) if c.get("type") == "DisruptionTarget"), None)
    if at is None:
        conditions.append(condition)
        return
    if conditions[at].get("status") == "True":
        condition["lastTransitionTime"] = conditions[at].get("lastTransitionTime")
    conditions[at] = condition
