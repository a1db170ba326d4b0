"""`dralloc allocate --explain` on real drivers' objects names the true cause (issue 17)."""

from __future__ import annotations

import pathlib

import yaml
from tests.offline.conftest import Invoke
from tests.offline.real_drivers_cases import DATA

EXAMPLE = DATA / "d-example-driver"
POOL = "dra-example-driver-cluster-worker"


def _write(path: pathlib.Path, docs: list[dict[str, object]]) -> str:
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_a_partition_blocked_by_counters_of_an_allocated_full_gpu_names_the_counters(
        dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """dra-example-driver's partitionable GPUs: with gpu-0-full allocated, a partition of GPU 0 is
    'counters used up', not 'usable' with enough devices individually."""
    holder = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"namespace": "default", "name": "full-gpu-0"},
              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
              "status": {"allocation": {"devices": {"results": [
                  {"request": "gpu", "driver": "gpu.example.com", "pool": POOL, "device": "gpu-0-full"}]}}}}
    wanted = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"namespace": "default", "name": "a-partition-of-gpu-0"},
              "spec": {"devices": {"requests": [{"name": "part", "exactly": {
                  "deviceClassName": "gpu.example.com", "selectors": [{"cel": {"expression":
                      "device.attributes['gpu.example.com'].index == 0 && "
                      "has(device.attributes['gpu.example.com'].partition)"}}]}}]}}}
    claims = _write(tmp_path / "claims.yaml", [holder, wanted])
    run = dralloc("allocate", "-f", str(EXAMPLE / "deviceclass.yaml"), "-f", str(EXAMPLE / "node.yaml"),
                  "-f", str(EXAMPLE / "resourceslices-partitions-8x4.yaml"), "-f", claims,
                  "--claim", "default/a-partition-of-gpu-0", "--explain", "-o", "json")
    assert run.code == 1, run.err
    (reason,) = run.json()["reasons"]
    # GPU 0's four partitions are blocked by its counters; the other GPUs' devices do not match.
    assert (reason["candidates"], reason["removed"]["counters used up"]) == (0, 4), reason
    assert "enough devices individually" not in reason["message"]


def test_a_selector_that_fails_on_busy_devices_is_named(dralloc: Invoke, tmp_path: pathlib.Path) -> None:
    """The OKE NIC template on EKS: EKS NICs have no `virtual` attribute. With them all in use the
    claim does not fit, and the explanation names the CEL error the claim meets once one is free,
    instead of counting those NICs as not matching."""
    eks = DATA / "b-eks-gpu-efa"
    nics = [d for d in yaml.safe_load_all((eks / "resourceslice-dranet.yaml").read_text()) if d]
    slices = [s for doc in nics for s in (doc.get("items") or [doc])]
    busy = [{"request": "nic", "driver": "dra.net", "pool": s["spec"]["pool"]["name"], "device": d["name"]}
            for s in slices for d in s["spec"].get("devices") or []]
    holder = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"namespace": "default", "name": "all-nics"},
              "spec": {"devices": {"requests": [{"name": "nic", "exactly": {"deviceClassName": "dra.net"}}]}},
              "status": {"allocation": {"devices": {"results": busy}}}}
    oke_nic = [c for c in yaml.safe_load_all((DATA / "claims" / "a" / "oke-1nic-aligned.yaml").read_text()) if c]
    claims = _write(tmp_path / "claims.yaml", [holder, *oke_nic])
    classes = [str(p) for p in sorted((DATA / "common").glob("*.yaml"))] + [str(DATA / "a-gb200-oke" /
                                                                             "deviceclass-dranet.net.yaml")]
    run = dralloc("allocate", *(a for c in classes for a in ("-f", c)), "-f", str(eks / "node.yaml"),
                  "-f", str(eks / "resourceslice-dranet.yaml"), "-f", str(eks / "resourceslice-gpu.yaml"),
                  "-f", claims, "--claim", f"{oke_nic[0]['metadata'].get('namespace', 'default')}/"
                  f"{oke_nic[0]['metadata']['name']}", "--explain", "-o", "json")
    assert run.code == 1, run.out + run.err
    messages = " ".join(r["message"] for r in run.json()["reasons"])
    assert "a selector fails on some devices: " in messages and "no such key: virtual" in messages, messages
