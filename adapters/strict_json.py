"""Strict JSON for arguments an assistant writes as text (OpenAI's `arguments` string, a Hermes
<tool_call> block): the one rule both adapters apply. Nothing is repaired.

Refused, with one exception type: invalid syntax, NaN/Infinity (not JSON, RFC 8259 §6), a key
repeated in one object (RFC 8259 §4: receivers disagree on which value wins, so we pick none),
nesting deeper than the interpreter recurses, and integers longer than Python's digit limit.
`parse_body` is the lenient reading of a request body the MCP door applies, with the same
exception.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

WHITESPACE = " \t\r\n"  # JSON's own whitespace (RFC 8259 §2); str.strip() would take more


class JsonRefused(Exception):
    """The text is not strict JSON; `offset` is where in the text, when the parser knows."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def loads(text: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        raise JsonRefused(
            f"{error.msg}: line {error.lineno} column {error.colno} (char {error.pos})", error.pos
        ) from None
    except JsonRefused:
        raise
    except RecursionError:
        raise JsonRefused("слишком глубокая вложенность") from None
    except ValueError as error:  # e.g. an integer longer than Python's digit limit
        raise JsonRefused(str(error)[:200]) from None


def parse_body(body: bytes | str) -> Any:
    """A request body (a JSON-RPC message at /mcp) parsed as the MCP SDK parses it: lenient
    (a repeated key's last value wins), fast, and refusing nesting past a few hundred levels.
    Every failure is one JsonRefused; json.loads raised a RecursionError past ~1000 levels,
    which the /mcp door caught nowhere (a bare 500)."""
    try:
        return pydantic_core.from_json(body)
    except ValueError as error:  # bad syntax, nesting past its recursion limit, a lone surrogate
        raise JsonRefused(str(error)[:200]) from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise JsonRefused(f"ключ {key[:40]!r} повторяется в одном объекте")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise JsonRefused(f"{name} — не JSON: числа должны быть конечными")
