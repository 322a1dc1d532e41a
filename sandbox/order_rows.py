"""An order as the sandbox stores it and as the API shows it: the payload, the lookup by id,
and the refusals every order endpoint shares (orders, payment, notifications, shipments,
refunds read these; none of them imports the order handlers)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import simplejson
from django.conf import settings

from sandbox.calls import Call
from sandbox.models import SandboxOrder
from sandbox.responses import ApiError, field_error
from sandbox.validation import round_policy_of
from sandbox.values import atom, money_out

_ORDER_MONEY = ("amount", "vatAmount")


_ITEM_MONEY = ("amount", "amountWoVat", "totalAmount", "totalVatAmount", "excise")


def _payment_url(container_id: uuid.UUID) -> str:
    # The real one is https://pay.invoicebox.ru/order/<orderContainerId>; ours stays local.
    return f"{settings.INVOICEBOX_SANDBOX_BASE_URL}/pay/{container_id}"


def items_out(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        for key in (*_ITEM_MONEY, "availableAmount", "availableVatAmount"):
            if key in item:
                item[key] = money_out(item[key])
    return items


def order_payload(order: SandboxOrder, now: dt.datetime) -> dict[str, Any]:
    """OrderResponse: the accepted request fields plus what the server adds."""
    request = simplejson.loads(order.request_json, use_decimal=True)
    payload: dict[str, Any] = {
        "id": str(order.order_id),
        "orderContainerId": str(order.order_container_id),
    }
    payload.update((k, v) for k, v in request.items() if k != "orderContainerId")
    for key in _ORDER_MONEY:
        payload[key] = money_out(payload.get(key))
    items_out(payload.get("basketItems", []))
    processable = request.get("processable")
    payload.update(
        {
            "expirationDate": atom(order.expiration_date),
            "status": order.effective_status(now),
            "subtype": "order",
            "processingStatus": "",
            "createdAt": atom(order.created_at),
            "fileIds": [],
            "paymentUrl": _payment_url(order.order_container_id),
            "processable": True if processable is None else processable,
        }
    )
    if order.paid_at is not None:
        payload["paidAt"] = atom(order.paid_at)
    return payload


def duplicate_merchant_order_id() -> ApiError:
    return ApiError(
        422,
        "merchant_order_id_duplicate",
        "Duplicate merchant order id",
        [field_error("merchantOrderId")],
    )


def order_or_404(
    call: Call, *, for_update: bool = False, order_id: str | None = None
) -> SandboxOrder:
    """The token merchant's order named in the path (or by `order_id`); another's is a 404."""
    # [sandbox] an unknown or foreign orderId/parentId in a body is a 404 too.
    not_found = ApiError(404, "not_found", "Not Found")
    try:
        oid = uuid.UUID(call.params["order_id"] if order_id is None else order_id)
    except ValueError:
        raise not_found from None
    rows = SandboxOrder.objects.filter(order_id=oid, merchant_id=call.merchant_id)
    if for_update:
        rows = rows.select_for_update()
    order = rows.first()
    if order is None:
        raise not_found
    return order


def wrong_order_status() -> ApiError:
    return ApiError(422, "wrong_order_status", "Wrong order status", [field_error("status")])


def order_round_policy(call: Call, order_id: str) -> str | None:
    """The roundPolicy the order was created with (its shipments and refunds follow it); None
    (the default) for an order not found: its 404 comes after the body's own checks."""
    try:
        order = order_or_404(call, order_id=order_id)
    except ApiError:
        return None
    return round_policy_of(simplejson.loads(order.request_json, use_decimal=True))
