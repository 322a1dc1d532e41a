"""Tool definitions per client format; `neutral` is the catalog as this gateway sees it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools.spec import ToolSpec


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


FORMATS: dict[str, Callable[[list[ToolSpec]], dict[str, Any]]] = {"neutral": neutral}


def export_tools(fmt: str, specs: list[ToolSpec]) -> dict[str, Any]:
    return FORMATS[fmt](specs)
