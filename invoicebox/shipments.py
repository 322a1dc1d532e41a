"""Shipments (отгрузки) of an order: shapes and endpoints."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pydantic import Field

from invoicebox.errors import InvoiceboxError
from invoicebox.money import to_kopecks
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


class UpstreamShipmentItem(Upstream):
    sku: Text
    name: str
    quantity: Quantity
    total_amount: Money = Field(alias="totalAmount")
    total_vat_amount: Money = Field(alias="totalVatAmount")


class UpstreamShipment(Upstream):
    id: Text
    order_id: Text = Field(alias="orderId")
    merchant_id: Text | None = Field(None, alias="merchantId")
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
    merchant_id: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> Shipment:
        up = UpstreamShipment.model_validate(raw)
        items = [
            ShipmentItem(
                sku=i.sku,
                name=i.name,
                quantity=i.quantity,
                total_amount=to_kopecks(i.total_amount),
                total_vat_amount=to_kopecks(i.total_vat_amount),
            )
            for i in up.basket_items
        ]
        # Without a sent amount the shipment is worth its lines (that is how the API sums it).
        amount = (
            to_kopecks(up.amount) if up.amount is not None else sum(i.total_amount for i in items)
        )
        return cls(
            id=up.id,
            order_id=up.order_id,
            status=up.status,
            final=up.final,
            amount=amount,
            vat_amount=kopecks_or_none(up.vat_amount),
            document_number=up.document_number,
            document_date=up.document_date,
            created_at=up.created_at,
            items=items,
            merchant_id=up.merchant_id,
        )


@dataclass(frozen=True)
class ShipmentPage:
    shipments: list[Shipment]
    total_count: int
    page: int
    page_size: int
    total_known: bool = True
    # Rows of another shop, or (order_id asked) of another order: dropped, counted.
    dropped_foreign: int = 0


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
        }
        if self.final:
            # The docs' CreateShipmentRequest has no `final`; only the MCP server sends it.
            # Sent only when set, the documented request stays exactly as documented.
            body["final"] = True
        if self.document_number is not None:
            body["documentNumber"] = self.document_number
        if self.document_date is not None:
            # Y-m-d, as the docs show it (docs merchant/order/shipment_create.md:62, `2023-12-12`).
            body["documentDate"] = self.document_date.isoformat()
        return body


SHIPMENT_PAGE_SIZE = 50
MAX_SHIPMENT_PAGES = 20


def _oldest_first(shipment: Shipment) -> tuple[datetime, int, str]:
    try:
        created = datetime.fromisoformat(shipment.created_at or "")
    except ValueError:
        created = datetime.max
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    # Ids are integers the API hands out in order; text ids sort after them.
    number = int(shipment.id) if shipment.id.isdigit() else 2**63
    return created, number, shipment.id


logger = logging.getLogger(__name__)

# The docs' list path first (docs merchant/order/shipment_get.md:15); the MCP server's
# (src/tools/reads.ts:273, writes.ts:395) when the docs' one is not there (404/405).
SHIPMENT_LIST_PATHS = ("/filter/api/order/shipment", "/billing/api/order/shipment")
# Which path answered, per API base URL, for this process: recorded once, then used first.
_answering_path: dict[str, str] = {}


class ShipmentsApi(Transport):
    def find_shipments(
        self, *, order_id: str | None = None, page: int = 1, page_size: int = 50
    ) -> ShipmentPage:
        """One page of the shop's shipments (of one order, with order_id). A row of another
        shop or another order is dropped and counted (`dropped_foreign`), as the vendor's MCP
        server drops rows of another order (src/tools/reads.ts:281): a token may see several
        shops (D shipment_get.md filters by merchantId) and the MCP server's list path may not
        filter by order (writes.ts:395-420 checks that it did). Nothing foreign is counted."""
        rows, meta = self._shipment_rows(order_id, page, page_size)
        ours, dropped = self._split_foreign(rows, order_id)
        return ShipmentPage(
            shipments=ours,
            page=page,
            page_size=meta.size,
            total_count=len(rows) if meta.total is None else meta.total,
            total_known=meta.total is not None,
            dropped_foreign=dropped,
        )

    def _shipment_rows(
        self, order_id: str | None, page: int, page_size: int
    ) -> tuple[list[Shipment], PageMeta]:
        """Every row of one page, foreign ones included (paging counts them too)."""
        # Oldest first: shipments made while paging land on a later page, none is skipped.
        params: list[tuple[str, str]] = [*paging(page, page_size), ("_order[id]", "asc")]
        if self.merchant_id:
            # One token may see several shops (docs shipment_get.md:31 lists the filter).
            params.append(("merchantId", self.merchant_id))
        if order_id:
            params.append(("orderId", order_id))
        data, envelope = self._list_shipments(params)
        rows = self._rows(data, "список отгрузок пришёл не массивом")
        shipments = [self._parse(Shipment.parse, row, "отгрузку") for row in rows]
        self._refuse_repeats(shipments, "отгрузка {} пришла в списке дважды")
        return shipments, self._meta(envelope, page, page_size, rows=len(shipments))

    def _split_foreign(
        self, rows: list[Shipment], order_id: str | None
    ) -> tuple[list[Shipment], int]:
        def foreign(row: Shipment) -> bool:
            other_shop = bool(
                row.merchant_id
                and self.merchant_id
                and row.merchant_id.lower() != self.merchant_id.lower()
            )
            return other_shop or bool(order_id and row.order_id.lower() != order_id.lower())

        ours = [row for row in rows if not foreign(row)]
        return ours, len(rows) - len(ours)

    def shipment_list_path(self) -> str:
        return _answering_path.get(str(self._http.base_url), SHIPMENT_LIST_PATHS[0])

    def _list_shipments(self, params: list[tuple[str, str]]) -> tuple[Any, dict[str, Any]]:
        base = str(self._http.base_url)
        first = self.shipment_list_path()
        paths = [first, *(p for p in SHIPMENT_LIST_PATHS if p != first)]
        for path in paths:
            try:
                answer = self._request("GET", path, params=params)
            except InvoiceboxError as error:
                if error.http_status in (404, 405) and path != paths[-1]:
                    continue
                raise
            if _answering_path.get(base) != path:
                _answering_path[base] = path
                logger.info("Invoicebox shipment list answered at %s (%s)", path, base)
            return answer
        raise AssertionError("unreachable")  # pragma: no cover

    def all_shipments(self, order_id: str) -> list[Shipment]:
        return self.order_shipments(order_id)[0]

    def order_shipments(self, order_id: str) -> tuple[list[Shipment], int]:
        """Every shipment of one order, oldest first, ordered here rather than by the server,
        and how many foreign rows were dropped on the way.

        The docs' ShipmentResponse defines no createdAt to sort by, and a sort the server
        ignores must not decide what counts as shipped; a row seen twice, a list that ends
        before its totalCount or doesn't end is refused, never summed (transport._read_all).
        Every page is read, foreign rows too: a filter the server ignored leaves the order's
        rows among the others, and they are picked out here (the vendor's collectShipments)."""

        def fetch(page: int, size: int) -> tuple[list[Shipment], PageMeta]:
            return self._shipment_rows(order_id, page, size)

        found = self._read_all(
            fetch,
            "отгрузка {} пришла на двух страницах",
            page_size=SHIPMENT_PAGE_SIZE,
            max_pages=MAX_SHIPMENT_PAGES,
        )
        ours, dropped = self._split_foreign(found, order_id)
        return sorted(ours, key=_oldest_first), dropped

    def create_shipment(self, shipment: NewShipment) -> Shipment:
        data, _ = self._request(
            "POST", "/billing/api/order/shipment", body=shipment.as_api(), write=True
        )
        return self._parse(Shipment.parse, data, "отгрузку", write=True)
