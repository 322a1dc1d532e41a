"""Orders: create, read, cancel and list, and the order as the API shows it."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from typing import Any

import simplejson
from django.db import IntegrityError, transaction
from django.db.models import F

from sandbox.calls import Call, read_json_object
from sandbox.listing import ORDER_LISTING, paged
from sandbox.models import SandboxMerchantOrderId, SandboxOrder, SandboxShipment
from sandbox.notifications import send_notification
from sandbox.order_rows import (
    duplicate_merchant_order_id,
    order_or_404,
    order_payload,
    wrong_order_status,
)
from sandbox.payment import pay_order
from sandbox.responses import ApiError, SandboxResponse, dumps, field_error
from sandbox.validation import Spec, check_lines, check_totals, round_policy_of, validate
from sandbox.values import parse_datetime, uuid7

CURRENCIES = frozenset({"RUB", "CNY", "UZS", "EUR", "GBP", "USD"})
LANGUAGES = frozenset({"ru", "en"})

_URL = Spec("string", max_len=1000)
_ORDER_SPEC: dict[str, Spec] = {
    "merchantId": Spec("uuid", required=True),
    "merchantOrderId": Spec("string", required=True, max_len=256),
    "merchantOrderIdVisible": Spec("string", max_len=256),
    "description": Spec("string", required=True, max_len=1000),
    "amount": Spec("money", required=True),
    "vatAmount": Spec("money", required=True),
    "currencyId": Spec("string", required=True),  # the value: wrong_currency
    "languageId": Spec("string"),  # the value: language_not_found
    "expirationDate": Spec("any"),  # missing or bad: wrong_expiration_date
    "basketItems": Spec("items", required=True),
    # Required in the docs' table (create.md:112), but the SDK's CreateOrderRequest allows
    # null: vendor code wins (issue 40.5), an order without customer is taken.
    "customer": Spec("customer"),
    "metaData": Spec("object"),
    "notificationUrl": _URL,
    "successUrl": _URL,
    "failUrl": _URL,
    "returnUrl": _URL,
    "invoiceSetting": Spec("invoice_setting"),
    # roundPolicy is honoured (validation.round_policy_of); [sandbox] disableValidate is
    # echoed but never relaxes the checks.
    "orderSetting": Spec("object"),
    "parentId": Spec("uuid"),
    "orderContainerId": Spec("uuid"),
    "shopId": Spec("string_or_int"),  # docs string(36); the SDK sends an int
    "userAccountId": Spec("string", max_len=36),
    "processable": Spec("bool"),
}


def _validate_order(data: Mapping[str, Any]) -> dict[str, Any]:
    return validate(data, _ORDER_SPEC)


def _check_order_rules(order: Mapping[str, Any], now: dt.datetime) -> dt.datetime:
    """The documented 422 checks in a fixed order; returns the parsed expirationDate."""
    if order["currencyId"] not in CURRENCIES:
        raise ApiError(422, "wrong_currency", "Currency not found", [field_error("currencyId")])
    language = order.get("languageId")
    if language is not None and language not in LANGUAGES:
        raise ApiError(422, "language_not_found", "Language not found", [field_error("languageId")])
    expiration = _expiration(order.get("expirationDate"), now)
    check_lines(order["basketItems"], round_policy_of(order))
    check_totals(order)
    return expiration


def _expiration(value: Any, now: dt.datetime) -> dt.datetime:
    expiration = parse_datetime(value)
    if expiration is None or expiration <= now:
        raise ApiError(
            422,
            "wrong_expiration_date",
            "Wrong expiration date",
            [field_error("expirationDate")],
        )
    return expiration


def create_order(call: Call) -> SandboxResponse:
    order = _validate_order(read_json_object(call))
    if uuid.UUID(order["merchantId"]) != call.merchant_id:
        raise ApiError(403, "forbidden", "Forbidden")
    expiration = _check_order_rules(order, call.now)
    container = order.get("orderContainerId")
    row = SandboxOrder(
        order_id=uuid7(),
        order_container_id=uuid.UUID(container) if container else uuid7(),
        merchant_id=call.merchant_id,
        merchant_order_id=order["merchantOrderId"],
        status=SandboxOrder.Status.CREATED,
        amount=order["amount"],
        vat_amount=order["vatAmount"],
        currency_id=order["currencyId"],
        created_at=call.now.replace(microsecond=0),
        expiration_date=expiration.replace(microsecond=0),
        request_json=dumps(order).decode("ascii"),
    )
    try:
        with transaction.atomic():
            _take_merchant_order_id(call.merchant_id, order["merchantOrderId"])
            row.save(force_insert=True)
    except IntegrityError:
        # The unique (merchant, merchantOrderId) constraints: correct under concurrent creates.
        SandboxMerchantOrderId.objects.filter(
            merchant_id=call.merchant_id,
            merchant_order_id=order["merchantOrderId"],
        ).update(repeated_creates=F("repeated_creates") + 1)
        raise duplicate_merchant_order_id() from None
    payload = order_payload(row, call.now)
    lie = _lie_after_create(call, row, payload)
    if lie is not None:
        return lie
    return call.created({"data": payload, "extendedData": []})


def _lie_after_create(
    call: Call, row: SandboxOrder, payload: dict[str, Any]
) -> SandboxResponse | None:
    """The lying-upstream faults, once the order is stored (SandboxFaults)."""
    faults = call.faults
    if faults is None:
        return None
    if faults.notify_before_answer:
        pay_order(row.order_id, notify=False)
        send_notification(row.order_id)
    if faults.fail_after_create:
        raise ApiError(503, "service_unavailable", "Service Unavailable")
    if faults.wrong_order_after_create:
        other = {**payload, "id": str(uuid7()), "merchantOrderId": f"other-{uuid7().hex}"}
        return call.ok({"data": other, "extendedData": []})
    return None


def _take_merchant_order_id(merchant_id: uuid.UUID, merchant_order_id: str) -> None:
    """Claim the number for an order; IntegrityError if another order already has it."""
    SandboxMerchantOrderId(merchant_id=merchant_id, merchant_order_id=merchant_order_id).save(
        force_insert=True
    )


def get_order(call: Call) -> SandboxResponse:
    order = order_or_404(call)
    return call.ok({"data": order_payload(order, call.now), "extendedData": []})


def cancel_order(call: Call) -> SandboxResponse:
    with transaction.atomic():
        order = order_or_404(call, for_update=True)
        # The docs: an order is canceled only before shipment info arrives; then it is refunded.
        shipped = order.shipments.exclude(status=SandboxShipment.Status.CANCELED).exists()
        status = order.effective_status(call.now)
        # docs order/delete.md:52-54: a guarantee payment without a shipment is reversed.
        reversal = status == SandboxOrder.Status.COMPLETED and order.paid_by_guarantee
        if (status not in SandboxOrder.CANCELABLE and not reversal) or shipped:
            raise wrong_order_status()
        order.status = SandboxOrder.Status.CANCELED
        order.canceled_at = call.now.replace(microsecond=0)
        order.save(update_fields=["status", "canceled_at"])
    return call.ok({"data": order_payload(order, call.now), "extendedData": []})


# UpdateOrderRequest (docs merchant/order/update.md): every field optional, nothing else.
_UPDATE_SPEC: dict[str, Spec] = {
    "description": Spec("string", max_len=1000),
    "amount": Spec("money"),
    "vatAmount": Spec("money"),
    "expirationDate": Spec("any"),
    "basketItems": Spec("items"),
    "metaData": Spec("object"),
    "customer": Spec("customer"),
    "shopId": Spec("string", max_len=36),
}


def update_order(call: Call) -> SandboxResponse:
    """PUT: the docs allow it only before payment; the merged order passes create's checks."""
    changes = {
        key: value
        for key, value in validate(read_json_object(call), _UPDATE_SPEC).items()
        if value is not None
    }
    with transaction.atomic():
        order = order_or_404(call, for_update=True)
        if order.effective_status(call.now) != SandboxOrder.Status.CREATED:
            raise wrong_order_status()
        merged = {**simplejson.loads(order.request_json, use_decimal=True), **changes}
        expiration = order.expiration_date
        if "expirationDate" in changes:
            expiration = _expiration(changes["expirationDate"], call.now).replace(microsecond=0)
        if "basketItems" in changes:
            check_lines(merged["basketItems"], round_policy_of(merged))
        # [sandbox] amounts are checked against the basket whichever of them changed.
        check_totals(merged)
        order.amount, order.vat_amount = merged["amount"], merged["vatAmount"]
        order.expiration_date = expiration
        order.request_json = dumps(merged).decode("ascii")
        order.save(update_fields=["amount", "vat_amount", "expiration_date", "request_json"])
    return call.ok({"data": order_payload(order, call.now), "extendedData": []})


def list_orders(call: Call) -> SandboxResponse:
    return paged(
        call,
        SandboxOrder.objects.all(),
        ORDER_LISTING,
        lambda order: order_payload(order, call.now),
    )
