"""CEL selectors that do not compile are refused with cel-go's issue text, as kube-apiserver does."""

from __future__ import annotations

import pytest
from tests.sandbox.conftest import Http

from dralloc.sandbox import celerrors, errors

RES = "/apis/resource.k8s.io/v1"
START = celerrors.EXPRESSION_START


@pytest.mark.parametrize(("expression", "detail"), [
    ("device.driver ==",
     f"ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {START}\n"
     " | device.driver ==\n | ................^"),
    ("a == == b",
     f"ERROR: <input>:1:6: Syntax error: mismatched input '==' expecting {START}\n | a == == b\n | .....^"),
    ("device.driver # 1",
     "ERROR: <input>:1:15: Syntax error: token recognition error at: '#'\n | device.driver # 1\n | ..............^"),
    ("(a", "ERROR: <input>:1:3: Syntax error: mismatched input '<EOF>' expecting ')'\n | (a\n | ..^"),
    ("[1, 2", "ERROR: <input>:1:6: Syntax error: mismatched input '<EOF>' expecting {']', ','}\n | [1, 2\n | .....^"),
    ("a b", "ERROR: <input>:1:3: Syntax error: mismatched input 'b' expecting <EOF>\n | a b\n | ..^"),
    ("true &&\n  device.driver ==",
     f"ERROR: <input>:2:19: Syntax error: mismatched input '<EOF>' expecting {START}\n"
     " |   device.driver ==\n | ..................^"),
    # cel-go shows tabs as spaces and marks multi-byte characters with fullwidth dots
    ("'\u00e9' ==\t",
     f"ERROR: <input>:1:8: Syntax error: mismatched input '<EOF>' expecting {START}\n"
     " | '\u00e9' == \n | .\uff0e.....^"),
    ("device.driver == \"x",
     "ERROR: <input>:1:18: Syntax error: token recognition error at: '\"x'\n"
     " | device.driver == \"x\n | .................^\n"
     f"ERROR: <input>:1:20: Syntax error: mismatched input '<EOF>' expecting {START}\n"
     " | device.driver == \"x\n | ...................^"),
])
def test_compile_error_text(expression: str, detail: str) -> None:
    assert celerrors.compile_error(expression) == "compilation failed: " + detail


@pytest.mark.parametrize("expression", ['device.driver == "gpu.example.com"',
                                        'device.attributes["a"].x.matches("^b")',
                                        "[1, 2].all(x, x > 0)"])
def test_valid_expressions_compile(expression: str) -> None:
    assert celerrors.compile_error(expression) is None


def test_values_are_quoted_like_go() -> None:
    assert errors.go_quote('a "b"\\\n\t\x01é') == '"a \\"b\\"\\\\\\n\\t\\x01é"'
    assert [errors.go_value(v) for v in (3, True, None, "x")] == ["3", "true", "null", '"x"']


def selectors(expression: str) -> list[dict[str, object]]:
    return [{"cel": {"expression": expression}}]


@pytest.mark.parametrize(("path", "body", "field", "kind"), [
    (f"{RES}/deviceclasses", {"metadata": {"name": "broken"}, "spec": {"selectors": selectors("device.driver ==")}},
     "spec.selectors[0].cel.expression", "DeviceClass"),
    (f"{RES}/namespaces/default/resourceclaims",
     {"metadata": {"name": "broken"}, "spec": {"devices": {"requests": [
         {"name": "r", "exactly": {"deviceClassName": "gpu", "selectors": selectors("device.driver ==")}}]}}},
     "spec.devices.requests[0].exactly.selectors[0].cel.expression", "ResourceClaim"),
    (f"{RES}/namespaces/default/resourceclaimtemplates",
     {"metadata": {"name": "broken"}, "spec": {"spec": {"devices": {"requests": [
         {"name": "r", "firstAvailable": [{"name": "s", "deviceClassName": "gpu",
                                           "selectors": selectors("device.driver ==")}]}]}}}},
     "spec.spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression", "ResourceClaimTemplate"),
])
async def test_refusal_is_upstreams_invalid_status(http: Http, path: str, body: dict[str, object], field: str,
                                                   kind: str) -> None:
    code, status = await http.post(path, body)
    detail = celerrors.compile_error("device.driver ==")
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": field,
                                            "message": f'Invalid value: "device.driver ==": {detail}'}]
    assert status["message"] == (f'{kind}.resource.k8s.io "broken" is invalid: {field}: '
                                 f'Invalid value: "device.driver ==": {detail}')
    assert "ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'" in status["message"]


async def test_several_causes_are_aggregated_in_brackets(http: Http) -> None:
    body = {"metadata": {"name": "two"}, "spec": {"selectors": selectors("a ==") + selectors("(b")}}
    code, status = await http.post(f"{RES}/deviceclasses", body)
    assert code == 422 and len(status["details"]["causes"]) == 2
    assert status["message"].startswith('DeviceClass.resource.k8s.io "two" is invalid: [spec.selectors[0]')
    assert ", spec.selectors[1].cel.expression: Invalid value: \"(b\": compilation failed: " in status["message"]
    assert status["message"].endswith("]")


def _url_and_format_cases() -> list[tuple[str, str | None]]:
    """Selectors over the URLs and Format libraries from tests/cel/upstream_1_37.json, with what
    upstream's cel-go checker said of them: its compile error, or None when they compiled."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parents[1] / "cel" / "upstream_1_37.json").read_text())
    cases = []
    for case in data["cases"]:
        expression, upstream = case["expression"], case["upstream"]
        # The sandbox's checker does not model optional syntax or string.format's clause checks.
        if not any(m in expression for m in ("url(", "isURL(", "format.", "getQuery")) \
                or any(m in expression for m in (".?", "[?", ".format(")):
            continue
        cases.append((expression, upstream.removeprefix("compile: ") if upstream.startswith("compile: ") else None))
    return cases


def test_url_and_format_selectors_check_as_upstream() -> None:
    """kube-apiserver declares the URLs and Format libraries (`url`, `isURL`, the URL getters,
    `format.named`, `format.dns1123Label()` and the other formats, `validate`): selectors using
    them are accepted, and misuses refused with cel-go's words."""
    cases = _url_and_format_cases()
    assert len(cases) > 1000 and any(want is None for _, want in cases) and any(want for _, want in cases)
    wrong = [(expression, want, got) for expression, want in cases
             if (got := celerrors.compile_error(expression)) != want]
    assert wrong == []
