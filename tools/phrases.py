"""What the core says when a call succeeds: a sentence a person would write, not a status line."""

from __future__ import annotations

from typing import Any

from tools.spec import ToolSpec

DONE = {
    "create_order": "Счёт выставлен.",
    "cancel_order": "Счёт отменён.",
    "create_refund": "Возврат оформлен.",
    "create_shipment": "Отгрузка подтверждена.",
}
READ = {
    "lookup_company_by_inn": "Нашёл реквизиты по ИНН.",
    "get_order": "Вот данные счёта.",
}
# (list key in data, one, few, many, nothing found)
COUNTED = {
    "find_orders": ("orders", "счёт", "счёта", "счетов", "Счетов по такому запросу нет."),
    "find_shipments": ("shipments", "отгрузка", "отгрузки", "отгрузок",
                       "Отгрузок по этому заказу нет."),
}


def plural(count: int, one: str, few: str, many: str) -> str:
    tail = count % 100
    if 11 <= tail <= 14:
        return many
    return {1: one, 2: few, 3: few, 4: few}.get(count % 10, many)


def read_message(spec: ToolSpec, data: dict[str, Any]) -> str:
    if spec.name in COUNTED:
        key, one, few, many, nothing = COUNTED[spec.name]
        items = data.get(key)
        if isinstance(items, list):
            if not items:
                return nothing
            return f"Найдено по запросу: {len(items)} {plural(len(items), one, few, many)}."
    return READ.get(spec.name, f"{spec.title}: вот что удалось получить.")


def done_message(spec: ToolSpec, *, replayed: bool) -> str:
    message = DONE.get(spec.name, f"Сделано: {spec.title[:1].lower()}{spec.title[1:]}.")
    if replayed:
        message += " Это повтор уже выполненной операции: новой не создано."
    return message
