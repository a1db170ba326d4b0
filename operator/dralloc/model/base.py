"""The common base of every API model: frozen, camelCase aliases, unknown fields kept."""


from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class ApiModel(BaseModel):
    """Frozen, reads and writes the API's camelCase JSON, and keeps fields it does not model."""

    model_config = ConfigDict(
        frozen=True,
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        ser_json_inf_nan="strings",
    )


class OwnerReference(ApiModel):
    api_version: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(ApiModel):
    name: str = ""
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    owner_references: tuple[OwnerReference, ...] = ()
    finalizers: tuple[str, ...] = ()


class Object(ApiModel):
    """A top-level API object: apiVersion, kind, metadata."""

    api_version: str = ""
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or ""

    def ref(self) -> str:
        """`namespace/name` for namespaced objects, `name` otherwise (as upstream prints them)."""
        return f"{self.metadata.namespace}/{self.metadata.name}" if self.metadata.namespace else self.metadata.name


def raw_of(model: ApiModel) -> dict[str, Any]:
    """API JSON for a model: aliases, no unset defaults, extra fields included."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
