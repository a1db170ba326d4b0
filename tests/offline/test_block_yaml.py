"""dralloc.blockyaml reads block-style YAML exactly as PyYAML's safe loader does, or declines.

Every check compares with `yaml.load_all(text, Loader=CSafeLoader)` (the loader
dralloc.documents otherwise uses) by type and key order, not only by `==` (`1 == True`).
"""

from __future__ import annotations

import datetime
import math
import string
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dralloc import blockyaml, documents

LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def same(a: Any, b: Any) -> bool:
    """Equal with equal types all the way down, mappings in the same key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(map(type, a)) == list(map(type, b)) and list(a) == list(b) and all(
            same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def pyyaml(text: str) -> list[object]:
    return list(yaml.load_all(text, Loader=LOADER))


def check_fast(text: str) -> list[object]:
    fast = blockyaml.load_all(text, LOADER)
    assert fast is not None, "expected the fast reader to take this text"
    assert same(fast, pyyaml(text)), (fast, pyyaml(text))
    return fast


KUBECTL_STYLE = """\
apiVersion: v1
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata:
    annotations: {}
    creationTimestamp: "2026-01-01T00:00:00Z"
    finalizers: []
    labels:
      kubernetes.io/hostname: node-0
    name: node-0-gpu
    resourceVersion: "1234"
  spec:
    devices:
    - attributes:
        index:
          int: 0
        model:
          string: A100
        driverVersion:
          version: 1.2.3
        ready:
          bool: true
      capacity:
        memory:
          value: 80Gi
      name: gpu-0
    driver: gpu.example.com
    nodeName: node-0
    pool:
      generation: 1
      name: node-0
      resourceSliceCount: 1
kind: List
metadata:
  resourceVersion: ""
"""

GENERATOR_STYLE = """\
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim-0000
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
        allocationMode: ExactCount
        count: 1
        selectors:
        - cel:
            expression: device.attributes["gpu.example.com"].model == "A100"
              && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi"))
              >= 0
    constraints:
    - requests:
      - gpu
      matchAttribute: gpu.example.com/numa
---
# a comment line, then a document with shared (anchored) attribute objects
kind: ResourceSlice
spec:
  devices:
  - name: gpu-0
    attributes:
      index: &id001
        int: 0
  - name: gpu-1
    attributes:
      index: *id001
"""


class TestKubernetesFilesAreReadByTheFastReader:
    def test_kubectl_get_o_yaml_output(self) -> None:
        check_fast(KUBECTL_STYLE)

    def test_generated_workloads_with_folded_cel_and_anchors(self) -> None:
        docs = check_fast(GENERATOR_STYLE)
        expression = docs[0]["spec"]["devices"]["requests"][0]["exactly"]["selectors"][0]["cel"]["expression"]
        assert expression.endswith('quantity("40Gi")) >= 0')

    def test_an_alias_is_the_anchored_object_itself_as_in_pyyaml(self) -> None:
        docs = check_fast(GENERATOR_STYLE)
        devices = docs[1]["spec"]["devices"]
        assert devices[0]["attributes"]["index"] is devices[1]["attributes"]["index"]

    def test_documents_parse_takes_the_fast_reader_and_gives_pyyamls_objects(self) -> None:
        assert same(documents.parse(GENERATOR_STYLE), pyyaml(GENERATOR_STYLE))

    @pytest.mark.parametrize("text", [
        "", "\n", "# only a comment\n", "---\n", "---\n---\n", "a: 1\n---\n", "a: 1\n---\n# c\n",
        "---\na: 1\n", "a:\n", "a:\nb:\n", "-\n", "- \n- x\n", "a:\n- x\nb:\n", "a:\n  - x\n  -\nb: 2\n",
        "a: {}\nb: []\n", "a:  x  \n", "a: b:c\n", "a:: b\n", "-a: 1\n", "a: -1\n", "a: :x\n",
        "a: 'it''s'\n", 'a: "x: y"\n', "- 'a: b'\n", "a: &x\nb: *x\n", "a: &x 1\nb: *x\n",
        "a: &x\n- 1\nb: *x\n", "- &a\n  k: v\n- *a\n", "a: b\n\n\n  c\n\nd: 1\n", "a:\n- x\n  y\n",
        "- k: v\n   w\n", "a: b\n  - c\n", "a: b\n  [c]\n", "a: b\n  'q'\n", "a: b\n  c\n---\n",
        "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n", "a: 1\na: 2\nb: 3\n", "- x\n- y\n",
        "1: one\ntrue: yes\n~: null\n", "key with spaces: value with  spaces\n",
    ])
    def test_shapes_and_edges_of_the_subset(self, text: str) -> None:
        check_fast(text)


class TestPlainScalarsResolveAsYaml11InPyYaml:
    @pytest.mark.parametrize("scalar", [
        "yes", "No", "on", "OFF", "y", "n", "True", "false", "~", "null", "Null", "", "012", "0o17", "0x1F",
        "0b101", "1_000", "1:20", "-1:30", "+1", "-0", "1.0", "1.5e3", "1.5e+3", "1e3", ".5", "1.", ".inf",
        "-.Inf", ".nan", "2024-01-01", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00.5 +02:00", "80Gi",
        "1500m", "4", "A100", "1.2.3", "<<x", "=x", "v1", "0", "00", "0.0.1",
    ])
    def test_as_a_value_a_list_item_and_a_key(self, scalar: str) -> None:
        value = f"a: {scalar}\n" if scalar else "a:\n"
        for text in (value, f"- {scalar}\n" if scalar else "-\n"):
            fast = blockyaml.load_all(text, LOADER)
            assert fast is None or same(fast, pyyaml(text))
        check_fast(value)

    def test_quoted_scalars_stay_strings(self) -> None:
        docs = check_fast("a: \"1.0\"\nb: 'yes'\nc: \"80Gi\"\nd: ''\ne: \"\"\n")
        assert docs == [{"a": "1.0", "b": "yes", "c": "80Gi", "d": "", "e": ""}]

    def test_a_date_is_a_date(self) -> None:
        assert check_fast("d: 2024-01-01\n") == [{"d": datetime.date(2024, 1, 1)}]


class TestTextsOutsideTheSubsetGoToPyYaml:
    @pytest.mark.parametrize("text", [
        "a: [1, 2]\n", "a: {b: 1}\n", "{a: 1}\n", "a: |\n  text\n", "a: >\n  text\n", "a: !!str 1\n",
        'a: "tab\\there"\n', "a:\tb\n", "a: b # comment\n", "a: caf\u00e9\n", "%YAML 1.1\n---\na: 1\n",
        "--- a\n", "a: 1\n...\n", "<<: {a: 1}\n", "a: \"multi\n  line\"\n", "just a scalar\n",
        "a: b: c\n", "a: b\n  c: d\n", "a:\n    b: 1\n  c: 2\n", "  a: 1\n", "a: 1\n- b\n", "- a\nb: 1\n",
        "a: *unknown\n", "a: &x 1\nb: &x 2\n", "a: &x\n  b: *x\n", "a: b\n  # c\n  d\n", "? a\n: b\n",
        "a: 1\r\n", "'quoted key': 1\n", "- - x\n", "a: -\n", "2024-01-01: x\n",
    ])
    def test_declined(self, text: str) -> None:
        assert blockyaml.load_all(text, LOADER) is None

    @pytest.mark.parametrize("text", ["a: b: c\n", "a: b\n  c: d\n", "a:\n    b: 1\n  c: 2\n", "a: *unknown\n"])
    def test_malformed_yaml_still_raises_pyyamls_error(self, text: str) -> None:
        with pytest.raises(documents.Error):
            documents.parse(text)


# ---- generated texts ------------------------------------------------------------------------

_WORDS = st.sampled_from([
    "a", "name", "gpu-0", "80Gi", "A100", "1.2.3", "yes", "no", "on", "~", "null", "012", "0x1f", "1:20",
    "1e3", "1.5", "-1", "+2", ".inf", "2024-01-01", "x y", "a:b", "-x", ":x", "?x", "[x]", "{x}", "x,y",
    "'q'", '"q"', "it's", "#x", "x #y", "&a", "*a", "!t", "|", ">", "%", "@", "`", "-", "", " ", "  x  ",
    "true", "False", "0", "00", "0.0", "<<", "=", "x: y", "- x",
])
_SCALARS = st.one_of(_WORDS, st.integers(-10**12, 10**12), st.booleans(), st.none(),
                     st.floats(allow_nan=False), st.text(string.printable, max_size=12))
_KEYS = st.one_of(_WORDS, st.integers(-5, 5), st.text(string.ascii_letters + string.digits + "-./_ :", max_size=10))
_TREES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(docs=st.lists(_TREES, min_size=1, max_size=3), width=st.sampled_from([20, 40, 80, 1000]),
       indent=st.sampled_from([2, 4]), explicit=st.booleans())
def test_yaml_safe_dump_output_reads_the_same(docs: list[Any], width: int, indent: int, explicit: bool) -> None:
    text = yaml.safe_dump_all(docs, default_flow_style=False, width=width, indent=indent,
                              explicit_start=explicit, sort_keys=False)
    fast = blockyaml.load_all(text, LOADER)
    assert fast is None or same(fast, pyyaml(text)), text


_LINE_PARTS = st.sampled_from([
    "", "  ", "    ", "- ", "-", "a:", "a: ", "b: 1", "x", "yes", "'q'", '"q"', "&a ", "*a", "---", "...",
    "# c", ": ", "k: v", "[]", "{}", "1:20", "012", "~", "- a: 1", "c: &b", "d: *b", "  - x", "e:  f",
])


@settings(max_examples=800, deadline=None)
@given(st.lists(st.lists(_LINE_PARTS, min_size=1, max_size=4).map("".join), max_size=10))
def test_arbitrary_line_soups_are_read_as_pyyaml_reads_them_or_declined(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    fast = blockyaml.load_all(text, LOADER)
    if fast is None:
        return
    try:
        expected = pyyaml(text)
    except yaml.YAMLError:
        pytest.fail(f"the fast reader accepted a text PyYAML rejects: {text!r} -> {fast!r}")
    assert same(fast, expected), text
