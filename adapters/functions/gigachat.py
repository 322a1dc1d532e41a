"""GigaChat: `functions` (v1) and `tools[].functions.specifications` (v2), the call, the result."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

from django.conf import settings
from drf_spectacular.utils import OpenApiExample
from pydantic import AliasChoices, Field

from adapters.functions.calls import Malformed, PlatformModel, Reply, as_text, read, refuse
from adapters.functions.platform import Platform
from adapters.rest.openapi import FIND
from audit.models import Channel
from tools.errors import Problem
from tools.formats import schema
from tools.models import Contour
from tools.pipeline import gateway
from tools.spec import ToolSpec

CHANNEL = Channel.GIGACHAT

# Observed: GigaChat refuses a function block over 4096 tokens (formats.md, [G7]). The budget
# (3700 by default, a margin for its own rendering of the block) and the characters per token
# come from settings: `manage.py conformance gigachat` measures the real ratio with the API's
# tokens/count, and an operator sets GIGACHAT_CHARS_PER_TOKEN to it.


def tokens_of(functions: list[dict[str, Any]]) -> int:
    characters = schema.measure(functions)["characters"]
    return math.ceil(characters / settings.GIGACHAT_CHARS_PER_TOKEN)


# Russian requests a user would type, with the arguments the model should produce. They must
# pass the tool's own validation (a test runs each through it).
@dataclass(frozen=True)
class _Level:
    """One step of fitting the block into the budget, from richest to leanest."""

    field_limit: int
    examples: bool


# Descriptions are the short ones: the schema carries the arguments. No return_parameters:
# every result is the same envelope, and a generic schema of it per function was the largest
# part of the block (the result message is self-describing JSON).
LEVELS = (
    _Level(field_limit=schema.FIELD_DESCRIPTION_LIMIT, examples=True),
    _Level(field_limit=120, examples=True),
    _Level(field_limit=120, examples=False),
)


def profile_of(level: _Level) -> schema.Profile:
    return dataclasses.replace(schema.MINIMAL, field_limit=level.field_limit)


def specification(
    spec: ToolSpec, level: _Level = LEVELS[0], parameters: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One function as both contracts define it: name, description, parameters, extras."""
    out: dict[str, Any] = {
        "name": spec.name,
        "description": schema.describe(spec, short=True),
        "parameters": (
            parameters
            if parameters is not None
            else schema.parameters(spec.params, profile_of(level))
        ),
    }
    if level.examples and spec.examples_ru:
        out["few_shot_examples"] = [
            {"request": e.request, "params": e.arguments} for e in spec.examples_ru
        ]
    return out


def fit(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    """The richest level whose block fits the budget; if none does, tools from the end of the
    catalog order go first (the order puts the everyday ones in front)."""
    for count in range(len(specs), 0, -1):
        for level in LEVELS:
            shown = specs[:count]
            functions = [
                specification(spec, level, params)
                for spec, params in zip(
                    shown, schema.parameters_for(shown, profile_of(level)), strict=True
                )
            ]
            if tokens_of(functions) <= settings.GIGACHAT_FUNCTION_TOKEN_BUDGET:
                return functions
    # Not even one tool fits: the leanest first tool, so the block is never silently empty.
    return [specification(spec, LEVELS[-1]) for spec in specs[:1]]


def export_v1(specs: list[ToolSpec]) -> dict[str, Any]:
    # "auto" lets the model choose; the reference names no default, so it is sent explicitly.
    return {"functions": fit(specs), "function_call": "auto"}


def export_v2(specs: list[ToolSpec]) -> dict[str, Any]:
    return {
        "tools": [{"functions": {"specifications": fit(specs)}}],
        "tool_config": {"mode": "auto"},
    }


# -- calls -----------------------------------------------------------------------------------


class _FunctionCall(PlatformModel):
    name: str
    # An object by contract; anything else goes to the core, which refuses it with a reason.
    arguments: Any = None


class _MessageV1(PlatformModel):
    role: Literal["assistant"]
    function_call: _FunctionCall
    functions_state_id: str | None = None


class _Part(PlatformModel):
    function_call: _FunctionCall | None = None


class _MessageV2(PlatformModel):
    role: Literal["assistant"]
    content: list[_Part]
    function_call: _FunctionCall | None = None
    # The SDK writes tools_state_id; the API answers tool_state_id; v1 had functions_state_id.
    tools_state_id: str | None = Field(
        None, validation_alias=AliasChoices("tools_state_id", "tool_state_id", "functions_state_id")
    )


def respond(contour: Contour, body: Any, *, actor: str) -> Reply:
    """The assistant message GigaChat returned -> the message to append next."""
    v2 = isinstance(body, dict) and isinstance(body.get("content"), list)
    try:
        if v2:
            message = read(_MessageV2, body)
            calls = [part.function_call for part in message.content if part.function_call]
            calls += [message.function_call] if message.function_call else []
            if len(calls) != 1:
                raise Malformed(
                    [
                        Problem(
                            "content",
                            f"нужен ровно один function_call, а их "
                            f"{len(calls)}: GigaChat вызывает одну "
                            "функцию за сообщение",
                        )
                    ]
                )
            call, state = calls[0], message.tools_state_id
        else:
            v1 = read(_MessageV1, body)
            call, state = v1.function_call, v1.functions_state_id
    except Malformed as malformed:
        return refuse(
            contour, malformed, platform="GigaChat", channel=CHANNEL, actor=actor, body=body
        )
    outcome = gateway.call(contour, call.name, call.arguments, channel=CHANNEL, actor=actor)
    if v2:
        reply: dict[str, Any] = {"role": "tool"}
        if state:
            reply["tools_state_id"] = state
        reply["content"] = [{"function_result": {"name": call.name, "result": outcome.as_dict()}}]
        return Reply(200, reply)
    reply = {"role": "function", "name": call.name, "content": as_text(outcome)}
    if state:
        reply["functions_state_id"] = state
    return Reply(200, reply)


PLATFORM = Platform(
    slug="gigachat",
    name="GigaChat",
    channel=CHANNEL,
    label="GigaChat",
    formats={"gigachat": export_v1, "gigachat-v2": export_v2},
    respond=respond,
    summary="Вызов функции GigaChat: v1 function_call или v2 content",
    examples=(
        OpenApiExample(
            "GigaChat v1: function_call",
            request_only=True,
            value={
                "role": "assistant",
                "content": "",
                "function_call": {"name": "find_orders", "arguments": FIND},
                "functions_state_id": "77d3fb14-457a-46ba-937e-8d856156d003",
            },
        ),
        OpenApiExample(
            "GigaChat v1: ответ role function",
            response_only=True,
            status_codes=["200"],
            value={
                "role": "function",
                "name": "find_orders",
                "content": '{"status": "ok", "code": "ok", ...}',
                "functions_state_id": "77d3fb14-457a-46ba-937e-8d856156d003",
            },
        ),
    ),
)
