"""The catalog: every tool, declared once, in a fixed order (order changes model behaviour)."""

from __future__ import annotations

from tools.catalog.orders import CREATE_ORDER, FIND_ORDERS, GET_ORDER
from tools.spec import ToolSpec

CATALOG: tuple[ToolSpec, ...] = (GET_ORDER, FIND_ORDERS, CREATE_ORDER)
BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in CATALOG}


def get(name: str) -> ToolSpec | None:
    return BY_NAME.get(name)


def names() -> list[str]:
    return [spec.name for spec in CATALOG]
