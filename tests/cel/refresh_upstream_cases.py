"""Re-ask the upstream allocator (the Go oracle) what each case in upstream_1_37.json does.

    .venv/bin/python tests/cel/refresh_upstream_cases.py [EXPRESSIONS.txt]

Each case is one selector evaluated on the one device described in the file: a claim whose
request has the selector, against a slice with that device, run by `oracle/bin/oracle batch`
(upstream's structured allocator, v0.37.2) as `upstream`, and by `oracle/bin/oracle-v0.38`
(v0.38.0-beta.0, Kubernetes 1.38's CEL environment) as `upstream_1_38`. The answer is stored as
"true" (allocated), "false" (unschedulable), "compile: <message>" or "runtime: <message>" (the
CEL error as upstream words it). With a file of expressions (one a line), those are added first.
test_upstream_environment.py then checks dralloc gives the same answer for every case.
Needs `make oracle` and `make oracle ORACLE_DRA_VERSION=v0.38`; not run by the tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("upstream_1_37.json")
ORACLE = Path(__file__).parents[2] / "oracle" / "bin" / "oracle"
ORACLE_1_38 = Path(__file__).parents[2] / "oracle" / "bin" / "oracle-v0.38"


def vector(device: dict[str, Any], expression: str, index: int) -> dict[str, Any]:
    """A conformance-vector-shaped case: one device, one claim selecting with `expression`."""
    return {
        "name": f"cel-{index}", "features": [], "node": {"name": "node-1", "labels": {}},
        "objects": {
            "deviceClasses": [{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                               "metadata": {"name": "class"}, "spec": {}}],
            "resourceSlices": [{
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "slice"},
                "spec": {"driver": device["driver"], "nodeName": "node-1",
                         "pool": {"name": "pool", "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": "device", "attributes": device["attributes"],
                                      "capacity": {k: {"value": v} for k, v in device["capacity"].items()}}]},
            }],
            "allocatedClaims": [],
            "claims": [{
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "claim", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "request", "exactly": {
                    "deviceClassName": "class", "allocationMode": "ExactCount", "count": 1,
                    "selectors": [{"cel": {"expression": expression}}]}}]}},
            }],
        },
    }


# What upstream's allocator (not its CEL package) appends to a "no such key" runtime error
# (cel.EnhanceRuntimeError, called from structured/internal/*/allocator_*.go): left out here,
# since dralloc.cel answers for the CEL package only.
_ALLOCATOR_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check "
                   "with has() for optional fields")


def answer(outcome: dict[str, Any]) -> str:
    if outcome["status"] == "allocated":
        return "true"
    if outcome["status"] == "unschedulable":
        return "false"
    message = str(outcome.get("message", ""))
    for marker, kind in (("CEL compile error: ", "compile"), ("CEL runtime error: ", "runtime")):
        if marker in message:
            return f"{kind}: {message.split(marker, 1)[1]}".replace(_ALLOCATOR_HINT, "")
    return f"other: {message}"


def main(argv: list[str]) -> None:
    data = json.loads(DATA.read_text())
    known = {case["expression"] for case in data["cases"]}
    added = [line.rstrip("\n") for path in argv for line in Path(path).read_text().splitlines()]
    fresh = list(dict.fromkeys(e for e in added if e.strip() and e not in known))
    cases = [{"expression": e} for e in fresh] + data["cases"]
    lines = "".join(json.dumps(vector(data["device"], c["expression"], i)) + "\n" for i, c in enumerate(cases))
    for oracle, key in ((ORACLE, "upstream"), (ORACLE_1_38, "upstream_1_38")):
        result = subprocess.run(["nice", "-n", "19", str(oracle), "batch"], input=lines, capture_output=True,
                                text=True, check=True)
        for case, line in zip(cases, result.stdout.splitlines(), strict=True):
            case[key] = answer(json.loads(line))
    data["cases"] = cases
    DATA.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
