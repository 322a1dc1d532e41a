"""An order as the sandbox stores it and as the API shows it: the payload, the lookup by id,
and the refusals every order endpoint shares (orders, payment, notifications, shipments,
refunds read these; none of them imports the order handlers)."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import simplejson
from django.conf import settings

from sandbox.calls import _Call
from sandbox.models import SandboxOrder
from sandbox.responses import _ApiError, _field_error
from sandbox.validation import round_policy_of
from sandbox.values import _atom, _money_out

_ORDER_MONEY = ("amount", "vatAmount")


_ITEM_MONEY = ("amount", "amountWoVat", "totalAmount", "totalVatAmount", "excise")


def _payment_url(container_id: uuid.UUID) -> str:
    # The real one is https://pay.invoicebox.ru/order/<orderContainerId>; ours stays local.
    return f"{settings.INVOICEBOX_SANDBOX_BASE_URL}/pay/{container_id}"


def _items_out(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for item in items:
        for key in (*_ITEM_MONEY, "availableAmount", "availableVatAmount"):
            if key in item:
                item[key] = _money_out(item[key])
    return items


def _order_payload(order: SandboxOrder, now: dt.datetime) -> dict[str, Any]:
    """OrderResponse: the accepted request fields plus what the server adds."""
    request = simplejson.loads(order.request_json, use_decimal=True)
    payload: dict[str, Any] = {
        "id": str(order.order_id),
        "orderContainerId": str(order.order_container_id),
    }
    payload.update((k, v) for k, v in request.items() if k != "orderContainerId")
    for key in _ORDER_MONEY:
        payload[key] = _money_out(payload.get(key))
    _items_out(payload.get("basketItems", []))
    processable = request.get("processable")
    payload.update(
        {
            "expirationDate": _atom(order.expiration_date),
            "status": order.effective_status(now),
            "subtype": "order",
            "processingStatus": "",
            "createdAt": _atom(order.created_at),
            "fileIds": [],
            "paymentUrl": _payment_url(order.order_container_id),
            "processable": True if processable is None else processable,
        }
    )
    if order.paid_at is not None:
        payload["paidAt"] = _atom(order.paid_at)
    return payload


def _duplicate_merchant_order_id() -> _ApiError:
    return _ApiError(
        422,
        "merchant_order_id_duplicate",
        "Duplicate merchant order id",
        [_field_error("merchantOrderId")],
    )


def _order_or_404(
    call: _Call, *, for_update: bool = False, order_id: str | None = None
) -> SandboxOrder:
    """The token merchant's order named in the path (or by `order_id`); another's is a 404."""
    # [sandbox] an unknown or foreign orderId/parentId in a body is a 404 too.
    not_found = _ApiError(404, "not_found", "Not Found")
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


def _wrong_order_status() -> _ApiError:
    return _ApiError(422, "wrong_order_status", "Wrong order status", [_field_error("status")])


def order_round_policy(call: _Call, order_id: str) -> str | None:
    """The roundPolicy the order was created with (its shipments and refunds follow it); None
    (the default) for an order not found: its 404 comes after the body's own checks."""
    try:
        order = _order_or_404(call, order_id=order_id)
    except _ApiError:
        return None
    return round_policy_of(simplejson.loads(order.request_json, use_decimal=True))
