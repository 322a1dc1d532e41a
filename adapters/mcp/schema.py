"""Catalog -> MCP tool definitions (input and output schemas, annotations) and result shape."""

from __future__ import annotations

import json
from typing import Any, Literal

import mcp_types as types
from pydantic import BaseModel, Field

from tools.errors import Outcome
from tools.spec import ToolSpec

# Statuses an assistant must treat as a refusal; the others are steps of a normal flow.
REFUSED = frozenset({"rejected", "error"})


class _Problem(BaseModel):
    field: str
    message: str


class _Confirmation(BaseModel):
    id: str | None = None
    token: str | None = None  # absent while awaiting_approval: the token is already in hand
    expires_at: str
    summary: str
    approval_url: str | None = None


class Envelope(BaseModel):
    """The outcome envelope of API.md, as JSON Schema for `outputSchema`."""

    status: Literal["ok", "confirmation_required", "awaiting_approval", "rejected", "error"]
    code: str = Field(description="стабильный машинный код")
    message: str = Field(description="по-русски, для пересказа человеку")
    hint: str | None = Field(None, description="что делать дальше")
    problems: list[_Problem] = Field(description="поля, которые не приняты")
    data: dict[str, Any]
    confirmation: _Confirmation | None = Field(
        None, description="одноразовый токен и сводка для второго вызова записи"
    )
    replayed: bool
    journal_id: int | None


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace every `$ref` into `$defs` by the definition itself and drop `$defs`.

    Many MCP clients read only `type/properties/required` and never resolve references, so
    nested models (customer, basket items) must be spelled out where they are used.
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def resolve(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            name = str(node["$ref"]).removeprefix("#/$defs/")
            if name in seen or name not in defs:
                raise ValueError(f"cannot inline {node['$ref']!r}: recursive or unknown")
            target = resolve(defs[name], seen | {name})
            # Keywords beside the $ref (the field's own description, default) win over the model's.
            siblings = {k: resolve(v, seen) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
        return {k: resolve(v, seen) for k, v in node.items() if k != "$defs"}

    return resolve(schema, frozenset())


def input_schema(params: type[BaseModel]) -> dict[str, Any]:
    schema = inline_refs(params.model_json_schema())
    schema.setdefault("properties", {})
    return schema


def output_schema() -> dict[str, Any]:
    return inline_refs(Envelope.model_json_schema())


def annotations(spec: ToolSpec) -> types.ToolAnnotations:
    if not spec.writes:
        return types.ToolAnnotations(title=spec.title, read_only_hint=True,
                                     destructive_hint=False, idempotent_hint=True,
                                     open_world_hint=False)
    return types.ToolAnnotations(
        title=spec.title,
        read_only_hint=False,
        destructive_hint=spec.destructive,
        # A write replays its stored result for the same token and arguments (the core's
        # guarantee), so repeating a confirmed call has no additional effect.
        idempotent_hint=spec.idempotent,
        # One merchant's Invoicebox account, not an open set of outside entities.
        open_world_hint=False,
    )


def tool_definition(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description_ru,
        input_schema=input_schema(spec.params),
        output_schema=output_schema(),
        annotations=annotations(spec),
    )


def tools_list(specs: list[ToolSpec]) -> dict[str, Any]:
    """The `tools/list` result as the server sends it (wire spelling, camelCase)."""
    return {"tools": [tool_definition(spec).model_dump(by_alias=True, mode="json",
                                                        exclude_none=True) for spec in specs]}


def tool_result(outcome: Outcome) -> types.CallToolResult:
    """The envelope as structured content, the same JSON as text, refusals flagged isError."""
    body = outcome.as_dict()
    return types.CallToolResult(
        content=[types.TextContent(text=json.dumps(body, ensure_ascii=False))],
        structured_content=body,
        is_error=outcome.status in REFUSED,
    )
