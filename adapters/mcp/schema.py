"""Catalog -> MCP tool definitions (input schema, annotations) and the result shape."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from pydantic import BaseModel

from tools.errors import Outcome
from tools.formats import schema as exports
from tools.spec import ToolSpec

# Statuses an assistant must treat as a refusal; the others are steps of a normal flow.
REFUSED = frozenset({"rejected", "error"})


def input_schema(params: type[BaseModel]) -> dict[str, Any]:
    """The common-subset schema every format gets (nested models inlined, no titles, no null
    branches), with the constraints a model can act on; the core enforces all of them."""
    return exports.parameters(params)


def tool_annotations(spec: ToolSpec) -> types.ToolAnnotations:
    """Only the hints that differ from the spec's defaults (readOnly false, destructive true,
    idempotent false, openWorld true): an omitted hint means its default, so nothing is lost.
    The title is the tool's own `title` field, not repeated here."""
    # One merchant's Invoicebox account, not an open set of outside entities.
    if not spec.writes:  # destructive and idempotent mean nothing for a read-only tool
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(
        destructive_hint=False if not spec.destructive else None,
        # A write replays its stored result for the same token and arguments (the core's
        # guarantee), so repeating a confirmed call has no additional effect.
        idempotent_hint=True if spec.idempotent else None,
        open_world_hint=False,
    )


READ_ONLY_RU = " Только чтение."


def description(spec: ToolSpec) -> str:
    """The short text; a read tool's "read only" is said by readOnlyHint, not twice."""
    text = exports.describe(spec, short=True)
    return text.removesuffix(READ_ONLY_RU) if not spec.writes else text


def tool_definition(spec: ToolSpec, params: dict[str, Any] | None = None) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        # The short text: the schema carries the arguments, so the description need not repeat
        # them. No outputSchema: every result is the same envelope (the server's instructions
        # name its fields), and a generic envelope schema per tool was 40 % of the list.
        description=description(spec),
        input_schema=params if params is not None else input_schema(spec.params),
        annotations=tool_annotations(spec),
    )


def tool_definitions(specs: list[ToolSpec]) -> list[types.Tool]:
    """The listed tools; a nested model repeated by a later tool points back to the first."""
    return [
        tool_definition(spec, params)
        for spec, params in zip(specs, exports.parameters_for(specs), strict=True)
    ]


def tools_list(specs: list[ToolSpec]) -> dict[str, Any]:
    """The `tools/list` result as the server sends it (wire spelling, camelCase)."""
    return {
        "tools": [
            tool.model_dump(by_alias=True, mode="json", exclude_none=True)
            for tool in tool_definitions(specs)
        ]
    }


def tool_result(outcome: Outcome) -> types.CallToolResult:
    """The envelope as structured content, the same JSON as text, refusals flagged isError."""
    body = outcome.as_dict()
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=outcome.status in REFUSED,
    )
