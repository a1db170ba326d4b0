"""dralloc.kube: the API adapter, and the only dralloc package that imports kubernetes_asyncio.

Charter: carry out exactly the reads and writes the operator asks for, and nothing
else. No decisions (what to write, whether to retry, how long to wait) are made here;
the caller owns them. Objects cross this boundary as raw API JSON (`dict[str, Any]`,
camelCase, exactly as the API server sends them), never as kubernetes_asyncio models,
and every failure crosses it as a `kube.errors.KubeError`, never as a
kubernetes_asyncio or aiohttp exception.

Modules:
    session.py    login (in-cluster or kubeconfig), one ApiClient, raw requests, discovery
    resources.py  what we talk to: group/version/plural descriptors, and API_CALLS for RBAC
    reading.py    get, paginated list, watch
    writing.py    replace (claim status, any object) with resourceVersion precondition, create, delete,
                  merge/JSON patch, pod binding and eviction, Events
    errors.py     the KubeError tree, mapped from HTTP statuses and Status bodies

Every request goes through kubernetes_asyncio's generic `ApiClient.call_api` with
`_preload_content=False`, so built-in kinds, resource.k8s.io/v1 and our CRDs are all
handled the same way and nothing is deserialized into generated models.
"""
