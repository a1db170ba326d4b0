"""Every real driver's claim on every real cluster it was written for, as oracle cases.

tests/offline/data/real-drivers-full/ is a copy of the shared real-drivers set (its README says
where each file comes from): ResourceSlices captured on NVIDIA GB200 (OKE), p4d with EFA (EKS),
GB300 (AKS), MIG A100 and dra-example-driver clusters; the drivers' DeviceClasses; and the claims
users write for them (the drivers' demo specs, and CEL probes of the 1.37 environment).

`cases()` pairs each claim file with each cluster it targets, in the vector format the oracle and
tests/differential/running.py read (all claims of a file allocated together on the cluster's node,
every feature gate at its 1.37 default). `python -m tests.offline.real_drivers_cases` asks the
upstream allocator (oracle/bin/oracle, v0.37.2) and writes its answers to ANSWERS;
test_real_drivers_oracle.py holds dralloc to them.
"""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import yaml

DATA = pathlib.Path(__file__).parent / "data" / "real-drivers-full"
ANSWERS = DATA / "oracle-answers-v0.37.2.json"

# Cluster name -> (its folder, the slice files of it); the claims folders that target it.
CLUSTERS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "gb200-oke": ("a-gb200-oke", ("resourceslice-dranet.yaml", "resourceslice-gpu.yaml"), ("common", "cel", "a")),
    "eks-gpu-efa": ("b-eks-gpu-efa", ("resourceslice-dranet.yaml", "resourceslice-gpu.yaml"), ("common", "cel", "b")),
    "aks-gb300": ("c-aks-gb300", ("resourceslice-dranet.yaml", "resourceslice-gpu.yaml"), ("common", "cel", "c")),
    "mig-a100": ("e-mig-a100", ("resourceslice-gpu-mig.yaml",), ("common", "e")),
    "example-readme": ("d-example-driver", ("resourceslice-readme-dump.yaml",), ("d",)),
    "example-partitions": ("d-example-driver", ("resourceslices-partitions-8x4.yaml",), ("d",)),
    "example-shared": ("d-example-driver", ("resourceslices-shared-2.yaml",), ("d",)),
    "example-shared-partitions": ("d-example-driver", ("resourceslices-shared-partitions-1x2.yaml",), ("d",)),
}
# Every gate kube-scheduler 1.37 has on by default (what a user's cluster runs).
FEATURES_1_37 = ["DRAAdminAccess", "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRADeviceTaints",
                 "DRAPartitionableDevices", "DRAPrioritizedList", "DRAResourceClaimDeviceStatus"]


def _objects(path: pathlib.Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        found.extend(doc.get("items") or [] if doc.get("kind", "").endswith("List") else [doc])
    return found


def _kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o.get("kind") == kind]


def _with_api_defaults(claim: dict[str, Any]) -> dict[str, Any]:
    """The claim as kube-apiserver stores it: allocationMode ExactCount and count 1 where unset."""
    for request in claim.get("spec", {}).get("devices", {}).get("requests") or []:
        for body in [request.get("exactly"), *(request.get("firstAvailable") or [])]:
            if body is None:
                continue
            body.setdefault("allocationMode", "ExactCount")
            if body["allocationMode"] == "ExactCount":
                body.setdefault("count", 1)
    return claim


def cases() -> list[dict[str, Any]]:
    classes = [o for p in sorted((DATA / "common").glob("*.yaml")) for o in _kind(_objects(p), "DeviceClass")]
    found: list[dict[str, Any]] = []
    for cluster, (folder, slice_files, claim_dirs) in CLUSTERS.items():
        root = DATA / folder
        own = [o for p in sorted(root.glob("*.yaml")) for o in _objects(p)]
        node = _kind(own, "Node")[0]
        slices = [o for f in slice_files for o in _kind(_objects(root / f), "ResourceSlice")]
        allocated = [o for o in _kind(own, "ResourceClaim") if (o.get("status") or {}).get("allocation")]
        cluster_classes = classes + [c for c in _kind(own, "DeviceClass")
                                     if c["metadata"]["name"] not in {k["metadata"]["name"] for k in classes}]
        for claim_dir in claim_dirs:
            for path in sorted((DATA / "claims" / claim_dir).glob("*.yaml")):
                claims = [_with_api_defaults(c) for c in _kind(_objects(path), "ResourceClaim")]
                if not claims:
                    continue
                found.append({
                    "name": f"{cluster}/{claim_dir}/{path.stem}",
                    "features": FEATURES_1_37,
                    "node": {"name": node["metadata"]["name"], "labels": node["metadata"].get("labels") or {}},
                    "objects": {"deviceClasses": cluster_classes, "resourceSlices": slices,
                                "allocatedClaims": allocated, "claims": claims},
                })
    return found


def main() -> int:
    from tests.differential import oracle

    all_cases = cases()
    answers = oracle.ask(all_cases)
    keep = ("status", "claims", "message", "allocator", "version")
    ANSWERS.write_text(json.dumps({c["name"]: {k: a.get(k) for k in keep} for c, a in zip(all_cases, answers,
                                                                                          strict=True)},
                                  indent=1, sort_keys=True) + "\n")
    print(f"{len(all_cases)} cases answered by {answers[0].get('version') if answers else '?'} into {ANSWERS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
