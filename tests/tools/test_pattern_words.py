"""A refused format is said in words, never as the regular expression behind it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Assistant, order_args
from tools import catalog
from tools.validation import PATTERN_WORDS

pytestmark = pytest.mark.django_db


def patterns(schema: Any) -> set[str]:
    """Every `pattern` anywhere in a JSON schema."""
    found: set[str] = set()
    if isinstance(schema, dict):
        if isinstance(schema.get("pattern"), str):
            found.add(schema["pattern"])
        for value in schema.values():
            found |= patterns(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= patterns(value)
    return found


def test_a_phone_with_a_plus_and_brackets_is_refused_in_words(assistant: Assistant):
    args = order_args()
    args["customer"]["phone"] = "+7 (900) 111-22-33"

    status, body = assistant.call("create_order", args)

    assert (status, body["code"]) == (400, "invalid_arguments"), body
    [problem] = body["problems"]
    assert problem["field"] == "customer.phone"
    assert "от 10 до 15 цифр без пробелов, скобок и «+», например 79001112233" in problem["message"]
    assert "[0-9]" not in problem["message"] and "^" not in problem["message"]


def test_every_pattern_of_every_tool_has_words():
    used = set().union(*(patterns(spec.params.model_json_schema()) for spec in catalog.CATALOG))

    assert used, "no tool has a pattern: the check would prove nothing"
    assert used <= set(PATTERN_WORDS), sorted(used - set(PATTERN_WORDS))
