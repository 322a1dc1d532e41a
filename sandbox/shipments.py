"""Shipments (docs merchant/order/shipment_create.md, shipment_get.md): create and list."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import simplejson
from django.conf import settings
from django.db import transaction

from sandbox.calls import Call, documented_only, read_json_object
from sandbox.listing import COMPARISONS, Listing, paged
from sandbox.models import SandboxOrder, SandboxShipment
from sandbox.order_rows import items_out, order_or_404, order_round_policy, wrong_order_status
from sandbox.responses import (
    ApiError,
    SandboxResponse,
    dumps,
    field_error,
    validation_error,
)
from sandbox.validation import Spec, check_lines, line_sums, validate
from sandbox.values import atom, money_out, parse_datetime

# [sandbox] the docs only say a shipment follows payment; a held (pre-authorised) order
# is shipped too, since the shipment is what captures the reserve.
SHIPPABLE = frozenset({SandboxOrder.Status.COMPLETED, SandboxOrder.Status.HOLD})

_SHIPMENT_SPEC: dict[str, Spec] = {
    "orderId": Spec("uuid", required=True),
    "documentNumber": Spec("string", max_len=36),  # docs shipment_create.md: string(36)
    "documentDate": Spec("string", max_len=64),  # the value: checked below
    "basketItems": Spec("items", required=True),
    # Not in the docs' CreateShipmentRequest; the official MCP server sends it (writes.ts).
    "final": Spec("bool"),
}
_SHIPMENT_LISTING = Listing(
    {
        "id": ("id", "int", frozenset({"_eq", "_ne"})),
        "orderId": ("order__order_id", "uuid", frozenset({"_eq", "_ne"})),
        "status": ("status", "string", frozenset({"_eq", "_ne"})),
        "merchantId": ("merchant_id", "uuid", frozenset({"_eq", "_ne"})),
        "createdAt": ("created_at", "datetime", frozenset(COMPARISONS)),
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
        "basketItems": items_out(request["basketItems"]),
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
        "amount": money_out(row.amount),
        "vatAmount": money_out(row.vat_amount),
        "createdAt": atom(row.created_at),
    }


def create_shipment(call: Call) -> SandboxResponse:
    data = validate(read_json_object(call), _SHIPMENT_SPEC)
    document_date = data.get("documentDate")
    # The docs show Y-m-d (shipment_create.md:62); [sandbox] an ATOM datetime is taken too.
    if document_date is not None and parse_datetime(document_date) is None:
        raise validation_error(
            [field_error("documentDate", "wrong_value", "A date (Y-m-d) is expected.")]
        )
    items = data["basketItems"]
    # [sandbox] lines are reconciled like order lines; their skus are not matched against
    # the order's basket, only the shipped total is capped by the order amount.
    check_lines(items, order_round_policy(call, data["orderId"]))
    amount, vat_amount = line_sums(items)
    with transaction.atomic():
        # The order's row lock serialises its shipments (and its cancel): two shipments
        # cannot both take the same remainder.
        order = order_or_404(call, for_update=True, order_id=data["orderId"])
        if order.effective_status(call.now) not in SHIPPABLE:
            raise wrong_order_status()
        earlier = list(order.shipments.exclude(status=SandboxShipment.Status.CANCELED))
        if any(shipment.final for shipment in earlier):
            # [sandbox] a final shipment closes the order for further shipments.
            raise wrong_order_status()
        shipped = sum((shipment.amount for shipment in earlier), Decimal(0))
        if shipped + amount > order.amount:
            # [sandbox] undocumented code: the shipped total would exceed the order amount.
            raise ApiError(
                422,
                "wrong_shipment_amount",
                "Shipment amount exceeds the order remainder",
                [field_error("basketItems")],
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
            request_json=dumps(data).decode("ascii"),
        )
        row.save(force_insert=True)
    # Seam: the real API issues the full-settlement receipt and the closing documents here.
    return call.created({"data": _shipment_payload(row), "extendedData": []})


# INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS: the shipment list's filters the sandbox takes and
# does not apply (a leaky filter): the vendor's MCP server checks that orderId was applied and
# pages through everything when it wasn't (src/tools/writes.ts:395-420), and drops rows of
# another order after it (reads.ts:281). With a shared token, an ignored merchantId shows
# every shop's shipments.
IGNORABLE_SHIPMENT_FILTERS = frozenset({"orderId", "merchantId"})


def list_shipments(call: Call) -> SandboxResponse:
    ignored = frozenset(getattr(settings, "INVOICEBOX_SANDBOX_IGNORED_SHIPMENT_FILTERS", ()))
    return paged(
        call,
        SandboxShipment.objects.all(),
        _SHIPMENT_LISTING,
        _shipment_payload,
        ignored=ignored & IGNORABLE_SHIPMENT_FILTERS,
    )
