"""The client's counterparty, shipment and refund calls: against the sandbox and a scripted API."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest

from invoicebox.client import (
    BasketLine,
    Company,
    InvoiceboxError,
    NewRefund,
    NewShipment,
    Refund,
    RefundableItem,
    Shipment,
    ShipmentItem,
)
from sandbox.api import DEMO_TOKEN, pay_order, set_faults
from sandbox.models import SandboxOrder, SandboxRefund, SandboxShipment
from tests.invoicebox.test_client import (
    REMOTE_MERCHANT,
    Remote,
    Sandbox,
    error_reply,
    json_reply,
    new_order,
)

# The client shares its rate budget and circuit state through the database.
pytestmark = pytest.mark.django_db

D = Decimal
ORDER_ID = "0190d6a4-1f2e-7c3b-9a8d-123456789abc"


def unit_line(units: int = 1, **changes: Any) -> BasketLine:
    """`units` nights of the reference order (123.96 each, VAT 20 % = 20.66 per night)."""
    totals = {1: (12396, 2066), 2: (24792, 4132), 3: (37188, 6198)}
    total, vat = totals[units]
    line = replace(
        new_order().basket[0], quantity=D(units), total_amount=total, total_vat_amount=vat
    )
    return replace(line, **changes)


def new_refund(parent_id: str, *lines: BasketLine, **changes: Any) -> NewRefund:
    lines = lines or (unit_line(),)
    refund = NewRefund(
        parent_id=parent_id,
        merchant_order_id=f"refund-{uuid.uuid4().hex[:12]}",
        description="Возврат за ночь",
        amount=sum(line.total_amount for line in lines),
        vat_amount=sum(line.total_vat_amount for line in lines),
        basket=list(lines),
    )
    return replace(refund, **changes)


@pytest.fixture
def sandbox(db: None) -> Iterator[Sandbox]:
    found = Sandbox()
    yield found
    for opened in found.opened:
        opened.close()


@pytest.fixture
def remote() -> Remote:
    return Remote()


def paid_order(sandbox: Sandbox) -> str:
    order = sandbox.client().create_order(new_order())
    pay_order(order.id)
    return order.id


# --------------------------------------------------------------------------- the sandbox


@pytest.mark.django_db
def test_lookup_company_finds_the_directory_row(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()

    # when
    [company] = client.lookup_company("7710044140")
    [sole_trader] = client.lookup_company("500123456750")

    # then
    assert company.inn == "7710044140"
    assert company.kpp == "770201001"
    assert company.name == "ООО «Ромашка»"
    assert company.name_full == "Общество с ограниченной ответственностью «Ромашка»"
    assert company.registration_number and company.registration_date and company.id
    assert company.post_address_zip == "191024"
    assert (sole_trader.inn, sole_trader.kpp) == ("500123456750", None)
    assert sandbox.transport.requests[0].url.params["vatNumber"] == "7710044140"


@pytest.mark.django_db
def test_lookup_company_of_an_unknown_inn_is_an_empty_list(sandbox: Sandbox) -> None:
    assert sandbox.client().lookup_company("7707083893") == []


@pytest.mark.django_db
def test_a_shipment_round_trips_in_kopecks(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order_id = paid_order(sandbox)

    # when
    created = client.create_shipment(
        NewShipment(
            order_id=order_id,
            basket=[unit_line(2)],
            final=False,
            document_number="УПД-7",
            document_date=dt.date(2026, 8, 25),
        )
    )
    page = client.find_shipments(order_id=order_id)

    # then
    assert page.total_count == 1 and (page.page, page.page_size) == (1, 50)
    for seen in (created, page.shipments[0]):
        assert seen.id == created.id and seen.id.isdigit()
        assert (seen.order_id, seen.status, seen.final) == (order_id, "completed", False)
        assert (seen.amount, seen.vat_amount) == (24792, 4132)
        assert (seen.document_number, seen.document_date) == ("УПД-7", "2026-08-25")
        assert seen.items == [
            ShipmentItem(
                sku="ROOM-STD",
                name="Бронирование номера",
                quantity=D(2),
                total_amount=24792,
                total_vat_amount=4132,
            )
        ]
    assert SandboxShipment.objects.get(pk=int(created.id)).amount == D("247.92")


@pytest.mark.django_db
def test_a_shipment_of_an_unpaid_order_is_rejected(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order = client.create_order(new_order())

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_shipment(NewShipment(order_id=order.id, basket=[unit_line()]))

    # then
    assert (caught.value.kind, caught.value.code, caught.value.http_status) == (
        "rejected",
        "wrong_order_status",
        422,
    )
    assert "статусе" in caught.value.message
    assert not SandboxShipment.objects.exists()


@pytest.mark.django_db
def test_a_shipment_over_the_remainder_is_rejected_with_its_code(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order_id = paid_order(sandbox)
    client.create_shipment(NewShipment(order_id=order_id, basket=[unit_line(2)]))

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_shipment(NewShipment(order_id=order_id, basket=[unit_line(2)]))

    # then
    assert (caught.value.kind, caught.value.code) == ("rejected", "wrong_shipment_amount")
    assert "остаток" in caught.value.message
    assert SandboxShipment.objects.count() == 1


@pytest.mark.django_db
def test_refundable_items_shrink_after_a_refund(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order_id = paid_order(sandbox)
    [before] = client.refundable_items(order_id)

    # when
    refund = client.create_refund(new_refund(order_id, unit_line(1)))
    [after] = client.refundable_items(order_id)

    # then
    assert (refund.status, refund.amount, refund.vat_amount, refund.currency) == (
        "created",
        12396,
        2066,
        "RUB",
    )
    assert refund.parent_id == order_id
    assert (before.available_amount, before.available_vat_amount) == (37188, 6198)
    assert (after.available_amount, after.available_vat_amount) == (24792, 4132)
    assert (after.sku, after.quantity, after.total_amount, after.amount_wo_vat) == (
        "ROOM-STD",
        D(3),
        37188,
        10330,
    )
    assert (after.measure_code, after.vat_code, after.type, after.payment_type) == (
        "796",
        "RUS_VAT20",
        "service",
        "full_prepayment",
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("paid", "lines", "code"),
    [
        (False, (unit_line(),), "wrong_order_status"),
        (True, (unit_line(3), unit_line(1)), "wrong_refund_amount"),
        (True, (unit_line(1, sku="MINIBAR"),), "wrong_refund_amount"),
    ],
    ids=["unpaid", "above-available", "unknown-sku"],
)
def test_refunds_the_sandbox_refuses_surface_as_rejected(
    sandbox: Sandbox, paid: bool, lines: tuple[BasketLine, ...], code: str
) -> None:
    # given
    client = sandbox.client()
    order = client.create_order(new_order())
    if paid:
        pay_order(order.id)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_refund(new_refund(order.id, *lines))

    # then
    assert (caught.value.kind, caught.value.code, caught.value.http_status) == (
        "rejected",
        code,
        422,
    )
    assert caught.value.request_id == sandbox.transport.responses[-1].headers["X-Request-Id"]
    assert not SandboxRefund.objects.exists()


@pytest.mark.django_db
def test_a_repeated_refund_number_is_rejected_as_duplicate(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order_id = paid_order(sandbox)
    refund = new_refund(order_id)
    client.create_refund(refund)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_refund(refund)

    # then
    assert (caught.value.kind, caught.value.code) == ("rejected", "merchant_order_id_duplicate")
    assert SandboxRefund.objects.count() == 1


@pytest.mark.django_db
def test_find_refunds_by_parent_and_by_number(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order_id, other_id = paid_order(sandbox), paid_order(sandbox)
    first = client.create_refund(new_refund(order_id))
    second = client.create_refund(new_refund(order_id))
    client.create_refund(new_refund(other_id))

    # when
    by_parent = client.find_refunds(parent_id=order_id)
    by_number = client.find_refunds(merchant_order_id=second.merchant_order_id)
    nothing = client.find_refunds(merchant_order_id="never-used")

    # then
    assert [r.id for r in by_parent] == [first.id, second.id]  # oldest first
    assert by_number == [second]
    assert nothing == []


@pytest.mark.django_db
@pytest.mark.parametrize("what", ["shipment", "refund"])
def test_a_write_whose_response_is_lost_is_unknown_outcome_but_exists(
    sandbox: Sandbox, what: str
) -> None:
    # given
    client = sandbox.client()
    order_id = paid_order(sandbox)
    refund = new_refund(order_id)
    set_faults(DEMO_TOKEN, drop_response_after_create=True)
    before = sandbox.attempts

    # when
    with pytest.raises(InvoiceboxError) as caught:
        if what == "shipment":
            client.create_shipment(NewShipment(order_id=order_id, basket=[unit_line()]))
        else:
            client.create_refund(refund)

    # then
    assert caught.value.kind == "unknown_outcome"
    assert sandbox.attempts - before == 1
    set_faults(DEMO_TOKEN)
    if what == "shipment":
        assert [s.amount for s in client.find_shipments(order_id=order_id).shipments] == [12396]
    else:
        assert [
            r.amount for r in client.find_refunds(merchant_order_id=refund.merchant_order_id)
        ] == [12396]


@pytest.mark.django_db
def test_cancel_after_a_shipment_is_rejected(sandbox: Sandbox) -> None:
    # given: a held order (cancelable) that was shipped
    client = sandbox.client()
    order = client.create_order(new_order())
    SandboxOrder.objects.filter(order_id=order.id).update(status="hold")
    client.create_shipment(NewShipment(order_id=order.id, basket=[unit_line()]))

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.cancel_order(order.id)

    # then
    assert (caught.value.kind, caught.value.code) == ("rejected", "wrong_order_status")
    read = client.get_order(order.id)
    assert read is not None and read.status == "hold"


# --------------------------------------------------------------------------- the remote API


def _query(request: httpx.Request) -> list[tuple[str, str]]:
    return parse_qsl(request.url.query.decode())


def test_new_shipment_and_refund_send_roubles_as_exact_json_numbers(remote: Remote) -> None:
    # given
    shipment_reply = {"id": 41, "orderId": ORDER_ID, "basketItems": []}
    refund_reply = {
        "id": "r-1",
        "parentId": ORDER_ID,
        "merchantOrderId": "rf-1",
        "status": "created",
        "amount": D("123.96"),
        "vatAmount": D("20.66"),
        "currencyId": "RUB",
        "createdAt": "2026-01-02T03:04:05+00:00",
    }
    remote.answer = lambda request: json_reply(
        200, {"data": (shipment_reply if request.url.path.endswith("/shipment") else refund_reply)}
    )
    client = remote.client()

    # when
    client.create_shipment(
        NewShipment(
            order_id=ORDER_ID, basket=[unit_line(1)], final=True, document_date=dt.date(2026, 8, 5)
        )
    )
    refund = client.create_refund(new_refund(ORDER_ID, merchant_order_id="rf-1"))

    # then
    shipment_request, refund_request = remote.requests
    assert (shipment_request.method, shipment_request.url.path) == (
        "POST",
        "/v3/billing/api/order/shipment",
    )
    raw = shipment_request.content.decode()
    assert '"totalAmount": 123.96' in raw and '"totalVatAmount": 20.66' in raw
    body = json.loads(raw, parse_float=Decimal)
    assert body["orderId"] == ORDER_ID
    assert (body["final"], body["documentDate"]) == (True, "2026-08-05")
    assert "documentNumber" not in body
    assert refund_request.url.path == "/v3/billing/api/order/refund-order"
    sent = json.loads(refund_request.content, parse_float=Decimal)
    assert set(sent) == {
        "parentId",
        "merchantOrderId",
        "description",
        "amount",
        "vatAmount",
        "basketItems",
    }
    assert (sent["amount"], sent["vatAmount"]) == (D("123.96"), D("20.66"))
    assert refund == Refund(
        id="r-1",
        parent_id=ORDER_ID,
        merchant_order_id="rf-1",
        status="created",
        amount=12396,
        vat_amount=2066,
        currency="RUB",
        created_at="2026-01-02T03:04:05+00:00",
    )


def test_find_shipments_sends_the_documented_filter_and_paging(remote: Remote) -> None:
    # given
    remote.answer = lambda request: json_reply(
        200, {"data": [], "metaData": {"totalCount": 0, "pageSize": 10, "page": 2}}
    )

    # when
    page = remote.client().find_shipments(order_id=ORDER_ID, page=2, page_size=10)

    # then
    [request] = remote.requests
    assert request.url.path == "/v3/filter/api/order/shipment"
    assert ("orderId", ORDER_ID) in _query(request)
    assert ("_page", "2") in _query(request) and ("_pageSize", "10") in _query(request)
    assert (page.shipments, page.total_count, page.page, page.page_size) == ([], 0, 2, 10)


def test_a_shipment_without_sums_is_worth_its_lines(remote: Remote) -> None:
    # given: only what the docs promise, plus lines
    row = {
        "id": 7,
        "merchantId": REMOTE_MERCHANT,
        "orderId": ORDER_ID,
        "basketItems": [
            {
                "sku": 501,
                "name": "A",
                "quantity": D("1.5"),
                "totalAmount": D("10.5"),
                "totalVatAmount": D("1.75"),
            },
            {"sku": "B", "name": "B", "quantity": 2, "totalAmount": 4, "totalVatAmount": 0},
        ],
    }
    remote.answer = lambda request: json_reply(200, {"data": [row]})

    # when
    [shipment] = remote.client().find_shipments().shipments

    # then
    assert shipment == Shipment(
        id="7",
        order_id=ORDER_ID,
        status="",
        final=False,
        amount=1450,
        vat_amount=None,
        document_number=None,
        document_date=None,
        created_at=None,
        items=[
            ShipmentItem(
                sku="501", name="A", quantity=D("1.5"), total_amount=1050, total_vat_amount=175
            ),
            ShipmentItem(sku="B", name="B", quantity=D(2), total_amount=400, total_vat_amount=0),
        ],
        merchant_id=REMOTE_MERCHANT,
    )


ITEM = {
    "sku": "ROOM-STD",
    "name": "Бронирование номера",
    "measure": "шт",
    "measureCode": "796",
    "quantity": 3,
    "amount": D("123.96"),
    "amountWoVat": D("103.3"),
    "totalAmount": D("371.88"),
    "totalVatAmount": D("61.98"),
    "vatCode": "RUS_VAT20",
    "type": 4,
    "paymentType": "full_prepayment",
}


@pytest.mark.parametrize(
    ("extra", "available", "available_vat"),
    [
        ({}, 37188, None),
        ({"availableAmount": D("123.96"), "availableVatAmount": D("20.66")}, 12396, 2066),
        ({"availableAmount": 0}, 0, None),
    ],
)
def test_refundable_items_map_to_kopecks_and_default_to_the_whole_line(
    remote: Remote, extra: dict[str, Any], available: int, available_vat: int | None
) -> None:
    # given
    remote.answer = lambda request: json_reply(200, {"data": [{**ITEM, **extra}]})

    # when
    [item] = remote.client().refundable_items(ORDER_ID)

    # then
    assert remote.requests[0].url.path == (
        f"/v3/billing/api/order/order/{ORDER_ID}/refund-basket-item"
    )
    assert item == RefundableItem(
        sku="ROOM-STD",
        name="Бронирование номера",
        measure="шт",
        measure_code="796",
        quantity=D(3),
        amount=12396,
        amount_wo_vat=10330,
        total_amount=37188,
        total_vat_amount=6198,
        vat_code="RUS_VAT20",
        type="4",
        payment_type="full_prepayment",
        available_amount=available,
        available_vat_amount=available_vat,
        available_sent="availableAmount" in extra,
    )


def test_lookup_company_keeps_numeric_ids_as_text_and_an_empty_kpp_as_none(remote: Remote) -> None:
    # given
    row = {
        "id": 12,
        "vatNumber": "500123456750",
        "taxRegistrationReasonCode": "",
        "name": "ИП Иванов",
        "postAddressZip": 142100,
    }
    remote.answer = lambda request: json_reply(200, {"data": [row]})

    # when
    [company] = remote.client().lookup_company("500123456750")

    # then
    assert company == Company(
        id="12",
        inn="500123456750",
        kpp=None,
        name="ИП Иванов",
        name_full=None,
        registration_number=None,
        registration_date=None,
        registration_address=None,
        post_address=None,
        post_address_zip="142100",
    )
    assert ("vatNumber", "500123456750") in _query(remote.requests[0])


def test_find_refunds_reads_every_page(remote: Remote) -> None:
    # given: 101 refunds, served 100 per page
    rows = [
        {
            "id": f"r-{n}",
            "parentId": ORDER_ID,
            "merchantOrderId": f"rf-{n}",
            "status": "created",
            "amount": 1,
            "currencyId": "RUB",
        }
        for n in range(101)
    ]

    def answer(request: httpx.Request) -> httpx.Response:
        page = int(dict(_query(request))["_page"])
        chunk = rows[(page - 1) * 100 : page * 100]
        return json_reply(
            200,
            {"data": chunk, "metaData": {"totalCount": len(rows), "pageSize": 100, "page": page}},
        )

    remote.answer = answer

    # when
    found = remote.client().find_refunds(parent_id=ORDER_ID)

    # then
    assert [r.id for r in found] == [f"r-{n}" for n in range(101)]
    assert {r.amount for r in found} == {100}
    assert len(remote.requests) == 2
    assert all(("parentId", ORDER_ID) in _query(r) for r in remote.requests)


BAD_SHAPES: list[tuple[str, Callable[[Any], Any], Any, str]] = [
    (
        "shipment",
        lambda c: c.create_shipment(NewShipment(order_id=ORDER_ID, basket=[])),
        {"id": 1, "orderId": ORDER_ID, "amount": "1.00"},
        "unknown_outcome",
    ),
    (
        "refund",
        lambda c: c.create_refund(new_refund(ORDER_ID)),
        {"id": "r", "parentId": ORDER_ID, "status": "created", "amount": D("1.001")},
        "unknown_outcome",
    ),
    ("refundable", lambda c: c.refundable_items(ORDER_ID), [{"sku": "x"}], "bad_response"),
    ("refundable-not-a-list", lambda c: c.refundable_items(ORDER_ID), {"sku": "x"}, "bad_response"),
    ("companies", lambda c: c.lookup_company("7710044140"), {"vatNumber": "1"}, "bad_response"),
    (
        "shipments",
        lambda c: c.find_shipments(),
        [{"id": 1, "orderId": ORDER_ID, "final": "perhaps"}],
        "bad_response",
    ),
]


@pytest.mark.parametrize(
    ("case", "call", "data", "kind"), BAD_SHAPES, ids=[b[0] for b in BAD_SHAPES]
)
def test_an_unexpected_shape_is_bad_response_or_unknown_outcome_for_writes(
    remote: Remote, case: str, call: Callable[[Any], Any], data: Any, kind: str
) -> None:
    # given
    remote.answer = lambda request: json_reply(200, {"data": data})

    # when
    with pytest.raises(InvoiceboxError) as caught:
        call(remote.client())

    # then
    assert caught.value.kind == kind
    assert caught.value.request_id == "req-42"
    assert len(remote.requests) == 1


def test_a_refund_answered_500_is_unknown_outcome_after_one_attempt(remote: Remote) -> None:
    # given
    remote.answer = lambda request: error_reply(500, "internal_error")

    # when
    with pytest.raises(InvoiceboxError) as caught:
        remote.client().create_refund(new_refund(ORDER_ID))

    # then
    assert (caught.value.kind, caught.value.http_status) == ("unknown_outcome", 500)
    assert len(remote.requests) == 1
