"""What the core says when a call succeeds: a sentence a person would write, not a status line.
Each tool's sentence is on its ToolSpec (`success_ru`); here is how it is said."""

from __future__ import annotations

from typing import Any

from tools.spec import Counted, ToolSpec


def plural(count: int, one: str, few: str, many: str) -> str:
    tail = count % 100
    if 11 <= tail <= 14:
        return many
    return {1: one, 2: few, 3: few, 4: few}.get(count % 10, many)


def read_message(spec: ToolSpec, data: dict[str, Any]) -> str:
    success = spec.success_ru
    if not isinstance(success, Counted):
        return success
    items = data.get(success.key)
    if not isinstance(items, list):
        return f"{spec.title}: вот что удалось получить."
    if not items:
        return success.nothing
    count = len(items)
    return f"Найдено по запросу: {count} {plural(count, success.one, success.few, success.many)}."


def done_message(spec: ToolSpec, *, replayed: bool) -> str:
    assert isinstance(spec.success_ru, str), "a write says one sentence (tools/catalog)"
    message = spec.success_ru
    if replayed:
        message += " Это повтор уже выполненной операции: новой не создано."
    return message
