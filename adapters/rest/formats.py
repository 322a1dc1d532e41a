"""Tool definitions per client format; `neutral` is the catalog as this gateway sees it.

Each adapter package (functions, text, mcp) declares its own exporters in its FORMATS dict;
this module only gathers them, so formats never depend on REST and REST never on their shapes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.spec import ToolSpec

Exporter = Callable[[list[ToolSpec]], dict[str, Any]]


def neutral(specs: list[ToolSpec]) -> dict[str, Any]:
    return {
        "format": "neutral",
        "tools": [
            {
                "name": spec.name,
                "title": spec.title,
                "kind": spec.kind,
                "toolset": spec.toolset,
                "requires_confirmation": spec.writes,
                "read_only": not spec.writes,
                "destructive": spec.destructive,
                "description": spec.description_ru,
                "description_short": spec.summary_ru,
                "input_schema": spec.params.model_json_schema(),
            }
            for spec in specs
        ],
    }


def all_formats() -> dict[str, Exporter]:
    from adapters import functions, mcp, text

    return {"neutral": neutral, **functions.FORMATS, **text.FORMATS, **mcp.FORMATS}


def export_tools(fmt: str, specs: list[ToolSpec]) -> dict[str, Any]:
    return all_formats()[fmt](specs)
