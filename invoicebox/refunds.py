"""Refunds (возвраты) of a paid order: shapes and endpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from invoicebox.money import to_kopecks, to_roubles
from invoicebox.orders import BasketLine
from invoicebox.shapes import (
    Money,
    PageMeta,
    Quantity,
    Text,
    Upstream,
    kopecks_or_none,
    paging,
)
from invoicebox.transport import Transport

# Refund lists are read whole; the cap only stops a server whose paging never ends.
REFUND_PAGE_SIZE = 100
MAX_REFUND_PAGES = 50


class UpstreamRefundableItem(Upstream):
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
    # The sale's excise and marking group (D create.md BasketItem), when the API repeats them.
    excise: Money | None = None
    category: Text | None = None
    category_type: Text | None = Field(None, alias="categoryType")
    # Only the MCP server names these (not in the API docs).
    available_amount: Money | None = Field(None, alias="availableAmount")
    available_vat_amount: Money | None = Field(None, alias="availableVatAmount")


@dataclass(frozen=True)
class RefundableItem(BasketLine):
    """An item of a paid order and what of it can still be refunded (kopecks).

    `available_sent` is False when the API left availableAmount out (the docs promise plain
    BasketItems): the amount is then the whole line, true only while nothing was refunded, and
    the caller subtracts the refunds (tools/catalog/refunds.py `refundable`)."""

    available_amount: int = 0
    available_vat_amount: int | None = None
    available_sent: bool = True

    @classmethod
    def parse(cls, raw: Any) -> RefundableItem:
        up = UpstreamRefundableItem.model_validate(raw)
        total = to_kopecks(up.total_amount)
        return cls(
            sku=up.sku,
            name=up.name,
            measure=up.measure,
            measure_code=up.measure_code,
            quantity=up.quantity,
            amount=to_kopecks(up.amount),
            amount_wo_vat=to_kopecks(up.amount_wo_vat),
            total_amount=total,
            total_vat_amount=to_kopecks(up.total_vat_amount),
            vat_code=up.vat_code,
            type=up.type,
            payment_type=up.payment_type,
            excise=kopecks_or_none(up.excise),
            category=up.category,
            category_type=up.category_type,
            # The docs say plain BasketItems: without the field, the whole line is available.
            available_amount=total
            if up.available_amount is None
            else to_kopecks(up.available_amount),
            available_vat_amount=kopecks_or_none(up.available_vat_amount),
            available_sent=up.available_amount is not None,
        )


class UpstreamRefundLine(Upstream):
    sku: Text
    total_amount: Money = Field(alias="totalAmount")
    total_vat_amount: Money = Field(alias="totalVatAmount")


@dataclass(frozen=True)
class RefundLine:
    sku: str
    total_amount: int
    total_vat_amount: int


class UpstreamRefund(Upstream):
    id: Text
    parent_id: Text = Field(alias="parentId")
    merchant_id: Text | None = Field(None, alias="merchantId")
    merchant_order_id: str = Field("", alias="merchantOrderId")
    status: str
    amount: Money
    vat_amount: Money | None = Field(None, alias="vatAmount")
    currency_id: str = Field("", alias="currencyId")
    created_at: str | None = Field(None, alias="createdAt")
    # A refund is an order (docs merchant/refund/create.md): its lines, when sent.
    basket_items: list[UpstreamRefundLine] | None = Field(None, alias="basketItems")


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
    merchant_id: str | None = None
    items: tuple[RefundLine, ...] | None = None

    @classmethod
    def parse(cls, raw: Any) -> Refund:
        up = UpstreamRefund.model_validate(raw)
        return cls(
            id=up.id,
            parent_id=up.parent_id,
            merchant_order_id=up.merchant_order_id,
            status=up.status,
            amount=to_kopecks(up.amount),
            vat_amount=kopecks_or_none(up.vat_amount),
            currency=up.currency_id,
            created_at=up.created_at,
            merchant_id=up.merchant_id,
            items=None
            if up.basket_items is None
            else tuple(
                RefundLine(
                    sku=i.sku,
                    total_amount=to_kopecks(i.total_amount),
                    total_vat_amount=to_kopecks(i.total_vat_amount),
                )
                for i in up.basket_items
            ),
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


class RefundsApi(Transport):
    def refundable_items(self, order_id: str) -> list[RefundableItem]:
        data, _ = self._request("GET", f"/billing/api/order/order/{order_id}/refund-basket-item")
        rows = self._rows(data, "позиции к возврату пришли не массивом")
        # Lines carry no id, and an order made elsewhere may hold one sku on two lines: no
        # repeat rule here (tools/catalog/refunds.py `refundable` takes each line in turn).
        return [self._parse(RefundableItem.parse, row, "позицию к возврату") for row in rows]

    def create_refund(self, refund: NewRefund) -> Refund:
        data, _ = self._request(
            "POST", "/billing/api/order/refund-order", body=refund.as_api(), write=True
        )
        return self._parse(Refund.parse, data, "возврат", write=True)

    def find_refunds(
        self, *, parent_id: str | None = None, merchant_order_id: str | None = None
    ) -> list[Refund]:
        """Every refund matching the filters, oldest first (all pages are read)."""
        # The contour's shop only (docs merchant/refund/get.md:41 documents the filter).
        filters: list[tuple[str, str]] = [("merchantId", self.merchant_id)]
        if parent_id:
            filters.append(("parentId", parent_id))
        if merchant_order_id:
            filters.append(("merchantOrderId", merchant_order_id))

        def fetch(page: int, size: int) -> tuple[list[Refund], PageMeta]:
            params = [*paging(page, size), ("_order[createdAt]", "asc"), *filters]
            data, envelope = self._request("GET", "/filter/api/order/refund-order", params=params)
            rows = self._rows(data, "список возвратов пришёл не массивом")
            found = [self._parse(Refund.parse, row, "возврат") for row in rows]
            self._check_filtered(
                found, "возврат", parent_id=parent_id, merchant_order_id=merchant_order_id
            )
            self._check_merchant(found, "возврат")
            self._refuse_repeats(found, "возврат {} пришёл в списке дважды")
            return found, self._meta(envelope, page, size, rows=len(found))

        return self._read_all(
            fetch,
            "возврат {} пришёл на двух страницах",
            page_size=REFUND_PAGE_SIZE,
            max_pages=MAX_REFUND_PAGES,
        )
