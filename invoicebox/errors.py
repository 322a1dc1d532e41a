"""Upstream failures: their kinds, the Russian wording of the API's codes, which are worth a retry,
and how an HTTP answer that is not a success becomes one."""

from __future__ import annotations

import json
import logging
from decimal import Decimal
from typing import Any, Literal, TypedDict

import httpx

logger = logging.getLogger(__name__)

ErrorKind = Literal[
    "unauthorized",
    "forbidden",
    "rejected",
    "not_found",
    "rate_limited",
    "unavailable",
    "unknown_outcome",
    "bad_response",
]

# Russian wording of the documented 422 codes, relayed by assistants.
UPSTREAM_MESSAGES: dict[str, str] = {
    "wrong_expiration_date": "Инвойсбокс не принял срок оплаты (expirationDate)",
    "wrong_currency": "Инвойсбокс не принял валюту",
    "language_not_found": "Инвойсбокс не знает такой язык страницы оплаты",
    "wrong_basket_item_total_amount": "Инвойсбокс: сумма позиции не равна цене, умноженной на количество",
    "wrong_basket_item_total_vat_amount": "Инвойсбокс: НДС позиции не сходится со ставкой",
    "wrong_basket_item_amount_wo_vat": "Инвойсбокс: цена без НДС не сходится с ценой и НДС",
    "wrong_total_amount": "Инвойсбокс: сумма заказа не равна сумме позиций",
    "wrong_total_vat_amount": "Инвойсбокс: НДС заказа не равен сумме НДС позиций",
    "wrong_order_status": "Инвойсбокс: действие недоступно в текущем статусе счёта",
    "merchant_order_id_duplicate": "Инвойсбокс: счёт с таким номером магазина уже есть",
    # Not in the docs' list; the bundled sandbox answers them (and so, plausibly, the API).
    "wrong_vat_code": "Инвойсбокс не принял ставку НДС (vatCode)",
    "wrong_shipment_amount": "Инвойсбокс: отгрузка выходит за остаток суммы заказа",
    "wrong_refund_amount": (
        "Инвойсбокс: возврат больше доступного к возврату по позиции, или такой позиции нет в счёте"
    ),
    "unauthorized": "Инвойсбокс не принял токен контура",
    "forbidden": "Инвойсбокс запретил это действие для магазина контура",
    "not_found": "Инвойсбокс не нашёл запрошенный объект",
}


class InvoiceboxError(Exception):
    """An upstream failure, classified so the core can say whether a retry can help."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        code: str = "",
        http_status: int | None = None,
        request_id: str = "",
        fields: list[dict[str, Any]] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.http_status = http_status
        self.request_id = request_id
        self.fields = fields or []
        self.retry_after = retry_after


# Transient kinds: a later identical read may succeed. The only home of this rule: the
# transport's in-call retries and the Celery tasks' retries (tools/background/tasks.py) both read it.
# A bad_response is not among them (the same server would answer the same shape again), nor
# an unknown_outcome (a write is recovered by lookup, never repeated).
RETRYABLE_KINDS = frozenset({"unavailable", "rate_limited"})
RETRYABLE_STATUSES = frozenset({408, 425, 429, 503})
# A wait the API asks for beyond this is not slept through inside one call.
MAX_RETRY_AFTER_SECONDS = 60


def worth_waiting_for(error: InvoiceboxError) -> bool:
    """Whether a call should sleep and send the same read again (within MAX_RETRY_AFTER_SECONDS)."""
    return error.kind in RETRYABLE_KINDS and (error.retry_after or 0) <= MAX_RETRY_AFTER_SECONDS


def bad_response(
    detail: str, *, write: bool, http_status: int | None, request_id: str
) -> InvoiceboxError:
    """An answer we cannot read: for a write its outcome is unknown, for a read it is refused."""
    kind: ErrorKind = "unknown_outcome" if write else "bad_response"
    return InvoiceboxError(
        kind,
        f"Инвойсбокс ответил непонятно: {detail}",
        http_status=http_status,
        request_id=request_id,
    )


class _Details(TypedDict):
    """InvoiceboxError's keyword arguments that every kind of refused answer carries."""

    code: str
    http_status: int
    request_id: str
    fields: list[dict[str, Any]]
    retry_after: float | None


def from_http_answer(response: httpx.Response, *, write: bool, request_id: str) -> InvoiceboxError:
    """The failure an HTTP answer of 300 or more stands for."""
    status = response.status_code
    code, message, fields = "", "", []
    try:
        payload = json.loads(response.content, parse_float=Decimal)
        err = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(err, dict):
            code = str(err.get("code") or "")
            message = str(err.get("message") or "")
            fields = [f for f in err.get("fields") or [] if isinstance(f, dict)]
    except ValueError:
        pass
    common: _Details = {
        "code": code,
        "http_status": status,
        "request_id": request_id,
        "fields": fields,
        "retry_after": _retry_after(response),
    }
    text = UPSTREAM_MESSAGES.get(code) or (
        f"Инвойсбокс отказал: HTTP {status}" + (f", код {code}" if code else "")
    )
    if status < 400:  # a redirect: the base URL is wrong, never follow it with a token
        return bad_response(
            f"перенаправление HTTP {status}", write=write, http_status=status, request_id=request_id
        )
    if status == 401:
        return InvoiceboxError("unauthorized", UPSTREAM_MESSAGES["unauthorized"], **common)
    if status == 403:
        return InvoiceboxError("forbidden", UPSTREAM_MESSAGES["forbidden"], **common)
    if status == 404:
        return InvoiceboxError("not_found", text, **common)
    if status == 429:
        return InvoiceboxError("rate_limited", "Инвойсбокс ограничил частоту запросов", **common)
    if status in RETRYABLE_STATUSES and not (write and status >= 500):
        # A write answered 5xx may have been stored before the failure: it is an unknown
        # outcome below, recovered by lookup, never a plain "unavailable".
        return InvoiceboxError(
            "unavailable", f"Инвойсбокс временно недоступен (HTTP {status})", **common
        )
    if status >= 500:
        kind: ErrorKind = "unknown_outcome" if write else "unavailable"
        return InvoiceboxError(kind, f"сбой на стороне Инвойсбокс (HTTP {status})", **common)
    logger.info(
        "Invoicebox refused (HTTP %s, code %s, request %s): %s",
        status,
        code,
        request_id,
        message[:200],
    )
    return InvoiceboxError("rejected", text, **common)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
