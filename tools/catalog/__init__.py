"""The catalog: every tool, declared once, in a fixed order (order changes model behaviour)."""

from __future__ import annotations

from tools.catalog.companies import LOOKUP_COMPANY_BY_INN
from tools.catalog.order_cancel import CANCEL_ORDER
from tools.catalog.order_create import CREATE_ORDER
from tools.catalog.order_update import UPDATE_ORDER
from tools.catalog.orders import FIND_ORDERS, GET_ORDER
from tools.catalog.refunds import CREATE_REFUND, FIND_REFUNDS, GET_REFUNDABLE
from tools.catalog.shipments import CREATE_SHIPMENT, FIND_SHIPMENTS
from tools.spec import ToolSpec

# The reference server's order, which prompts written for it rely on (pinned by a test);
# the tools that server lacks come last so the eight keep their places.
CATALOG: tuple[ToolSpec, ...] = (
    LOOKUP_COMPANY_BY_INN,
    GET_ORDER,
    FIND_ORDERS,
    FIND_SHIPMENTS,
    CREATE_ORDER,
    CANCEL_ORDER,
    CREATE_SHIPMENT,
    CREATE_REFUND,
    UPDATE_ORDER,
    FIND_REFUNDS,
    GET_REFUNDABLE,
)
BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in CATALOG}


def get(name: str) -> ToolSpec | None:
    return BY_NAME.get(name)


def names() -> list[str]:
    return [spec.name for spec in CATALOG]
