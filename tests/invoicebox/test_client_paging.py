"""Paging is checked against the answer's metaData: never undercount, never count a row twice."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest

from invoicebox.client import InvoiceboxError
from tests.invoicebox.test_client import Remote, json_reply

pytestmark = pytest.mark.django_db


@pytest.fixture
def remote() -> Remote:
    return Remote()


ORDER_ID = "0190d6a4-1f2e-7c3b-9a8d-123456789abc"


def refund_row(number: int) -> dict[str, Any]:
    return {
        "id": f"0190d6a4-0000-7000-8000-{number:012d}",
        "parentId": ORDER_ID,
        "merchantOrderId": f"r-{number}",
        "status": "completed",
        "amount": 10,
        "vatAmount": 0,
        "currencyId": "RUB",
        "createdAt": "2026-01-01T10:00:00+03:00",
    }


def asked(request: httpx.Request) -> dict[str, str]:
    return dict(parse_qsl(request.url.query.decode()))


def test_refunds_refused_when_the_server_ignores_the_page_size(remote: Remote) -> None:
    # given: a server that pages by its own default of 30 whatever is asked
    rows = [refund_row(n) for n in range(30)]
    remote.answer = lambda request: json_reply(
        200, {"data": rows, "metaData": {"totalCount": 45, "page": 1, "pageSize": 30}}
    )

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().find_refunds(parent_id=ORDER_ID)

    # then: 30 of 45 refunds would have been counted as all of them
    assert caught.value.kind == "bad_response"
    assert "постраничная выборка не выполнена" in caught.value.message


def test_refunds_refused_when_the_server_answers_another_page(remote: Remote) -> None:
    # given: 150 refunds, but every request gets the first page back
    def answer(request: httpx.Request) -> httpx.Response:
        size = int(asked(request)["_pageSize"])
        return json_reply(
            200,
            {
                "data": [refund_row(n) for n in range(size)],
                "metaData": {"totalCount": 150, "page": 1, "pageSize": size},
            },
        )

    remote.answer = answer

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().find_refunds(parent_id=ORDER_ID)

    # then: page 1 is not collected twice as pages 1 and 2
    assert "запрошена страница 2" in caught.value.message
    assert [asked(r)["_page"] for r in remote.requests] == ["1", "2"]


def test_refunds_refused_when_a_row_repeats_on_the_next_page(remote: Remote) -> None:
    # given: a refund made while paging shifts the list by one row
    def answer(request: httpx.Request) -> httpx.Response:
        page, size = int(asked(request)["_page"]), int(asked(request)["_pageSize"])
        start = (page - 1) * size - (1 if page > 1 else 0)
        data = [refund_row(n) for n in range(start, min(start + size, 150))]
        return json_reply(
            200, {"data": data, "metaData": {"totalCount": 150, "page": page, "pageSize": size}}
        )

    remote.answer = answer

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().find_refunds(parent_id=ORDER_ID)

    # then
    assert "пришёл на двух страницах" in caught.value.message


def test_refunds_read_whole_when_the_server_pages_as_asked(remote: Remote) -> None:
    # given
    def answer(request: httpx.Request) -> httpx.Response:
        page, size = int(asked(request)["_page"]), int(asked(request)["_pageSize"])
        start = (page - 1) * size
        data = [refund_row(n) for n in range(start, min(start + size, 150))]
        return json_reply(
            200, {"data": data, "metaData": {"totalCount": 150, "page": page, "pageSize": size}}
        )

    remote.answer = answer

    # when
    refunds = remote.client().find_refunds(parent_id=ORDER_ID)

    # then
    assert len({r.id for r in refunds}) == len(refunds) == 150


def test_refunds_beyond_the_page_cap_are_refused_not_truncated(remote: Remote) -> None:
    # given: a server whose list never ends
    def answer(request: httpx.Request) -> httpx.Response:
        page, size = int(asked(request)["_page"]), int(asked(request)["_pageSize"])
        data = [refund_row((page - 1) * size + n) for n in range(size)]
        return json_reply(
            200, {"data": data, "metaData": {"totalCount": 10**6, "page": page, "pageSize": size}}
        )

    remote.answer = answer

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().find_refunds(parent_id=ORDER_ID)

    # then
    assert "все не прочитать" in caught.value.message


def test_a_larger_first_page_without_metadata_is_accepted_row_by_row(remote: Remote) -> None:
    # given: a server that reads neither paging name: no metaData, the whole list
    rows = [{"id": n, "orderId": ORDER_ID, "basketItems": []} for n in range(1, 8)]
    remote.answer = lambda request: json_reply(200, {"data": rows})

    # when
    shipments = remote.client().all_shipments(ORDER_ID)

    # then: every row is this order's, and the list ended (fewer rows on page 2 than... none)
    assert [s.id for s in shipments] == [str(n) for n in range(1, 8)]


def test_a_larger_first_page_with_a_row_of_another_order_drops_it(remote: Remote) -> None:
    # given: the filter was not applied either
    rows = [
        {"id": n, "orderId": ORDER_ID if n < 7 else "another", "basketItems": []}
        for n in range(1, 8)
    ]
    remote.answer = lambda request: json_reply(200, {"data": rows})

    # when
    page = remote.client().find_shipments(order_id=ORDER_ID, page=1, page_size=5)

    # then: the order's six, the other order's row counted, not shown
    assert [s.id for s in page.shipments] == [str(n) for n in range(1, 7)]
    assert page.dropped_foreign == 1


def test_a_larger_page_past_the_first_is_refused(remote: Remote) -> None:
    # given: page 2 asked, 7 rows with no metaData: they are not page 2 of 5
    rows = [{"id": n, "orderId": ORDER_ID, "basketItems": []} for n in range(1, 8)]
    remote.answer = lambda request: json_reply(200, {"data": rows})

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().find_shipments(order_id=ORDER_ID, page=2, page_size=5)

    # then
    assert "(7 строк)" in caught.value.message


def shipment_row(number: int, created: str) -> dict[str, Any]:
    return {"id": number, "orderId": ORDER_ID, "createdAt": created, "basketItems": []}


def test_shipments_are_ordered_here_whatever_order_the_server_answers_in(remote: Remote) -> None:
    # given: a server that ignores the sort and answers newest first
    rows = [
        shipment_row(3, "2026-01-03T10:00:00+03:00"),
        shipment_row(1, "2026-01-01T10:00:00+03:00"),
        shipment_row(2, "2026-01-02T10:00:00+03:00"),
    ]
    remote.answer = lambda request: json_reply(
        200, {"data": rows, "metaData": {"totalCount": 3, "page": 1, "pageSize": 50}}
    )

    # when
    shipments = remote.client().all_shipments(ORDER_ID)

    # then: oldest first, and no sort by a field the docs don't define was asked for
    assert [s.id for s in shipments] == ["1", "2", "3"]
    assert not any(
        "createdAt" in key for key, _ in parse_qsl(remote.requests[0].url.query.decode())
    )


def test_a_shipment_repeated_on_the_next_page_is_refused(remote: Remote) -> None:
    # given: 60 shipments; page 2 starts one row early
    def answer(request: httpx.Request) -> httpx.Response:
        page, size = int(asked(request)["_page"]), int(asked(request)["_pageSize"])
        start = 1 if page == 1 else size
        data = [
            shipment_row(n, "2026-01-01T10:00:00+03:00")
            for n in range(start, min(start + size, 61))
        ]
        return json_reply(
            200, {"data": data, "metaData": {"totalCount": 60, "page": page, "pageSize": size}}
        )

    remote.answer = answer

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().all_shipments(ORDER_ID)

    # then
    assert "пришла на двух страницах" in caught.value.message
