"""Signed payment notifications: the body, the target URL, delivery over HTTP or in-process."""

from __future__ import annotations

import io
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import simplejson
from django.conf import settings
from django.utils import timezone

from invoicebox.hosts import TEST_CLIENT_HOST, is_loopback
from invoicebox.notify import SIGNATURE_HEADER, sign
from sandbox.models import SandboxAccount, SandboxOrder
from sandbox.order_rows import order_payload
from sandbox.responses import JSON_CONTENT_TYPE

# One logger for the whole sandbox, named as before it became a package.
logger = logging.getLogger("sandbox")


@dataclass(frozen=True)
class Delivery:
    """What became of one notification: where it went and what the receiver answered."""

    url: str
    http_status: int | None = None
    answer: Any = None
    error: str = ""
    in_process: bool = False

    @property
    def accepted(self) -> bool:
        return (
            self.http_status == 200
            and isinstance(self.answer, dict)
            and (self.answer.get("status") == "success")
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "http_status": self.http_status,
            "answer": self.answer,
            "error": self.error,
            "in_process": self.in_process,
        }


NOTIFICATION_TIMEOUT_SECONDS = 20.0  # Invoicebox waits 20 s for the answer (vendor docs)


def _notification_target(order: SandboxOrder) -> str:
    """The order's own notificationUrl, else the shop's (the first account of the merchant
    that has one: accounts of one merchant share the shop's settings)."""
    request = simplejson.loads(order.request_json, use_decimal=True)
    own = request.get("notificationUrl")
    if isinstance(own, str) and own.strip():
        return own.strip()
    account = (
        SandboxAccount.objects.filter(merchant_id=order.merchant_id)
        .exclude(notification_url="")
        .order_by("pk")
        .first()
    )
    return account.notification_url if account is not None else ""


def notification_body(order_id: str | uuid.UUID) -> bytes:
    """The OrderNotification of an order as the sandbox sends it: the order itself (the
    vendor docs: "shaped like OrderResponse"); its `id` is the order id, so a resend is a duplicate."""
    order = SandboxOrder.objects.filter(order_id=uuid.UUID(str(order_id))).first()
    if order is None:
        raise LookupError(f"no sandbox order {order_id}")
    payload = order_payload(order, timezone.now())
    return simplejson.dumps(
        payload, use_decimal=True, ensure_ascii=False, separators=(",", ":")
    ).encode("utf-8")


def send_notification(order_id: str | uuid.UUID) -> Delivery:
    """Sign and deliver the order's notification; the first outcome is logged and returned.

    A URL of this very gateway is delivered in-process (see _deliver_in_process); any other
    over HTTP with Invoicebox's 20 s timeout. A delivery to be retried (out_of_service, 5xx, no
    answer) is sent again in the background at INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS,
    as Invoicebox retries (up to 10 times in 24 h); by default it is not.
    `manage.py sandbox_pay --resend` sends the same notification again by hand.
    """
    delivery = deliver(order_id)
    schedule = list(settings.INVOICEBOX_SANDBOX_NOTIFICATION_RETRY_SECONDS)
    if schedule and delivery.url and to_retry(delivery):
        threading.Thread(
            target=_retry, args=(str(order_id), schedule), daemon=True, name="sandbox-notify"
        ).start()
    return delivery


def to_retry(delivery: Delivery) -> bool:
    """Invoicebox retries an answer that says the shop could not take it now: out_of_service,
    a 5xx, or none at all. A definitive refusal (signature_error, order_not_found...) is not
    retried: sending the same body again cannot change it."""
    if delivery.accepted:
        return False
    answer = delivery.answer if isinstance(delivery.answer, dict) else {}
    return (
        delivery.http_status is None
        or delivery.http_status >= 500
        or answer.get("code") == "out_of_service"
    )


def _retry(order_id: str, schedule: list[float]) -> None:
    from django.db import connection

    try:
        for attempt, seconds in enumerate(schedule, start=1):
            time.sleep(seconds)
            delivery = deliver(order_id)
            logger.info("sandbox: notification for order %s, retry %s", order_id, attempt)
            if not to_retry(delivery):
                return
        logger.warning("sandbox: notification for order %s not accepted; retries over", order_id)
    except Exception:  # a retry thread must never take the sandbox down
        logger.exception("sandbox: notification retry for order %s failed", order_id)
    finally:
        connection.close()


def deliver(order_id: str | uuid.UUID) -> Delivery:
    """Sign and deliver the order's notification once; the outcome is logged and returned."""
    order = SandboxOrder.objects.filter(order_id=uuid.UUID(str(order_id))).first()
    if order is None:
        raise LookupError(f"no sandbox order {order_id}")
    url = _notification_target(order)
    if not url:
        logger.info("sandbox: order %s has no notification URL; nothing sent", order.order_id)
        return Delivery(url="", error="no notification URL (order or shop settings)")
    body = notification_body(order.order_id)
    headers = {
        "Content-Type": JSON_CONTENT_TYPE,
        SIGNATURE_HEADER: sign(body, settings.INVOICEBOX_SANDBOX_NOTIFICATION_KEY),
        "User-Agent": "Invoicebox-Sandbox/1.0",
    }
    if settings.INVOICEBOX_SANDBOX_IN_PROCESS and _is_own_url(url):
        delivery = _deliver_in_process(url, body, headers)
    else:
        delivery = _deliver_over_http(url, body, headers)
    logger.info(
        "sandbox: notification for order %s to %s: HTTP %s %s %s",
        order.order_id,
        url,
        delivery.http_status,
        delivery.answer,
        delivery.error,
    )
    return delivery


def _is_own_url(url: str) -> bool:
    parts, own = urlsplit(url), urlsplit(settings.GATEWAY_SITE_URL)
    if parts.hostname == TEST_CLIENT_HOST:
        return True
    same_host = parts.hostname == own.hostname or (
        is_loopback(parts.hostname) and is_loopback(own.hostname)
    )
    default = 443 if parts.scheme == "https" else 80
    return same_host and (parts.port or default) == (own.port or default)


def _deliver_over_http(url: str, body: bytes, headers: dict[str, str]) -> Delivery:
    try:
        response = httpx.post(
            url,
            content=body,
            headers=headers,
            timeout=NOTIFICATION_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.HTTPError as exc:
        return Delivery(url=url, error=f"{type(exc).__name__}: {exc}"[:300])
    try:
        answer: Any = response.json()
    except ValueError:
        answer = response.text[:300]
    return Delivery(url=url, http_status=response.status_code, answer=answer)


def _deliver_in_process(url: str, body: bytes, headers: dict[str, str]) -> Delivery:
    """Call this gateway's own view in this thread, as the client's InProcessTransport does.

    A sync view under ASGI runs on one thread: a notification sent over the network from
    inside it (say, the `_sandbox/pay` endpoint) to the same server would wait for that very
    thread forever. The URL is resolved, not imported: the sandbox imports nothing of tools.
    """
    from django.core.handlers.wsgi import WSGIRequest
    from django.urls import Resolver404, resolve

    parts = urlsplit(url)
    try:
        match = resolve(parts.path)
    except Resolver404:
        return Delivery(url=url, http_status=404, error="no such route", in_process=True)
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": parts.path,
        "SCRIPT_NAME": "",
        "QUERY_STRING": parts.query,
        "SERVER_NAME": parts.hostname or "testserver",
        "SERVER_PORT": str(parts.port or 80),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": parts.scheme or "http",
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": headers["Content-Type"],
        **{
            f"HTTP_{name.upper().replace('-', '_')}": value
            for name, value in headers.items()
            if name != "Content-Type"
        },
    }
    try:
        response = match.func(WSGIRequest(environ), *match.args, **match.kwargs)
    except Exception as exc:  # the receiver's bug is its own; the payment stands
        logger.exception("sandbox: in-process notification to %s failed", url)
        return Delivery(url=url, error=f"{type(exc).__name__}", in_process=True)
    content = getattr(response, "content", b"")
    try:
        answer: Any = simplejson.loads(content)
    except ValueError:
        answer = content[:300].decode("utf-8", "replace")
    return Delivery(url=url, http_status=response.status_code, answer=answer, in_process=True)
