"""Refunds (docs merchant/refund/create.md, get.md) and the refundable items of an order."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import simplejson
from django.db import IntegrityError, transaction

from sandbox.calls import Call, documented_only, read_json_object
from sandbox.listing import COMPARISONS, Listing, paged
from sandbox.models import SandboxOrder, SandboxRefund
from sandbox.order_rows import (
    duplicate_merchant_order_id,
    items_out,
    order_or_404,
    order_round_policy,
    wrong_order_status,
)
from sandbox.responses import ApiError, SandboxResponse, dumps, field_error
from sandbox.validation import Spec, check_lines, check_totals, validate
from sandbox.values import atom, money_out, uuid7

_REFUND_SPEC: dict[str, Spec] = {
    # [sandbox] optional here (the docs' request has none); a foreign one is forbidden.
    "merchantId": Spec("uuid"),
    "parentId": Spec("uuid", required=True),
    "merchantOrderId": Spec("string", required=True, max_len=256),
    "description": Spec("string", required=True, max_len=1000),
    "amount": Spec("money", required=True),
    "vatAmount": Spec("money", required=True),
    "basketItems": Spec("items", required=True),
    # `draft` starts the correction-order flow; the default is `created`.
    "status": Spec("string", choices=frozenset({"created", "draft"})),
}
_REFUND_LISTING = Listing(
    {
        "id": ("refund_id", "uuid", frozenset({"_eq", "_ne"})),
        "parentId": ("parent__order_id", "uuid", frozenset({"_eq", "_ne"})),
        "merchantOrderId": ("merchant_order_id", "string", frozenset({"_eq", "_ne", "_start"})),
        "merchantId": ("merchant_id", "uuid", frozenset({"_eq", "_ne"})),  # docs refund/get.md
        "status": ("status", "string", frozenset({"_eq", "_ne"})),
        "createdAt": ("created_at", "datetime", frozenset(COMPARISONS)),
    },
    {"createdAt": "created_at", "id": "refund_id", "merchantOrderId": "merchant_order_id"},
    kind="refunds",
)


def _refundable_items(order: SandboxOrder, now: dt.datetime) -> list[dict[str, Any]]:
    """The order's basket, each item with what is still refundable after earlier refunds.

    [sandbox] the field names availableAmount / availableVatAmount come from the MCP server
    only. Refunds are matched to items by sku; with repeated skus the earlier item is used up
    first. Every refund but a canceled one counts (a draft reserves its amount). An order that
    is not paid has nothing to refund: its items show 0.
    """
    items = simplejson.loads(order.request_json, use_decimal=True)["basketItems"]
    refunded: dict[str, list[Decimal]] = {}
    for refund in order.refunds.exclude(status=SandboxRefund.Status.CANCELED):
        for line in simplejson.loads(refund.request_json, use_decimal=True)["basketItems"]:
            taken = refunded.setdefault(line["sku"], [Decimal(0), Decimal(0)])
            taken[0] += line["totalAmount"]
            taken[1] += line["totalVatAmount"]
    paid = order.effective_status(now) == SandboxOrder.Status.COMPLETED
    for item in items:
        if not paid:
            item["availableAmount"] = item["availableVatAmount"] = Decimal(0)
            continue
        taken = refunded.get(item["sku"], [Decimal(0), Decimal(0)])
        amount = min(item["totalAmount"], taken[0])
        vat_amount = min(item["totalVatAmount"], taken[1])
        taken[0] -= amount
        taken[1] -= vat_amount
        item["availableAmount"] = item["totalAmount"] - amount
        item["availableVatAmount"] = item["totalVatAmount"] - vat_amount
    return items


def _check_refund_lines(lines: list[dict[str, Any]], refundable: list[dict[str, Any]]) -> None:
    # [sandbox] the code is undocumented: a sku not in the order, or more than is left of it.
    available: dict[str, Decimal] = {}
    for item in refundable:
        available[item["sku"]] = available.get(item["sku"], Decimal(0)) + item["availableAmount"]
    requested: dict[str, Decimal] = {}
    for index, line in enumerate(lines):
        sku = line["sku"]
        if sku not in available:
            raise ApiError(
                422,
                "wrong_refund_amount",
                "The item is not in the order",
                [field_error(f"basketItems[{index}].sku")],
            )
        requested[sku] = requested.get(sku, Decimal(0)) + line["totalAmount"]
        if requested[sku] > available[sku]:
            raise ApiError(
                422,
                "wrong_refund_amount",
                "Refund amount exceeds the refundable amount",
                [field_error(f"basketItems[{index}].totalAmount")],
            )


def _refund_payload(row: SandboxRefund) -> dict[str, Any]:
    request = simplejson.loads(row.request_json, use_decimal=True)
    return {
        "id": str(row.refund_id),
        "merchantId": str(row.merchant_id),
        "parentId": request["parentId"],
        "merchantOrderId": row.merchant_order_id,
        "currencyId": row.currency_id,
        "amount": money_out(row.amount),
        "vatAmount": money_out(row.vat_amount),
        "basketItems": items_out(request["basketItems"]),
        "description": request["description"],
        "status": row.status,
        "createdAt": atom(row.created_at),
    }


def get_refundable_items(call: Call) -> SandboxResponse:
    order = order_or_404(call)
    items = _refundable_items(order, call.now)
    if documented_only():
        # The docs say plain BasketItems (merchant/refund/create.md); the remainder fields are
        # the MCP server's only, so the documented answer leaves them out.
        for item in items:
            item.pop("availableAmount", None)
            item.pop("availableVatAmount", None)
    return call.ok({"data": items_out(items), "extendedData": []})


def create_refund(call: Call) -> SandboxResponse:
    data = validate(read_json_object(call), _REFUND_SPEC)
    merchant = data.get("merchantId")
    if merchant is not None and uuid.UUID(merchant) != call.merchant_id:
        raise ApiError(403, "forbidden", "Forbidden")
    if data["amount"] == 0:
        # [sandbox] a refund of nothing is refused with the refund-amount code.
        raise ApiError(
            422, "wrong_refund_amount", "Refund amount must be positive", [field_error("amount")]
        )
    check_lines(data["basketItems"], order_round_policy(call, data["parentId"]))
    check_totals(data)
    with transaction.atomic():
        # The parent's row lock serialises its refunds: two cannot both take the same remainder.
        parent = order_or_404(call, for_update=True, order_id=data["parentId"])
        # Only a paid order is refunded; an unpaid one is canceled with DELETE.
        if parent.effective_status(call.now) != SandboxOrder.Status.COMPLETED:
            raise wrong_order_status()
        # Unique among the merchant's refunds (docs merchant/refund/create.md:36,44); the docs
        # don't say an order's number can't be reused for its refund, so it can.
        taken = SandboxRefund.objects.filter(
            merchant_id=call.merchant_id, merchant_order_id=data["merchantOrderId"]
        )
        if taken.exists():
            # Before the amounts: a repeated refund is named a duplicate, not "nothing left".
            raise duplicate_merchant_order_id()
        _check_refund_lines(data["basketItems"], _refundable_items(parent, call.now))
        data["parentId"] = str(parent.order_id)
        row = SandboxRefund(
            refund_id=uuid7(),
            parent=parent,
            merchant_id=call.merchant_id,
            merchant_order_id=data["merchantOrderId"],
            status=data.get("status") or SandboxRefund.Status.CREATED,
            amount=data["amount"],
            vat_amount=data["vatAmount"],
            currency_id=parent.currency_id,
            created_at=call.now.replace(microsecond=0),
            request_json=dumps(data).decode("ascii"),
        )
        try:
            with transaction.atomic():
                row.save(force_insert=True)
        except IntegrityError:
            raise duplicate_merchant_order_id() from None
    return call.created({"data": _refund_payload(row), "extendedData": []})


def list_refunds(call: Call) -> SandboxResponse:
    return paged(call, SandboxRefund.objects.all(), _REFUND_LISTING, _refund_payload)
