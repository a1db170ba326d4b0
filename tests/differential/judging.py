"""Judge dralloc's answer against upstream's for one case: the same, a difference, or neither.

`judge(case, ours, theirs, oracles)` returns None when both allocators agree (both fail
with an error, both say "does not fit", or both allocate the same devices with the same
result fields, config and node selector, compared by the vector rules), else a
`Verdict`:

- `label` names the difference. It is a rule's name when one applies, and otherwise a
  signature made of the two statuses plus the distinctive phrase of an error, or of what
  differs between two allocations. Shrinking keeps a case only while its label stays the
  same.
- `deliberate` names the rule, from docs/allocation.md, under which dralloc differs on
  purpose. The rules look at the case and the answers, never at a list of cases:
  - *share IDs*: the only difference is the share ID values (dralloc derives UUIDv5
    values; upstream draws random ones);
  - *distinctAttribute across all devices*: upstream's allocation has two devices with
    the same value of an attribute that a distinctAttribute constraint covers;
  - *counter release on backtracking*: upstream says "does not fit" where dralloc
    allocates devices that consume counters, and upstream itself allocates once it is
    offered only dralloc's devices (so a solution exists and upstream's search missed
    it), or two drivers' pools share a name and dralloc's counters add up per
    (driver, pool);
  - *capacity requests in map order*: a request names one capacity both plain and
    qualified (1.38: an error) next to one the device lacks, and upstream, which walks the
    request's map in random order, answers as dralloc in some order;
  - *no device in two claims*: upstream (1.36/1.37's incubating variant) gives out a device
    exclusively that an allocated claim holds by a share although the device takes no shares;
  - *counting bound*: upstream runs out of time where dralloc answers "does not fit";
  - *sorted pool and slice order*: upstream's stable channel (which walks pools in map
    order and slices in input order) answered otherwise, and either its incubating channel
    (sorted) picks dralloc's devices (when both allocate; not when a distinctAttribute
    constraint is involved, which the stable channel lacks), or the stable channel itself,
    given the slices in name order and asked a few times (map order varies), answers as
    dralloc does. Two errors agree here only when they fail for the same reason.
- `changed` says that the release judged against changed the semantics: the previous
  release (1.36.6, when judging against 1.37) answers as dralloc does. dralloc implements
  1.36; a rule then names the change when it knows it.
- `inconclusive`: no judgement is possible (upstream timed out and dralloc did not say
  "does not fit", or the oracle could not read the case).
- A few findings get a name by rule (`_finding`), the others keep their signature.
- `known` names a difference that is known and being fixed elsewhere, found by a rule:
  (a) list-typed attributes with DRAListTypeAttributes off (upstream's CEL fails on a
  device with an attribute it cannot read), (b) adminAccess requests on a device with
  allowMultipleAllocations and consumable capacity (upstream gives each another share).
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import json
import re
from typing import Any, Protocol

from tests.conformance import vectors

from dralloc.model.quantities import Quantity


class Oracles(Protocol):
    """Upstream, asked again about a variant of the case (pinned devices, another channel)."""

    def upstream(self, case: dict[str, Any]) -> dict[str, Any]: ...

    def incubating(self, case: dict[str, Any]) -> dict[str, Any]: ...

    def previous(self, case: dict[str, Any]) -> dict[str, Any] | None:
        """The previous release's answer (1.36.6 when judging against 1.37), None without one."""

    def newer(self, case: dict[str, Any]) -> dict[str, Any] | None:
        """The next release's answer (1.37.2 when judging against 1.36), None without one."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    label: str
    detail: str
    deliberate: str | None = None
    known: str | None = None
    changed: str | None = None
    inconclusive: bool = False


def phrase(message: str) -> str:
    """An error message without names and numbers: what kind of error it is."""
    text = message.split("\n")[0]
    text = re.sub(r"\s*consider using CEL optional chaining.*$", "", text)  # 1.37's hint for a missing key
    text = re.sub(r"^cannot allocate all claims on node \S+: ", "", text)
    text = re.sub(r"\b(claim|request|subrequest|class|device|resource pool|constraint|selector|node)"
                  r" [^\s,:]+", r"\1 _", text)
    text = re.sub(r'"[^"]*"', '"_"', text)
    text = re.sub(r"\b[\w.-]+\.example\.com/[\w.-]+", "_", text)
    text = re.sub(r"\battribute [\w./-]+(?= of|:)", "attribute _", text)
    text = re.sub(r"\bno such key: [\w.-]+", "no such key: _", text)
    text = re.sub(r"\d+", "N", text)
    text = re.sub(r"\(.*\)$", "", text).strip()
    return text[:120]


def _results(answer: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [(c["allocation"] or {}).get("devices", {}).get("results") or [] for c in answer["claims"]]


def _devices(answer: dict[str, Any]) -> list[collections.Counter[tuple[str, str, str, str]]]:
    return [collections.Counter((r["request"], r["driver"], r["pool"], r["device"]) for r in claim)
            for claim in _results(answer)]


def _result_key(r: dict[str, Any]) -> tuple[str, str, str, str]:
    return (r["request"], r["driver"], r["pool"], r["device"])


def _field_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """Which result field differs between two allocations with the same devices, if any."""
    def norm(entry: dict[str, Any], field: str) -> Any:
        value = entry.get(field)
        if field == "consumedCapacity":
            return tuple(sorted((k, Quantity.parse(v).value) for k, v in (value or {}).items()))
        if field == "shareID":
            return value is not None
        return value if value not in (None, [], {}, False) else None

    fields = ("adminAccess", "tolerations", "bindingConditions", "bindingFailureConditions",
              "consumedCapacity", "shareID")
    for a_claim, b_claim in zip(_results(ours), _results(theirs), strict=True):
        for a, b in zip(sorted(a_claim, key=_result_key), sorted(b_claim, key=_result_key), strict=True):
            for field in fields:
                if norm(a, field) != norm(b, field):
                    return field
    return None


def _allocation_difference(ours: dict[str, Any], theirs: dict[str, Any]) -> tuple[str, str] | None:
    """(label, detail) for two allocations, or None when they are the same."""
    if [c["name"] for c in ours["claims"]] != [c["name"] for c in theirs["claims"]]:
        return "claims differ", "the allocated claims differ"
    if _devices(ours) != _devices(theirs):
        return "devices differ", _describe_devices(ours, theirs)
    field = _field_difference(ours, theirs)
    if field is not None:
        return f"result field {field} differs", _describe_field(ours, theirs, field)
    for a, b in zip(ours["claims"], theirs["claims"], strict=True):
        problem = vectors.same_allocation(a["allocation"], b["allocation"])
        if problem is not None:
            first = problem.split(":")[0]
            return first, " ".join(problem.split())
    share_ours = [r.get("shareID") for claim in _results(ours) for r in claim]
    share_theirs = [r.get("shareID") for claim in _results(theirs) for r in claim]
    if share_ours != share_theirs:
        return "share IDs", "same devices; only the share ID values differ"
    return None


def _describe_devices(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    def show(answer: dict[str, Any]) -> str:
        return "; ".join(f"{c['name']}: " + ", ".join(f"{r['request']}={r['driver']}/{r['pool']}/{r['device']}"
                                                     for r in claim)
                         for c, claim in zip(answer["claims"], _results(answer), strict=True))
    return f"dralloc {show(ours)} | upstream {show(theirs)}"


def _describe_field(ours: dict[str, Any], theirs: dict[str, Any], field: str) -> str:
    def show(answer: dict[str, Any]) -> str:
        return "; ".join(f"{r['request']}={r['device']}:{r.get(field)}" for claim in _results(answer) for r in claim)
    return f"{field}: dralloc {show(ours)} | upstream {show(theirs)}"


def _summary(answer: dict[str, Any]) -> str:
    if answer["status"] == "allocated":
        return ", ".join(f"{r['request']}={r['pool']}/{r['device']}" for claim in _results(answer) for r in claim)
    return str(answer.get("message", "")).split("\n")[0][:300]


def judge(case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], oracles: Oracles | None,
          *, previous: bool = True) -> Verdict | None:
    """The verdict; `previous=False` skips asking the previous release (`changed` stays None)."""
    d, u = ours["status"], theirs["status"]
    if u == "input-error":
        return Verdict("oracle could not read the case", theirs["message"][:300], inconclusive=True)
    if u == "timeout":
        if d == "unschedulable":
            return Verdict("upstream timeout / dralloc unschedulable", "upstream searched past its time limit",
                           deliberate="counting bound")
        return Verdict(f"upstream timeout / dralloc {d}", _summary(ours), inconclusive=True)
    if d == u and d in ("error", "unschedulable"):
        return None
    if d == u == "allocated":
        found = _allocation_difference(ours, theirs)
        if found is None:
            return None
        label, detail = found
        if label == "share IDs":
            return Verdict(label, detail, deliberate="share IDs")
        verdict = Verdict(label, detail)
    else:
        label = f"dralloc {d} / upstream {u}"
        if u == "error":
            label += f": {phrase(theirs['message'])}"
        if d in ("error", "crash", "input-error"):
            label += f" / dralloc: {phrase(ours['message'])}"
        verdict = Verdict(label, f"dralloc: {_summary(ours)} | upstream: {_summary(theirs)}")
    return _explain(case, ours, theirs, verdict, oracles, previous)


def _explain(case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], verdict: Verdict,
             oracles: Oracles | None, previous: bool) -> Verdict:
    d, u = ours["status"], theirs["status"]
    features = set(case.get("features") or [])
    if oracles is not None and _both_spellings(case) and "requested both as" in ours.get("message", "") + \
            theirs.get("message", ""):
        # 1.38 walks a request's capacity map in Go's random order: the two spellings or a capacity
        # the device lacks, whichever it meets first, decides. Does some order answer as dralloc?
        for _ in range(MAP_ORDER_TRIES):
            if judge(case, ours, oracles.upstream(case), None, previous=False) is None:
                return dataclasses.replace(verdict, deliberate="capacity requests in map order",
                                           detail=f"{verdict.detail}; upstream answers as dralloc in another "
                                                  "order of the request's capacity map")
    if u == "allocated" and (held := held_twice(case, theirs)) and not held_twice(case, ours):
        return dataclasses.replace(verdict, deliberate="no device in two claims",
                                   detail=f"{verdict.detail}; upstream gives out {held}, which an allocated "
                                          "claim holds by a share although the device takes no shares")
    if u == "allocated" and (broken := distinct_violation(case, theirs)):
        return dataclasses.replace(verdict, deliberate="distinctAttribute across all devices",
                                   detail=f"{verdict.detail}; upstream breaks {broken}")
    if d == "unschedulable" and u == "error" and oracles is not None and (earlier := _claims_before_error(case, theirs)):
        # Upstream failed on a later claim: did it get there by breaking distinctAttribute on the earlier ones?
        before = oracles.upstream(earlier)
        if before["status"] == "allocated" and (broken := distinct_violation(earlier, before)):
            return dataclasses.replace(verdict, deliberate="distinctAttribute across all devices",
                                       detail=f"{verdict.detail}; to reach that claim upstream breaks {broken}")
    if _has_distinct(case) and oracles is not None and (later := oracles.newer(case)) is not None \
            and judge(case, ours, later, None, previous=False) is None:
        # 1.37 compares a device with every device already picked, as dralloc does in both releases.
        return dataclasses.replace(verdict, deliberate="distinctAttribute across all devices",
                                   detail=f"{verdict.detail}; upstream 1.37, which checks distinctAttribute "
                                          "across all devices, answers as dralloc does")
    if d == "allocated" and u == "unschedulable" and "DRAPartitionableDevices" in features \
            and _uses_counters(case, ours) and oracles is not None:
        if not _has_all_request(case) and oracles.upstream(pinned(case, ours))["status"] == "allocated":
            return dataclasses.replace(verdict, deliberate="counter release on backtracking",
                                       detail=f"{verdict.detail}; upstream allocates when offered only "
                                              "dralloc's devices")
        if _pool_names_shared(case) and counters_fit(case, ours):
            return dataclasses.replace(verdict, deliberate="counter release on backtracking",
                                       detail=f"{verdict.detail}; counters add up per (driver, pool)")
    if theirs.get("allocator") == "stable" and oracles is not None:
        # The stable channel walks pools in map order and slices in input order; dralloc sorts both.
        sorted_devices: list[Any] = []

        def agrees(answer: dict[str, Any]) -> bool:
            again = judge(case, ours, answer, None, previous=False)
            if again is not None and again.label == "devices differ" and not _has_distinct(case):
                # Both allocate: then which devices is the sorted (incubating) channel's choice.
                if not sorted_devices:
                    sorted_devices.append(_devices(oracles.incubating(case)))
                return bool(sorted_devices[0] == _devices(ours))
            if again is not None:
                return again.deliberate == "share IDs"
            return ours["status"] != "error" or same_error(ours, answer)

        if not _has_distinct(case) and not any(s["spec"].get("sharedCounters") and not _selects_node(s["spec"], case["node"])
                                               for s in _slices(case)):
            # The incubating channel walks pools sorted (binding-condition pools last), as dralloc
            # does; it differs from the stable one in a few checks, which `stable_reading` evens
            # out. Left out of this rule: distinctAttribute (the stable channel lacks it) and
            # counter slices that do not select the node (1.37's incubating channel does not read
            # them there; its stable channel does).
            sorted_answer = oracles.incubating(stable_reading(case))
            if verdict.label == "devices differ":
                if sorted_answer["status"] == "allocated" and _devices(ours) == _devices(sorted_answer):
                    return dataclasses.replace(verdict, deliberate="sorted pool and slice order",
                                               detail=f"{verdict.detail}; upstream's sorted (incubating) channel "
                                                      "picks dralloc's devices")
            elif ours["status"] == sorted_answer["status"] != "allocated" \
                    and (ours["status"] != "error" or same_error(ours, sorted_answer)):
                return dataclasses.replace(verdict, deliberate="sorted pool and slice order",
                                           detail=f"{verdict.detail}; upstream's sorted (incubating) channel "
                                                  "answers as dralloc does")
            if _list_attributes_unsupported(case, sorted_answer):
                # In sorted order upstream meets the list-typed attribute first and fails on it.
                return dataclasses.replace(verdict, label=KNOWN_A, known=KNOWN_A)
        # The stable channel itself, given the slices in name order, in several map orders.
        in_order = sorted_slices(case)
        for _ in range(ORDER_TRIES if _pool_count(case) > 1 else 1):
            if agrees(oracles.upstream(in_order)):
                return dataclasses.replace(verdict, deliberate="sorted pool and slice order",
                                           detail=f"{verdict.detail}; upstream's stable channel answers as "
                                                  "dralloc when it walks pools and slices in sorted order")
    known = _known(case, ours, theirs, verdict)
    if known:
        return dataclasses.replace(verdict, label=known, known=known)
    if (finding := _finding(case, ours, theirs)) is not None:
        verdict = dataclasses.replace(verdict, label=finding)
    if previous and oracles is not None and (before := oracles.previous(case)) is not None:
        earlier = judge(case, ours, before, None)
        if (earlier is None and (ours["status"] != "error" or same_error(ours, before))) \
                or (earlier is not None and earlier.deliberate):
            return dataclasses.replace(verdict, changed=_change_name(case, ours, theirs, verdict, before))
    return verdict


def same_error(ours: dict[str, Any], theirs: dict[str, Any]) -> bool:
    """Two errors for the same reason: one message's phrase holds the other's, or their last clauses match."""
    a, b = phrase(ours.get("message", "")), phrase(theirs.get("message", ""))
    return a in b or b in a or a.rsplit(": ", 1)[-1] == b.rsplit(": ", 1)[-1]


def _change_name(case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], verdict: Verdict,
                 before: dict[str, Any]) -> str:
    """What the newer release changed, when a rule recognises it; else just that it changed."""
    release = str(before.get("version", "the previous release"))
    features = set(case.get("features") or [])
    if verdict.label == "config differs" and _config_lists_every_request(ours) \
            and not any(entry.get("requests") for c in theirs["claims"]
                        for entry in (c["allocation"] or {}).get("devices", {}).get("config") or []):
        return "a config entry for every request of the claim gets no requests list ('empty means all')"
    if "DRAListTypeAttributes" not in features and _has_list_attributes(case) and \
            "unsupported attribute value" in before.get("message", "") + ours.get("message", ""):
        return ("list-typed attributes with DRAListTypeAttributes off: CEL reads them and constraints "
                "reject them, where allocation failed with 'unsupported attribute value'")
    if any(s["spec"].get("sharedCounters") and not _selects_node(s["spec"], case["node"]) for s in _slices(case)):
        return "a counter slice that does not select the node is not read for it"
    if ours["status"] == "allocated" and theirs["status"] == "unschedulable" and _has_all_request(case) \
            and "DRAConsumableCapacity" in features:
        return "allocationMode All fails when a matching device has too little capacity left"
    return f"{release} answers as dralloc does"


def _config_lists_every_request(answer: dict[str, Any]) -> bool:
    for claim in answer["claims"]:
        devices = (claim["allocation"] or {}).get("devices", {})
        names = {r["request"] for r in devices.get("results") or []}
        for entry in devices.get("config") or []:
            if entry.get("requests") and set(entry["requests"]) >= names:
                return True
    return False


def _selects_node(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    if spec.get("allNodes"):
        return True
    if spec.get("nodeName"):
        return bool(spec["nodeName"] == node["name"])
    labels = node.get("labels") or {}
    for term in (spec.get("nodeSelector") or {}).get("nodeSelectorTerms") or []:
        if all(e["operator"] == "In" and labels.get(e["key"]) in e.get("values", [])
               for e in term.get("matchExpressions") or []):
            return True
    return False


MAP_ORDER_TRIES = 24  # asks of upstream about a capacity named both ways: each map order is 1 in 2 or more


def _both_spellings(case: dict[str, Any]) -> bool:
    """Some request names one capacity plain and qualified with a driver (1.38 resolves both to one)."""
    for claim in case["objects"].get("claims") or []:
        for request in claim["spec"]["devices"].get("requests") or []:
            for body in [request.get("exactly") or {}, *(request.get("firstAvailable") or [])]:
                names = set((body.get("capacity") or {}).get("requests") or {})
                if any(n.partition("/")[2] in names for n in names if "/" in n):
                    return True
    return False


ORDER_TRIES = 48  # asks of the stable channel: its map order over 2-4 pools varies from ask to ask, unevenly


def sorted_slices(case: dict[str, Any]) -> dict[str, Any]:
    """The case with its slices in (driver, pool, name) order: the stable channel keeps input order."""
    slices = sorted(_slices(case), key=lambda s: (s["spec"]["driver"], s["spec"]["pool"]["name"], s["metadata"]["name"]))
    return {**case, "objects": {**case["objects"], "resourceSlices": slices}}


def stable_reading(case: dict[str, Any]) -> dict[str, Any]:
    """The case as the stable channel reads it, for asking the incubating channel.

    With DRAConsumableCapacity off the stable channel knows neither capacity requests (it
    ignores them; incubating fails on them) nor `allowMultipleAllocations` (CEL reads false;
    without the gate the field changes nothing else), so both are dropped.
    """
    if "DRAConsumableCapacity" in (case.get("features") or []):
        return case
    out = copy.deepcopy(case)
    for claim in out["objects"].get("claims") or []:
        for request in claim["spec"]["devices"].get("requests") or []:
            for body in [request.get("exactly") or {}, *(request.get("firstAvailable") or [])]:
                body.pop("capacity", None)
    for s in _slices(out):
        for d in s["spec"].get("devices") or []:
            d.pop("allowMultipleAllocations", None)
    return out


def _has_distinct(case: dict[str, Any]) -> bool:
    return any(c.get("distinctAttribute") for claim in case["objects"].get("claims") or []
               for c in claim["spec"]["devices"].get("constraints") or [])


def _pool_count(case: dict[str, Any]) -> int:
    return len({(s["spec"]["driver"], s["spec"]["pool"]["name"]) for s in _slices(case)})


def _finding(case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """A name for a difference found before, recognised by a rule (not deliberate, not known)."""
    features = set(case.get("features") or [])
    selectors = json_text(case)
    if "DRAConsumableCapacity" not in features and "device.allowMultipleAllocations" in selectors \
            and any(d.get("allowMultipleAllocations") for d in _device_index(case).values()):
        return "CEL device.allowMultipleAllocations with DRAConsumableCapacity off (upstream: false)"
    if "has capacity requests, but the DRAConsumableCapacity feature is disabled" in ours.get("message", "") \
            and theirs["status"] != "error" and theirs.get("allocator") == "stable":
        return ("capacity requests with DRAConsumableCapacity off: dralloc fails, upstream's stable channel "
                "ignores them")
    if "unsupported attribute value" in ours.get("message", "") and "constraint #" in ours.get("message", "") \
            and theirs["status"] != "error":
        return ("matchAttribute/distinctAttribute on a list-typed (or valueless) attribute with "
                "DRAListTypeAttributes off: dralloc fails, upstream's constraint just does not match")
    if "DRAConsumableCapacity" in features and ours["status"] != theirs["status"] and _share_on_exclusive(case):
        return ("an allocated result with a shareID on a device without allowMultipleAllocations: upstream "
                "counts it as a share (the device stays free), dralloc as in use")
    if "DRAListTypeAttributes" not in features and "cannot be range of a comprehension" in theirs.get("message", ""):
        return ("CEL list macros (exists, all, ...) on attributes with DRAListTypeAttributes off: upstream 1.36 "
                "does not compile them, dralloc does")
    if "empty constraint" in theirs.get("message", "") and ours["status"] != "error":
        return ("distinctAttribute where upstream picks its stable channel (no distinctAttribute there): "
                "dralloc enforces it")
    return None


def _share_on_exclusive(case: dict[str, Any]) -> bool:
    index = _device_index(case)
    for claim in case["objects"].get("allocatedClaims") or []:
        for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            device = index.get((r["driver"], r["pool"], r["device"]))
            if r.get("shareID") and device is not None and not device.get("allowMultipleAllocations"):
                return True
    return False


def json_text(case: dict[str, Any]) -> str:
    return json.dumps(case["objects"].get("claims") or []) + json.dumps(case["objects"].get("deviceClasses") or [])


KNOWN_A = "(a) list-typed attributes with DRAListTypeAttributes off"
KNOWN_B = "(b) adminAccess requests on a device with allowMultipleAllocations (consumable capacity)"


def _list_attributes_unsupported(case: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return ("DRAListTypeAttributes" not in (case.get("features") or []) and theirs["status"] == "error"
            and "unsupported attribute value" in theirs["message"] and _has_list_attributes(case))


def _claims_before_error(case: dict[str, Any], theirs: dict[str, Any]) -> dict[str, Any] | None:
    """The case with only the claims before the one upstream's error names (None: the first, or none)."""
    claims = case["objects"].get("claims") or []
    for index, claim in enumerate(claims):
        if index > 0 and f"claim {claim['metadata'].get('namespace', 'default')}/{claim['metadata']['name']}" \
                in theirs.get("message", ""):
            return {**case, "objects": {**case["objects"], "claims": claims[:index]}}
    return None


def _known(case: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], verdict: Verdict) -> str | None:
    features = set(case.get("features") or [])
    if _list_attributes_unsupported(case, theirs):
        return KNOWN_A
    if verdict.label == "devices differ" and "DRAConsumableCapacity" in features:
        # An adminAccess request got another device, and one side put an adminAccess request on
        # a device with allowMultipleAllocations.
        index = _device_index(case)
        for a, b in zip(_results(ours), _results(theirs), strict=False):
            mine = {r["request"]: (r["driver"], r["pool"], r["device"]) for r in a if r.get("adminAccess")}
            other = {r["request"]: (r["driver"], r["pool"], r["device"]) for r in b if r.get("adminAccess")}
            if mine != other and any(index.get(d, {}).get("allowMultipleAllocations")
                                     for d in [*mine.values(), *other.values()]):
                return KNOWN_B
    if "DRAConsumableCapacity" in features and {ours["status"], theirs["status"]} == {"allocated", "unschedulable"}:
        # Only one side found room, and it put an adminAccess request on a shared device.
        index = _device_index(case)
        winner = ours if ours["status"] == "allocated" else theirs
        if any(r.get("adminAccess") and index.get((r["driver"], r["pool"], r["device"]), {}).get(
                "allowMultipleAllocations") for claim in _results(winner) for r in claim):
            return KNOWN_B
    return None


# --- what the case holds -------------------------------------------------------------------------

def _slices(case: dict[str, Any]) -> list[dict[str, Any]]:
    return list(case["objects"].get("resourceSlices") or [])


def _device_index(case: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    index: dict[tuple[str, str, str], dict[str, Any]] = {}
    for s in _slices(case):
        for device in s["spec"].get("devices") or []:
            index.setdefault((s["spec"]["driver"], s["spec"]["pool"]["name"], device["name"]), device)
    return index


def _has_list_attributes(case: dict[str, Any]) -> bool:
    """Some device has a list-typed attribute, or one without a value (a list one, dropped)."""
    return any(not a or set(a) & {"ints", "strings", "bools", "versions"}
               for d in _device_index(case).values() for a in (d.get("attributes") or {}).values())


def _has_shared_capacity_device(case: dict[str, Any]) -> bool:
    return any(d.get("allowMultipleAllocations") and d.get("capacity") for d in _device_index(case).values())


def _has_all_request(case: dict[str, Any]) -> bool:
    for claim in case["objects"].get("claims") or []:
        for r in claim["spec"]["devices"]["requests"]:
            bodies = [r["exactly"]] if r.get("exactly") else list(r.get("firstAvailable") or [])
            if any(b.get("allocationMode") == "All" for b in bodies):
                return True
    return False


def _uses_counters(case: dict[str, Any], answer: dict[str, Any]) -> bool:
    index = _device_index(case)
    return any(index.get((r["driver"], r["pool"], r["device"]), {}).get("consumesCounters")
               for claim in _results(answer) for r in claim)


def _pool_names_shared(case: dict[str, Any]) -> bool:
    drivers: dict[str, set[str]] = collections.defaultdict(set)
    for s in _slices(case):
        drivers[s["spec"]["pool"]["name"]].add(s["spec"]["driver"])
    return any(len(d) > 1 for d in drivers.values())


def attribute(device: dict[str, Any], driver: str, qualified: str) -> Any:
    """A device's value of a fully qualified attribute (short names live in the driver's domain)."""
    attrs = device.get("attributes") or {}
    domain, _, name = qualified.rpartition("/")
    raw = attrs.get(qualified)
    if raw is None and domain == driver:
        raw = attrs.get(name)
    if not raw:
        return None
    kind, value = next(iter(raw.items()))
    return (kind, tuple(value) if isinstance(value, list) else value)


def held_twice(case: dict[str, Any], answer: dict[str, Any]) -> str | None:
    """A device the answer gives out exclusively that an allocated claim holds by a share
    (a result with a shareID) although the device does not allow multiple allocations: 1.36's
    and 1.37's incubating allocator track shared results by share and miss it (1.38 does not)."""
    index = _device_index(case)
    shared = {(r["driver"], r["pool"], r["device"])
              for claim in case["objects"].get("allocatedClaims") or []
              for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
              if r.get("shareID") and not r.get("adminAccess")}
    for claim in _results(answer):
        for r in claim:
            key = (r["driver"], r["pool"], r["device"])
            if key in shared and not r.get("adminAccess") and not (index.get(key) or {}).get("allowMultipleAllocations"):
                return "/".join(key)
    return None


def distinct_violation(case: dict[str, Any], answer: dict[str, Any]) -> str | None:
    """A distinctAttribute constraint the allocation breaks (two covered picks, one scalar value)."""
    index = _device_index(case)
    for claim, results in zip(case["objects"].get("claims") or [], _results(answer), strict=False):
        for constraint in claim["spec"]["devices"].get("constraints") or []:
            name = constraint.get("distinctAttribute")
            if not name:
                continue
            covered = constraint.get("requests") or []
            seen: list[tuple[set[Any], str]] = []
            lists = "DRAListTypeAttributes" in (case.get("features") or [])
            for r in results:  # every pick counts, also a shared device picked twice
                request = r["request"]
                if covered and request not in covered and request.split("/")[0] not in covered:
                    continue
                device = index.get((r["driver"], r["pool"], r["device"]))
                value = attribute(device or {}, r["driver"], name)
                if value is None or (value[0] in ("ints", "strings", "bools", "versions") and not lists):
                    continue
                # A list value is its set of elements (DRAListTypeAttributes): distinct means disjoint.
                kind = value[0].rstrip("s") if value[0] != "bools" else "bool"
                elements = {(kind, v) for v in value[1]} if isinstance(value[1], tuple) else {(value[0], value[1])}
                pick = f"{r['pool']}/{r['device']} ({request})"
                for other, where in seen:
                    if other & elements:
                        return f"distinctAttribute {name}: {where} and {pick} share {sorted(other & elements)!r}"
                seen.append((elements, pick))
    return None


def pinned(case: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The case with every device the answer did not pick removed (counter sets and slices kept)."""
    chosen = {(r["driver"], r["pool"], r["device"]) for claim in _results(answer) for r in claim}
    variant = copy.deepcopy(case)
    for s in variant["objects"].get("resourceSlices") or []:
        spec = s["spec"]
        if "devices" in spec:
            spec["devices"] = [d for d in spec["devices"]
                               if (spec["driver"], spec["pool"]["name"], d["name"]) in chosen]
    return variant


def counters_fit(case: dict[str, Any], answer: dict[str, Any]) -> bool:
    """Whether the answer's devices plus those in use stay within every (driver, pool) counter set."""
    available: dict[tuple[str, str, str, str], int] = {}
    for s in _slices(case):
        for counter_set in s["spec"].get("sharedCounters") or []:
            for counter, value in (counter_set.get("counters") or {}).items():
                available[(s["spec"]["driver"], s["spec"]["pool"]["name"], counter_set["name"], counter)] = \
                    Quantity.parse(value["value"]).value
    used_devices: set[tuple[str, str, str]] = set()
    for claim in case["objects"].get("allocatedClaims") or []:
        for r in ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            if not r.get("adminAccess"):
                used_devices.add((r["driver"], r["pool"], r["device"]))
    for claim in _results(answer):
        used_devices.update((r["driver"], r["pool"], r["device"]) for r in claim if not r.get("adminAccess"))
    index = _device_index(case)
    consumed: dict[tuple[str, str, str, str], int] = collections.defaultdict(int)
    for driver, pool, name in used_devices:
        for consumption in (index.get((driver, pool, name)) or {}).get("consumesCounters") or []:
            for counter, value in (consumption.get("counters") or {}).items():
                consumed[(driver, pool, consumption["counterSet"], counter)] += Quantity.parse(value["value"]).value
    return all(amount <= available.get(key, -1) for key, amount in consumed.items())
