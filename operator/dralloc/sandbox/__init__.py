"""dralloc.sandbox: a Kubernetes-compatible API server that real clients use unchanged.

Charter: serve the Kubernetes REST API (aiohttp, 127.0.0.1 by default) with the
semantics our operator and its users can notice: resourceVersion conflicts, watches
with resume, bookmarks and 410 Gone, status subresources, finalizers, garbage
collection, admission of resource.k8s.io objects, CRDs. It imports nothing else of
dralloc; the rest of dralloc is tested against it, never the other way round.

Python API:

    from dralloc import sandbox

    async with sandbox.ApiServer(seed=sandbox.demo_objects()) as srv:   # in this loop
        srv.url; srv.write_kubeconfig(path); srv.seed([...]); srv.get(api_version, kind, name, ns)
        srv.list_objects(api_version, kind, ns)
        srv.faults.next("PATCH", "/apis/resource.k8s.io/v1/*/status", status=409)
        srv.faults.load("seed=1; POST /api/* applied-then x1; watch-lag delay=0.5 agent=replica-b")
        srv.faults.counters()                                          # also GET/POST/DELETE /_faults
        srv.compact(); srv.close_watches()
        await srv.wait_for(api_version, kind, name, ns, predicate)    # on every write; TimeoutError
        srv.requests.matching("PATCH", "/apis/*/status")              # the request log

    with sandbox.run_in_thread(port=0) as srv:   # its own loop, for kopf and sync tests
        ...same methods, callable from any thread...

pytest fixtures (`dralloc.sandbox.pytest_plugin`): `apiserver` (threaded, with a
kubeconfig in tmp_path at `apiserver.kubeconfig`) and `async_apiserver` (in the test's
loop). Command line: `dralloc sandbox ...` or `python -m dralloc.sandbox ...`
(`dralloc.sandbox.cli.main`).
"""

from dralloc.sandbox.apiserver import ApiServer
from dralloc.sandbox.errors import ApiError
from dralloc.sandbox.faults import Faults, Rule
from dralloc.sandbox.seeds import demo_objects, kopf_peering_objects, load_files
from dralloc.sandbox.threads import ThreadedApiServer, run_in_thread

__all__ = [
    "ApiError",
    "ApiServer",
    "Faults",
    "Rule",
    "ThreadedApiServer",
    "demo_objects",
    "kopf_peering_objects",
    "load_files",
    "run_in_thread",
]
