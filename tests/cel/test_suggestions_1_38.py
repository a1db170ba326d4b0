"""1.38's wording of undeclared references (`dralloc.cel.suggestions`); the oracle's own answers
for typos are in upstream_1_37.json (`upstream_1_38`), checked by test_upstream_environment."""

from __future__ import annotations

import pytest

from dralloc.cel import suggestions


@pytest.mark.parametrize(("a", "b", "expected"), [
    ("size", "size", 0),
    ("sizee", "size", 1),
    ("devcie", "device", 1),  # an adjacent transposition counts one
    ("cidr", "", 4),
    ("abcdefghijklmnop", "abcdefghij", 6),  # 16+ characters, very unequal: the length difference
])
def test_distance(a: str, b: str, expected: int) -> None:
    assert suggestions.distance(a, b) == expected
    assert suggestions.distance(b, a) == expected


def test_a_row_past_a_third_of_the_length_is_out_of_reach() -> None:
    assert suggestions.distance("abcdef", "uvwxyz") > 1000


@pytest.mark.parametrize(("name", "message"), [
    ("devices", "undeclared reference to 'devices' (did you mean 'device'?)"),
    ("format", "undeclared reference to 'format'"),  # declared (a member function): nothing to add
    ("format.nope", "undeclared reference to 'format.nope' (did you mean 'format.byte' or 'format.date'?)"),
    ("foo", "undeclared reference to 'foo'"),
    ("transfromList", "undeclared reference to 'transfromList' (did you mean 'transformList'?)"),
])
def test_undeclared(name: str, message: str) -> None:
    assert suggestions.undeclared(name) == message


def test_a_plain_name_is_never_offered_a_dotted_one() -> None:
    assert all("." not in s for s in suggestions.near("rang"))
    assert all("." in s for s in suggestions.near("lists.rang"))
