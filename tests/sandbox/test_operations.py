"""Running the sandbox: faults, tokens, persistence, the pod simulator, the command line."""

from __future__ import annotations

import asyncio
import json
import pathlib
import socket
import subprocess
import sys
from typing import Any

import aiohttp
import pytest
import yaml
from tests.sandbox.conftest import Http, configmap

from dralloc.sandbox import ApiServer, Faults, ThreadedApiServer, demo_objects, load_files

CM = "/api/v1/namespaces/default/configmaps"


class TestFaults:
    async def test_next_n_requests_fail(self, async_apiserver: ApiServer, http: Http) -> None:
        await http.post(CM, configmap("f"))
        async_apiserver.faults.next("PATCH", "/api/v1/namespaces/*/configmaps/*", status=409, times=2)
        codes = [(await http.patch(f"{CM}/f", {"data": {"a": str(i)}}))[0] for i in range(3)]
        assert codes == [409, 409, 200]
        code, _ = await http.get(f"{CM}/f")
        assert code == 200, "other verbs are untouched"

    async def test_latency_rule_still_serves(self, async_apiserver: ApiServer, http: Http) -> None:
        async_apiserver.faults.latency("GET", "/api/v1/*", 0.05, times=1)
        code, _ = await http.get(CM)
        assert code == 200 and async_apiserver.faults.rules == []

    def test_spec_language(self) -> None:
        faults = Faults()
        faults.load("PATCH /apis/* 409 x3; GET /api/v1/pods* delay=0.2; compact every=60; * * 500")
        assert [(r.kind, r.method, r.path, r.status, r.delay, r.times) for r in faults.rules] == [
            ("error", "PATCH", "/apis/*", 409, 0.0, 3), ("delay", "GET", "/api/v1/pods*", None, 0.2, None),
            ("compact", "*", "*", None, 0.0, None), ("error", "*", "*", 500, 0.0, None)]
        assert [(p.action, p.every) for p in faults.periodic] == [("compact", 60.0)]
        with pytest.raises(ValueError):
            faults.load("PATCH /apis/* teapot")

    def test_threaded_faults_from_another_thread(self, apiserver: ThreadedApiServer) -> None:
        import kubernetes
        apiserver.faults.next("GET", "/api/v1/namespaces", status=503)
        with kubernetes.config.new_client_from_config(config_file=str(apiserver.kubeconfig)) as api:
            core = kubernetes.client.CoreV1Api(api)
            with pytest.raises(kubernetes.client.ApiException) as err:
                core.list_namespace(_request_timeout=5)
            assert err.value.status == 503
            assert len(core.list_namespace().items) == 4
        apiserver.compact()
        apiserver.close_watches()


@pytest.mark.sandbox(token="s3cret")
async def test_token_is_required(async_apiserver: ApiServer, tmp_path: pathlib.Path) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(async_apiserver.url + "/api/v1/namespaces") as resp:
            assert resp.status == 401
        headers = {"Authorization": "Bearer s3cret"}
        async with session.get(async_apiserver.url + "/api/v1/namespaces", headers=headers) as resp:
            assert resp.status == 200
    kubeconfig = yaml.safe_load((tmp_path / "kubeconfig").read_text())
    assert kubeconfig["users"][0]["user"] == {"token": "s3cret"}


async def test_state_survives_a_restart(tmp_path: pathlib.Path) -> None:
    state = tmp_path / "state.json"
    async with ApiServer(state_file=state, seed=[configmap("kept")]) as first:
        async with aiohttp.ClientSession() as session:
            http = Http(session, first.url)
            await http.patch(f"{CM}/kept", {"data": {"v": "1"}})
            _, before = await http.get(f"{CM}/kept")
    assert json.loads(state.read_text())["items"]
    async with ApiServer(state_file=state) as second:
        async with aiohttp.ClientSession() as session:
            http = Http(session, second.url)
            _, after = await http.get(f"{CM}/kept")
            assert after == before
            _, created = await http.post(CM, configmap("new"))
            assert int(created["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])


@pytest.mark.sandbox(simulate_pods=True, sim_start_delay=0.05)
async def test_simulated_kubelet_runs_and_finishes_pods(http: Http) -> None:
    pod = {"metadata": {"name": "sim", "annotations": {"dralloc.io/sim-duration": "100ms"}},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    await http.post("/api/v1/namespaces/default/pods", pod)
    await http.post("/api/v1/namespaces/default/pods/sim/binding", {"target": {"kind": "Node", "name": "n"}})
    phases = []
    for _ in range(200):
        _, obj = await http.get("/api/v1/namespaces/default/pods/sim")
        if not phases or phases[-1] != obj["status"]["phase"]:
            phases.append(obj["status"]["phase"])
        if phases[-1] == "Succeeded":
            break
        await asyncio.sleep(0.01)
    assert phases[-1] == "Succeeded" and "Pending" in phases


def test_seed_files_and_demo(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "objs.yaml"
    path.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "List", "items": [configmap("a"), configmap("b")]}, configmap("c")]))
    assert [o["metadata"]["name"] for o in load_files([path])] == ["a", "b", "c"]
    kinds = [o["kind"] for o in demo_objects()]
    assert kinds.count("Node") == 4 and kinds.count("DeviceClass") == 3 and kinds.count("ResourceSlice") == 20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_command_line_serves_the_demo(tmp_path: pathlib.Path) -> None:
    port, kubeconfig, state = _free_port(), tmp_path / "kc", tmp_path / "state.json"
    proc = subprocess.Popen([sys.executable, "-m", "dralloc.sandbox", "--port", str(port), "--seed", "demo",
                             "--kubeconfig", str(kubeconfig), "--state", str(state)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server == f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    names = {o["metadata"]["name"] for o in json.loads(state.read_text())["items"]}
    assert {"node-0", "gpu", "node-3-nics"} <= names


def test_command_line_rejects_bad_faults() -> None:
    from dralloc.sandbox import cli
    assert cli.main(["--port", "0", "--seed", "empty", "--faults", "GET / nonsense"]) == 2


@pytest.mark.sandbox(simulate_pods=True, sim_start_delay=0.05)
async def test_simulated_kubelet_terminates_bound_pods_gracefully(http: Http) -> None:
    pods = "/api/v1/namespaces/default/pods"
    for name in ("graceful", "forced"):
        await http.post(pods, {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        await http.post(f"{pods}/{name}/binding", {"target": {"kind": "Node", "name": "n"}})
    code, pod = await http.delete(f"{pods}/graceful")
    assert code == 200 and pod["metadata"]["deletionGracePeriodSeconds"] == 30
    code, pod = await http.get(f"{pods}/graceful")
    assert code == 200, "Terminating until the simulated kubelet stops it"
    code, _ = await http.delete(f"{pods}/forced", gracePeriodSeconds=0)
    code, _ = await http.get(f"{pods}/forced")
    assert code == 404
    for _ in range(200):
        code, _ = await http.get(f"{pods}/graceful")
        if code == 404:
            break
        await asyncio.sleep(0.01)
    assert code == 404


class TestTestingHelpers:
    async def test_requests_are_recorded(self, async_apiserver: ApiServer, http: Http) -> None:
        await http.post(CM, configmap("rec"))
        await http.patch(f"{CM}/rec", {"metadata": {"resourceVersion": "1"}, "data": {"a": "b"}})
        patches = async_apiserver.requests.matching("PATCH", f"{CM}/*")
        assert [(r.status, r.content_type, r.body["data"]) for r in patches] == [
            (409, "application/merge-patch+json", {"a": "b"})]

    async def test_wait_for_sees_the_write(self, async_apiserver: ApiServer, http: Http) -> None:
        await http.post(CM, configmap("later"))

        async def write_soon() -> None:
            await asyncio.sleep(0.05)
            await http.patch(f"{CM}/later", {"data": {"v": "2"}})

        task = asyncio.create_task(write_soon())
        obj = await async_apiserver.wait_for("v1", "ConfigMap", "later", "default",
                                             lambda o: o is not None and o.get("data", {}).get("v") == "2")
        await task
        assert obj is not None and obj["data"] == {"v": "2"}
        with pytest.raises(TimeoutError):
            await async_apiserver.wait_for("v1", "ConfigMap", "never", "default", timeout=0.1)

    def test_threaded_wait_for_absence(self, apiserver: ThreadedApiServer) -> None:
        import kubernetes
        apiserver.seed([configmap("doomed")])
        with kubernetes.config.new_client_from_config(config_file=str(apiserver.kubeconfig)) as api:
            kubernetes.client.CoreV1Api(api).delete_namespaced_config_map("doomed", "default")
        assert apiserver.wait_for("v1", "ConfigMap", "doomed", "default", lambda o: o is None) is None


@pytest.mark.sandbox(simulate_pods=True, sim_start_delay=0.05)
class TestSchedulerStandIn:
    """With --simulate-pods, ungated default-scheduler pods get bound (gate mode's last step)."""

    async def _setup(self, http: Http) -> None:
        for i in range(2):
            await http.post("/api/v1/nodes", {"metadata": {"name": f"n{i}", "labels": {"zone": f"z{i}"}}})
        await http.post("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims", {
            "metadata": {"name": "c"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}})

    async def _wait_phase(self, http: Http, name: str, check: Any) -> dict[str, Any]:
        for _ in range(300):
            _, pod = await http.get(f"/api/v1/namespaces/default/pods/{name}")
            if check(pod):
                return pod  # type: ignore[no-any-return]
            await asyncio.sleep(0.01)
        return pod  # type: ignore[no-any-return]

    async def test_gated_pod_binds_after_allocation_and_gate_removal(self, http: Http) -> None:
        await self._setup(http)
        pods = "/api/v1/namespaces/default/pods"
        await http.post(pods, {"metadata": {"name": "p"}, "spec": {
            "schedulingGates": [{"name": "dralloc.io/allocate"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
            "containers": [{"name": "c", "image": "i"}]}})
        alloc = {"devices": {"results": [{"request": "gpu", "driver": "gpu.dralloc.dev", "pool": "n1",
                                          "device": "gpu-0"}]},
                 "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                     {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
        await http.patch("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c/status",
                         {"status": {"allocation": alloc}})
        code, _ = await http.patch(f"{pods}/p", {"spec": {"schedulingGates": None,
                                                          "nodeSelector": {"zone": "z1"}}})
        assert code == 200
        pod = await self._wait_phase(http, "p", lambda p: p["status"]["phase"] == "Running")
        assert pod["spec"]["nodeName"] == "n1" and pod["status"]["phase"] == "Running"
        _, claim = await http.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c")
        assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p"]

    async def test_unallocated_claim_keeps_the_pod_pending(self, http: Http) -> None:
        await self._setup(http)
        await http.post("/api/v1/namespaces/default/pods", {"metadata": {"name": "q"}, "spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
            "containers": [{"name": "c", "image": "i"}]}})
        pod = await self._wait_phase(http, "q", lambda p: any(
            c["type"] == "PodScheduled" for c in p["status"].get("conditions") or []))
        condition = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
        assert "not allocated" in condition["message"] and "nodeName" not in pod["spec"]

    async def test_dralloc_pods_are_left_alone(self, http: Http) -> None:
        await self._setup(http)
        await http.post("/api/v1/namespaces/default/pods", {"metadata": {"name": "mine"}, "spec": {
            "schedulerName": "dralloc", "containers": [{"name": "c", "image": "i"}]}})
        await asyncio.sleep(0.2)
        _, pod = await http.get("/api/v1/namespaces/default/pods/mine")
        assert "nodeName" not in pod["spec"] and not pod["status"].get("conditions")
