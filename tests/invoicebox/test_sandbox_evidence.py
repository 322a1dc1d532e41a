"""The sandbox no stricter than the evidence, its looser extras behind a switch,
and the client's paths for the answers the real API may give (shipment list fallback)."""

from __future__ import annotations

from decimal import Decimal as D
from typing import Any

import httpx
import pytest

from invoicebox import shipments as shipment_module
from invoicebox.client import InvoiceboxError
from sandbox.models import SandboxOrder
from tests.invoicebox.conftest import FILTER, ORDERS, loads, reference_order
from tests.invoicebox.test_client import Remote, error_reply, json_reply
from tests.invoicebox.test_sandbox_shipments_refunds import (
    SHIPMENT_LIST,
    SHIPMENTS,
    Http,
    _data,
    _line,
    _order,
    _ship,
)

pytestmark = pytest.mark.django_db

ORDER_ID = "0190d6a4-1f2e-7c3b-9a8d-123456789abc"


def test_the_mcp_servers_shipment_path_lists_shipments(http: Http) -> None:
    order = _order(http)
    shipped = _data(_ship(http, order["id"], _line(1)))

    listed = _data(http("GET", SHIPMENTS, query={"orderId": order["id"]}))
    documented = _data(http("GET", SHIPMENT_LIST, query={"orderId": order["id"]}))

    assert [s["id"] for s in listed] == [s["id"] for s in documented] == [shipped["id"]]


def test_the_bitrix_modules_vat_code_none_is_accepted(http: Http) -> None:
    body = reference_order(amount=D("300"), vatAmount=D("0"))
    body["basketItems"][0].update(
        vatCode="NONE",
        amount=D("100"),
        amountWoVat=D("100"),
        totalAmount=D("300"),
        totalVatAmount=D("0"),
    )

    response = http("POST", ORDERS, body)

    assert response.status_code == 200, response.content


def test_order_lists_take_merchant_id_and_the_sdks_indexed_statuses(http: Http) -> None:
    order = _order(http)  # paid: completed

    listed = http(
        "GET",
        FILTER,
        query={
            "merchantId": "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "status[0]": "completed",
            "status[1]": "hold",
        },
    )
    other_shop = http("GET", FILTER, query={"merchantId": "11111111-2222-3333-4444-555555555555"})

    assert [o["id"] for o in _data(listed)] == [order["id"]]
    assert _data(other_shop) == []


def test_the_documented_answer_leaves_out_the_sandboxs_own_fields(
    http: Http, settings: Any
) -> None:
    order = _order(http)
    _ship(http, order["id"], _line(1))
    settings.INVOICEBOX_SANDBOX_DOCUMENTED_ONLY = True

    (shipment,) = _data(http("GET", SHIPMENT_LIST, query={"orderId": order["id"]}))
    (item,) = _data(http("GET", f"{ORDERS}/{order['id']}/refund-basket-item"))

    assert set(shipment) == {
        "id",
        "merchantId",
        "orderId",
        "documentNumber",
        "documentDate",
        "basketItems",
    }
    assert "availableAmount" not in item and "availableVatAmount" not in item


@pytest.mark.parametrize("mode", ["docs", "vendor", "none"])
def test_the_paging_switch_reads_only_its_names(http: Http, settings: Any, mode: str) -> None:
    for _ in range(3):
        _order(http, paid=False)
    settings.INVOICEBOX_SANDBOX_PAGING = mode

    body = loads(http("GET", FILTER, query={"page": "2", "pageSize": "1"}).content)
    underscored = loads(http("GET", FILTER, query={"_page": "2", "_pageSize": "1"}).content)

    read_docs, read_vendor = mode == "docs", mode == "vendor"
    assert body["metaData"]["page"] == (2 if read_docs else 1)
    assert underscored["metaData"]["page"] == (2 if read_vendor else 1)
    assert len(body["data"]) == (1 if read_docs else 3)
    assert SandboxOrder.objects.count() == 3


# -- the client's fallback to the MCP server's shipment path --------------------------------


def shipment_reply(request: httpx.Request) -> httpx.Response:
    if request.url.path.endswith("/filter/api/order/shipment"):
        return error_reply(404, "not_found")
    return json_reply(
        200,
        {
            "data": [{"id": 5, "orderId": ORDER_ID, "basketItems": []}],
            "metaData": {"totalCount": 1, "page": 1, "pageSize": 50},
        },
    )


def test_the_shipment_list_falls_back_to_the_mcp_path_and_remembers_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shipment_module, "_answering_path", {})
    remote = Remote(answer=shipment_reply)

    first = remote.client().all_shipments(ORDER_ID)
    again = remote.client().all_shipments(ORDER_ID)

    assert [s.id for s in first] == [s.id for s in again] == ["5"]
    assert [r.url.path for r in remote.requests] == [
        "/v3/filter/api/order/shipment",
        "/v3/billing/api/order/shipment",
        "/v3/billing/api/order/shipment",
    ]
    assert remote.client().shipment_list_path() == "/billing/api/order/shipment"


def test_a_shipment_list_answering_neither_path_is_an_error_not_an_empty_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shipment_module, "_answering_path", {})
    remote = Remote(answer=lambda request: error_reply(405, "method_not_allowed"))

    with pytest.raises(InvoiceboxError) as caught:
        remote.client().all_shipments(ORDER_ID)

    assert caught.value.http_status == 405
    assert len(remote.requests) == 2
