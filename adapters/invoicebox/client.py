"""Invoicebox API v3 client on httpx: typed errors, Decimal money, retries only where safe."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

import httpx
import simplejson
from django.conf import settings
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from adapters.invoicebox import connections, limits
from adapters.invoicebox.money import to_kopecks, to_roubles

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 4 * 1024 * 1024
RETRYABLE_STATUSES = frozenset({408, 425, 429, 503})
MAX_RETRY_AFTER_SECONDS = 60
# Refund lists are read whole; the cap only stops a server whose paging never ends.
REFUND_PAGE_SIZE = 100
MAX_REFUND_PAGES = 50

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


class _Upstream(BaseModel):
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


def _kopecks_or_none(value: Decimal | None) -> int | None:
    return None if value is None else to_kopecks(value)


class UpstreamCustomer(_Upstream):
    type: str | None = None
    name: str | None = None
    vat_number: str | None = Field(None, alias="vatNumber")


class UpstreamOrder(_Upstream):
    id: str
    merchant_order_id: str = Field("", alias="merchantOrderId")
    status: str
    amount: Money
    vat_amount: Money | None = Field(None, alias="vatAmount")
    currency_id: str = Field("", alias="currencyId")
    description: str | None = None
    created_at: str | None = Field(None, alias="createdAt")
    expiration_date: str | None = Field(None, alias="expirationDate")
    paid_at: str | None = Field(None, alias="paidAt")
    payment_url: str | None = Field(None, alias="paymentUrl")
    customer: UpstreamCustomer | None = None


@dataclass(frozen=True)
class Order:
    """An order as the project sees it: money in kopecks."""

    id: str
    merchant_order_id: str
    status: str
    amount: int
    vat_amount: int | None
    currency: str
    description: str | None
    created_at: str | None
    expiration_date: str | None
    paid_at: str | None
    payment_url: str | None
    customer_name: str | None
    customer_vat_number: str | None

    @classmethod
    def parse(cls, raw: Any) -> Order:
        upstream = UpstreamOrder.model_validate(raw)
        return cls(
            id=upstream.id,
            merchant_order_id=upstream.merchant_order_id,
            status=upstream.status,
            amount=to_kopecks(upstream.amount),
            vat_amount=None if upstream.vat_amount is None else to_kopecks(upstream.vat_amount),
            currency=upstream.currency_id,
            description=upstream.description,
            created_at=upstream.created_at,
            expiration_date=upstream.expiration_date,
            paid_at=upstream.paid_at,
            payment_url=upstream.payment_url,
            customer_name=upstream.customer.name if upstream.customer else None,
            customer_vat_number=upstream.customer.vat_number if upstream.customer else None,
        )


@dataclass(frozen=True)
class OrderPage:
    orders: list[Order]
    total_count: int
    page: int
    page_size: int


@dataclass(frozen=True)
class BasketLine:
    sku: str
    name: str
    measure: str
    measure_code: str
    quantity: Decimal
    amount: int
    amount_wo_vat: int
    total_amount: int
    total_vat_amount: int
    vat_code: str
    type: str
    payment_type: str

    def as_api(self) -> dict[str, Any]:
        return {
            "sku": self.sku, "name": self.name, "measure": self.measure,
            "measureCode": self.measure_code, "quantity": self.quantity,
            "amount": to_roubles(self.amount), "amountWoVat": to_roubles(self.amount_wo_vat),
            "totalAmount": to_roubles(self.total_amount),
            "totalVatAmount": to_roubles(self.total_vat_amount),
            "vatCode": self.vat_code, "type": self.type, "paymentType": self.payment_type,
        }


@dataclass(frozen=True)
class Customer:
    type: str
    name: str | None = None
    vat_number: str | None = None
    tax_registration_reason_code: str | None = None
    registration_address: str | None = None
    email: str | None = None
    phone: str | None = None

    def as_api(self) -> dict[str, Any]:
        pairs = {
            "type": self.type, "name": self.name, "vatNumber": self.vat_number,
            "taxRegistrationReasonCode": self.tax_registration_reason_code,
            "registrationAddress": self.registration_address, "email": self.email,
            "phone": self.phone,
        }
        return {k: v for k, v in pairs.items() if v is not None}


@dataclass(frozen=True)
class NewOrder:
    merchant_order_id: str
    description: str
    amount: int
    vat_amount: int
    currency_id: str
    language_id: str
    expiration_date: datetime
    basket: list[BasketLine]
    customer: Customer
    urls: dict[str, str] = field(default_factory=dict)

    def as_api(self, merchant_id: str) -> dict[str, Any]:
        body: dict[str, Any] = {
            "merchantId": merchant_id,
            "merchantOrderId": self.merchant_order_id,
            "description": self.description,
            "amount": to_roubles(self.amount),
            "vatAmount": to_roubles(self.vat_amount),
            "currencyId": self.currency_id,
            "languageId": self.language_id,
            "expirationDate": atom(self.expiration_date),
            "basketItems": [line.as_api() for line in self.basket],
            "customer": self.customer.as_api(),
        }
        api_names = {"success_url": "successUrl", "fail_url": "failUrl",
                      "return_url": "returnUrl", "notification_url": "notificationUrl"}
        body.update({api_names[k]: v for k, v in self.urls.items()})
        return body


@dataclass(frozen=True)
class OrderUpdate:
    """An UpdateOrderRequest (docs merchant/order/update.md): only the fields that change."""

    description: str | None = None
    amount: int | None = None
    vat_amount: int | None = None
    expiration_date: datetime | None = None
    basket: list[BasketLine] | None = None
    customer: Customer | None = None

    def as_api(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        if self.description is not None:
            body["description"] = self.description
        if self.amount is not None:
            body["amount"] = to_roubles(self.amount)
        if self.vat_amount is not None:
            body["vatAmount"] = to_roubles(self.vat_amount)
        if self.expiration_date is not None:
            body["expirationDate"] = atom(self.expiration_date)
        if self.basket is not None:
            body["basketItems"] = [line.as_api() for line in self.basket]
        if self.customer is not None:
            body["customer"] = self.customer.as_api()
        return body


class UpstreamCompany(_Upstream):
    id: Text | None = None
    vat_number: Text | None = Field(None, alias="vatNumber")
    tax_registration_reason_code: Text | None = Field(None, alias="taxRegistrationReasonCode")
    name: str | None = None
    name_full: str | None = Field(None, alias="nameFull")
    registration_number: Text | None = Field(None, alias="registrationNumber")
    registration_date: str | None = Field(None, alias="registrationDate")
    registration_address: str | None = Field(None, alias="registrationAddress")
    post_address: str | None = Field(None, alias="postAddress")
    post_address_zip: Text | None = Field(None, alias="postAddressZip")


@dataclass(frozen=True)
class Company:
    """A counterparty from the Invoicebox directory (by INN); an ИП has no KPP."""

    id: str | None
    inn: str | None
    kpp: str | None
    name: str | None
    name_full: str | None
    registration_number: str | None
    registration_date: str | None
    registration_address: str | None
    post_address: str | None
    post_address_zip: str | None

    @classmethod
    def parse(cls, raw: Any) -> Company:
        up = UpstreamCompany.model_validate(raw)
        return cls(
            id=up.id, inn=up.vat_number, kpp=up.tax_registration_reason_code or None,
            name=up.name, name_full=up.name_full, registration_number=up.registration_number,
            registration_date=up.registration_date, registration_address=up.registration_address,
            post_address=up.post_address, post_address_zip=up.post_address_zip,
        )


class UpstreamShipmentItem(_Upstream):
    sku: Text
    name: str
    quantity: Quantity
    total_amount: Money = Field(alias="totalAmount")
    total_vat_amount: Money = Field(alias="totalVatAmount")


class UpstreamShipment(_Upstream):
    id: Text
    order_id: Text = Field(alias="orderId")
    # The docs show only {id, merchantId, …}: status, final and the sums are read when sent.
    status: str = ""
    final: bool = False
    amount: Money | None = None
    vat_amount: Money | None = Field(None, alias="vatAmount")
    document_number: Text | None = Field(None, alias="documentNumber")
    document_date: str | None = Field(None, alias="documentDate")
    created_at: str | None = Field(None, alias="createdAt")
    basket_items: list[UpstreamShipmentItem] = Field(default_factory=list, alias="basketItems")


@dataclass(frozen=True)
class ShipmentItem:
    sku: str
    name: str
    quantity: Decimal
    total_amount: int
    total_vat_amount: int


@dataclass(frozen=True)
class Shipment:
    """A shipment (отгрузка) of an order: money in kopecks; the id is the API's integer as text."""

    id: str
    order_id: str
    status: str
    final: bool
    amount: int
    vat_amount: int | None
    document_number: str | None
    document_date: str | None
    created_at: str | None
    items: list[ShipmentItem]

    @classmethod
    def parse(cls, raw: Any) -> Shipment:
        up = UpstreamShipment.model_validate(raw)
        items = [
            ShipmentItem(sku=i.sku, name=i.name, quantity=i.quantity,
                         total_amount=to_kopecks(i.total_amount),
                         total_vat_amount=to_kopecks(i.total_vat_amount))
            for i in up.basket_items
        ]
        # Without a sent amount the shipment is worth its lines (that is how the API sums it).
        amount = to_kopecks(up.amount) if up.amount is not None else sum(
            i.total_amount for i in items)
        return cls(
            id=up.id, order_id=up.order_id, status=up.status, final=up.final, amount=amount,
            vat_amount=_kopecks_or_none(up.vat_amount), document_number=up.document_number,
            document_date=up.document_date, created_at=up.created_at, items=items,
        )


@dataclass(frozen=True)
class ShipmentPage:
    shipments: list[Shipment]
    total_count: int
    page: int
    page_size: int


@dataclass(frozen=True)
class NewShipment:
    order_id: str
    basket: list[BasketLine]
    final: bool = False
    document_number: str | None = None
    document_date: date | None = None

    def as_api(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "orderId": self.order_id,
            "basketItems": [line.as_api() for line in self.basket],
            "final": self.final,
        }
        if self.document_number is not None:
            body["documentNumber"] = self.document_number
        if self.document_date is not None:
            # [G] the docs do not show the format; a calendar date goes as Y-m-d.
            body["documentDate"] = self.document_date.isoformat()
        return body


class UpstreamRefundableItem(_Upstream):
    sku: Text
    name: str
    measure: str
    measure_code: Text = Field(alias="measureCode")
    quantity: Quantity
    amount: Money
    amount_wo_vat: Money = Field(alias="amountWoVat")
    total_amount: Money = Field(alias="totalAmount")
    total_vat_amount: Money = Field(alias="totalVatAmount")
    vat_code: str = Field(alias="vatCode")
    type: Text
    payment_type: str = Field(alias="paymentType")
    # Only the MCP server names these (reference §3, open question 10).
    available_amount: Money | None = Field(None, alias="availableAmount")
    available_vat_amount: Money | None = Field(None, alias="availableVatAmount")


@dataclass(frozen=True)
class RefundableItem(BasketLine):
    """An item of a paid order and what of it can still be refunded (kopecks)."""

    available_amount: int = 0
    available_vat_amount: int | None = None

    @classmethod
    def parse(cls, raw: Any) -> RefundableItem:
        up = UpstreamRefundableItem.model_validate(raw)
        total = to_kopecks(up.total_amount)
        return cls(
            sku=up.sku, name=up.name, measure=up.measure, measure_code=up.measure_code,
            quantity=up.quantity, amount=to_kopecks(up.amount),
            amount_wo_vat=to_kopecks(up.amount_wo_vat), total_amount=total,
            total_vat_amount=to_kopecks(up.total_vat_amount), vat_code=up.vat_code,
            type=up.type, payment_type=up.payment_type,
            # The docs say plain BasketItems: without the field, the whole line is available.
            available_amount=total if up.available_amount is None else to_kopecks(
                up.available_amount),
            available_vat_amount=_kopecks_or_none(up.available_vat_amount),
        )


class UpstreamRefund(_Upstream):
    id: Text
    parent_id: Text = Field(alias="parentId")
    merchant_order_id: str = Field("", alias="merchantOrderId")
    status: str
    amount: Money
    vat_amount: Money | None = Field(None, alias="vatAmount")
    currency_id: str = Field("", alias="currencyId")
    created_at: str | None = Field(None, alias="createdAt")


@dataclass(frozen=True)
class Refund:
    """A refund (возврат) of a paid order: money in kopecks."""

    id: str
    parent_id: str
    merchant_order_id: str
    status: str
    amount: int
    vat_amount: int | None
    currency: str
    created_at: str | None

    @classmethod
    def parse(cls, raw: Any) -> Refund:
        up = UpstreamRefund.model_validate(raw)
        return cls(
            id=up.id, parent_id=up.parent_id, merchant_order_id=up.merchant_order_id,
            status=up.status, amount=to_kopecks(up.amount),
            vat_amount=_kopecks_or_none(up.vat_amount), currency=up.currency_id,
            created_at=up.created_at,
        )


@dataclass(frozen=True)
class NewRefund:
    parent_id: str
    merchant_order_id: str
    description: str
    amount: int
    vat_amount: int
    basket: list[BasketLine]

    def as_api(self) -> dict[str, Any]:
        return {
            "parentId": self.parent_id,
            "merchantOrderId": self.merchant_order_id,
            "description": self.description,
            "amount": to_roubles(self.amount),
            "vatAmount": to_roubles(self.vat_amount),
            "basketItems": [line.as_api() for line in self.basket],
        }


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


class InvoiceboxClient:
    """One merchant's view of the API. Cheap to build; make one per gateway call."""

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

    def __enter__(self) -> InvoiceboxClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    # -- endpoints -------------------------------------------------------------------------

    def check_auth(self) -> str:
        data, _ = self._request("GET", "/security/api/auth/auth")
        user_id = (data or {}).get("userId") if isinstance(data, dict) else None
        if not user_id:  # no token also answers 200 with userId null (reference §1)
            raise InvoiceboxError("unauthorized", UPSTREAM_MESSAGES["unauthorized"],
                                  code="unauthorized", request_id=self.last_request_id)
        return str(user_id)

    def get_order(self, order_id: str) -> Order | None:
        # The documented way to read one order is the filter by id (reference §2).
        page = self.find_orders(order_id=order_id, page_size=1)
        return page.orders[0] if page.orders else None

    def find_orders(
        self,
        *,
        order_id: str | None = None,
        merchant_order_id: str | None = None,
        statuses: list[str] | tuple[str, ...] = (),
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        expiration_from: datetime | None = None,
        expiration_to: datetime | None = None,
        paid_from: datetime | None = None,
        paid_to: datetime | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> OrderPage:
        params: list[tuple[str, str]] = [
            ("_page", str(page)), ("_pageSize", str(page_size)), ("_order[createdAt]", "desc"),
        ]
        if order_id:
            params.append(("id", order_id))
        if merchant_order_id:
            params.append(("merchantOrderId", merchant_order_id))
        params.extend(("status[]", status) for status in statuses)
        if created_from:
            params.append(("createdAt[_ge]", atom(created_from)))
        if created_to:
            params.append(("createdAt[_le]", atom(created_to)))
        # Documented filters (docs merchant/order/get.md): expirationDate and paidAt.
        for name, bounds in (("expirationDate", (expiration_from, expiration_to)),
                             ("paidAt", (paid_from, paid_to))):
            params.extend((f"{name}[{op}]", atom(moment))
                          for op, moment in zip(("_ge", "_le"), bounds, strict=True) if moment)
        data, envelope = self._request("GET", "/filter/api/order/order", params=params)
        if not isinstance(data, list):
            raise self._bad_response("список счетов пришёл не массивом")
        orders = [self._parse_order(row) for row in data]
        self._check_filtered(orders, "счёт", id=order_id, merchant_order_id=merchant_order_id)
        meta = envelope.get("metaData") or {}
        return OrderPage(
            orders=orders,
            total_count=int(meta.get("totalCount", len(orders))),
            page=int(meta.get("page", page)),
            page_size=int(meta.get("pageSize", page_size)),
        )

    def create_order(self, order: NewOrder) -> Order:
        data, _ = self._request(
            "POST", "/billing/api/order/order", body=order.as_api(self.merchant_id), write=True
        )
        return self._parse_order(data, write=True)

    def update_order(self, order_id: str, update: OrderUpdate) -> Order:
        data, _ = self._request("PUT", f"/billing/api/order/order/{order_id}",
                                body=update.as_api(), write=True)
        return self._parse_order(data, write=True)

    def cancel_order(self, order_id: str) -> Order:
        data, _ = self._request("DELETE", f"/billing/api/order/order/{order_id}", write=True)
        return self._parse_order(data, write=True)

    def lookup_company(self, inn: str) -> list[Company]:
        """The directory's rows for an INN; an unknown INN is an empty list, not an error."""
        data, _ = self._request("GET", "/filter/api/counterparty-detail",
                                params=[("vatNumber", inn)])
        rows = self._rows(data, "реквизиты пришли не массивом")
        return [self._parse(Company.parse, row, "реквизиты компании") for row in rows]

    def find_shipments(
        self, *, order_id: str | None = None, page: int = 1, page_size: int = 50
    ) -> ShipmentPage:
        # Oldest first: shipments made while paging land on a later page, none is skipped.
        params: list[tuple[str, str]] = [
            ("_page", str(page)), ("_pageSize", str(page_size)), ("_order[id]", "asc"),
        ]
        if order_id:
            params.append(("orderId", order_id))
        data, envelope = self._request("GET", "/filter/api/order/shipment", params=params)
        rows = self._rows(data, "список отгрузок пришёл не массивом")
        shipments = [self._parse(Shipment.parse, row, "отгрузку") for row in rows]
        # Another order's shipments would be counted as shipped from this one.
        self._check_filtered(shipments, "отгрузку", order_id=order_id)
        total, page, page_size = self._meta(envelope, len(shipments), page, page_size)
        return ShipmentPage(shipments=shipments, total_count=total, page=page,
                            page_size=page_size)

    def create_shipment(self, shipment: NewShipment) -> Shipment:
        data, _ = self._request("POST", "/billing/api/order/shipment", body=shipment.as_api(),
                                write=True)
        return self._parse(Shipment.parse, data, "отгрузку", write=True)

    def refundable_items(self, order_id: str) -> list[RefundableItem]:
        data, _ = self._request("GET", f"/billing/api/order/order/{order_id}/refund-basket-item")
        rows = self._rows(data, "позиции к возврату пришли не массивом")
        return [self._parse(RefundableItem.parse, row, "позицию к возврату") for row in rows]

    def create_refund(self, refund: NewRefund) -> Refund:
        data, _ = self._request("POST", "/billing/api/order/refund-order", body=refund.as_api(),
                                write=True)
        return self._parse(Refund.parse, data, "возврат", write=True)

    def find_refunds(
        self, *, parent_id: str | None = None, merchant_order_id: str | None = None
    ) -> list[Refund]:
        """Every refund matching the filters, oldest first (all pages are read)."""
        filters: list[tuple[str, str]] = []
        if parent_id:
            filters.append(("parentId", parent_id))
        if merchant_order_id:
            filters.append(("merchantOrderId", merchant_order_id))
        refunds: list[Refund] = []
        for page in range(1, MAX_REFUND_PAGES + 1):
            params = [("_page", str(page)), ("_pageSize", str(REFUND_PAGE_SIZE)),
                      ("_order[createdAt]", "asc"), *filters]
            data, envelope = self._request("GET", "/filter/api/order/refund-order",
                                           params=params)
            rows = self._rows(data, "список возвратов пришёл не массивом")
            found = [self._parse(Refund.parse, row, "возврат") for row in rows]
            self._check_filtered(found, "возврат", parent_id=parent_id,
                                 merchant_order_id=merchant_order_id)
            refunds.extend(found)
            total, _, _ = self._meta(envelope, len(refunds), page, REFUND_PAGE_SIZE)
            if not rows or len(refunds) >= total:
                break
        return refunds

    # -- transport -------------------------------------------------------------------------

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

    def _parse_order(self, raw: Any, *, write: bool = False) -> Order:
        return self._parse(Order.parse, raw, "счёт", write=write)

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
        self, envelope: dict[str, Any], count: int, page: int, page_size: int
    ) -> tuple[int, int, int]:
        """(totalCount, page, pageSize) from metaData; what was asked for when it is absent."""
        meta = envelope.get("metaData") or {}
        try:
            return (int(meta.get("totalCount", count)), int(meta.get("page", page)),
                    int(meta.get("pageSize", page_size)))
        except (AttributeError, TypeError, ValueError):
            raise self._bad_response("metaData списка не прочитать") from None

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
        if status in RETRYABLE_STATUSES:
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


def is_local_sandbox(base_url: str) -> bool:
    """True for this project's own sandbox, reached in-process instead of over the network."""
    parts = urlsplit(base_url)
    own_host = urlsplit(settings.GATEWAY_SITE_URL).hostname
    local_hosts = {"127.0.0.1", "localhost", "::1", "testserver", own_host}
    mount = urlsplit(settings.INVOICEBOX_SANDBOX_BASE_URL).path.rstrip("/")
    return parts.hostname in local_hosts and parts.path.rstrip("/").startswith(mount)


def make_client(*, base_url: str, token: str, merchant_id: str) -> InvoiceboxClient:
    transport = None
    if settings.INVOICEBOX_SANDBOX_IN_PROCESS and is_local_sandbox(base_url):
        from adapters.invoicebox.sandbox import InProcessTransport

        transport = InProcessTransport()
    return InvoiceboxClient(
        base_url=base_url, token=token, merchant_id=merchant_id, transport=transport
    )
