"""YandexGPT calls through REST: proto3 JSON messages built and read with Yandex's own protos."""

from __future__ import annotations

import json
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct
from yandex.cloud.ai.foundation_models.v1.text_common_pb2 import (
    FunctionCall,
    Message,
    ToolCall,
    ToolCallList,
)

from audit.models import JournalEntry
from tests.adapters.functions.conftest import issued_order
from tests.conftest import Assistant, order_args, sandbox_orders

pytestmark = pytest.mark.django_db

URL = "/api/v1/yandexgpt/call"


def assistant_message(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """What the REST API returns in result.alternatives[].message: numbers become doubles."""
    tool_calls = []
    for name, arguments in calls:
        struct = Struct()
        struct.update(arguments)
        tool_calls.append(ToolCall(function_call=FunctionCall(name=name, arguments=struct)))
    message = Message(role="assistant", tool_call_list=ToolCallList(tool_calls=tool_calls))
    return MessageToDict(message)


def results(assistant: Assistant, message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    status, body = assistant.post(URL, message)
    assert status == 200, body
    parsed = ParseDict(body, Message())  # the exact REST shape, or this raises
    assert parsed.role == "user"
    return [
        (r.function_result.name, json.loads(r.function_result.content))
        for r in parsed.tool_result_list.tool_results
    ]


def test_integers_arrive_as_doubles_and_a_whole_one_is_accepted(assistant: Assistant):
    for n in range(3):
        issued_order(assistant, f"Счёт {n}")
    message = assistant_message(("find_orders", {"page_size": 2, "page": 1}))
    assert message["toolCallList"]["toolCalls"][0]["functionCall"]["arguments"]["page_size"] == 2.0

    [(name, envelope)] = results(assistant, message)

    assert (name, envelope["status"]) == ("find_orders", "ok")
    assert (envelope["data"]["page_size"], len(envelope["data"]["orders"])) == (2, 2)


def test_a_fractional_integer_is_refused(assistant: Assistant):
    [(_, envelope)] = results(assistant, assistant_message(("find_orders", {"page_size": 5.5})))

    assert envelope["code"] == "invalid_arguments"
    assert [p["field"] for p in envelope["problems"]] == ["page_size"]


def test_create_order_in_two_calls_with_struct_numbers(assistant: Assistant):
    args = order_args()

    [(_, first)] = results(assistant, assistant_message(("create_order", args)))
    assert first["status"] == "confirmation_required"
    assert sandbox_orders(assistant.http) == []
    token = first["confirmation"]["token"]
    [(_, done)] = results(
        assistant, assistant_message(("create_order", {**args, "confirmation_token": token}))
    )

    assert done["status"] == "ok", done
    assert len(sandbox_orders(assistant.http)) == 1


def test_parallel_calls_get_results_in_order(assistant: Assistant):
    order = issued_order(assistant)
    message = assistant_message(
        ("get_order", {"order_id": order["order_id"]}),
        ("find_orders", {"status": ["completed"]}),
        ("nope", {}),
    )

    answered = results(assistant, message)

    assert [(name, e["code"]) for name, e in answered] == [
        ("get_order", "ok"),
        ("find_orders", "ok"),
        ("nope", "unknown_tool"),
    ]
    assert set(
        JournalEntry.objects.filter(tool__in=["get_order", "find_orders", "nope"]).values_list(
            "channel", flat=True
        )
    ) == {"yandexgpt"}


def test_refusal_on_a_read_only_contour(reader: Assistant):
    [(_, envelope)] = results(reader, assistant_message(("create_order", order_args())))

    assert envelope["code"] == "forbidden"
    assert sandbox_orders(reader.http) == []


@pytest.mark.parametrize(
    "message",
    [
        {"role": "assistant", "text": "просто текст"},
        {"role": "assistant", "toolCallList": {"toolCalls": []}},
        {"role": "assistant", "toolCallList": {"toolCalls": [{"functionCall": {"arguments": {}}}]}},
        {
            "role": "user",
            "toolCallList": {"toolCalls": [{"functionCall": {"name": "find_orders"}}]},
        },
        ["toolCallList"],
    ],
)
def test_malformed_messages_are_a_journaled_400(assistant: Assistant, message: Any):
    status, body = assistant.post(URL, message)

    assert (status, body["code"]) == (400, "invalid_arguments")
    assert JournalEntry.objects.get(pk=body["journal_id"]).channel == "yandexgpt"
