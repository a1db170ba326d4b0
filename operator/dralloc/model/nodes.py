"""Core v1 subset: Node, Namespace, node selectors and node taints (what placement reads)."""


from pydantic import Field

from dralloc.model.base import ApiModel, Object
from dralloc.model.quantities import Quantity


class NodeSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTerm(ApiModel):
    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class NodeSelector(ApiModel):
    node_selector_terms: tuple[NodeSelectorTerm, ...] = ()


class Taint(ApiModel):
    """A node taint (core v1), not a device taint."""

    key: str
    value: str | None = None
    effect: str
    time_added: str | None = None


class NodeSpec(ApiModel):
    unschedulable: bool | None = None
    taints: tuple[Taint, ...] = ()


class NodeStatus(ApiModel):
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    allocatable: dict[str, Quantity] = Field(default_factory=dict)
    declared_features: tuple[str, ...] = ()  # 1.37, NodeDeclaredFeatures (what the kubelet supports)


class Node(Object):
    spec: NodeSpec = Field(default_factory=NodeSpec)
    status: NodeStatus = Field(default_factory=NodeStatus)


class Namespace(Object):
    pass
