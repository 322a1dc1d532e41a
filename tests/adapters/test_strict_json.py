"""adapters.strict_json: the one rule for JSON an assistant writes as text, and both adapters
that read such text (OpenAI's arguments string, a Hermes block) applying it alike."""

from __future__ import annotations

import json

import pytest

from adapters.functions.openai import parse_arguments
from adapters.strict_json import JsonRefused, loads
from adapters.text.parser import parse

REFUSED = {
    "syntax": '{"page": ',
    "single_quotes": "{'page': 1}",
    "trailing_comma": '{"page": 1,}',
    "nan": '{"page": NaN}',
    "infinity": '{"page": -Infinity}',
    "repeated_key": '{"page": 1, "page": 2}',
    "repeated_nested_key": '{"customer": {"name": "a", "name": "b"}}',
    "too_deep": "[" * 100_000 + "]" * 100_000,
    "too_many_digits": '{"page": ' + "9" * 5000 + "}",
}
ACCEPTED = {
    "object": ('{"page": 2, "status": "paid"}', {"page": 2, "status": "paid"}),
    "same_key_in_two_objects": ('{"a": {"k": 1}, "b": {"k": 2}}', {"a": {"k": 1}, "b": {"k": 2}}),
    "array": ("[1, 2]", [1, 2]),
    "unicode": ('{"name": "Ромашка"}', {"name": "Ромашка"}),
}


@pytest.mark.parametrize("text", REFUSED.values(), ids=REFUSED.keys())
def test_what_strict_json_refuses(text: str):
    with pytest.raises(JsonRefused) as refused:
        loads(text)

    assert refused.value.message


@pytest.mark.parametrize(("text", "value"), ACCEPTED.values(), ids=ACCEPTED.keys())
def test_what_strict_json_accepts_unchanged(text: str, value: object):
    assert loads(text) == value


def test_a_syntax_error_says_where():
    with pytest.raises(JsonRefused) as refused:
        loads('{"page": 1,}')

    assert refused.value.offset == 11
    assert "char 11" in refused.value.message


def test_a_repeated_key_is_named():
    with pytest.raises(JsonRefused, match="'page' повторяется в одном объекте"):
        loads('{"page": 1, "page": 2}')


@pytest.mark.parametrize(
    "arguments",
    [*REFUSED.values(), *(t for t, _ in ACCEPTED.values())],
    ids=[*REFUSED.keys(), *ACCEPTED.keys()],
)
def test_openai_and_hermes_accept_and_refuse_the_same_arguments_text(arguments: str):
    # OpenAI's arguments are a JSON string by contract; Hermes accepts them as one too.
    openai_value, openai_reason = parse_arguments(arguments)
    block = (
        "<tool_call>\n"
        + json.dumps({"name": "find_orders", "arguments": arguments})
        + "\n</tool_call>"
    )
    hermes = parse(block, ["find_orders"])

    openai_accepts = not openai_reason and isinstance(openai_value, dict)
    assert openai_accepts == bool(hermes.calls)
    if openai_accepts:
        assert hermes.calls[0].arguments == openai_value
