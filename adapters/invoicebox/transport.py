"""Invoicebox API v3 transport: the httpx client, typed errors, retries only where safe, decode."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, Self, TypeVar

import httpx
import simplejson
from django.conf import settings
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from adapters.invoicebox import connections, limits
from adapters.invoicebox.money import to_kopecks

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 4 * 1024 * 1024
RETRYABLE_STATUSES = frozenset({408, 425, 429, 503})
MAX_RETRY_AFTER_SECONDS = 60

T = TypeVar("T")

ErrorKind = Literal[
    "unauthorized", "forbidden", "rejected", "not_found", "rate_limited", "unavailable",
    "unknown_outcome", "bad_response",
]

# Russian wording of the documented 422 codes (reference §5), relayed by assistants.
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


class Upstream(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


def _json_number(value: Any) -> Any:
    # Money from the API is a JSON number (parsed as Decimal or int); a string is a wrong shape.
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise ValueError(f"money must be a JSON number, got {type(value).__name__}")
    return value


Money = Annotated[Decimal, BeforeValidator(_json_number)]
# A quantity is a JSON number too (3 or 1.5), kept as the exact Decimal that was parsed.
Quantity = Annotated[Decimal, BeforeValidator(_json_number)]


def _as_text(value: Any) -> Any:
    # Ids, OGRNs, zip codes and tag-1212 item types may come as JSON integers: keep text.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_as_text)]


def kopecks_or_none(value: Decimal | None) -> int | None:
    return None if value is None else to_kopecks(value)


def atom(moment: datetime) -> str:
    """The API's date format: ISO 8601 to the second with the offset (PHP DATE_ATOM)."""
    if moment.tzinfo is None:
        raise ValueError("a naive datetime has no offset to send")
    return moment.isoformat(timespec="seconds")


Sender = Callable[..., httpx.Response]
UpstreamObserver = Callable[..., httpx.Response]


def _send_unobserved(send: Sender, method: str, path: str, **kwargs: Any) -> httpx.Response:
    return send(method, path, **kwargs)


# Metrics wrap every upstream request; the core installs its observer at start-up
# (tools/apps.py), so this module never imports the core (imports flow one way).
_observer: UpstreamObserver = _send_unobserved


def set_upstream_observer(observer: UpstreamObserver | None) -> None:
    global _observer
    _observer = observer or _send_unobserved


class Transport:
    """One merchant's connection to the API: requests, errors, decoding. Resources build on it."""

    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        merchant_id: str,
        transport: httpx.BaseTransport | None = None,
        timeout: float | None = None,
        read_attempts: int | None = None,
        backoff_seconds: float | None = None,
    ) -> None:
        self.merchant_id = merchant_id
        self.read_attempts = read_attempts or settings.INVOICEBOX_READ_ATTEMPTS
        self.backoff_seconds = (
            settings.INVOICEBOX_BACKOFF_SECONDS if backoff_seconds is None else backoff_seconds
        )
        self.last_request_id = ""
        self.last_status: int | None = None
        self._token = token
        self._account = limits.account_key(token)
        # Pooled per upstream account (keep-alive, TLS context built once); a test's or the
        # in-process sandbox's transport, or a custom timeout, gets a client of its own.
        timeout = timeout or settings.INVOICEBOX_TIMEOUT_SECONDS
        self._owns_http = transport is not None or timeout != settings.INVOICEBOX_TIMEOUT_SECONDS
        self._http = (connections.build(base_url, timeout=timeout, transport=transport)
                      if self._owns_http else connections.shared(base_url, token, timeout=timeout))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def check_auth(self) -> str:
        data, _ = self._request("GET", "/security/api/auth/auth")
        user_id = (data or {}).get("userId") if isinstance(data, dict) else None
        if not user_id:  # no token also answers 200 with userId null (reference §1)
            raise InvoiceboxError("unauthorized", UPSTREAM_MESSAGES["unauthorized"],
                                  code="unauthorized", request_id=self.last_request_id)
        return str(user_id)

    def _check_filtered(self, rows: list[Any], what: str, **asked: str | None) -> None:
        """A row that doesn't match the filter we sent means the server ignored it: acting on
        "the first row" would read, refund or ship the wrong order. Refuse the whole answer."""
        for row in rows:
            for name, value in asked.items():
                got = getattr(row, name, None)
                if value and str(got).lower() != str(value).lower():
                    raise self._bad_response(
                        f"Инвойсбокс вернул {what} с {name}={got!s:.40}, хотя запрошен "
                        f"{name}={value!s:.40}: фильтр не применён, ответ не используется")

    def _parse(self, parse: Callable[[Any], T], raw: Any, what: str, *, write: bool = False) -> T:
        try:
            return parse(raw)
        except (ValidationError, ValueError) as error:
            logger.warning("unexpected %s shape from Invoicebox (request %s): %s",
                           what, self.last_request_id, str(error)[:500])
            raise self._bad_response(f"ответ Инвойсбокс не похож на {what}",
                                     write=write) from None

    def _rows(self, data: Any, detail: str) -> list[Any]:
        if not isinstance(data, list):
            raise self._bad_response(detail)
        return data

    def _meta(
        self, envelope: dict[str, Any], count: int, page: int, page_size: int, *, rows: int
    ) -> tuple[int, int, int]:
        """(totalCount, page, pageSize) from metaData, checked against what was asked for.

        The docs name the paging parameters page/pageSize, the vendor's code _page/_pageSize;
        a server that ignored ours answers another page or size, or more rows than asked.
        Counting on such an answer would undercount what was shipped or refunded, or count a
        row twice, so it is refused instead of guessed at."""
        meta = envelope.get("metaData") or {}
        try:
            total, got_page, got_size = (int(meta.get("totalCount", count)),
                                         int(meta.get("page", page)),
                                         int(meta.get("pageSize", page_size)))
        except (AttributeError, TypeError, ValueError):
            raise self._bad_response("metaData списка не прочитать") from None
        if got_page != page or got_size != page_size or rows > page_size:
            raise self._bad_response(
                f"запрошена страница {page} по {page_size} строк, а пришла страница {got_page} "
                f"по {got_size} ({rows} строк): постраничная выборка не выполнена, ответ не "
                "используется")
        return total, got_page, got_size

    def _bad_response(self, detail: str, *, write: bool = False) -> InvoiceboxError:
        kind: ErrorKind = "unknown_outcome" if write else "bad_response"
        return InvoiceboxError(kind, f"Инвойсбокс ответил непонятно: {detail}",
                               http_status=self.last_status, request_id=self.last_request_id)

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: list[tuple[str, str]] | None = None,
        body: dict[str, Any] | None = None,
        write: bool = False,
    ) -> tuple[Any, dict[str, Any]]:
        # Writes get one attempt: a retry could create a second order (recovery is by lookup).
        attempts = 1 if write else self.read_attempts
        if not self._token:
            # Cleared when the contour's address changed: nothing goes out without a token.
            raise InvoiceboxError(
                "unauthorized", "токен Инвойсбокс не задан: адрес API или режим контура "
                "изменились, владельцу нужно ввести токен заново", code="token_missing")
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        content = None
        if body is not None:
            content = simplejson.dumps(body, use_decimal=True, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(1, attempts + 1):
            self._admit()
            try:
                response = _observer(
                    self._http.request, method, path, params=params, content=content,
                    headers=headers,
                )
            except httpx.TimeoutException:
                error = self._transport_failure(write, "Инвойсбокс не ответил вовремя")
            except httpx.HTTPError as exc:
                error = self._transport_failure(
                    write, f"нет связи с Инвойсбокс ({type(exc).__name__})"
                )
            else:
                self.last_status = response.status_code
                self.last_request_id = response.headers.get("x-request-id", "")
                limits.record(self._account, server_fault=response.status_code >= 500)
                if response.status_code < 300:
                    return self._decode(response, write)
                error = self._http_error(response, write)
            if self.last_status is None:
                limits.record(self._account, server_fault=True)
            if attempt == attempts or not self._retryable(error):
                raise error
            time.sleep(self._delay(attempt, error))
        raise AssertionError("unreachable")  # pragma: no cover

    def _admit(self) -> None:
        """Nothing is sent past the shared budget or into an open circuit: fail fast instead."""
        refusal = limits.admit(self._account)
        if refusal is None:
            return
        self.last_status = None
        if refusal.reason == "rate":
            raise InvoiceboxError(
                "rate_limited",
                f"лимит запросов к Инвойсбокс исчерпан; повторите через {refusal.retry_after:g} с",
                retry_after=refusal.retry_after,
            )
        raise InvoiceboxError(
            "unavailable",
            f"Инвойсбокс не отвечает, вызовы приостановлены на {refusal.retry_after:.0f} с",
            retry_after=refusal.retry_after,
        )

    def _transport_failure(self, write: bool, message: str) -> InvoiceboxError:
        self.last_status = None
        kind: ErrorKind = "unknown_outcome" if write else "unavailable"
        return InvoiceboxError(kind, message)

    def _retryable(self, error: InvoiceboxError) -> bool:
        if error.kind == "unavailable":
            return error.retry_after is None or error.retry_after <= MAX_RETRY_AFTER_SECONDS
        return error.kind == "rate_limited" and (error.retry_after or 0) <= MAX_RETRY_AFTER_SECONDS

    def _delay(self, attempt: int, error: InvoiceboxError) -> float:
        if error.retry_after is not None:
            return error.retry_after
        return self.backoff_seconds * 2 ** (attempt - 1)

    def _decode(self, response: httpx.Response, write: bool) -> tuple[Any, dict[str, Any]]:
        if len(response.content) > MAX_BODY_BYTES:
            raise self._bad_response("ответ больше 4 МБ", write=write)
        try:
            envelope = json.loads(response.content, parse_float=Decimal)
        except ValueError:
            logger.warning("non-JSON success body from Invoicebox (request %s): %r",
                           self.last_request_id, response.content[:300])
            raise self._bad_response("тело ответа не JSON", write=write) from None
        if not isinstance(envelope, dict) or "data" not in envelope:
            raise self._bad_response("нет поля data", write=write)
        return envelope["data"], envelope

    def _http_error(self, response: httpx.Response, write: bool) -> InvoiceboxError:
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
        retry_after = _retry_after(response)
        common = {"code": code, "http_status": status, "request_id": self.last_request_id,
                  "fields": fields, "retry_after": retry_after}
        text = UPSTREAM_MESSAGES.get(code) or (
            f"Инвойсбокс отказал: HTTP {status}" + (f", код {code}" if code else "")
        )
        if status < 400:  # a redirect: the base URL is wrong, never follow it with a token
            return self._bad_response(f"перенаправление HTTP {status}", write=write)
        if status == 401:
            return InvoiceboxError("unauthorized", UPSTREAM_MESSAGES["unauthorized"], **common)
        if status == 403:
            return InvoiceboxError("forbidden", UPSTREAM_MESSAGES["forbidden"], **common)
        if status == 404:
            return InvoiceboxError("not_found", text, **common)
        if status == 429:
            return InvoiceboxError("rate_limited", "Инвойсбокс ограничил частоту запросов", **common)
        if status in RETRYABLE_STATUSES and not (write and status >= 500):
            # A write answered 5xx may have been stored before the failure (issue 27): it is
            # an unknown outcome below, recovered by lookup, never a plain "unavailable".
            return InvoiceboxError("unavailable", f"Инвойсбокс временно недоступен (HTTP {status})",
                                   **common)
        if status >= 500:
            kind: ErrorKind = "unknown_outcome" if write else "unavailable"
            return InvoiceboxError(kind, f"сбой на стороне Инвойсбокс (HTTP {status})", **common)
        logger.info("Invoicebox refused (HTTP %s, code %s, request %s): %s",
                    status, code, self.last_request_id, message[:200])
        return InvoiceboxError("rejected", text, **common)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None

