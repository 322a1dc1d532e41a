"""MCP adapter; FORMATS maps a `GET /api/v1/tools?format=` name to its exporter.

Import-light on purpose: the SDK is loaded only when an exporter or the server is used.
"""

from __future__ import annotations

from typing import Any

from tools.formats.registry import Exporter
from tools.spec import ToolSpec


def export_tools_list(specs: list[ToolSpec]) -> dict[str, Any]:
    from adapters.mcp.schema import tools_list  # loads the MCP SDK: only when exported

    return tools_list(specs)


FORMATS: dict[str, Exporter] = {"mcp": export_tools_list}
