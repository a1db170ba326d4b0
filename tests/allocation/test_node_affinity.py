"""Node selectors (allocation.nodeaffinity): label operators, matchFields, terms, malformed input."""

from __future__ import annotations

import pytest
from tests.builders import claim, class_, device, node, node_selector, slice_, snapshot

from dralloc import allocation
from dralloc.allocation import errors, nodeaffinity
from dralloc.allocation.features import Features
from dralloc.model.nodes import NodeSelector, NodeSelectorRequirement, NodeSelectorTerm

LABELS = {"zone": "a", "cores": "8"}


def req(key: str, operator: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key=key, operator=operator, values=values)


def labels_match(requirement: NodeSelectorRequirement, labels: dict[str, str] = LABELS) -> bool:
    return nodeaffinity.label_requirement_matches(requirement, labels)


def selects(*terms: NodeSelectorTerm, name: str = "node-1") -> bool:
    return nodeaffinity.selector_matches(NodeSelector(node_selector_terms=terms), name, LABELS)


class TestLabelOperators:
    def test_in_matches_a_listed_value(self) -> None:
        """In selects a node whose label value is listed."""
        assert labels_match(req("zone", "In", "b", "a")) is True

    def test_in_rejects_an_unlisted_value(self) -> None:
        """In rejects a node whose label value is not listed."""
        assert labels_match(req("zone", "In", "b")) is False

    def test_in_rejects_a_missing_label(self) -> None:
        """In rejects a node without the label."""
        assert labels_match(req("rack", "In", "r1")) is False

    def test_notin_accepts_a_missing_label(self) -> None:
        """NotIn selects a node without the label."""
        assert labels_match(req("rack", "NotIn", "r1")) is True

    def test_notin_rejects_a_listed_value(self) -> None:
        """NotIn rejects a node whose label value is listed."""
        assert labels_match(req("zone", "NotIn", "a")) is False

    def test_exists_needs_the_label(self) -> None:
        """Exists selects exactly the nodes that have the label."""
        assert (labels_match(req("zone", "Exists")), labels_match(req("rack", "Exists"))) == (True, False)

    def test_does_not_exist_needs_the_label_absent(self) -> None:
        """DoesNotExist selects exactly the nodes without the label."""
        assert (labels_match(req("zone", "DoesNotExist")), labels_match(req("rack", "DoesNotExist"))) == (False, True)

    def test_gt_compares_integers(self) -> None:
        """Gt compares the label as an integer (8 > 7, not 8 > 8)."""
        assert (labels_match(req("cores", "Gt", "7")), labels_match(req("cores", "Gt", "8"))) == (True, False)

    def test_lt_compares_integers(self) -> None:
        """Lt compares the label as an integer (8 < 10 numerically, though not as strings)."""
        assert (labels_match(req("cores", "Lt", "10")), labels_match(req("cores", "Lt", "8"))) == (True, False)

    def test_gt_on_a_non_integer_label_is_false(self) -> None:
        """Gt on a label that is not an integer does not select the node."""
        assert labels_match(req("zone", "Gt", "1")) is False

    def test_gt_on_a_missing_label_is_false(self) -> None:
        """Gt on a missing label does not select the node."""
        assert labels_match(req("rack", "Gt", "1")) is False


class TestFieldsAndTerms:
    def test_match_fields_metadata_name_in(self) -> None:
        """matchFields metadata.name In selects the named node only."""
        term = NodeSelectorTerm(match_fields=(req("metadata.name", "In", "node-1"),))
        assert (selects(term), selects(term, name="node-2")) == (True, False)

    def test_match_fields_metadata_name_notin(self) -> None:
        """matchFields metadata.name NotIn selects every other node."""
        term = NodeSelectorTerm(match_fields=(req("metadata.name", "NotIn", "node-1"),))
        assert (selects(term), selects(term, name="node-2")) == (False, True)

    def test_empty_term_selects_nothing(self) -> None:
        """A term without requirements selects no node."""
        assert selects(NodeSelectorTerm()) is False

    def test_no_terms_select_nothing(self) -> None:
        """A selector without terms selects no node."""
        assert selects() is False

    def test_terms_are_ored(self) -> None:
        """A node selected by any one term is selected."""
        miss = NodeSelectorTerm(match_expressions=(req("zone", "In", "b"),))
        hit = NodeSelectorTerm(match_expressions=(req("zone", "In", "a"),))
        assert selects(miss, hit) is True

    def test_requirements_within_a_term_are_anded(self) -> None:
        """Every requirement of a term must hold."""
        term = NodeSelectorTerm(match_expressions=(req("zone", "In", "a"), req("cores", "Gt", "9")))
        assert selects(term) is False

    def test_labels_and_fields_combine_in_one_term(self) -> None:
        """A term with both label and field requirements needs both."""
        term = NodeSelectorTerm(match_expressions=(req("zone", "In", "a"),),
                                match_fields=(req("metadata.name", "In", "node-1"),))
        assert (selects(term), selects(term, name="node-2")) == (True, False)


class TestNodeFields:
    def test_node_name_must_equal(self) -> None:
        """nodeName restricts devices to that node."""
        assert nodeaffinity.node_matches(node_name="n1", labels={}, target_node_name="n2", all_nodes=None,
                                         selector=None) is False

    def test_all_nodes_matches_every_node(self) -> None:
        """allNodes makes devices usable everywhere."""
        assert nodeaffinity.node_matches(node_name="n1", labels={}, target_node_name=None, all_nodes=True,
                                         selector=None) is True

    def test_no_node_field_matches_nothing(self) -> None:
        """Without any node field the devices are usable nowhere (an unknown future mode)."""
        assert nodeaffinity.node_matches(node_name="n1", labels={}, target_node_name=None, all_nodes=None,
                                         selector=None) is False


class TestMalformed:
    @pytest.mark.parametrize("requirement", [
        req("zone", "Near", "a"),
        req("zone", "In"),
        req("zone", "NotIn"),
        req("zone", "Exists", "a"),
        req("zone", "DoesNotExist", "a"),
        req("cores", "Gt", "many"),
        req("cores", "Lt", "1", "2"),
        req("cores", "Gt"),
    ], ids=["unknown-operator", "in-without-values", "notin-without-values", "exists-with-values",
            "doesnotexist-with-values", "gt-not-an-integer", "lt-two-values", "gt-no-value"])
    def test_malformed_label_requirement_raises_value_error(self, requirement: NodeSelectorRequirement) -> None:
        """A label requirement the API server would reject raises ValueError naming the key."""
        with pytest.raises(ValueError, match=requirement.key):
            labels_match(requirement)

    @pytest.mark.parametrize("requirement", [
        req("metadata.uid", "In", "x"),
        req("metadata.name", "Exists"),
        req("metadata.name", "In", "a", "b"),
    ], ids=["unknown-field", "unsupported-operator", "two-names"])
    def test_malformed_field_requirement_raises_value_error(self, requirement: NodeSelectorRequirement) -> None:
        """A field requirement other than metadata.name In/NotIn with one value raises ValueError."""
        with pytest.raises(ValueError):
            nodeaffinity.field_requirement_matches(requirement, "node-1")

    def test_malformed_requirement_reported_after_a_failing_one(self) -> None:
        """A malformed requirement raises even when an earlier requirement already rejected the node."""
        term = NodeSelectorTerm(match_expressions=(req("zone", "In", "b"), req("cores", "Gt", "many")))
        with pytest.raises(ValueError):
            selects(term)

    def test_malformed_slice_selector_is_an_input_error(self) -> None:
        """A ResourceSlice with a malformed nodeSelector makes allocate raise InvalidSliceError naming the slice."""
        snap = snapshot(classes=[class_("any")], slices=[
            slice_("bad-slice", nodes=node_selector(("zone", "Gt", ["many"])), devices=[device("d0")])])
        with pytest.raises(errors.InvalidSliceError, match="bad-slice"):
            allocation.allocate(snap, [claim("c0").request("r0", "any").build()], node(), features=Features())
