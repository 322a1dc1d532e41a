"""OpenAI calls through REST: tool_calls built with the SDK's types, role: tool answers checked."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from pydantic import TypeAdapter

from audit.models import JournalEntry
from tests.adapters.functions.conftest import issued_order
from tests.conftest import Assistant, order_args, sandbox_orders
from tools.models import PendingConfirmation

pytestmark = pytest.mark.django_db

URL = "/api/v1/openai/call"
TOOL_MESSAGE = TypeAdapter(ChatCompletionToolMessageParam)


def tool_call(call_id: str, name: str, arguments: Any) -> ChatCompletionMessageFunctionToolCall:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ChatCompletionMessageFunctionToolCall(
        id=call_id, type="function", function=Function(name=name, arguments=raw)
    )


def message(*calls: ChatCompletionMessageFunctionToolCall) -> dict[str, Any]:
    return ChatCompletionMessage(role="assistant", content=None, tool_calls=list(calls)).model_dump(
        exclude_none=True
    )


def answers(assistant: Assistant, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    status, replies = assistant.post(URL, body)
    assert status == 200, replies
    for reply in replies:
        assert TOOL_MESSAGE.validate_python(reply) == reply
        assert reply["role"] == "tool"
    assert [r["tool_call_id"] for r in replies] == [c["id"] for c in body["tool_calls"]]
    return {r["tool_call_id"]: json.loads(r["content"]) for r in replies}


def test_read_call_answers_by_tool_call_id(assistant: Assistant):
    order = issued_order(assistant)

    result = answers(
        assistant, message(tool_call("call_a", "get_order", {"order_id": order["order_id"]}))
    )

    assert result["call_a"]["data"]["order_id"] == order["order_id"]
    assert JournalEntry.objects.get(pk=result["call_a"]["journal_id"]).channel == "openai"


def test_create_order_in_two_calls(assistant: Assistant):
    args = order_args()

    first = answers(assistant, message(tool_call("c1", "create_order", args)))["c1"]
    assert first["status"] == "confirmation_required"
    assert sandbox_orders(assistant.http) == []
    token = first["confirmation"]["token"]
    done = answers(
        assistant, message(tool_call("c2", "create_order", {**args, "confirmation_token": token}))
    )["c2"]

    assert done["status"] == "ok"
    assert len(sandbox_orders(assistant.http)) == 1


def test_identical_parallel_calls_make_one_order_and_every_id_is_answered(assistant: Assistant):
    args = order_args()
    first = answers(
        assistant,
        message(tool_call("p1", "create_order", args), tool_call("p2", "create_order", args)),
    )
    assert first["p1"]["confirmation"]["token"] == first["p2"]["confirmation"]["token"]
    assert PendingConfirmation.objects.count() == 1
    confirmed = {**args, "confirmation_token": first["p1"]["confirmation"]["token"]}

    done = answers(
        assistant, message(*(tool_call(f"e{i}", "create_order", confirmed) for i in range(3)))
    )

    assert {d["data"]["order_id"] for d in done.values()} == {
        o["id"] for o in sandbox_orders(assistant.http)
    }
    assert len(sandbox_orders(assistant.http)) == 1
    assert JournalEntry.objects.filter(code="duplicate_call", channel="openai").count() == 3


@pytest.mark.parametrize(
    "raw",
    [
        '{"order_id": ',
        "{'order_id': 'x'}",
        "",
        '{"page": NaN}',
        "[" * 100_000,
        '{"page": 1, "page": 2}',
    ],
)
def test_invalid_json_arguments_are_refused_with_the_reason(assistant: Assistant, raw: str):
    body = message(tool_call("bad", "find_orders", raw), tool_call("good", "find_orders", {}))

    result = answers(assistant, body)

    assert result["bad"]["code"] == "invalid_json"
    assert "не JSON:" in result["bad"]["message"]
    assert result["good"]["status"] == "ok"
    entry = JournalEntry.objects.get(pk=result["bad"]["journal_id"])
    assert (entry.channel, entry.code, entry.tool) == ("openai", "invalid_json", "find_orders")


def test_a_repeated_key_is_refused_rather_than_resolved_to_either_value(assistant: Assistant):
    raw = '{"page": 1, "page": 2}'  # json.loads alone would silently keep page 2

    result = answers(assistant, message(tool_call("twice", "find_orders", raw)))["twice"]

    assert result["code"] == "invalid_json"
    assert "'page' повторяется" in result["message"]


def test_strict_nulls_mean_not_given_for_optional_fields(assistant: Assistant):
    nulls = {
        "merchant_order_id": None,
        "status": None,
        "created_from": None,
        "created_to": None,
        "page": None,
        "page_size": None,
        "response_format": None,
    }

    result = answers(assistant, message(tool_call("s", "find_orders", nulls)))["s"]

    assert result["status"] == "ok"
    assert (result["data"]["page"], result["data"]["page_size"]) == (1, 20)


def test_a_null_in_a_required_field_still_reaches_the_core_and_is_refused(assistant: Assistant):
    result = answers(
        assistant, message(tool_call("n", "create_order", {**order_args(), "amount": None}))
    )["n"]

    assert result["code"] == "invalid_arguments"
    assert "amount" in [p["field"] for p in result["problems"]]


def test_arguments_that_are_json_but_not_an_object(assistant: Assistant):
    result = answers(assistant, message(tool_call("l", "find_orders", "[1, 2]")))["l"]

    assert result["code"] == "arguments_not_object"


def test_refusal_on_a_read_only_contour_reaches_nothing_upstream(reader: Assistant):
    result = answers(reader, message(tool_call("w", "create_order", order_args())))["w"]

    assert result["code"] == "forbidden"
    assert sandbox_orders(reader.http) == []


@pytest.mark.parametrize(
    "body",
    [
        {"role": "assistant", "content": "просто текст"},
        {"role": "assistant", "tool_calls": []},
        {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "x"}}]},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c", "type": "custom", "custom": {"name": "x", "input": ""}}],
        },
        [{"role": "assistant"}],
    ],
)
def test_malformed_messages_are_a_journaled_400(assistant: Assistant, body: Any):
    status, reply = assistant.post(URL, body)

    assert (status, reply["code"]) == (400, "invalid_arguments")
    assert JournalEntry.objects.get(pk=reply["journal_id"]).channel == "openai"
    assert sandbox_orders(assistant.http) == []


@pytest.mark.parametrize(
    "url", ["/api/v1/openai/call", "/api/v1/gigachat/call", "/api/v1/yandexgpt/call"]
)
def test_garbage_bodies_never_get_a_500(assistant: Assistant, url: str):
    bodies = [
        "{not json",
        "null",
        "[]",
        '{"role": "assistant", "tool_calls": "x"}',
        '{"role": "assistant", "function_call": {"name": 1}}',
        '{"role": "assistant", "toolCallList": {"toolCalls": [{"functionCall": 5}]}}',
        '{"role": "assistant", "content": [{"function_call": {"name": "' + "x" * 5000 + '"}}]}',
        "[" * 100_000,
    ]
    for raw in bodies:
        response = assistant.http.post(
            url,
            data=raw,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {assistant.key}",
        )

        assert response.status_code < 500, (raw, response.content)
        body = response.json()
        if response.status_code == 400:
            assert body["code"] in {"invalid_json", "invalid_arguments"}
            assert JournalEntry.objects.filter(pk=body["journal_id"]).exists()
    assert sandbox_orders(assistant.http) == []
