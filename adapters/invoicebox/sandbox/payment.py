"""Payment: marking an order paid, the sandbox-only pay endpoint and the payer's page."""

from __future__ import annotations

import functools
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from adapters.invoicebox.models import SandboxOrder
from adapters.invoicebox.sandbox.calls import _Call
from adapters.invoicebox.sandbox.notifications import send_notification
from adapters.invoicebox.sandbox.orders import _order_or_404, _order_payload, _wrong_order_status
from adapters.invoicebox.sandbox.responses import SandboxResponse, _ApiError


def pay_order(order_id: str | uuid.UUID, *, notify: bool = True) -> dict[str, Any]:
    """Mark a sandbox order paid (`completed`, paidAt now); returns the order as the API shows it.

    With `notify`, the signed payment notification is sent once the payment has committed.
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
        order.save(update_fields=["status", "paid_at"])
        if notify:
            # After commit, as Invoicebox notifies only about a payment that is stored. robust:
            # a receiver that fails never undoes or breaks the payment itself.
            transaction.on_commit(functools.partial(send_notification, oid), robust=True)
    return _order_payload(order, now)


# ---- sandbox-only endpoints (they do not exist on the real API)


def _pay(call: _Call) -> SandboxResponse:
    """POST /v3/_sandbox/pay/<order_id>: sandbox only, the payer pays; the notification is
    delivered before the answer, which reports what the receiver said."""
    order = _order_or_404(call)
    try:
        payload = pay_order(order.order_id, notify=False)
    except ValueError:
        raise _wrong_order_status() from None
    delivery = send_notification(order.order_id)
    return call.ok({"data": payload, "extendedData": [], "notification": delivery.as_dict()})


def _payment_page(call: _Call) -> SandboxResponse:
    """The payer's page behind paymentUrl: sandbox only, it explains how to 'pay'."""
    try:
        container = uuid.UUID(call.params["container_id"])
    except ValueError:
        raise _ApiError(404, "not_found", "Not Found") from None
    orders = list(SandboxOrder.objects.filter(order_container_id=container).order_by("seq"))
    if not orders:
        raise _ApiError(404, "not_found", "Not Found")
    rows = format_html_join(
        "",
        "<li>{} — {} {} — {} (<code>python manage.py sandbox_pay {}</code>)</li>",
        (
            (o.merchant_order_id, o.amount, o.currency_id, o.effective_status(call.now), o.order_id)
            for o in orders
        ),
    )
    page = format_html(
        "<!doctype html><html><head><meta charset='utf-8'><title>Песочница Инвойсбокс</title>"
        "</head><body><h1>Песочница Инвойсбокс: оплата счёта</h1><p>Настоящих денег здесь нет."
        "</p><ul>{}</ul></body></html>",
        rows,
    )
    return SandboxResponse(
        status=200,
        headers={"Content-Type": "text/html; charset=utf-8", "X-Request-Id": call.request_id},
        body=str(page).encode("utf-8"),
    )
