"""Pure data: frozen pydantic types for the parts of the Kubernetes API dralloc reads.

`resource.k8s.io/v1` (DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice, DeviceTaintRule) and the core subset (Node, Namespace, Pod) we
need. Python attribute names are the snake_case of the API field names; the
API's camelCase names are the aliases, so `Model.model_validate(raw)` reads
API JSON and `conversion.to_raw(obj)` writes it back. Unknown fields are kept
(`extra="allow"`), so an object read and written back loses nothing.

No I/O, no clock, no randomness. Imports nothing else of dralloc.

The modules defining models do without `from __future__ import annotations`: with it,
pydantic compiles every annotation string while building the classes, about 20 ms of
every dralloc start-up (the models are built at import).
"""
