"""find_refunds and get_refundable through each function format and the <tool_call> text: the
adapters only translate, so each answers what REST answers for the same refunded order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Assistant
from tests.tools.test_refund_reads import refunded_one_night

pytestmark = pytest.mark.django_db


def bodies(name: str, arguments: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One call of `name`, in each platform's own assistant-message shape."""
    encoded = json.dumps(arguments)
    return {
        "/api/v1/openai/call": {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": name, "arguments": encoded},
                }
            ],
        },
        "/api/v1/gigachat/call": {
            "role": "assistant",
            "content": "",
            "function_call": {"name": name, "arguments": arguments},
        },
        "/api/v1/yandexgpt/call": {
            "role": "assistant",
            "toolCallList": {
                "toolCalls": [{"functionCall": {"name": name, "arguments": arguments}}]
            },
        },
        "/api/v1/text/call": {
            "text": "<tool_call>\n"
            + json.dumps({"name": name, "arguments": arguments})
            + "\n</tool_call>"
        },
    }


def envelope_of(path: str, answer: Any) -> dict[str, Any]:
    """The envelope inside each platform's result message."""
    if path.endswith("/openai/call"):
        return json.loads(answer[0]["content"])
    if path.endswith("/gigachat/call"):
        return json.loads(answer["content"])
    if path.endswith("/yandexgpt/call"):
        return json.loads(answer["toolResultList"]["toolResults"][0]["functionResult"]["content"])
    return answer["results"][0]


@pytest.mark.parametrize("tool", ["find_refunds", "get_refundable"])
def test_refund_reads_answer_the_same_in_every_format(assistant: Assistant, tool: str) -> None:
    # given: an order with one refunded night, and what REST answers about it
    order_id = refunded_one_night(assistant)
    _, over_rest = assistant.call(tool, {"order_id": order_id})
    assert over_rest["status"] == "ok", over_rest

    for path, body in bodies(tool, {"order_id": order_id}).items():
        # when
        status, answer = assistant.post(path, body)

        # then
        assert status == 200, (path, answer)
        envelope = envelope_of(path, answer)
        assert envelope["status"] == "ok", (path, envelope)
        assert without_request_id(envelope["data"]) == without_request_id(over_rest["data"]), path


def without_request_id(data: dict[str, Any]) -> dict[str, Any]:
    """Each call has its own upstream request id; everything else must be the same."""
    return {name: value for name, value in data.items() if name != "request_id"}
