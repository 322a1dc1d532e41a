"""What a confirmation binds to besides its arguments: the upstream facts its summary showed.

A write's summary names facts read from Invoicebox (an order's amount, currency, status,
customer; what is already shipped or refundable). The person confirms those. At execution
the gateway reads them again (the tool's own summarizer) before anything is sent; when any
differs, the old confirmation is closed and a new summary with a new token is answered
(tools/pipeline/gateway.py `_execute`, issue 39.3). Only the first attempt is compared: a retry
after an unknown outcome may find facts the earlier attempt itself changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from invoicebox.client import Order
from tools import clock
from tools.errors import ToolError
from tools.models import ConfirmationStatus, Operation, PendingConfirmation
from tools.params import format_rub
from tools.pipeline.call_trace import Trace
from tools.pipeline.upstream_calls import client_for, upstream
from tools.spec import FACTS_KEY, CallContext, ToolSpec

KEY = FACTS_KEY

LABELS = {
    "amount": "сумма счёта",
    "vat_amount": "НДС счёта",
    "currency": "валюта",
    "status": "статус",
    "customer": "покупатель",
    "customer_inn": "ИНН покупателя",
    "already_shipped": "уже отгружено",
    "available": "доступно к возврату",
}
MONEY = frozenset({"amount", "vat_amount", "already_shipped", "available"})


def of_order(order: Order, **more: Any) -> dict[str, Any]:
    """The order's facts a summary shows, plus the tool's own (already shipped, refundable)."""
    return {
        "amount": order.amount,
        "vat_amount": order.vat_amount,
        "currency": order.currency,
        "status": order.status,
        "customer": order.customer_name,
        "customer_inn": order.customer_vat_number,
        **more,
    }


def differences(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Each fact that changed, as a person reads it: "сумма счёта: было 366,00 ₽, стало …"."""
    currency = str(after.get("currency") or before.get("currency") or "RUB")
    out = []
    for name in sorted(
        set(before) | set(after),
        key=lambda n: list(LABELS).index(n) if n in LABELS else len(LABELS),
    ):
        was, now = before.get(name), after.get(name)
        if was == now:
            continue
        label = LABELS.get(name, name)
        if name in MONEY and isinstance(was, int) and isinstance(now, int):
            out.append(
                f"{label}: было {format_rub(was, currency)}, стало {format_rub(now, currency)}"
            )
        else:
            out.append(
                f"{label}: было {was if was is not None else '—'}, стало "
                f"{now if now is not None else '—'}"
            )
    return out


def changed_since_summary(
    trace: Trace, spec: ToolSpec, params: BaseModel, confirmation: PendingConfirmation
) -> list[str]:
    """Read the facts again for a first execution and say what differs ([] when nothing does,
    when the summary named none, or when the read refuses: the handler then refuses itself)."""
    stored = (confirmation.summary_data or {}).get(KEY)
    if (
        not stored
        or spec.summarize is None
        or trace.contour is None
        or confirmation.status == ConfirmationStatus.EXECUTED
        or Operation.objects.filter(confirmation=confirmation).exists()
    ):
        return []
    contour = trace.contour
    with client_for(contour) as client:
        try:
            summary = upstream(
                trace, client, lambda: spec.summarize(CallContext(contour, client), params)
            )
        except ToolError:
            return []
    return differences(stored, summary.facts)


def close(confirmation: PendingConfirmation, changed: list[str]) -> None:
    """The confirmation of facts that no longer hold can never execute."""
    PendingConfirmation.objects.filter(pk=confirmation.pk).exclude(
        status=ConfirmationStatus.EXECUTED
    ).update(
        status=ConfirmationStatus.EXPIRED,
        decided_at=clock.now(),
        decision_reason=("данные в Инвойсбокс изменились после сводки: " + "; ".join(changed))[
            :1000
        ],
    )
