"""meta/v1 label selectors, as kube-scheduler's inter-pod filters apply them.

`LabelSelectorAsSelector` semantics: an absent selector (None) matches nothing, an empty
one (no matchLabels, no matchExpressions) matches everything; `matchLabels` and every
`matchExpressions` requirement must hold (operators In, NotIn, Exists, DoesNotExist). The
API server validates selectors, so an unknown operator is an input error (ValueError), as
`LabelSelectorAsSelector` returns one.

Pure: imports only the model.
"""

from __future__ import annotations

from collections.abc import Mapping

from dralloc.model import pods

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def requirement_matches(requirement: pods.LabelSelectorRequirement, labels: Mapping[str, str]) -> bool:
    op, key = requirement.operator, requirement.key
    if op == "In":
        return key in labels and labels[key] in requirement.values
    if op == "NotIn":
        return key not in labels or labels[key] not in requirement.values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    raise ValueError(f"label selector requirement {key}: {op!r} is not a valid operator "
                     f"(one of {', '.join(OPERATORS)})")


def matches(selector: pods.LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` satisfy the selector (None: nothing matches; empty: everything does)."""
    if selector is None:
        return False
    for key, value in selector.match_labels.items():
        if labels.get(key) != value:
            return False
    return all(requirement_matches(r, labels) for r in selector.match_expressions)


def with_label_keys(selector: pods.LabelSelector | None, labels: Mapping[str, str], match: tuple[str, ...] = (),
                    mismatch: tuple[str, ...] = ()) -> pods.LabelSelector | None:
    """The selector with `matchLabelKeys` (key In the incoming pod's value) and `mismatchLabelKeys`
    (key NotIn it) merged in, for keys the pod carries, as kube-scheduler merges them (keys the pod
    lacks are ignored). None stays None: nothing matches either way."""
    if selector is None or (not match and not mismatch):
        return selector
    extra = [pods.LabelSelectorRequirement(key=key, operator="In", values=(labels[key],))
             for key in match if key in labels]
    extra += [pods.LabelSelectorRequirement(key=key, operator="NotIn", values=(labels[key],))
              for key in mismatch if key in labels]
    if not extra:
        return selector
    return selector.model_copy(update={"match_expressions": (*selector.match_expressions, *extra)})
