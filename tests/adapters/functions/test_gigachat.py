"""GigaChat calls through REST: v1 function_call and v2 content parts, built with the SDK's models."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gigachat.models import ChatCompletionResponse, ChatMessage, Messages
from gigachat.models.chat import FunctionCall

from audit.models import JournalEntry
from tests.adapters.functions.conftest import issued_order
from tests.conftest import Assistant, order_args, sandbox_orders

pytestmark = pytest.mark.django_db

STATE = "0199e210-2f13-744c-8fe5-c9a19fe27db7"
URL = "/api/v1/gigachat/call"


def v1_call(name: str, arguments: Any, state: str | None = STATE) -> dict[str, Any]:
    message = Messages(
        role="assistant",
        content="",
        function_call=FunctionCall(name=name, arguments=arguments),
        functions_state_id=state,
    )
    return message.model_dump(exclude_none=True, by_alias=True)


def v2_call(name: str, arguments: Any, state_key: str = "tool_state_id") -> dict[str, Any]:
    """As the API answers (tool_state_id), parsed and re-dumped by the SDK (tools_state_id)."""
    raw = {
        "messages": [
            {
                "role": "assistant",
                state_key: STATE,
                "content": [{"function_call": {"name": name, "arguments": arguments}}],
            }
        ],
        "finish_reason": "function_call",
    }
    return (
        ChatCompletionResponse.model_validate(raw)
        .messages[0]
        .model_dump(exclude_none=True, by_alias=True)
    )


def answer_v1(assistant: Assistant, message: dict[str, Any]) -> tuple[Messages, dict[str, Any]]:
    status, body = assistant.post(URL, message)
    assert status == 200, body
    parsed = Messages.model_validate(body)
    return parsed, json.loads(parsed.content)


def test_v1_read_answers_with_a_function_message_and_echoes_the_state_id(assistant: Assistant):
    order = issued_order(assistant)

    reply, envelope = answer_v1(assistant, v1_call("get_order", {"order_id": order["order_id"]}))

    assert (reply.role, reply.name, reply.functions_state_id) == ("function", "get_order", STATE)
    assert envelope["status"] == "ok"
    assert envelope["data"]["order_id"] == order["order_id"]
    assert JournalEntry.objects.get(pk=envelope["journal_id"]).channel == "gigachat"


def test_v1_without_a_state_id_sends_none_back(assistant: Assistant):
    _, body = assistant.post(URL, v1_call("find_orders", {}, state=None))

    assert "functions_state_id" not in body


def test_v1_create_order_takes_two_calls_and_makes_one_order(assistant: Assistant):
    args = order_args()

    _, first = answer_v1(assistant, v1_call("create_order", args))
    assert first["status"] == "confirmation_required"
    assert sandbox_orders(assistant.http) == []
    _, done = answer_v1(
        assistant,
        v1_call("create_order", {**args, "confirmation_token": first["confirmation"]["token"]}),
    )

    assert done["status"] == "ok"
    assert [o["id"] for o in sandbox_orders(assistant.http)] == [done["data"]["order_id"]]


def test_v1_refusal_is_a_result_the_model_reads(assistant: Assistant):
    _, envelope = answer_v1(assistant, v1_call("create_order", {**order_args(), "amount": "1"}))

    assert (envelope["status"], envelope["code"]) == ("rejected", "invalid_arguments")
    assert envelope["problems"] and envelope["message"]
    assert sandbox_orders(assistant.http) == []


def test_v1_arguments_as_a_string_are_refused_not_parsed(assistant: Assistant):
    message = {
        "role": "assistant",
        "content": "",
        "functions_state_id": STATE,
        "function_call": {"name": "find_orders", "arguments": "{}"},
    }

    status, body = assistant.post(URL, message)

    assert status == 200
    assert json.loads(body["content"])["code"] == "arguments_not_object"


@pytest.mark.parametrize("state_key", ["tool_state_id", "tools_state_id"])
def test_v2_answers_with_a_tool_message_of_function_result_parts(
    assistant: Assistant, state_key: str
):
    order = issued_order(assistant)
    message = v2_call("get_order", {"order_id": order["order_id"]}, state_key)

    status, body = assistant.post(URL, message)

    assert status == 200, body
    reply = ChatMessage.model_validate(body)
    assert (reply.role, reply.tools_state_id) == ("tool", STATE)
    result = reply.content[0].function_result
    assert result.name == "get_order"
    assert result.result["data"]["order_id"] == order["order_id"]


def test_v2_raw_api_message_is_accepted_as_it_comes(assistant: Assistant):
    raw = {
        "role": "assistant",
        "tool_state_id": STATE,
        "content": [{"function_call": {"name": "find_orders", "arguments": {}}}],
    }

    status, body = assistant.post(URL, raw)

    assert status == 200
    assert body["tools_state_id"] == STATE
    assert body["content"][0]["function_result"]["result"]["status"] == "ok"


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "content": "просто текст"},
        {"role": "user", "content": "", "function_call": {"name": "find_orders", "arguments": {}}},
        {"role": "assistant", "function_call": {"arguments": {}}},
        {"role": "assistant", "content": [{"text": "нет вызова"}]},
        {
            "role": "assistant",
            "content": [
                {"function_call": {"name": "find_orders", "arguments": {}}},
                {"function_call": {"name": "get_order", "arguments": {}}},
            ],
        },
        [1, 2],
        "text",
    ],
)
def test_malformed_messages_are_a_journaled_400(assistant: Assistant, message: Any):
    status, body = assistant.post(URL, message)

    assert status == 400
    assert (body["status"], body["code"]) == ("rejected", "invalid_arguments")
    entry = JournalEntry.objects.get(pk=body["journal_id"])
    assert (entry.channel, entry.code) == ("gigachat", "invalid_arguments")
    assert JournalEntry.objects.count() == 1


def test_without_a_key_it_is_unauthenticated(client):
    response = client.post(URL, data=v1_call("find_orders", {}), content_type="application/json")

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
