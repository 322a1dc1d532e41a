"""YandexGPT: native REST `tools[].function` and `toolCallList` -> `toolResultList`; OpenAI-compatible."""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.utils import OpenApiExample
from pydantic import Field

from adapters.functions import openai
from adapters.functions.calls import Malformed, PlatformModel, Reply, as_text, read, refuse
from adapters.functions.platform import Platform
from adapters.rest.openapi import FIND
from audit.models import Channel
from tools import catalog
from tools.formats import schema
from tools.models import Contour
from tools.pipeline import gateway
from tools.spec import ToolSpec

CHANNEL = Channel.YANDEXGPT


def export(specs: list[ToolSpec]) -> dict[str, Any]:
    """The REST (proto3 JSON, camelCase) `tools` of a completion request."""
    return {
        "tools": [
            {
                "function": {
                    "name": spec.name,
                    "description": schema.describe(spec, short=True),
                    "parameters": params,
                }
            }
            for spec, params in zip(specs, schema.parameters_for(specs), strict=True)
        ]
    }


def export_openai(specs: list[ToolSpec]) -> dict[str, Any]:
    """For https://llm.api.cloud.yandex.net/v1: OpenAI `tools`; its tool_choice is auto/none only,
    so nothing but the tools is sent. Calls go to /api/v1/openai/call."""
    return openai.export(specs)


# -- calls -----------------------------------------------------------------------------------


class _FunctionCall(PlatformModel):
    name: str
    arguments: Any = None


class _ToolCall(PlatformModel):
    function_call: _FunctionCall = Field(alias="functionCall")


class _ToolCallList(PlatformModel):
    tool_calls: list[_ToolCall] = Field(alias="toolCalls", min_length=1)


class _Message(PlatformModel):
    role: Literal["assistant"]
    tool_call_list: _ToolCallList = Field(alias="toolCallList")


def whole_numbers(schema_node: dict[str, Any], value: Any) -> Any:
    """Struct numbers are doubles, so an integer argument arrives as 5.0. Only where the
    schema says integer, and only a float with no fraction, becomes an int; 5.5 stays 5.5
    and the core's strict validation refuses it."""
    kind = schema_node.get("type")
    if kind == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind == "object" and isinstance(value, dict):
        props = schema_node.get("properties", {})
        return {key: whole_numbers(props.get(key, {}), item) for key, item in value.items()}
    if kind == "array" and isinstance(value, list):
        return [whole_numbers(schema_node.get("items", {}), item) for item in value]
    return value


def respond(contour: Contour, body: Any, *, actor: str) -> Reply:
    """The assistant message with toolCallList -> the user message with toolResultList."""
    try:
        message = read(_Message, body)
    except Malformed as malformed:
        return refuse(
            contour, malformed, platform="YandexGPT", channel=CHANNEL, actor=actor, body=body
        )
    calls = []
    for tool_call in message.tool_call_list.tool_calls:
        call = tool_call.function_call
        spec = catalog.get(call.name)
        arguments = (
            whole_numbers(schema.parameters(spec.params), call.arguments)
            if spec is not None
            else call.arguments
        )
        calls.append((call.name, arguments))
    items = gateway.call_batch(contour, calls, channel=CHANNEL, actor=actor)
    return Reply(
        200,
        {
            "role": "user",
            "toolResultList": {
                "toolResults": [
                    {"functionResult": {"name": name, "content": as_text(item.outcome)}}
                    for (name, _), item in zip(calls, items, strict=True)
                ]
            },
        },
    )


PLATFORM = Platform(
    slug="yandexgpt",
    name="YandexGPT",
    channel=CHANNEL,
    label="YandexGPT",
    formats={"yandexgpt": export, "yandexgpt-openai": export_openai},
    respond=respond,
    summary="Вызовы функций YandexGPT: toolCallList -> toolResultList",
    examples=(
        OpenApiExample(
            "YandexGPT: toolCallList",
            request_only=True,
            value={
                "role": "assistant",
                "toolCallList": {
                    "toolCalls": [{"functionCall": {"name": "find_orders", "arguments": FIND}}]
                },
            },
        ),
        OpenApiExample(
            "YandexGPT: toolResultList",
            response_only=True,
            status_codes=["200"],
            value={
                "role": "user",
                "toolResultList": {
                    "toolResults": [
                        {
                            "functionResult": {
                                "name": "find_orders",
                                "content": '{"status": "ok", ...}',
                            }
                        }
                    ]
                },
            },
        ),
    ),
)
