"""Fault injection: seeded probabilistic rules, errors after a committed write, per-client rules,
watch lag, periodic closes and compactions, counters, and the /_faults control endpoint."""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp.test_utils import make_mocked_request
from tests.sandbox.conftest import Http, configmap

from dralloc.sandbox import ApiError, ApiServer, Faults, ThreadedApiServer, apiserver, load_files
from dralloc.sandbox.faults import TIMEOUT_MESSAGE

CM = "/api/v1/namespaces/default/configmaps"
Obj = dict[str, Any]


async def request(http: Http, method: str, path: str, body: Any = None, *, agent: str = "test-client",
                  token: str | None = None, content_type: str = "application/json") -> tuple[int, Any]:
    headers = {"User-Agent": agent, "Content-Type": content_type}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, str) or body is None else json.dumps(body)
    async with http.session.request(method, http.url + path, data=data, headers=headers) as resp:
        text = await resp.text()
        try:
            return resp.status, json.loads(text) if text else None
        except ValueError:
            return resp.status, text


# ---- the spec language -------------------------------------------------------------------------


def test_spec_language_covers_every_rule_kind() -> None:
    faults = Faults()
    rules = faults.load("seed=7; POST /api/* applied-then x2 agent=replica-a; PATCH /apis/* applied-then=503;"
                        " GET * 500 p=0.25 token=t1 'message=so sorry'; watch-lag delay=0.5 path=/api/v1/pods;"
                        " close-watches every=30 agent=kopf; compact every=60 x1")
    assert faults.seed_value == 7
    assert [r.kind for r in rules] == ["applied-then", "applied-then", "error", "watch-lag", "close-watches",
                                       "compact"]
    post, patch, get, lag, close, compact = rules
    assert (post.status, post.times, post.agent, post.message) == (504, 2, "replica-a", TIMEOUT_MESSAGE)
    assert patch.status == 503 and patch.times is None
    assert (get.p, get.token, get.message) == (0.25, "t1", "so sorry")
    assert (lag.delay, lag.path) == (0.5, "/api/v1/pods")
    assert (close.every, close.agent, compact.every, compact.times) == (30.0, "kopf", 60.0, 1)
    assert [r.id for r in faults.rules] == sorted({r.id for r in faults.rules})


@pytest.mark.parametrize("spec", [
    "GET * 500 p=1.5", "GET * 99", "GET * 500 colour=red", "compact every=10 agent=x", "watch-lag x3",
    "close-watches", "GET * applied-then=teapot", "GET * delay=soon", "GET *", "GET * 500 'unclosed",
])
def test_bad_rules_are_refused_and_add_nothing(spec: str) -> None:
    faults = Faults()
    with pytest.raises(ValueError):
        faults.load("GET /ok 500; " + spec)
    assert faults.rules == []


def test_json_rules() -> None:
    faults = Faults()
    added = faults.load_json([{"method": "patch", "path": "/apis/*", "status": 409, "times": 3},
                              {"method": "POST", "path": "/api/*", "appliedThen": 504, "agent": "a"},
                              {"action": "watch-lag", "delay": 0.1},
                              {"spec": "compact every=5", "seed": 3}])
    assert [(r.kind, r.method, r.status) for r in added] == [
        ("error", "PATCH", 409), ("applied-then", "POST", 504), ("watch-lag", "*", None), ("compact", "*", None)]
    assert faults.seed_value == 3
    for bad in ({"method": "GET"}, {"action": "explode"}, {"status": 500, "colour": 1}, "GET * 500"):
        with pytest.raises(ValueError):
            faults.load_json(bad)


# ---- probabilistic rules -------------------------------------------------------------------------


def test_probability_is_deterministic_for_a_seed() -> None:
    def run(seed: int) -> list[bool]:
        faults = Faults(seed=seed)
        faults.load("GET /x 500 p=0.1; GET /other 500 p=0.5")
        hits = []
        for i in range(1000):
            if i % 3 == 0:
                faults.decide("GET", "/other")  # other rules' draws do not shift this rule's
            hits.append(faults.decide("GET", "/x") is not None)
        return hits

    first = run(42)
    assert first == run(42)
    assert 50 < sum(first) < 150  # about a tenth, exactly reproducible with this seed
    counters = Faults(seed=42)
    counters.load("GET /x 500 p=0.1")
    fired = sum(counters.decide("GET", "/x") is not None for _ in range(1000))
    assert fired == sum(first) and counters.counters()["kinds"] == {"error": fired}


async def test_probabilistic_rule_over_http(tmp_path: pathlib.Path) -> None:
    async def codes() -> list[int]:
        async with ApiServer(faults_seed=11, faults=f"GET {CM} 500 p=0.3") as srv, aiohttp.ClientSession() as s:
            http = Http(s, srv.url)
            out = [(await http.get(CM))[0] for _ in range(40)]
            assert srv.faults.counters()["statuses"] == {"500": out.count(500)}
            return out

    first = await codes()
    assert first == await codes()
    assert set(first) == {200, 500}


# ---- applied-then --------------------------------------------------------------------------------


async def test_applied_then_504_commits_the_write(async_apiserver: ApiServer, http: Http) -> None:
    async_apiserver.faults.applied_then("POST", CM)
    code, status = await http.post(CM, configmap("kept", {"a": "1"}))
    assert code == 504
    assert status == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": TIMEOUT_MESSAGE, "reason": "Timeout", "details": {}, "code": 504}
    code, stored = await http.get(f"{CM}/kept")
    assert code == 200 and stored["data"] == {"a": "1"}, "the write was committed before the 504"
    code, again = await http.post(CM, configmap("kept"))
    assert code == 409 and again["reason"] == "AlreadyExists", "a client retrying the create learns it exists"

    async_apiserver.faults.load(f"PATCH {CM}/kept applied-then x1")
    code, _ = await http.patch(f"{CM}/kept", {"data": {"a": "2"}})
    assert code == 504
    assert (await http.get(f"{CM}/kept"))[1]["data"] == {"a": "2"}
    assert async_apiserver.faults.counters()["kinds"] == {"applied-then": 2}


async def test_applied_then_is_not_used_up_by_a_failing_write(async_apiserver: ApiServer, http: Http) -> None:
    await http.post(CM, configmap("x"))
    rule = async_apiserver.faults.applied_then("POST", CM, times=1)
    code, status = await http.post(CM, configmap("x"))
    assert code == 409 and status["reason"] == "AlreadyExists"
    assert rule in async_apiserver.faults.rules and rule.fired == 0
    code, _ = await http.post(CM, configmap("y"))
    assert code == 504 and rule not in async_apiserver.faults.rules
    code, _ = await http.get(CM)
    assert code == 200


# ---- per-client rules ----------------------------------------------------------------------------


async def test_rules_aimed_at_one_client(async_apiserver: ApiServer, http: Http) -> None:
    async_apiserver.faults.load(f"GET {CM} 503 agent=dralloc-replica-a; GET {CM} 429 token=t1")
    assert (await request(http, "GET", CM, agent="dralloc-replica-a/0.3 (linux)"))[0] == 503
    assert (await request(http, "GET", CM, agent="dralloc-replica-b/0.3"))[0] == 200
    assert (await request(http, "GET", CM, agent="kubectl", token="t1"))[0] == 429
    assert (await request(http, "GET", CM, agent="kubectl", token="t2"))[0] == 200
    counters = async_apiserver.faults.counters()
    assert counters["statuses"] == {"429": 1, "503": 1}
    assert sorted(counters["rules"].values()) == [1, 1]


# ---- watches -------------------------------------------------------------------------------------


async def open_watch(http: Http, path: str, agent: str, **params: str) -> aiohttp.ClientResponse:
    query = {"watch": "true", **params}
    resp = await http.session.get(http.url + path, params=query, headers={"User-Agent": agent},
                                  timeout=aiohttp.ClientTimeout(total=30))
    assert resp.status == 200
    return resp


async def next_event(resp: aiohttp.ClientResponse, timeout: float = 10) -> Obj | None:
    """The next event, or None when the server ended the stream."""
    while True:
        line = await asyncio.wait_for(resp.content.readline(), timeout)
        if not line:
            return None
        if line.strip():
            return json.loads(line)  # type: ignore[no-any-return]


async def test_watch_lag_holds_events_for_the_chosen_watcher(async_apiserver: ApiServer, http: Http) -> None:
    _, listed = await http.get(CM)
    rv = listed["metadata"]["resourceVersion"]
    async_apiserver.faults.watch_lag(300, agent="slow-replica")
    slow = await open_watch(http, CM, "slow-replica", resourceVersion=rv)
    fast = await open_watch(http, CM, "fast-replica", resourceVersion=rv)
    try:
        for name in ("a", "b"):
            await http.post(CM, configmap(name))
        seen = [(await next_event(fast)) for _ in range(2)]
        assert [e["object"]["metadata"]["name"] for e in seen if e] == ["a", "b"]
        watcher = next(w for w in async_apiserver.hub.watchers if w.agent == "slow-replica")
        assert watcher.held == 2 and watcher.queue.empty(), "the slow watcher's events are held back"
        assert async_apiserver.faults.counters()["kinds"] == {"watch-lag": 2}
    finally:
        slow.close()
        fast.close()


async def test_lagged_events_arrive_in_order(async_apiserver: ApiServer, http: Http) -> None:
    _, listed = await http.get(CM)
    async_apiserver.faults.load("watch-lag delay=0.05 agent=laggy")
    resp = await open_watch(http, CM, "laggy", resourceVersion=listed["metadata"]["resourceVersion"])
    try:
        for i in range(5):
            await http.post(CM, configmap(f"c{i}"))
        async_apiserver.faults.clear()  # later events queue behind the held ones, never ahead of them
        await http.post(CM, configmap("last"))
        names = [(await next_event(resp) or {}).get("object", {}).get("metadata", {}).get("name")
                 for _ in range(6)]
        assert names == ["c0", "c1", "c2", "c3", "c4", "last"]
    finally:
        resp.close()


async def wait_counter(faults: Faults, kind: str, at_least: int = 1) -> None:
    for _ in range(1000):
        if faults.counters()["kinds"].get(kind, 0) >= at_least:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{kind} never fired")


async def test_periodic_close_aimed_at_one_client(async_apiserver: ApiServer, http: Http) -> None:
    _, listed = await http.get(CM)
    rv = listed["metadata"]["resourceVersion"]
    target = await open_watch(http, CM, "kopf/1.37", resourceVersion=rv)
    other = await open_watch(http, CM, "kubectl/1.32", resourceVersion=rv)
    try:
        async_apiserver.faults.load("close-watches every=0.05 x1 agent=kopf")  # added while running
        await wait_counter(async_apiserver.faults, "close-watches")
        assert await next_event(target) is None, "the kopf watch was ended"
        await http.post(CM, configmap("after"))
        event = await next_event(other)
        assert event is not None and event["object"]["metadata"]["name"] == "after", "kubectl's watch lives on"
        assert async_apiserver.faults.rules == [], "x1: used up"
    finally:
        target.close()
        other.close()


async def test_periodic_compaction(async_apiserver: ApiServer, http: Http) -> None:
    _, listed = await http.get(CM)
    old = listed["metadata"]["resourceVersion"]
    await http.post(CM, configmap("a"))
    async_apiserver.faults.every("compact", 0.05, times=1)
    await wait_counter(async_apiserver.faults, "compact")
    resp = await open_watch(http, CM, "client", resourceVersion=old)
    try:
        event = await next_event(resp)
        assert event is not None and event["type"] == "ERROR" and event["object"]["code"] == 410
    finally:
        resp.close()


async def test_a_lagged_watch_resumed_from_a_compacted_version_still_gets_its_410(
        async_apiserver: ApiServer, http: Http) -> None:
    """The 410 is the whole answer to such a watch: lag must not hold it back until the close drops it
    (found by the chaos run: clients got an empty stream, resumed from the same version, forever)."""
    _, listed = await http.get(CM)
    old = listed["metadata"]["resourceVersion"]
    await http.post(CM, configmap("a"))
    async_apiserver.compact()
    async_apiserver.faults.watch_lag(5.0)
    resp = await open_watch(http, CM, "client", resourceVersion=old)
    try:
        event = await next_event(resp, timeout=2)
        assert event is not None and event["type"] == "ERROR" and event["object"]["code"] == 410
    finally:
        resp.close()


def test_periodic_rules_from_another_thread(apiserver: ThreadedApiServer) -> None:
    rule = apiserver.faults.every("compact", 0.05, times=2)
    for _ in range(500):
        if rule.fired == 2:
            break
        time.sleep(0.01)
    assert rule.fired == 2 and rule not in apiserver.faults.rules


# ---- the control endpoint ------------------------------------------------------------------------


@pytest.mark.parametrize(("remote", "allowed"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("10.0.0.1", False), ("192.168.1.20", False), ("::ffff:10.0.0.1", False), ("fe80::1%eth0", False),
    ("2001:db8::1", False), ("", False), (None, False), ("not-an-address", False),
])
def test_loopback_check(remote: str | None, allowed: bool) -> None:
    assert apiserver.is_loopback(remote) is allowed


async def test_control_endpoint_refuses_other_hosts(async_apiserver: ApiServer) -> None:
    class Transport:
        def get_extra_info(self, name: str, default: Any = None) -> Any:
            return ("192.0.2.7", 40000) if name == "peername" else default

    req = make_mocked_request("GET", "/_faults", transport=Transport())
    assert req.remote == "192.0.2.7"
    with pytest.raises(ApiError) as refused:
        await async_apiserver._faults_endpoint(req, [])
    assert refused.value.code == 403


async def test_control_endpoint_over_http(async_apiserver: ApiServer, http: Http) -> None:
    code, empty = await request(http, "GET", "/_faults")
    assert code == 200 and empty["rules"] == [] and empty["seed"] == async_apiserver.faults.seed_value
    code, added = await request(http, "POST", "/_faults", {"spec": f"GET {CM} 500 x2; * * 500"})
    assert code == 201 and [r["kind"] for r in added["added"]] == ["error", "error"]
    assert (await http.get("/api/v1/namespaces"))[0] == 500
    code, listed = await request(http, "GET", "/_faults")
    assert code == 200, "fault rules never apply to the control endpoint"
    catch_all = listed["rules"][1]
    assert catch_all["spec"] == "* * 500" and catch_all["fired"] == 1
    code, _ = await request(http, "DELETE", f"/_faults/{catch_all['id']}")
    assert code == 200
    assert (await http.get("/api/v1/namespaces"))[0] == 200
    code, _ = await request(http, "POST", "/_faults", {"method": "GET", "path": CM, "status": 409},
                            content_type="application/json; charset=utf-8")
    assert code == 201
    assert (await http.get(CM))[0] == 500, "rules answer in order: the first error rule wins"
    code, bad = await request(http, "POST", "/_faults", {"spec": "GET * teapot"})
    assert code == 400 and "teapot" in bad["message"]
    code, after = await request(http, "DELETE", "/_faults")
    assert code == 200 and after["rules"] == [] and after["counters"]["kinds"] == {"error": 2}
    first, second = (str(r["id"]) for r in added["added"])
    assert after["counters"]["rules"] == {first: 1, second: 1}, "rules removed keep their counts"
    assert (await http.get(CM))[0] == 200
    code, zeroed = await request(http, "DELETE", "/_faults?counters=true")
    assert zeroed["counters"]["kinds"] == {}
    assert (await request(http, "DELETE", "/_faults/999"))[0] == 404
    assert not async_apiserver.requests.matching("*", "/_faults*"), "control requests are not recorded"


@pytest.mark.sandbox(token="s3cret")
async def test_control_endpoint_needs_the_token_when_there_is_one(http: Http) -> None:
    assert (await request(http, "GET", "/_faults"))[0] == 401
    assert (await request(http, "GET", "/_faults", token="s3cret"))[0] == 200


# ---- seed files ----------------------------------------------------------------------------------


def test_seed_file_formats(tmp_path: pathlib.Path) -> None:
    array = tmp_path / "array.json"
    array.write_text(json.dumps([configmap("a"), configmap("b")]))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMapList", "items": [configmap("c")]}))
    sequence = tmp_path / "seq.yaml"
    sequence.write_text(yaml.safe_dump([configmap("d")]) + "---\n" +
                        yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [configmap("e")]}))
    assert [o["metadata"]["name"] for o in load_files([array, listed, sequence])] == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize(("name", "text", "complaint"), [
    ("empty.json", "[]", "no Kubernetes objects"),
    ("numbers.json", "[1, 2]", "item 0: expected a Kubernetes object"),
    ("kindless.yaml", "metadata: {name: x}\n", "needs apiVersion and kind"),
    ("broken.json", "[{", "not valid JSON"),
])
def test_bad_seed_files_fail_loudly(tmp_path: pathlib.Path, name: str, text: str, complaint: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_files([path])
    assert str(path) in str(err.value) and complaint in str(err.value)


def test_command_line_seed_errors(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dralloc.sandbox import cli
    bad = tmp_path / "seed.json"
    bad.write_text('[{"apiVersion": "v1"}]')
    assert cli.main(["--port", "0", "--seed", str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err
    unknown = tmp_path / "unknown.json"
    unknown.write_text('[{"apiVersion": "example.dev/v9", "kind": "Gadget", "metadata": {"name": "g"}}]')
    assert cli.main(["--port", "0", "--seed", str(unknown)]) == 2
    assert "cannot seed" in capsys.readouterr().err


@pytest.fixture
async def seeded_cli(tmp_path: pathlib.Path) -> AsyncIterator[ApiServer]:
    path = tmp_path / "seed.json"
    path.write_text(json.dumps([configmap("from-array")]))
    async with ApiServer(seed=load_files([path])) as srv:
        yield srv


async def test_json_array_seed_is_served(seeded_cli: ApiServer) -> None:
    assert seeded_cli.get("v1", "ConfigMap", "from-array", "default") is not None


@pytest.mark.sandbox(token=["replica-a-token", "replica-b-token"])
def test_token_targeting_with_one_token_per_replica(apiserver: ThreadedApiServer, tmp_path: pathlib.Path) -> None:
    """Each replica logs in with its own token; a rule aimed at one token hits only that replica."""
    import kubernetes
    apiserver.faults.load("GET /api/v1/namespaces 503 token=replica-b-token")
    codes = {}
    for replica in ("a", "b"):
        path = apiserver.write_kubeconfig(tmp_path / f"kc-{replica}", token=f"replica-{replica}-token")
        with kubernetes.config.new_client_from_config(config_file=str(path)) as api:
            try:
                kubernetes.client.CoreV1Api(api).list_namespace(_request_timeout=5)
                codes[replica] = 200
            except kubernetes.client.ApiException as exc:
                codes[replica] = exc.status
    assert codes == {"a": 200, "b": 503}
    assert apiserver.kubeconfig is not None and "replica-a-token" in apiserver.kubeconfig.read_text()
