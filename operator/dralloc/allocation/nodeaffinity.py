"""Core node-affinity matching: does a NodeSelector select a node.

The same rules kube-scheduler applies (terms are ORed; within a term every
requirement must hold; a term without requirements selects nothing;
`matchFields` knows only `metadata.name`). Used for ResourceSlice node
selectors, per-device node selection and, by the scheduling layer, for pod
node affinity. A selector that cannot be evaluated raises `ValueError` with the
offending requirement; callers turn it into their own typed error.
"""

from __future__ import annotations

from collections.abc import Mapping

from dralloc.model import nodes

_LABEL_OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


def _parse_int(text: str, requirement: nodes.NodeSelectorRequirement) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise ValueError(
            f"node selector requirement {requirement.key} {requirement.operator}: "
            f"value {text!r} is not an integer"
        ) from None


def _check(requirement: nodes.NodeSelectorRequirement) -> None:
    op, values = requirement.operator, requirement.values
    if op not in _LABEL_OPERATORS:
        raise ValueError(f"node selector requirement {requirement.key}: unsupported operator {op!r}")
    if op in ("In", "NotIn") and not values:
        raise ValueError(f"node selector requirement {requirement.key} {op}: values must be non-empty")
    if op in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"node selector requirement {requirement.key} {op}: values must be empty")
    if op in ("Gt", "Lt"):
        if len(values) != 1:
            raise ValueError(f"node selector requirement {requirement.key} {op}: needs exactly one value")
        _parse_int(values[0], requirement)


def label_requirement_matches(requirement: nodes.NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    _check(requirement)
    op, key = requirement.operator, requirement.key
    present = key in labels
    if op == "In":
        return present and labels[key] in requirement.values
    if op == "NotIn":
        return not present or labels[key] not in requirement.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:
        return False
    try:
        actual = int(labels[key], 10)
    except ValueError:
        return False
    bound = _parse_int(requirement.values[0], requirement)
    return actual > bound if op == "Gt" else actual < bound


def field_requirement_matches(requirement: nodes.NodeSelectorRequirement, node_name: str) -> bool:
    if requirement.key != "metadata.name":
        raise ValueError(f"node selector field {requirement.key!r}: only metadata.name is supported")
    if requirement.operator == "In":
        if len(requirement.values) != 1:
            raise ValueError("node selector field metadata.name In: needs exactly one value")
        return node_name in requirement.values
    if requirement.operator == "NotIn":
        if len(requirement.values) != 1:
            raise ValueError("node selector field metadata.name NotIn: needs exactly one value")
        return node_name not in requirement.values
    raise ValueError(f"node selector field metadata.name: unsupported operator {requirement.operator!r}")


def term_matches(term: nodes.NodeSelectorTerm, node_name: str, labels: Mapping[str, str]) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False
    # Evaluate every requirement so that a malformed one is reported even when an
    # earlier one already decided the outcome; the API server rejects such selectors.
    matched = True
    for requirement in term.match_expressions:
        matched = label_requirement_matches(requirement, labels) and matched
    for requirement in term.match_fields:
        matched = field_requirement_matches(requirement, node_name) and matched
    return matched


def selector_matches(selector: nodes.NodeSelector, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether any term of the selector selects the node."""
    matched = False
    for term in selector.node_selector_terms:
        matched = term_matches(term, node_name, labels) or matched
    return matched


def node_matches(
    *,
    node_name: str,
    labels: Mapping[str, str],
    target_node_name: str | None,
    all_nodes: bool | None,
    selector: nodes.NodeSelector | None,
) -> bool:
    """Whether devices published with these node fields can be used from the node."""
    if target_node_name:
        return target_node_name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return selector_matches(selector, node_name, labels)
    return False
