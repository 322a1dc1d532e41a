"""Shipments (docs merchant/order/shipment_create.md, shipment_get.md): create and list."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import simplejson
from django.db import transaction

from sandbox.calls import _Call, _read_json_object, documented_only
from sandbox.listing import _COMPARISONS, _Listing, _paged
from sandbox.models import SandboxOrder, SandboxShipment
from sandbox.order_rows import _items_out, _order_or_404, _wrong_order_status, order_round_policy
from sandbox.responses import (
    SandboxResponse,
    _ApiError,
    _dumps,
    _field_error,
    _validation_error,
)
from sandbox.validation import _check_lines, _line_sums, _Spec, _validate
from sandbox.values import _atom, _money_out, _parse_datetime

# [sandbox] the docs only say a shipment follows payment; a held (pre-authorised) order
# is shipped too, since the shipment is what captures the reserve.
SHIPPABLE = frozenset({SandboxOrder.Status.COMPLETED, SandboxOrder.Status.HOLD})

_SHIPMENT_SPEC: dict[str, _Spec] = {
    "orderId": _Spec("uuid", required=True),
    "documentNumber": _Spec("string", max_len=36),  # docs shipment_create.md: string(36)
    "documentDate": _Spec("string", max_len=64),  # the value: checked below
    "basketItems": _Spec("items", required=True),
    # Not in the docs' CreateShipmentRequest; the official MCP server sends it (writes.ts).
    "final": _Spec("bool"),
}
_SHIPMENT_LISTING = _Listing(
    {
        "id": ("id", "int", frozenset({"_eq", "_ne"})),
        "orderId": ("order__order_id", "uuid", frozenset({"_eq", "_ne"})),
        "status": ("status", "string", frozenset({"_eq", "_ne"})),
        "merchantId": ("merchant_id", "uuid", frozenset({"_eq", "_ne"})),
        "createdAt": ("created_at", "datetime", frozenset(_COMPARISONS)),
    },
    # ShipmentResponse has no createdAt (shipment_create.md:65-72), but the vendor MCP server
    # sorts shipments by it (src/tools/writes.ts:409), so the API takes it: both accepted.
    {"id": "id", "createdAt": "created_at"},
    tie="id",
    kind="shipments",
)


def _shipment_payload(row: SandboxShipment) -> dict[str, Any]:
    request = simplejson.loads(row.request_json, use_decimal=True)
    payload = {
        "id": row.id,
        "merchantId": str(row.merchant_id),
        "orderId": request["orderId"],
        "documentNumber": request.get("documentNumber"),
        "documentDate": request.get("documentDate"),
        "basketItems": _items_out(request["basketItems"]),
    }
    if documented_only():
        # ShipmentResponse is the request plus id and merchantId (shipment_create.md:65-72).
        return payload
    # [sandbox] looser than the docs promise (INVOICEBOX_SANDBOX_DOCUMENTED_ONLY omits them):
    # status always `completed` (the MCP server claims draft/pending/completed/canceled),
    # `final` as sent, the sums of the lines, and createdAt.
    return {
        **payload,
        "status": row.status,
        "final": row.final,
        "amount": _money_out(row.amount),
        "vatAmount": _money_out(row.vat_amount),
        "createdAt": _atom(row.created_at),
    }


def _create_shipment(call: _Call) -> SandboxResponse:
    data = _validate(_read_json_object(call), _SHIPMENT_SPEC)
    document_date = data.get("documentDate")
    # The docs show Y-m-d (shipment_create.md:62); [sandbox] an ATOM datetime is taken too.
    if document_date is not None and _parse_datetime(document_date) is None:
        raise _validation_error(
            [_field_error("documentDate", "wrong_value", "A date (Y-m-d) is expected.")]
        )
    items = data["basketItems"]
    # [sandbox] lines are reconciled like order lines; their skus are not matched against
    # the order's basket, only the shipped total is capped by the order amount.
    _check_lines(items, order_round_policy(call, data["orderId"]))
    amount, vat_amount = _line_sums(items)
    with transaction.atomic():
        # The order's row lock serialises its shipments (and its cancel): two shipments
        # cannot both take the same remainder.
        order = _order_or_404(call, for_update=True, order_id=data["orderId"])
        if order.effective_status(call.now) not in SHIPPABLE:
            raise _wrong_order_status()
        earlier = list(order.shipments.exclude(status=SandboxShipment.Status.CANCELED))
        if any(shipment.final for shipment in earlier):
            # [sandbox] a final shipment closes the order for further shipments.
            raise _wrong_order_status()
        shipped = sum((shipment.amount for shipment in earlier), Decimal(0))
        if shipped + amount > order.amount:
            # [sandbox] undocumented code: the shipped total would exceed the order amount.
            raise _ApiError(
                422,
                "wrong_shipment_amount",
                "Shipment amount exceeds the order remainder",
                [_field_error("basketItems")],
            )
        data["orderId"] = str(order.order_id)
        row = SandboxShipment(
            order=order,
            merchant_id=call.merchant_id,
            status=SandboxShipment.Status.COMPLETED,
            final=data.get("final") is True,
            amount=amount,
            vat_amount=vat_amount,
            created_at=call.now.replace(microsecond=0),
            request_json=_dumps(data).decode("ascii"),
        )
        row.save(force_insert=True)
    # Seam: the real API issues the full-settlement receipt and the closing documents here.
    return call.created({"data": _shipment_payload(row), "extendedData": []})


def _list_shipments(call: _Call) -> SandboxResponse:
    return _paged(call, SandboxShipment.objects.all(), _SHIPMENT_LISTING, _shipment_payload)
