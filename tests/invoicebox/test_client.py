"""The Invoicebox client: against the bundled sandbox, and against a scripted remote API."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
import simplejson
from django.conf import settings

from invoicebox.client import (
    MAX_BODY_BYTES,
    BasketLine,
    Customer,
    InvoiceboxClient,
    InvoiceboxError,
    NewOrder,
    is_local_sandbox,
    make_client,
)
from invoicebox.money import to_kopecks, to_roubles
from sandbox.api import DEMO_MERCHANT_ID, DEMO_TOKEN, InProcessTransport, set_faults
from sandbox.models import SandboxAccount, SandboxOrder

# The client shares its rate budget and circuit state through the database.
pytestmark = pytest.mark.django_db

SANDBOX_URL = "http://testserver/sandbox/invoicebox"
REMOTE_URL = "https://api.invoicebox.ru"
REMOTE_TOKEN = "0123456789abcdef0123456789abcdef"
REMOTE_MERCHANT = "11111111-2222-3333-4444-555555555555"
READ_ATTEMPTS = 3
D = Decimal


def new_order(**changes: Any) -> NewOrder:
    """The reference example in kopecks: 3 x 123.96 = 371.88, VAT 20 % = 61.98."""
    line = BasketLine(
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
        type="service",
        payment_type="full_prepayment",
    )
    order = NewOrder(
        merchant_order_id=f"gw-test-{uuid.uuid4().hex[:12]}",
        description="Бронирование номера, 3 ночи",
        amount=37188,
        vat_amount=6198,
        currency_id="RUB",
        language_id="ru",
        expiration_date=dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(days=7),
        basket=[line],
        customer=Customer(
            type="legal",
            name="ООО «Ромашка»",
            vat_number="7710044140",
            tax_registration_reason_code="770201001",
        ),
    )
    line_changes = changes.pop("line", {})
    if line_changes:
        order = replace(order, basket=[replace(line, **line_changes)])
    return replace(order, **changes)


# --------------------------------------------------------------------------- the sandbox


class CountingTransport(InProcessTransport):
    """The real in-process sandbox, remembering what reached it."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        response = super().handle_request(request)
        self.responses.append(response)
        return response


@dataclass
class Sandbox:
    transport: CountingTransport = field(default_factory=CountingTransport)
    opened: list[InvoiceboxClient] = field(default_factory=list)

    def client(self, token: str = DEMO_TOKEN) -> InvoiceboxClient:
        made = InvoiceboxClient(
            base_url=SANDBOX_URL,
            token=token,
            merchant_id=DEMO_MERCHANT_ID,
            transport=self.transport,
            read_attempts=READ_ATTEMPTS,
            backoff_seconds=0,
        )
        self.opened.append(made)
        return made

    @property
    def attempts(self) -> int:
        return len(self.transport.requests)


@pytest.fixture
def sandbox(db: None) -> Iterator[Sandbox]:
    found = Sandbox()
    yield found
    for opened in found.opened:
        opened.close()


@pytest.mark.django_db
def test_created_order_reads_back_with_exact_kopecks(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order = new_order()

    # when
    created = client.create_order(order)
    read = client.get_order(created.id)

    # then
    assert read is not None
    for seen in (created, read):
        assert seen.id == created.id
        assert seen.merchant_order_id == order.merchant_order_id
        assert seen.status == "created"
        assert seen.amount == 37188
        assert seen.vat_amount == 6198
        assert seen.currency == "RUB"
        assert seen.customer_name == "ООО «Ромашка»"
        assert seen.customer_vat_number == "7710044140"
    stored = SandboxOrder.objects.get(order_id=created.id)
    assert stored.amount == D("371.88")
    assert stored.vat_amount == D("61.98")
    line = simplejson.loads(stored.request_json, use_decimal=True)["basketItems"][0]
    assert line["quantity"] == 3
    assert line["amount"] == D("123.96")
    assert line["totalAmount"] == D("371.88")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"line": {"total_amount": 37187}, "amount": 37187}, "wrong_basket_item_total_amount"),
        ({"amount": 37189}, "wrong_total_amount"),
        ({"vat_amount": 6199}, "wrong_total_vat_amount"),
    ],
)
def test_sandbox_calculation_errors_surface_as_rejected_with_code_and_request_id(
    sandbox: Sandbox, changes: dict[str, Any], code: str
) -> None:
    # given
    client = sandbox.client()

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_order(new_order(**changes))

    # then
    error = caught.value
    assert (error.kind, error.code, error.http_status) == ("rejected", code, 422)
    assert re.fullmatch(r"[0-9a-f]{32}", error.request_id)
    assert error.request_id == sandbox.transport.responses[-1].headers["X-Request-Id"]
    assert error.fields and error.fields[0]["code"] == "wrong_value"
    assert SandboxOrder.objects.count() == 0


@pytest.mark.django_db
def test_repeated_merchant_order_id_is_rejected_as_duplicate(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order = new_order()
    first = client.create_order(order)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_order(order)

    # then
    error = caught.value
    assert (error.kind, error.code, error.http_status) == (
        "rejected",
        "merchant_order_id_duplicate",
        422,
    )
    assert error.request_id == sandbox.transport.responses[-1].headers["X-Request-Id"]
    assert error.request_id != sandbox.transport.responses[0].headers["X-Request-Id"]
    assert list(SandboxOrder.objects.values_list("order_id", flat=True)) == [uuid.UUID(first.id)]


@pytest.mark.django_db
def test_bad_token_is_unauthorized(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client(token="f" * 32)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.find_orders()

    # then
    assert (caught.value.kind, caught.value.code, caught.value.http_status) == (
        "unauthorized",
        "unauthorized",
        401,
    )
    assert caught.value.request_id
    assert sandbox.attempts == 1


@pytest.mark.django_db
def test_check_auth_answers_the_demo_user_id(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()

    # when
    user_id = client.check_auth()

    # then
    digest = hashlib.sha256(DEMO_TOKEN.encode()).hexdigest()
    assert user_id == str(SandboxAccount.objects.get(token_sha256=digest).user_id)


@pytest.mark.django_db
def test_one_injected_failure_on_a_read_is_retried_and_succeeds(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    created = client.create_order(new_order())
    set_faults(DEMO_TOKEN, fail_next=1)
    before = sandbox.attempts

    # when
    read = client.get_order(created.id)

    # then
    assert read is not None and read.id == created.id
    assert sandbox.attempts - before == 2


@pytest.mark.django_db
def test_a_read_that_always_fails_is_unavailable_after_all_attempts(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    set_faults(DEMO_TOKEN, error_rate=1.0)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.find_orders()

    # then
    assert (caught.value.kind, caught.value.http_status) == ("unavailable", 500)
    assert sandbox.attempts == READ_ATTEMPTS


@pytest.mark.django_db
def test_a_create_answered_500_is_unknown_outcome_after_one_attempt(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    set_faults(DEMO_TOKEN, error_rate=1.0)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_order(new_order())

    # then
    assert (caught.value.kind, caught.value.http_status) == ("unknown_outcome", 500)
    assert sandbox.attempts == 1
    assert SandboxOrder.objects.count() == 0


@pytest.mark.django_db
def test_a_create_whose_response_is_lost_is_unknown_outcome_but_exists(sandbox: Sandbox) -> None:
    # given
    client = sandbox.client()
    order = new_order()
    set_faults(DEMO_TOKEN, drop_response_after_create=True)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        client.create_order(order)

    # then
    assert caught.value.kind == "unknown_outcome"
    assert sandbox.attempts == 1
    found = client.find_orders(merchant_order_id=order.merchant_order_id)
    assert found.total_count == 1
    assert [(o.merchant_order_id, o.amount) for o in found.orders] == [
        (order.merchant_order_id, 37188)
    ]


# --------------------------------------------------------------------------- the remote API


def order_json(**changes: Any) -> dict[str, Any]:
    """An order as api.invoicebox.ru answers it (money as JSON numbers)."""
    body: dict[str, Any] = {
        "id": "0190d6a4-1f2e-7c3b-9a8d-123456789abc",
        "merchantOrderId": "gw-1",
        "status": "created",
        "amount": D("371.88"),
        "vatAmount": D("61.98"),
        "currencyId": "RUB",
        "description": "Бронирование номера, 3 ночи",
        "createdAt": "2026-01-02T03:04:05+00:00",
        "expirationDate": "2026-01-09T03:04:05+00:00",
        "paymentUrl": "https://pay.invoicebox.ru/order/x",
        "customer": {"type": "legal", "name": "ООО «Ромашка»", "vatNumber": "7710044140"},
    }
    body.update(changes)
    return body


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(
        status,
        headers={"Content-Type": "application/json", "X-Request-Id": "req-42", **(headers or {})},
        content=simplejson.dumps(payload, use_decimal=True).encode(),
    )


def order_reply(**changes: Any) -> httpx.Response:
    return json_reply(200, {"data": order_json(**changes), "extendedData": []})


def created_reply(request: httpx.Request) -> httpx.Response:
    """The create's answer, echoing the merchantOrderId it was sent (another one is an unknown
    outcome, tested apart)."""
    sent = simplejson.loads(request.content)
    return order_reply(merchantOrderId=sent["merchantOrderId"])


def list_reply(*orders: dict[str, Any]) -> httpx.Response:
    return json_reply(
        200, {"data": list(orders), "extendedData": [], "metaData": {"totalCount": len(orders)}}
    )


def error_reply(
    status: int,
    code: str = "",
    request: httpx.Request | None = None,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    # A careless upstream echoes the Authorization header back: it must not leak further.
    echoed = request.headers.get("authorization", "") if request is not None else ""
    body: dict[str, Any] = {"message": f"Failed for {echoed}", "code": code}
    if status == 422:
        body["fields"] = [{"name": "amount", "code": "wrong_value", "message": ""}]
    return json_reply(status, {"error": body}, headers)


@dataclass
class Remote:
    """api.invoicebox.ru at the one HTTP seam: answers with `answer`, records every request."""

    answer: Callable[[httpx.Request], httpx.Response] = lambda request: list_reply()
    requests: list[httpx.Request] = field(default_factory=list)

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer(request)

    def client(self) -> InvoiceboxClient:
        return InvoiceboxClient(
            base_url=REMOTE_URL,
            token=REMOTE_TOKEN,
            merchant_id=REMOTE_MERCHANT,
            transport=httpx.MockTransport(self.handle),
            read_attempts=READ_ATTEMPTS,
            backoff_seconds=0,
        )


@pytest.fixture
def remote() -> Remote:
    return Remote()


def test_every_request_carries_token_user_agent_and_accept(remote: Remote) -> None:
    # given
    remote.answer = created_reply
    client = remote.client()

    # when
    client.create_order(new_order())

    # then
    (request,) = remote.requests
    assert request.method == "POST"
    assert str(request.url) == f"{REMOTE_URL}/v3/billing/api/order/order"
    assert request.headers["authorization"] == f"Bearer {REMOTE_TOKEN}"
    assert request.headers["user-agent"].strip()
    assert request.headers["user-agent"] == settings.INVOICEBOX_USER_AGENT
    assert request.headers["accept"] == "application/json"
    assert request.headers["content-type"] == "application/json"


def test_create_sends_money_as_exact_json_numbers_and_the_merchant_in_the_body(
    remote: Remote,
) -> None:
    # given
    remote.answer = created_reply
    order = new_order()

    # when
    created = remote.client().create_order(order)

    # then
    raw = remote.requests[0].content
    assert re.search(rb'"amount":\s*371\.88[,}]', raw)
    assert re.search(rb'"vatAmount":\s*61\.98[,}]', raw)
    assert re.search(rb'"totalAmount":\s*371\.88[,}]', raw)
    assert re.search(rb'"amountWoVat":\s*103\.30[,}]', raw)
    assert re.search(rb'"quantity":\s*3[,}]', raw)
    assert b'"371.88"' not in raw
    body = json.loads(raw, parse_float=Decimal)
    assert body["merchantId"] == REMOTE_MERCHANT
    assert body["merchantOrderId"] == order.merchant_order_id
    assert body["amount"] == D("371.88") and isinstance(body["amount"], Decimal)
    assert body["basketItems"][0]["amount"] == D("123.96")
    assert body["expirationDate"] == order.expiration_date.isoformat(timespec="seconds")
    assert body["expirationDate"].endswith("+00:00")
    assert (created.amount, created.vat_amount) == (37188, 6198)


def test_find_orders_sends_paging_order_statuses_and_an_offset_date(remote: Remote) -> None:
    # given
    since = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=3)))

    # when
    page = remote.client().find_orders(
        statuses=["created", "completed"], created_from=since, page=2, page_size=50
    )

    # then
    (request,) = remote.requests
    assert request.method == "GET"
    assert request.url.path == "/v3/filter/api/order/order"
    # What a server decodes from the raw query: a literal '+' would arrive as a space.
    sent = parse_qsl(request.url.query.decode("ascii"), keep_blank_values=True)
    assert sent == [
        ("_page", "2"),
        ("page", "2"),
        ("_pageSize", "50"),
        ("pageSize", "50"),
        ("_order[createdAt]", "desc"),
        ("merchantId", REMOTE_MERCHANT),
        ("status[]", "created"),
        ("status[]", "completed"),
        ("createdAt[_ge]", "2026-01-02T03:04:05+03:00"),
    ]
    assert page.orders == [] and page.total_count == 0


def test_a_listed_order_maps_to_kopecks(remote: Remote) -> None:
    # given
    remote.answer = lambda request: list_reply(order_json(amount=D("0.1"), vatAmount=0))

    # when
    page = remote.client().find_orders()

    # then
    assert [(o.amount, o.vat_amount, o.status) for o in page.orders] == [(10, 0, "created")]


def read(client: InvoiceboxClient) -> Any:
    return client.find_orders()


def write(client: InvoiceboxClient) -> Any:
    return client.create_order(new_order())


def raise_timeout(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


def huge_reply(request: httpx.Request) -> httpx.Response:
    padding = b"x" * (MAX_BODY_BYTES + 1)
    return httpx.Response(
        200,
        headers={"Content-Type": "application/json"},
        content=b'{"data": [], "pad": "' + padding + b'"}',
    )


def non_json(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"Content-Type": "text/html"}, content=b"<html>ok</html>")


Call = Callable[[InvoiceboxClient], Any]
Answer = Callable[[httpx.Request], httpx.Response]
MAPPING: list[tuple[str, Call, Answer, str, int]] = [
    ("401", read, lambda r: error_reply(401, "unauthorized", r), "unauthorized", 1),
    ("403", write, lambda r: error_reply(403, "forbidden", r), "forbidden", 1),
    ("404", read, lambda r: error_reply(404, "not_found", r), "not_found", 1),
    ("422 on a write", write, lambda r: error_reply(422, "wrong_total_amount", r), "rejected", 1),
    (
        "400 with an unknown code",
        write,
        lambda r: error_reply(400, "bad_request", r),
        "rejected",
        1,
    ),
    (
        "429 on a read",
        read,
        lambda r: error_reply(429, "", r, {"Retry-After": "0"}),
        "rate_limited",
        READ_ATTEMPTS,
    ),
    # The upstream may have stored the order before its 503: the outcome is unknown, found by
    # lookup, never "failed" (tools/pipeline/execution.py).
    ("503 on a write", write, lambda r: error_reply(503, "", r), "unknown_outcome", 1),
    ("500 on a read", read, lambda r: error_reply(500, "", r), "unavailable", READ_ATTEMPTS),
    ("500 on a write", write, lambda r: error_reply(500, "", r), "unknown_outcome", 1),
    (
        "302",
        read,
        lambda r: httpx.Response(302, headers={"Location": "https://evil.example/"}),
        "bad_response",
        1,
    ),
    ("non-JSON 200 on a read", read, non_json, "bad_response", 1),
    ("non-JSON 200 on a write", write, non_json, "unknown_outcome", 1),
    (
        "3-decimal money",
        read,
        lambda r: list_reply(order_json(amount=D("371.885"))),
        "bad_response",
        1,
    ),
    ("timeout on a read", read, raise_timeout, "unavailable", READ_ATTEMPTS),
    ("timeout on a write", write, raise_timeout, "unknown_outcome", 1),
    ("body over 4 MB", read, huge_reply, "bad_response", 1),
]


@pytest.mark.parametrize(
    ("call", "answer", "kind", "attempts"),
    [case[1:] for case in MAPPING],
    ids=[case[0] for case in MAPPING],
)
def test_upstream_failures_map_to_kinds_and_retry_only_where_safe(
    remote: Remote, call: Call, answer: Answer, kind: str, attempts: int
) -> None:
    # given
    remote.answer = answer
    client = remote.client()

    # when
    with pytest.raises(InvoiceboxError) as caught:
        call(client)

    # then
    assert caught.value.kind == kind
    assert len(remote.requests) == attempts
    assert {r.url.host for r in remote.requests} == {"api.invoicebox.ru"}


@pytest.mark.parametrize(
    ("call", "answer"), [case[1:3] for case in MAPPING], ids=[case[0] for case in MAPPING]
)
def test_the_token_never_appears_in_an_error_message(
    remote: Remote, call: Call, answer: Answer
) -> None:
    # given
    remote.answer = answer

    # when
    with pytest.raises(InvoiceboxError) as caught:
        call(remote.client())

    # then
    error = caught.value
    assert error.message
    assert REMOTE_TOKEN not in error.message
    assert REMOTE_TOKEN not in str(error)
    assert REMOTE_TOKEN not in repr(error.args)


def test_a_rejection_keeps_code_fields_status_and_request_id(remote: Remote) -> None:
    # given
    remote.answer = lambda request: error_reply(422, "wrong_total_amount", request)

    # when
    with pytest.raises(InvoiceboxError) as caught:
        write(remote.client())

    # then
    error = caught.value
    assert (error.kind, error.code, error.http_status, error.request_id) == (
        "rejected",
        "wrong_total_amount",
        422,
        "req-42",
    )
    assert error.message == "Инвойсбокс: сумма заказа не равна сумме позиций"
    assert error.fields == [{"name": "amount", "code": "wrong_value", "message": ""}]


def test_a_rate_limit_gives_up_with_the_retry_after_it_was_told(remote: Remote) -> None:
    # given
    remote.answer = lambda request: error_reply(429, "", request, {"Retry-After": "0"})

    # when
    with pytest.raises(InvoiceboxError) as caught:
        read(remote.client())

    # then
    assert (caught.value.kind, caught.value.http_status, caught.value.retry_after) == (
        "rate_limited",
        429,
        0.0,
    )


def test_a_failure_then_success_on_a_read_returns_the_data(remote: Remote) -> None:
    # given
    answers = iter([error_reply(503), list_reply(order_json())])
    remote.answer = lambda request: next(answers)

    # when
    page = read(remote.client())

    # then
    assert [o.amount for o in page.orders] == [37188]
    assert len(remote.requests) == 2


# --------------------------------------------------------------------------- money


@pytest.mark.parametrize(
    ("kopecks", "roubles"),
    [
        (0, "0.00"),
        (1, "0.01"),
        (10, "0.10"),
        (12200, "122.00"),
        (37188, "371.88"),
        (100_000_000_000_00, "100000000000.00"),
    ],
)
def test_to_roubles_is_exact_with_two_decimals(kopecks: int, roubles: str) -> None:
    assert str(to_roubles(kopecks)) == roubles
    assert to_kopecks(to_roubles(kopecks)) == kopecks


@pytest.mark.parametrize(
    ("value", "kopecks"),
    [
        (D("371.88"), 37188),
        (D("0.1"), 10),
        (D("103.3"), 10330),
        (D("12.340"), 1234),
        (D("0"), 0),
        (100, 10000),
        (0, 0),
        (D("1E+2"), 10000),
    ],
)
def test_to_kopecks_accepts_numbers_with_at_most_two_decimals(
    value: Decimal | int, kopecks: int
) -> None:
    result = to_kopecks(value)
    assert result == kopecks
    assert type(result) is int


@pytest.mark.parametrize(
    "value",
    [True, False, 371.88, "371.88", None, D("371.885"), D("0.001"), D("0.1000001")],
)
def test_to_kopecks_refuses_bools_floats_strings_and_three_decimals(value: Any) -> None:
    with pytest.raises(ValueError):
        to_kopecks(value)


# --------------------------------------------------------------------------- routing


@pytest.mark.parametrize(
    ("base_url", "local"),
    [
        (settings.INVOICEBOX_SANDBOX_BASE_URL, True),
        ("http://127.0.0.1:8000/sandbox/invoicebox", True),
        ("http://localhost:8000/sandbox/invoicebox/", True),
        (SANDBOX_URL, True),
        ("https://api.invoicebox.ru", False),
        ("https://api.invoicebox.ru/sandbox/invoicebox", False),
        ("http://127.0.0.1:8000/elsewhere", False),
        ("http://localhost.evil.example/sandbox/invoicebox", False),
    ],
)
def test_is_local_sandbox_only_for_our_own_mount_on_a_local_host(
    base_url: str, local: bool
) -> None:
    assert is_local_sandbox(base_url) is local


@pytest.mark.django_db
def test_make_client_reaches_the_local_sandbox_in_process() -> None:
    # given
    client = make_client(
        base_url=settings.INVOICEBOX_SANDBOX_BASE_URL,
        token=DEMO_TOKEN,
        merchant_id=DEMO_MERCHANT_ID,
    )

    # when
    with client:
        user_id = client.check_auth()

    # then
    assert uuid.UUID(user_id)


# -- a server that ignores the filter ---------------------------------------------------------


def test_get_order_refuses_a_row_that_is_not_the_order_asked_for(remote: Remote) -> None:
    # given: a server that ignores every filter and always answers one fixed order
    remote.answer = lambda request: list_reply(order_json())
    asked = str(uuid.uuid4())

    # when / then: never "the first row" of somebody else's order
    with pytest.raises(InvoiceboxError) as refused:
        remote.client().get_order(asked)
    assert refused.value.kind == "bad_response"
    assert "фильтр не применён" in refused.value.message
    assert asked[:36] in refused.value.message


def test_a_lookup_by_merchant_number_refuses_another_number(remote: Remote) -> None:
    remote.answer = lambda request: list_reply(order_json(merchantOrderId="gw-other"))

    with pytest.raises(InvoiceboxError) as refused:
        remote.client().find_orders(merchant_order_id="gw-20261202-abc")
    assert refused.value.kind == "bad_response"


def test_the_order_asked_for_still_reads(remote: Remote) -> None:
    wanted = order_json()
    remote.answer = lambda request: list_reply(wanted)

    order = remote.client().get_order(wanted["id"].upper())

    assert order is not None and order.id == wanted["id"]
