"""OpenAI Chat Completions: `tools` (plain and strict), `tool_calls` in, `role: tool` messages out;
and the Responses API's flat tool shape."""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.utils import OpenApiExample
from pydantic import Field

from adapters import strict_json
from adapters.functions.calls import Malformed, PlatformModel, Reply, as_text, read, refuse
from adapters.functions.platform import OpenAISdk, Platform
from audit.models import Channel
from tools import catalog
from tools.errors import Outcome
from tools.formats import schema
from tools.models import Contour
from tools.pipeline import gateway
from tools.spec import ToolSpec

CHANNEL = Channel.OPENAI


def function(spec: ToolSpec, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": schema.describe(spec, short=True),
            "parameters": parameters,
        },
    }


def export(specs: list[ToolSpec]) -> dict[str, Any]:
    return {
        "tools": [
            function(spec, params)
            for spec, params in zip(specs, schema.parameters_for(specs), strict=True)
        ]
    }


def export_strict(specs: list[ToolSpec]) -> dict[str, Any]:
    tools = []
    for spec, params in zip(specs, schema.parameters_for(specs, schema.STRICT), strict=True):
        tool = function(spec, schema.strict(params))
        tool["function"]["strict"] = True
        tools.append(tool)
    return {"tools": tools}


def export_responses(specs: list[ToolSpec]) -> dict[str, Any]:
    """The Responses API (`client.responses.create(tools=...)`): the function's fields sit on
    the tool itself, not under "function", and `strict` is a field every tool states. Strict,
    with the same closed, all-required schemas as `openai-strict`."""
    return {
        "tools": [
            {
                "type": "function",
                "name": spec.name,
                "description": schema.describe(spec, short=True),
                "parameters": schema.strict(params),
                "strict": True,
            }
            for spec, params in zip(specs, schema.parameters_for(specs, schema.STRICT), strict=True)
        ]
    }


def parallel_tool_calls(body: dict[str, Any], value: str) -> dict[str, Any]:
    """`?parallel_tool_calls=false`: OpenAI says parallel calls "may not match strict schemas"
    (formats.md, [O6]), but o-series models answer 400 to the parameter, so it is sent only on
    request. Only false is offered: true is the platform's default anyway."""
    if value != "false":
        raise ValueError("parallel_tool_calls принимает только false (true — и так по умолчанию)")
    return {**body, "parallel_tool_calls": False}


# -- calls -----------------------------------------------------------------------------------


class _Function(PlatformModel):
    name: str
    # A JSON string by contract; an object (some compatible servers) is taken as it is.
    arguments: Any


class _ToolCall(PlatformModel):
    id: str
    type: Literal["function"] = "function"
    function: _Function


class _Message(PlatformModel):
    role: Literal["assistant"]
    tool_calls: list[_ToolCall] = Field(min_length=1)


def parse_arguments(raw: Any) -> tuple[Any, str]:
    """(arguments, "") or (None, the reason): the adapters' strict JSON, never repaired."""
    if not isinstance(raw, str):
        return raw, ""
    try:
        return strict_json.loads(raw), ""
    except strict_json.JsonRefused as refused:
        return None, refused.message


def without_nulls(schema_node: dict[str, Any], value: Any) -> Any:
    """Strict mode sends every field, an optional one as null: null there means "not given".
    Only optional fields lose their nulls; a null in a required field reaches the core."""
    if schema_node.get("type") == "object" and isinstance(value, dict):
        props = schema_node.get("properties", {})
        required = set(schema_node.get("required", []))
        return {
            key: without_nulls(props.get(key, {}), item)
            for key, item in value.items()
            if not (item is None and key in props and key not in required)
        }
    if schema_node.get("type") == "array" and isinstance(value, list):
        return [without_nulls(schema_node.get("items", {}), item) for item in value]
    return value


def respond(contour: Contour, body: Any, *, actor: str) -> Reply:
    """The assistant message with tool_calls -> one `role: tool` message per call, in order."""
    try:
        message = read(_Message, body)
    except Malformed as malformed:
        return refuse(
            contour, malformed, platform="OpenAI", channel=CHANNEL, actor=actor, body=body
        )
    outcomes: dict[int, Outcome] = {}
    batch: list[tuple[int, str, Any]] = []
    for index, call in enumerate(message.tool_calls):
        arguments, reason = parse_arguments(call.function.arguments)
        if reason:
            outcomes[index] = gateway.reject(
                contour,
                "invalid_json",
                f"arguments вызова {call.function.name[:64]} — не JSON: {reason}",
                channel=CHANNEL,
                actor=actor,
                tool=call.function.name[:64],
                arguments={"_invalid_json_length": len(call.function.arguments)},
                hint="повторите вызов с arguments — JSON-объектом в строке; значения не угадываются",
            )
            continue
        spec = catalog.get(call.function.name)
        if spec is not None:
            arguments = without_nulls(schema.parameters(spec.params), arguments)
        batch.append((index, call.function.name, arguments))
    items = gateway.call_batch(
        contour, [(name, args) for _, name, args in batch], channel=CHANNEL, actor=actor
    )
    for (index, _, _), item in zip(batch, items, strict=True):
        outcomes[index] = item.outcome
    return Reply(
        200,
        [
            {"role": "tool", "tool_call_id": call.id, "content": as_text(outcomes[index])}
            for index, call in enumerate(message.tool_calls)
        ],
    )


PLATFORM = Platform(
    slug="openai",
    name="OpenAI",
    channel=CHANNEL,
    label="OpenAI-совместимые модели",
    formats={
        "openai": export,
        "openai-strict": export_strict,
        "openai-responses": export_responses,
    },
    options={
        fmt: {"parallel_tool_calls": parallel_tool_calls}
        for fmt in ("openai", "openai-strict", "openai-responses")
    },
    respond=respond,
    summary="Вызовы инструментов OpenAI: tool_calls -> сообщения role: tool",
    examples=(
        OpenApiExample(
            "OpenAI: tool_calls",
            request_only=True,
            value={
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "find_orders", "arguments": '{"status": ["created"]}'},
                    }
                ],
            },
        ),
        OpenApiExample(
            "OpenAI: сообщения role tool",
            response_only=True,
            status_codes=["200"],
            value=[{"role": "tool", "tool_call_id": "call_1", "content": '{"status": "ok", ...}'}],
        ),
    ),
    # OPENAI_API_KEY, OPENAI_MODEL and OPENAI_BASE_URL, as the SDK itself names them.
    openai_sdk=OpenAISdk(env="OPENAI"),
)
