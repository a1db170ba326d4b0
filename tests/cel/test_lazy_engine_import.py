"""The CEL engine (celpy, lark, dralloc.cel's compiler) is loaded only when a selector is compiled.

Importing it is a good part of a `dralloc allocate` run's start, and the commonest
selector, `device.driver == "..."`, needs only the check that the device's attributes
convert (`dralloc.cel.attributes`). Each case runs `dralloc allocate` in a fresh
interpreter and reports which engine modules were loaded by the end.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {}}}
_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
          "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}
_PROBE = """
import sys
from dralloc import cli
code = cli.main(["allocate", "-f", sys.argv[1], "-o", "json"])
loaded = sorted(m for m in ("celpy", "lark", "dralloc.cel.selectors", "dralloc.cel.devices") if m in sys.modules)
print(code, ",".join(loaded))
"""


def _slice(version: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {
                         "driverVersion": {"version": version}, "index": {"int": 0}, "model": {"string": "a100"}}}]}}


def _claim(*selectors: str) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "gpu", "selectors": [{"cel": {"expression": e}} for e in selectors]}}]}}}


def _allocate(tmp_path: Path, *objects: dict[str, Any]) -> tuple[str, str, str]:
    """(exit code, the engine modules loaded at the end, stderr)."""
    path = tmp_path / "objects.yaml"
    path.write_text(yaml.safe_dump_all([_CLASS, _NODE, *objects]))
    result = subprocess.run([sys.executable, "-c", _PROBE, str(path)], capture_output=True, text=True, check=True)
    code, _, loaded = result.stdout.strip().splitlines()[-1].partition(" ")
    return code, loaded, result.stderr


def test_driver_selectors_allocate_without_the_engine(tmp_path: Path) -> None:
    """A class selecting by driver and a claim without selectors: allocated, nothing of the engine
    loaded (the device's version attribute is still converted, without celpy)."""
    assert _allocate(tmp_path, _slice("1.2.3"), _claim())[:2] == ("0", "")


def test_a_bad_version_still_fails(tmp_path: Path) -> None:
    """The attribute check that needs no engine still refuses what upstream cannot convert (the
    message is then worded by the full conversion, which loads the engine)."""
    code, _, stderr = _allocate(tmp_path, _slice("01.2.3"), _claim())
    assert code == "2"
    assert "parse semantic version: Major number must not contain leading zeroes" in stderr


def test_a_cel_selector_loads_the_engine(tmp_path: Path) -> None:
    """A selector that is more than a driver comparison is compiled: the engine is loaded then."""
    code, loaded, _ = _allocate(tmp_path, _slice("1.2.3"), _claim('device.attributes["gpu.example.com"].model == "a100"'))
    assert (code, loaded) == ("0", "celpy,dralloc.cel.devices,dralloc.cel.selectors,lark")
