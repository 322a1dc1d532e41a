"""The Hermes / Qwen system prompt: the gateway's rules in Russian, then the template's # Tools
section with one JSON line per tool (`GET /api/v1/tools?format=hermes`)."""

from __future__ import annotations

import json
from typing import Any

from tools.formats.schema import describe, parameters, parameters_for
from tools.spec import ToolSpec

# Qwen2.5/Qwen3 templates merge tool results into one `user` turn (Hermes 2 Pro used `tool`).
TOOL_RESPONSE_ROLE = "user"

# The Qwen2.5 / Qwen3 chat template text around the tool lines, verbatim: the wording the
# models were trained on, so it stays in English.
TOOLS_HEADER = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
TOOLS_FOOTER = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def tool_definition(spec: ToolSpec, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The line of one tool, in the shape the template expects; the schema generator is the
    function formats' one, so every platform sees the same arguments."""
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": describe(spec, short=True),
            "parameters": params if params is not None else parameters(spec.params),
        },
    }


def tool_definitions(specs: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        tool_definition(spec, params)
        for spec, params in zip(specs, parameters_for(specs), strict=True)
    ]


def tool_line(definition: dict[str, Any]) -> str:
    # What the template's `tool | tojson` prints in transformers: json.dumps, non-ASCII kept.
    return json.dumps(definition, ensure_ascii=False)


def tools_block(specs: list[ToolSpec]) -> str:
    lines = "".join("\n" + tool_line(tool) for tool in tool_definitions(specs))
    return f"<tools>{lines}\n</tools>"


def tools_section(specs: list[ToolSpec]) -> str:
    """What the template appends to the system message when tools are given."""
    lines = "".join("\n" + tool_line(tool) for tool in tool_definitions(specs))
    return TOOLS_HEADER + lines + TOOLS_FOOTER


def preamble(specs: list[ToolSpec]) -> str:
    """The gateway's rules in Russian: the system message the template puts before # Tools."""
    # The template's own text already says how a call is written and that results come back in
    # <tool_response>; this adds only what it cannot know: strict JSON, kopecks, the retry rule
    # and, when a tool writes, the human's consent between the two calls.
    text = (
        "Ты работаешь со счетами Инвойсбокс. Один вызов — один блок <tool_call>, строгий JSON по "
        'схеме. Суммы — копейки строкой: "12200" — это 122,00 ₽. Отклонённый вызов исправь по '
        "подсказке и пришли заново, ничего не угадывая."
    )
    if any(spec.writes for spec in specs):
        text += (
            " Меняющий данные инструмент первым вызовом даёт сводку и confirmation_token: "
            "перескажи сводку человеку и только после его явного согласия повтори вызов с теми "
            "же параметрами и токеном."
        )
    return text


def system_prompt(specs: list[ToolSpec]) -> str:
    return preamble(specs) + "\n\n" + tools_section(specs)


def export(specs: list[ToolSpec]) -> dict[str, Any]:
    """`GET /api/v1/tools?format=hermes`: the whole system prompt and its parts."""
    return {
        "format": "hermes",
        "template": "Qwen2.5 / Qwen3 (Hermes-style <tool_call>)",
        "system_prompt": system_prompt(specs),
        "preamble": preamble(specs),
        "tools_block": tools_block(specs),
        "tools": tool_definitions(specs),
        "tool_response_role": TOOL_RESPONSE_ROLE,
        "call_endpoint": "/api/v1/text/call",
    }
