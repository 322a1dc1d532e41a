"""Fixtures for the sandbox tests: a valid order body, HTTP and in-process clients, contours."""

from __future__ import annotations

import copy
import datetime as dt
import secrets
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx
import pytest
import simplejson
from django.test import Client

from sandbox.api import (
    DEMO_MERCHANT_ID,
    DEMO_TOKEN,
    InProcessTransport,
    register_account,
)

ORDERS = "/sandbox/invoicebox/v3/billing/api/order/order"
FILTER = "/sandbox/invoicebox/v3/filter/api/order/order"
AUTH = "/sandbox/invoicebox/v3/security/api/auth/auth"
FAULTS = "/sandbox/invoicebox/v3/_sandbox/faults"
USER_AGENT = "GatewayTests/0.1 (pytest)"


def dumps(payload: Any) -> str:
    return simplejson.dumps(payload, use_decimal=True)


def loads(raw: bytes | str) -> Any:
    return simplejson.loads(raw, use_decimal=True)


def reference_order(merchant_id: str = DEMO_MERCHANT_ID, **overrides: Any) -> dict[str, Any]:
    """The create.md example of the reference (3 × 123.96 = 371.88, VAT 61.98 at 20 %)."""
    body: dict[str, Any] = {
        "merchantId": merchant_id,
        "merchantOrderId": f"gw-test-{uuid.uuid4().hex[:12]}",
        "description": "Бронирование номера, 3 ночи",
        "amount": Decimal("371.88"),
        "vatAmount": Decimal("61.98"),
        "currencyId": "RUB",
        "languageId": "ru",
        "expirationDate": (dt.datetime.now(dt.UTC) + dt.timedelta(days=7)).isoformat(),
        "successUrl": "https://merchant.example/ok",
        "failUrl": "https://merchant.example/fail",
        "notificationUrl": "https://merchant.example/invoicebox/notify",
        "customer": {
            "type": "legal",
            "name": "ООО «Ромашка»",
            "phone": "79001112233",
            "email": "buh@romashka.example",
            "vatNumber": "7710044140",
            "taxRegistrationReasonCode": "770201001",
            "registrationAddress": "Санкт-Петербург, Невский пр. 147",
        },
        "basketItems": [
            {
                "sku": "ROOM-STD",
                "name": "Бронирование номера",
                "measure": "шт",
                "measureCode": "796",
                "quantity": 3,
                "amount": Decimal("123.96"),
                "amountWoVat": Decimal("103.3"),
                "totalAmount": Decimal("371.88"),
                "totalVatAmount": Decimal("61.98"),
                "vatCode": "RUS_VAT20",
                "type": "service",
                "paymentType": "full_prepayment",
            }
        ],
    }
    body.update(overrides)
    return copy.deepcopy(body)


@dataclass(frozen=True)
class Contour:
    token: str
    merchant_id: str


@pytest.fixture
def contour(db: None) -> Contour:
    """A sandbox account of its own, as create_contour registers it."""
    found = Contour(token=secrets.token_hex(16), merchant_id=str(uuid.uuid4()))
    register_account(found.token, found.merchant_id)
    return found


@pytest.fixture
def demo() -> Contour:
    return Contour(token=DEMO_TOKEN, merchant_id=DEMO_MERCHANT_ID)


@pytest.fixture
def http(client: Client) -> Callable[..., Any]:
    """Real HTTP through Django's test client; returns the Django response."""

    def send(
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = DEMO_TOKEN,
        user_agent: str | None = USER_AGENT,
        raw: bytes | str | None = None,
        content_type: str = "application/json",
        query: dict[str, Any] | None = None,
    ) -> Any:
        extra: dict[str, str] = {}
        if token is not None:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        if user_agent is not None:
            extra["HTTP_USER_AGENT"] = user_agent
        if content_type:
            # Django sets CONTENT_TYPE only with a body; the API wants it on every request.
            extra["CONTENT_TYPE"] = content_type
        if method == "GET":
            return client.get(path, query or {}, **extra)
        data = raw if raw is not None else (dumps(body) if body is not None else "")
        return client.generic(method, path, data, content_type=content_type, **extra)

    return send


@pytest.fixture
def in_process(db: None) -> Iterator[Callable[..., httpx.Client]]:
    """httpx clients over the in-process transport, one per token."""
    opened: list[httpx.Client] = []

    def make(token: str = DEMO_TOKEN, timeout: float = 5.0) -> httpx.Client:
        opened_client = httpx.Client(
            transport=InProcessTransport(),
            base_url="http://testserver/sandbox/invoicebox",
            headers={
                "Authorization": f"Bearer {token}",
                "User-Agent": USER_AGENT,
                "Content-Type": "application/json",
            },
            timeout=timeout,
        )
        opened.append(opened_client)
        return opened_client

    yield make
    for opened_client in opened:
        opened_client.close()


@pytest.fixture
def ib(in_process: Callable[..., httpx.Client]) -> Iterator[httpx.Client]:
    yield in_process(DEMO_TOKEN)


def post_order(client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
    return client.post(
        "/v3/billing/api/order/order",
        content=dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
