"""Payment: marking an order paid, the sandbox-only pay endpoint and the payer's page."""

from __future__ import annotations

import functools
import json
import uuid
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs

from django.db import transaction
from django.utils import numberformat, timezone
from django.utils.html import format_html, format_html_join

from sandbox.calls import Call
from sandbox.models import SandboxOrder
from sandbox.notifications import send_notification
from sandbox.order_rows import order_or_404, order_payload, wrong_order_status
from sandbox.responses import ApiError, SandboxResponse


def pay_order(
    order_id: str | uuid.UUID, *, notify: bool = True, guarantee: bool = False
) -> dict[str, Any]:
    """Mark a sandbox order paid (`completed`, paidAt now); returns the order as the API shows it.

    With `notify`, the signed payment notification is sent once the payment has committed.
    With `guarantee`, the payment is a guarantee one (DELETE reverses it while unshipped).
    LookupError if there is no such order, ValueError if it is not payable.
    """
    try:
        oid = uuid.UUID(str(order_id))
    except ValueError:
        raise LookupError(f"no sandbox order {order_id}") from None
    now = timezone.now()
    with transaction.atomic():
        order = SandboxOrder.objects.select_for_update().filter(order_id=oid).first()
        if order is None:
            raise LookupError(f"no sandbox order {order_id}")
        status = order.effective_status(now)
        if status not in (SandboxOrder.Status.CREATED, SandboxOrder.Status.HOLD):
            raise ValueError(f"sandbox order {oid} is {status}; only an unpaid order can be paid")
        order.status = SandboxOrder.Status.COMPLETED
        order.paid_at = now.replace(microsecond=0)
        order.paid_by_guarantee = guarantee
        order.save(update_fields=["status", "paid_at", "paid_by_guarantee"])
        if notify:
            # After commit, as Invoicebox notifies only about a payment that is stored. robust:
            # a receiver that fails never undoes or breaks the payment itself.
            transaction.on_commit(functools.partial(send_notification, oid), robust=True)
    return order_payload(order, now)


# ---- sandbox-only endpoints (they do not exist on the real API)


def pay(call: Call) -> SandboxResponse:
    """POST /v3/_sandbox/pay/<order_id>: sandbox only, the payer pays; the notification is
    delivered before the answer, which reports what the receiver said."""
    order = order_or_404(call)
    try:
        # ?guarantee=true: a guarantee payment (docs order/delete.md:52-54).
        payload = pay_order(
            order.order_id, notify=False, guarantee=("guarantee", "true") in list(call.query)
        )
    except ValueError:
        raise wrong_order_status() from None
    delivery = send_notification(order.order_id)
    return call.ok({"data": payload, "extendedData": [], "notification": delivery.as_dict()})


# What the payer reads for each order status (the API's own values stay English).
_STATUS_RU: dict[str, str] = {
    SandboxOrder.Status.CREATED: "ожидает оплаты",
    SandboxOrder.Status.HOLD: "деньги заблокированы, ждут списания",
    SandboxOrder.Status.COMPLETED: "оплачен",
    SandboxOrder.Status.CANCELED: "отменён",
    SandboxOrder.Status.EXPIRED: "срок оплаты истёк",
    SandboxOrder.Status.DRAFT: "черновик",
}
_PAYABLE = (SandboxOrder.Status.CREATED, SandboxOrder.Status.HOLD)
_NO_PAGE = "Страницы оплаты с таким адресом нет"


def _money(amount: Decimal, currency: str) -> str:
    """366,00 ₽ as a Russian payer reads it: a decimal comma, thin groups of thousands."""
    text = numberformat.format(
        amount,
        decimal_sep=",",
        decimal_pos=2,
        grouping=3,
        thousand_sep="\u00a0",
        force_grouping=True,
    )
    return f"{text}\u00a0₽" if currency == "RUB" else f"{text}\u00a0{currency}"


def _container_orders(call: Call) -> list[SandboxOrder]:
    try:
        container = uuid.UUID(call.params["container_id"])
    except ValueError:
        raise ApiError(404, "not_found", _NO_PAGE) from None
    orders = list(SandboxOrder.objects.filter(order_container_id=container).order_by("seq"))
    if not orders:
        raise ApiError(404, "not_found", _NO_PAGE)
    return orders


def pay_from_page(call: Call) -> SandboxResponse:
    """POST from the payer's page: whoever holds the payment link pays, as on the real page;
    the signed notification goes out after commit. Then back to the page (303)."""
    orders = {str(order.order_id): order for order in _container_orders(call)}
    chosen = parse_qs(call.body.decode("utf-8", "replace")).get("order", [""])[0]
    if chosen not in orders:
        raise ApiError(400, "bad_request", "Такого счёта на этой странице нет")
    try:
        pay_order(chosen)
    except ValueError:
        pass  # paid or canceled meanwhile: the page shows its status now
    # Relative to .../pay/<container_id>: the same page, wherever the sandbox is mounted.
    return SandboxResponse(
        status=303,
        body=b"",
        headers={"Location": call.params["container_id"], "X-Request-Id": call.request_id},
    )


def payment_page(call: Call) -> SandboxResponse:
    """The payer's page behind paymentUrl: sandbox only, each unpaid order has a pay button."""
    orders = _container_orders(call)
    rows = format_html_join(
        "",
        "<li><span class='what'>Счёт {}</span> — <strong>{}</strong> — "
        "<span class='status'>{}</span>{}</li>",
        (
            (
                _shown_number(o),
                _money(o.amount, o.currency_id),
                _STATUS_RU.get(o.effective_status(call.now), o.effective_status(call.now)),
                _pay_button(o) if o.effective_status(call.now) in _PAYABLE else "",
            )
            for o in orders
        ),
    )
    page = format_html(
        "<!doctype html><html lang='ru'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<title>Песочница Инвойсбокс: оплата счёта</title><style>{}</style></head><body>"
        "<h1>Песочница Инвойсбокс: оплата счёта</h1><p>Настоящих денег здесь нет: кнопка "
        "отмечает счёт оплаченным и отправляет магазину подписанное уведомление, как "
        "Инвойсбокс после оплаты.</p><ul>{}</ul></body></html>",
        _STYLE,
        rows,
    )
    return SandboxResponse(
        status=200,
        headers={"Content-Type": "text/html; charset=utf-8", "X-Request-Id": call.request_id},
        body=str(page).encode("utf-8"),
    )


_STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}"
    "ul{padding:0;list-style:none}li{padding:.75rem 0;border-bottom:1px solid #ddd}"
    "form{display:inline;margin-left:.5rem}button{font:inherit;padding:.3rem 1rem;"
    "background:#0b6e4f;color:#fff;border:0;border-radius:4px;cursor:pointer}"
)


def _shown_number(order: SandboxOrder) -> str:
    """merchantOrderIdVisible when given (docs create.md:103), and whether the payer's
    requisites are locked (InvoiceSetting.customerLocked, create.md:191)."""
    request = json.loads(order.request_json or "{}")
    shown = request.get("merchantOrderIdVisible") or order.merchant_order_id
    setting = request.get("invoiceSetting") or {}
    if setting.get("customerLocked") or setting.get("customerLockedFields"):
        shown += " (реквизиты плательщика закреплены)"
    return str(shown)


def _pay_button(order: SandboxOrder) -> str:
    return format_html(
        "<form method='post'><input type='hidden' name='order' value='{}'>"
        "<button type='submit'>Оплатить</button></form>",
        order.order_id,
    )
