"""Shipments: a server that ignores the orderId filter is never believed: the rows of another
order (or shop) are dropped and counted, never summed as this order's (the vendor's MCP server
does the same, src/tools/reads.ts:281)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import simplejson

from invoicebox.client import InvoiceboxClient

pytestmark = pytest.mark.django_db  # the client records upstream health in the database

ASKED = "0190d6a4-1f2e-7c3b-9a8d-123456789abc"


def shipment(order_id: str) -> dict[str, Any]:
    return {
        "id": "17",
        "orderId": order_id,
        "status": "created",
        "amount": 100,
        "basketItems": [
            {"sku": "1", "name": "Номер", "quantity": 1, "totalAmount": 100, "totalVatAmount": 0}
        ],
    }


def client_answering(*rows: dict[str, Any]) -> InvoiceboxClient:
    def handle(request: httpx.Request) -> httpx.Response:
        body = {
            "data": list(rows),
            "metaData": {"totalCount": len(rows), "page": 1, "pageSize": 50},
        }
        return httpx.Response(
            200,
            headers={"Content-Type": "application/json"},
            content=simplejson.dumps(body).encode(),
        )

    return InvoiceboxClient(
        base_url="https://api.invoicebox.ru",
        token="t" * 32,
        merchant_id=str(uuid.uuid4()),
        transport=httpx.MockTransport(handle),
        backoff_seconds=0,
    )


def test_shipments_of_another_order_are_dropped_and_counted():
    # given: a server that ignores orderId and answers another order's shipment
    client = client_answering(shipment(ASKED), shipment(str(uuid.uuid4())) | {"id": "18"})

    # when
    page = client.find_shipments(order_id=ASKED)
    every, dropped = client.order_shipments(ASKED)

    # then: nothing of it is counted as shipped from the order asked about
    assert [s.id for s in page.shipments] == ["17"] and page.dropped_foreign == 1
    assert ([s.id for s in every], dropped) == (["17"], 1)


def test_another_shops_shipment_is_dropped_and_counted():
    client = client_answering(shipment(ASKED) | {"merchantId": str(uuid.uuid4())})

    page = client.find_shipments(order_id=ASKED)

    assert (page.shipments, page.dropped_foreign) == ([], 1)


def test_the_orders_own_shipments_still_read():
    client = client_answering(shipment(ASKED.upper()))

    page = client.find_shipments(order_id=ASKED)

    assert [s.order_id.lower() for s in page.shipments] == [ASKED]
