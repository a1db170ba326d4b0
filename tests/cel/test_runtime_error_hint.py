"""Upstream 1.37's hint on a missing key (cel.EnhanceRuntimeError), under upstream's conditions.

k8s.io/dynamic-resource-allocation v0.37.2 passes every selector's *runtime* error through
`cel.EnhanceRuntimeError`, which appends ". consider using CEL optional chaining (.? followed
by orValue()) or guarding the check with has() for optional fields" when the message contains
"no such key:" anywhere (also inside another error's text), and leaves compile errors and
every other message alone; v0.36.6 has no such hint (nor the device in the message). The
expected messages below are the oracle's (oracle/bin/oracle and oracle-v0.36, on the device of
upstream_1_37.json), whole; dralloc must give them word for word.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.cel import refresh_upstream_cases
from tests.differential import running

_DEVICE = json.loads(Path(__file__).with_name("upstream_1_37.json").read_text())["device"]
_HINT = (". consider using CEL optional chaining (.? followed by orValue()) or guarding the check with has() "
         "for optional fields")
_AT_1_37 = "claim default/claim: selector #0 on device dra.net/pool/device: CEL runtime error: "
_AT_1_36 = "claim default/claim: selector #0: CEL runtime error: "
_IP_ERROR = ('IP Address "no such key: x" parse error during conversion from string: ParseAddr("no such key: x"): '
             'each colon-separated field must have at least one digit (at "no such key: x")')
_COMPILE = ("claim default/claim: selector #0: CEL compile error: compilation failed: ERROR: <input>:1:18: found no "
            "matching overload for '_==_' applied to '(string, int)'\n | \"no such key: x\" == 1\n"
            " | .................^")

CASES = [
    # (expression, upstream 1.37's message, upstream 1.36's message)
    pytest.param('device.attributes["dra.net"].nope == 1', _AT_1_37 + "no such key: nope" + _HINT,
                 _AT_1_36 + "no such key: nope", id="missing-attribute"),
    pytest.param('{"a": 1}["b"] == 1', _AT_1_37 + "no such key: b" + _HINT, _AT_1_36 + "no such key: b",
                 id="missing-map-key"),
    pytest.param('url("http://h/?a=1").getQuery()["b"] == []', _AT_1_37 + "no such key: b" + _HINT,
                 _AT_1_36 + "no such key: b", id="missing-query-parameter"),
    pytest.param('ip("no such key: x") == ip("1.2.3.4")', _AT_1_37 + _IP_ERROR + _HINT, _AT_1_36 + _IP_ERROR,
                 id="the-words-inside-another-error"),
    pytest.param('device.attributes["dra.net"].numa == "a" || device.attributes["dra.net"].numa.startsWith("x")',
                 _AT_1_37 + "no such overload", _AT_1_36 + "no such overload", id="other-runtime-error"),
    pytest.param('"no such key: x" == 1', _COMPILE, _COMPILE, id="compile-error-never"),
]


def _message(expression: str, release: str) -> Any:
    case = refresh_upstream_cases.vector(_DEVICE, expression, 0)
    # 1.36 reads the device's list attributes only with DRAListTypeAttributes on.
    case["features"] = ["DRAListTypeAttributes"] if release == "1.36" else []
    answer = running.answer(case, release=release)
    assert answer["status"] == "error", answer
    # dralloc names the request after the claim ("claim default/claim, request request"), which
    # upstream does not; what follows the owner is the subject here.
    return re.sub(r"^claim default/claim, request request: ", "claim default/claim: ", answer["message"])


@pytest.mark.parametrize(("expression", "at_1_37", "at_1_36"), CASES)
def test_hint_as_upstream(expression: str, at_1_37: str, at_1_36: str) -> None:
    """1.37 appends the hint exactly when upstream 1.37 does; 1.36 never does."""
    assert _message(expression, "1.37") == at_1_37
    assert _message(expression, "1.36") == at_1_36


def test_hint_is_added_once_per_error() -> None:
    """The failure is remembered per device: a second claim meeting it gets one hint, not two."""
    first = _message('device.attributes["dra.net"].nope == 1', "1.37")
    again = _message('device.attributes["dra.net"].nope == 1', "1.37")
    assert first == again and first.count(_HINT) == 1
