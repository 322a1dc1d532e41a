"""Invoicebox API v3 transport: the httpx client, retries only where safe, checks and decode of
answers (their failures: errors.py; their shapes: shapes.py)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Self, TypeVar

import httpx
import simplejson
from django.conf import settings
from pydantic import ValidationError

from invoicebox import connections, limits
from invoicebox.errors import (
    UPSTREAM_MESSAGES,
    ErrorKind,
    InvoiceboxError,
    bad_response,
    from_http_answer,
    worth_waiting_for,
)
from invoicebox.shapes import PageMeta

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 4 * 1024 * 1024

T = TypeVar("T")
R = TypeVar("R")

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


def _row_id(row: Any) -> str | None:
    ident = getattr(row, "id", None)
    return None if ident is None else str(ident)


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
        api_prefix: str = "v3",
    ) -> None:
        self.merchant_id = merchant_id
        self.read_attempts = read_attempts or settings.INVOICEBOX_READ_ATTEMPTS
        self.backoff_seconds = (
            settings.INVOICEBOX_BACKOFF_SECONDS if backoff_seconds is None else backoff_seconds
        )
        self.last_request_id = ""
        self.last_status: int | None = None
        # Every decoded reply's data, in order: the gateway hands them to the journal, which
        # masks each personal value in them wherever a message repeats it (a summary naming
        # the customer of an order read back).
        self.replies: list[Any] = []
        self._token = token
        self._account = limits.account_key(token)
        # Pooled per upstream account (keep-alive, TLS context built once); a test's or the
        # in-process sandbox's transport, or a custom timeout, gets a client of its own.
        timeout = timeout or settings.INVOICEBOX_TIMEOUT_SECONDS
        self._owns_http = transport is not None or timeout != settings.INVOICEBOX_TIMEOUT_SECONDS
        self._http = (
            connections.build(base_url, timeout=timeout, transport=transport, prefix=api_prefix)
            if self._owns_http
            else connections.shared(base_url, token, timeout=timeout, prefix=api_prefix)
        )

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return connections.send(self._http, method, path, **kwargs)

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
        if not user_id:  # no token also answers 200 with userId null
            raise InvoiceboxError(
                "unauthorized",
                UPSTREAM_MESSAGES["unauthorized"],
                code="unauthorized",
                request_id=self.last_request_id,
            )
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
                        f"{name}={value!s:.40}: фильтр не применён, ответ не используется"
                    )

    def _parse(self, parse: Callable[[Any], T], raw: Any, what: str, *, write: bool = False) -> T:
        try:
            return parse(raw)
        except (ValidationError, ValueError) as error:
            logger.warning(
                "unexpected %s shape from Invoicebox (request %s): %s",
                what,
                self.last_request_id,
                str(error)[:500],
            )
            raise self._bad_response(f"ответ Инвойсбокс не похож на {what}", write=write) from None

    def _rows(self, data: Any, detail: str) -> list[Any]:
        if not isinstance(data, list):
            raise self._bad_response(detail)
        return data

    def _check_merchant(self, rows: list[Any], what: str) -> None:
        """One token may see several shops (the docs, the SDK's FindOrderTest): a row of another
        merchant is never this contour's, whatever the filter did."""
        for row in rows:
            got = getattr(row, "merchant_id", None)
            if got and self.merchant_id and str(got).lower() != self.merchant_id.lower():
                raise self._bad_response(
                    f"Инвойсбокс вернул {what} другого магазина (merchantId {got!s:.40}): "
                    "ответ не используется"
                )

    def _meta(self, envelope: dict[str, Any], page: int, page_size: int, *, rows: int) -> PageMeta:
        """What metaData says of this page, checked against what was asked for.

        Both spellings of the paging names go out (`paging`), so a server that reads either
        pages as asked. A server that read neither answers its own first page at its own size:
        on page 1 that is still page 1 (a larger page is accepted; every row is checked against
        the filter by the caller), but another page number, or another size or more rows past
        page 1, means the rows are not the ones asked for, and the answer is refused."""
        meta = envelope.get("metaData") or {}
        try:
            total = None if meta.get("totalCount") is None else int(meta["totalCount"])
            got_page = None if meta.get("page") is None else int(meta["page"])
            got_size = None if meta.get("pageSize") is None else int(meta["pageSize"])
        except (AttributeError, TypeError, ValueError):
            raise self._bad_response("metaData списка не прочитать") from None
        if (got_page is not None and got_page != page) or (
            page > 1 and (rows > page_size or (got_size is not None and got_size != page_size))
        ):
            raise self._bad_response(
                f"запрошена страница {page} по {page_size} строк, а пришла страница "
                f"{got_page or '?'} по {got_size or '?'} ({rows} строк): постраничная выборка "
                "не выполнена, ответ не используется"
            )
        return PageMeta(
            total=total, page=page, size=got_size if got_size is not None else max(page_size, rows)
        )

    def _refuse_repeats(
        self,
        rows: list[R],
        repeated: str,
        seen: dict[str, R] | None = None,
        *,
        key: Callable[[R], str | None] = _row_id,
    ) -> None:
        """The one rule for repeated rows, in every list read from the upstream: a row whose id
        was seen before on this page, or (with `seen`, filled here) on an earlier page, is a
        bad answer; refused whole, never shown or summed twice, never silently dropped.
        `repeated` says what repeated ("{}" is its id). A row without an id is not judged."""
        page: set[str] = set()
        for row in rows:
            ident = key(row)
            if not ident:
                continue
            if ident in page or (seen is not None and ident in seen):
                raise self._bad_response(
                    repeated.format(ident) + ": ответ не используется, ничего не посчитано"
                )
            page.add(ident)
            if seen is not None:
                seen[ident] = row

    def _read_all(
        self,
        fetch: Callable[[int, int], tuple[list[R], PageMeta]],
        repeated: str,
        *,
        page_size: int,
        max_pages: int,
    ) -> list[R]:
        """Every row of a list that is summed (shipped, refunded): all pages, at the server's
        own page size once it names one; a row seen twice (`repeated` says so, "{}" is its
        id), a list that ends before its totalCount or never ends is refused, never summed."""
        found: dict[str, R] = {}
        size = page_size
        for page in range(1, max_pages + 1):
            batch, meta = fetch(page, size)
            self._refuse_repeats(batch, repeated, found)
            if meta.total is not None and len(found) >= meta.total:
                return list(found.values())
            if meta.total is None and len(batch) < meta.size:
                return list(found.values())
            if not batch:
                raise self._bad_response(
                    f"список кончился на {len(found)} из {meta.total} строк: сумма не посчитана"
                )
            size = meta.size
        raise self._bad_response(
            f"строк больше {max_pages} страниц: все не прочитать, сумма не посчитана"
        )

    def _bad_response(self, detail: str, *, write: bool = False) -> InvoiceboxError:
        return bad_response(
            detail, write=write, http_status=self.last_status, request_id=self.last_request_id
        )

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
                "unauthorized",
                "токен Инвойсбокс не задан: адрес API или режим контура "
                "изменились, владельцу нужно ввести токен заново",
                code="token_missing",
            )
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        content = None
        if body is not None:
            content = simplejson.dumps(body, use_decimal=True, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(1, attempts + 1):
            self._admit()
            try:
                response = _observer(
                    self._send,
                    method,
                    path,
                    params=params,
                    content=content,
                    headers=headers,
                )
            except httpx.TimeoutException:
                error = self._transport_failure(write, "Инвойсбокс не ответил вовремя")
            except httpx.HTTPError as exc:
                if getattr(exc.__cause__, "nothing_sent", False):  # tools/public_http.py
                    raise InvoiceboxError(
                        "unavailable",
                        f"адрес API не разрешён: {exc.__cause__}; внутренние "
                        "адреса открывает GATEWAY_ALLOW_PRIVATE_UPSTREAM=true",
                        code="address_not_public",
                    ) from None
                error = self._transport_failure(
                    write, f"нет связи с Инвойсбокс ({type(exc).__name__})"
                )
            else:
                self.last_status = response.status_code
                self.last_request_id = response.headers.get("x-request-id", "")
                limits.record(self._account, server_fault=response.status_code >= 500)
                if response.status_code < 300:
                    return self._decode(response, write)
                error = from_http_answer(response, write=write, request_id=self.last_request_id)
            if self.last_status is None:
                limits.record(self._account, server_fault=True)
            if attempt == attempts or not worth_waiting_for(error):
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
            logger.warning(
                "non-JSON success body from Invoicebox (request %s): %r",
                self.last_request_id,
                response.content[:300],
            )
            raise self._bad_response("тело ответа не JSON", write=write) from None
        if not isinstance(envelope, dict) or "data" not in envelope:
            raise self._bad_response("нет поля data", write=write)
        self.replies.append(envelope["data"])
        return envelope["data"], envelope
