"""Orders (счета): shapes and the /order/order endpoints."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pydantic import Field

from invoicebox.money import to_kopecks, to_roubles
from invoicebox.shapes import Money, Upstream, atom, paging
from invoicebox.transport import Transport

# (API filter name, Order attribute) of the date filters.
DATE_FILTERS = (
    ("createdAt", "created_at"),
    ("expirationDate", "expiration_date"),
    ("paidAt", "paid_at"),
)


class UpstreamCustomer(Upstream):
    type: str | None = None
    name: str | None = None
    vat_number: str | None = Field(None, alias="vatNumber")


class UpstreamOrder(Upstream):
    id: str
    merchant_id: str | None = Field(None, alias="merchantId")
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
    # The shop the order belongs to, as Invoicebox reports it (the connection check compares it
    # with the contour's merchantId); None when the answer leaves it out.
    merchant_id: str | None = None

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
            merchant_id=upstream.merchant_id,
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
    type: str | int  # service, commodity or a tag-1212 code (invoicebox/fiscal.py)
    payment_type: str
    # Docs BasketItem (merchant/order/create.md:164,179): groupName string(500) groups lines
    # in the closing documents; serviceDate (a date) is when a service was rendered.
    group_name: str | None = None
    service_date: date | None = None
    # Docs BasketItem excise (a sum, float) and the marking group: category, categoryType.
    excise: int | None = None
    category: str | None = None
    category_type: str | None = None

    def as_api(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "sku": self.sku,
            "name": self.name,
            "measure": self.measure,
            "measureCode": self.measure_code,
            "quantity": self.quantity,
            "amount": to_roubles(self.amount),
            "amountWoVat": to_roubles(self.amount_wo_vat),
            "totalAmount": to_roubles(self.total_amount),
            "totalVatAmount": to_roubles(self.total_vat_amount),
            "vatCode": self.vat_code,
            "type": self.type,
            "paymentType": self.payment_type,
        }
        if self.group_name is not None:
            body["groupName"] = self.group_name
        if self.service_date is not None:
            body["serviceDate"] = self.service_date.isoformat()
        if self.excise is not None:
            body["excise"] = to_roubles(self.excise)
        if self.category is not None:
            body["category"] = self.category
            body["categoryType"] = self.category_type
        return body


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
            "type": self.type,
            "name": self.name,
            "vatNumber": self.vat_number,
            "taxRegistrationReasonCode": self.tax_registration_reason_code,
            "registrationAddress": self.registration_address,
            "email": self.email,
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
    # OrderSetting.roundPolicy (docs create.md:202), stated only when a line needs rounding.
    round_policy: str | None = None
    # Docs create.md:103 merchantOrderIdVisible string(256): the number the payer sees.
    merchant_order_id_visible: str | None = None
    # Docs create.md:187-195 InvoiceSetting: customerLocked, customerLockedFields.
    invoice_setting: dict[str, Any] | None = None

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
        # No orderSetting when every line is exact: the vendor's server sends none (MCP
        # src/tools/writes.ts:541-560); otherwise the rounding is stated, not hoped for
        # (docs/invoicebox-api.md, "roundPolicy").
        if self.round_policy:
            body["orderSetting"] = {"roundPolicy": self.round_policy}
        if self.merchant_order_id_visible:
            body["merchantOrderIdVisible"] = self.merchant_order_id_visible
        if self.invoice_setting:
            body["invoiceSetting"] = self.invoice_setting
        api_names = {
            "success_url": "successUrl",
            "fail_url": "failUrl",
            "return_url": "returnUrl",
            "notification_url": "notificationUrl",
        }
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


class OrdersApi(Transport):
    def get_order(self, order_id: str) -> Order | None:
        # The documented way to read one order is the filter by id.
        page = self.find_orders(order_id=order_id, page_size=1)
        return page.orders[0] if page.orders else None

    def find_orders(
        self,
        *,
        order_id: str | None = None,
        merchant_order_id: str | None = None,
        statuses: Sequence[str] = (),
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        expiration_from: datetime | None = None,
        expiration_to: datetime | None = None,
        paid_from: datetime | None = None,
        paid_to: datetime | None = None,
        amount_from: int | None = None,
        amount_to: int | None = None,
        status_not: str | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> OrderPage:
        params: list[tuple[str, str]] = [
            *paging(page, page_size),
            ("_order[createdAt]", "desc"),
        ]
        if self.merchant_id:
            # One token may see several shops: the contour's only (the SDK's FindOrderTest).
            params.append(("merchantId", self.merchant_id))
        if order_id:
            params.append(("id", order_id))
        if merchant_order_id:
            params.append(("merchantOrderId", merchant_order_id))
        params.extend(("status[]", status) for status in statuses)
        # Documented filters (docs merchant/order/get.md): createdAt, expirationDate, paidAt.
        bounds = dict(
            zip(
                DATE_FILTERS,
                (
                    (created_from, created_to),
                    (expiration_from, expiration_to),
                    (paid_from, paid_to),
                ),
                strict=True,
            )
        )
        for (api_name, _), (low, high) in bounds.items():
            params.extend(
                (f"{api_name}[{op}]", atom(moment))
                for op, moment in (("_ge", low), ("_le", high))
                if moment
            )
        # The docs' comparison operators (api/filters.md:14-22: amount[_gt]=1000, _ne).
        amounts = (amount_from, amount_to)
        params.extend(
            (f"amount[{op}]", str(to_roubles(value)))
            for op, value in zip(("_ge", "_le"), amounts, strict=True)
            if value is not None
        )
        if status_not:
            params.append(("status[_ne]", status_not))
        data, envelope = self._request("GET", "/filter/api/order/order", params=params)
        if not isinstance(data, list):
            raise self._bad_response("список счетов пришёл не массивом")
        orders = [self._parse_order(row) for row in data]
        self._check_filtered(orders, "счёт", id=order_id, merchant_order_id=merchant_order_id)
        self._check_merchant(orders, "счёт")
        for order in orders:
            outside = _outside(order, statuses, bounds) or _outside_amount(
                order, amounts, status_not
            )
            if outside:
                raise self._bad_response(
                    f"Инвойсбокс вернул счёт {order.id} с {outside}, вне запрошенного фильтра: "
                    "фильтр не применён, ответ не используется"
                )
        self._refuse_repeats(orders, "счёт {} пришёл в списке дважды")
        meta = self._meta(envelope, page, page_size, rows=len(orders))
        if (
            meta.total is not None
            and page > 1
            and len(orders) > max(meta.total - (page - 1) * meta.size, 0)
        ):
            # More rows than totalCount leaves for this page: a stuck pager answering an
            # earlier page again under this one's number (issue 39.5, the chaos campaign's
            # list_loop); whoever pages through would count them twice.
            raise self._bad_response(
                f"на странице {page} по {meta.size} пришло {len(orders)} счетов, а из "
                f"{meta.total} на неё остаётся меньше: это счета другой страницы, ответ не "
                "используется"
            )
        # A larger first page than asked (a server that read neither paging name) is cut to
        # the size asked for: every row of it was checked above, and nothing is summed here.
        shown = orders[:page_size]
        total = meta.total if meta.total is not None else (page - 1) * page_size + len(orders)
        return OrderPage(orders=shown, total_count=total, page=page, page_size=page_size)

    def create_order(self, order: NewOrder) -> Order:
        data, _ = self._request(
            "POST", "/billing/api/order/order", body=order.as_api(self.merchant_id), write=True
        )
        created = self._parse_order(data, write=True)
        if created.merchant_order_id != order.merchant_order_id:
            # Another order than the one sent: ours may or may not exist. An unknown
            # outcome, recovered by a lookup of our own merchantOrderId; never reported as ours.
            raise self._bad_response(
                f"на создание счёта {order.merchant_order_id} пришёл счёт "
                f"{created.merchant_order_id[:64]}",
                write=True,
            )
        return created

    def update_order(self, order_id: str, update: OrderUpdate) -> Order:
        data, _ = self._request(
            "PUT", f"/billing/api/order/order/{order_id}", body=update.as_api(), write=True
        )
        return self._parse_order(data, write=True)

    def cancel_order(self, order_id: str) -> Order:
        data, _ = self._request("DELETE", f"/billing/api/order/order/{order_id}", write=True)
        return self._parse_order(data, write=True)

    def _parse_order(self, raw: Any, *, write: bool = False) -> Order:
        return self._parse(Order.parse, raw, "счёт", write=write)


def _outside_amount(
    order: Order, amounts: tuple[int | None, int | None], status_not: str | None
) -> str:
    low, high = amounts
    if (low is not None and order.amount < low) or (high is not None and order.amount > high):
        return f"суммой {order.amount} коп."
    if status_not and order.status == status_not:
        return f"статусом {order.status!s:.20}"
    return ""


def _outside(
    order: Order,
    statuses: Sequence[str],
    bounds: dict[tuple[str, str], tuple[datetime | None, datetime | None]],
) -> str:
    """What of the row lies outside the filter that was sent ("" when nothing does, or when
    the row doesn't carry the field: an absent field is a shape, not a contradiction)."""
    if statuses and order.status not in statuses:
        return f"статусом {order.status!s:.20}"
    for (_, name), (low, high) in bounds.items():
        value = getattr(order, name)
        if not value or not (low or high):
            continue
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            continue
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if (low and moment < low) or (high and moment > high):
            return f"{name} {value!s:.32}"
    return ""
