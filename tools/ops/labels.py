"""The label values metrics and Sentry tag with: only from bounded sets (catalog names, stable
codes, normalised paths), never from arguments.

Reads no setting and imports nothing of ours: settings import tools.ops.sentry (when SENTRY_DSN
is set) before Django is configured, and the catalog is above everything that labels.
"""

from __future__ import annotations

import re

# An id in a path (order UUID, numeric shipment id, an INN in a query-less lookup) becomes {id}.
_ID_SEGMENT = re.compile(r"\d|^[0-9a-f-]{32,}$", re.IGNORECASE)
# Upstream error codes are snake_case words; anything else is folded so no value can leak.
_UPSTREAM_CODE = re.compile(r"^[a-z][a-z_]{0,62}$")


# The catalog's tool names, handed in by tools/apps.py (the catalog's modules reach this one
# through the pipeline's journal hook, so this module cannot import the catalog).
_tool_names: frozenset[str] = frozenset()


def set_tool_names(names: frozenset[str]) -> None:
    global _tool_names
    _tool_names = names


def tool_label(tool: str) -> str:
    if not tool:
        return "none"
    return tool if tool in _tool_names else "unknown"


def endpoint_label(path: str) -> str:
    path = path.split("?", 1)[0]
    return "/".join("{id}" if _ID_SEGMENT.search(part) else part for part in path.split("/"))


def upstream_code_label(code: str) -> str:
    return code if _UPSTREAM_CODE.match(code) else "other"
