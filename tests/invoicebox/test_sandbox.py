"""The bundled Invoicebox sandbox, through real HTTP (Django's client) and the in-process transport."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import logging
import re
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest
import simplejson
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection, transaction

from sandbox.api import (
    DEMO_MERCHANT_ID,
    DEMO_TOKEN,
    InProcessTransport,
    clear_faults,
    handle,
    pay_order,
    register_account,
    set_faults,
)
from sandbox.models import SandboxAccount, SandboxFaults, SandboxOrder
from tests.invoicebox.conftest import (
    AUTH,
    FAULTS,
    FILTER,
    ORDERS,
    USER_AGENT,
    Contour,
    dumps,
    loads,
    post_order,
    reference_order,
)

pytestmark = pytest.mark.django_db

D = Decimal
ATOM = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00")
UNHANDLED = "sandbox: unhandled error"
# Parametrized ids must be the same in every collecting process (pytest-xdist compares them).
UNKNOWN_ORDER_ID = "3f2c6a1e-9b7d-4c55-8e21-5a0d7c4b9e13"
Http = Callable[..., Any]
InProcess = Callable[..., httpx.Client]


def _item(body: dict[str, Any]) -> dict[str, Any]:
    return body["basketItems"][0]


def _create(http: Http, contour: Contour | None = None, **overrides: Any) -> dict[str, Any]:
    token = contour.token if contour else DEMO_TOKEN
    merchant = contour.merchant_id if contour else DEMO_MERCHANT_ID
    response = http("POST", ORDERS, reference_order(merchant, **overrides), token=token)
    assert response.status_code == 200, response.content
    return loads(response.content)["data"]


def _error(response: Any) -> dict[str, Any]:
    return loads(response.content)["error"]


# --------------------------------------------------------------------------- create


def test_create_order_over_http_answers_the_reference_shape(http: Http) -> None:
    expires = (dt.datetime.now(dt.UTC) + dt.timedelta(days=7)).replace(microsecond=0)
    body = reference_order(
        merchantOrderId="gw-2026-000123",
        expirationDate=expires.astimezone(dt.timezone(dt.timedelta(hours=3))).isoformat(),
    )

    response = http("POST", ORDERS, body)

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response["X-Request-Id"]
    raw = response.content.decode()
    # Money leaves as JSON numbers with at most two decimals, never as strings.
    assert '"amount":371.88' in raw
    assert '"vatAmount":61.98' in raw
    assert '"amountWoVat":103.3' in raw
    envelope = loads(response.content)
    assert envelope["extendedData"] == []
    order = envelope["data"]
    assert uuid.UUID(order["id"]).version == 7
    container = order["orderContainerId"]
    assert uuid.UUID(container)
    assert order["merchantId"] == DEMO_MERCHANT_ID
    assert order["merchantOrderId"] == "gw-2026-000123"
    assert order["status"] == "created"
    assert order["subtype"] == "order"
    assert order["processingStatus"] == ""
    assert order["fileIds"] == []
    assert order["processable"] is True
    assert ATOM.fullmatch(order["createdAt"])
    assert order["expirationDate"] == expires.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    assert order["paymentUrl"] == f"{settings.INVOICEBOX_SANDBOX_BASE_URL}/pay/{container}"
    assert order["amount"] == D("371.88")
    assert order["basketItems"][0]["quantity"] == 3
    assert order["basketItems"][0]["totalVatAmount"] == D("61.98")
    assert order["customer"]["vatNumber"] == "7710044140"
    assert "paidAt" not in order
    stored = SandboxOrder.objects.get(order_id=order["id"])
    assert stored.amount == D("371.88")
    assert stored.merchant_id == uuid.UUID(DEMO_MERCHANT_ID)


def test_create_order_in_process_answers_the_same_shape(ib: httpx.Client) -> None:
    response = post_order(ib, reference_order())

    assert response.status_code == 200
    assert response.headers["x-request-id"]
    order = response.json(parse_float=Decimal)["data"]
    assert order["status"] == "created"
    assert order["amount"] == D("371.88")
    assert SandboxOrder.objects.filter(order_id=order["id"]).exists()


def test_optional_fields_are_echoed(http: Http) -> None:
    order = _create(http, merchantOrderIdVisible="№ 123", metaData={"@type": "X"})

    assert order["merchantOrderIdVisible"] == "№ 123"
    assert order["metaData"] == {"@type": "X"}


def test_fields_off_the_contract_are_ignored_as_vendor_plugins_send_them(http: Http) -> None:
    # The Bitrix module sends vatRate in every line (handler.php:670,680), WooCommerce the
    # customer's KPP: the real API takes them, so the sandbox ignores what it doesn't know.
    body = reference_order(bogusField=1)
    body["customer"]["kpp"] = "770201001"
    body["basketItems"][0]["vatRate"] = 3

    response = http("POST", ORDERS, body)

    assert response.status_code == 200, response.content
    stored = json.loads(
        SandboxOrder.objects.get(merchant_order_id=body["merchantOrderId"]).request_json
    )
    assert "bogusField" not in stored and "kpp" not in stored["customer"]
    assert "vatRate" not in stored["basketItems"][0]


@pytest.mark.parametrize(
    ("case", "change", "code", "field"),
    [
        (
            "line total is not amount × quantity",
            lambda b: _item(b).update(totalAmount=D("371.89")),
            "wrong_basket_item_total_amount",
            "basketItems[0].totalAmount",
        ),
        (
            "line VAT off by two kopecks",
            lambda b: _item(b).update(totalVatAmount=D("62.00")),
            "wrong_basket_item_total_vat_amount",
            "basketItems[0].totalVatAmount",
        ),
        (
            "VAT at a 0 % code",
            lambda b: _item(b).update(vatCode="RUS_VAT0"),
            "wrong_basket_item_total_vat_amount",
            "basketItems[0].totalVatAmount",
        ),
        (
            "unit price without VAT does not add up",
            lambda b: _item(b).update(amountWoVat=D("103.40")),
            "wrong_basket_item_amount_wo_vat",
            "basketItems[0].amountWoVat",
        ),
        (
            "order amount is not the sum of lines",
            lambda b: b.update(amount=D("371.87")),
            "wrong_total_amount",
            "amount",
        ),
        (
            "order VAT is not the sum of line VAT",
            lambda b: b.update(vatAmount=D("61.97")),
            "wrong_total_vat_amount",
            "vatAmount",
        ),
    ],
)
def test_arithmetic_mismatch_is_a_calculation_error(
    http: Http, case: str, change: Callable[[dict[str, Any]], None], code: str, field: str
) -> None:
    body = reference_order()
    change(body)

    response = http("POST", ORDERS, body)

    assert response.status_code == 422, case
    assert loads(response.content) == {
        "error": {
            "message": "Calculation Error",
            "code": code,
            "fields": [{"name": field, "code": "wrong_value", "message": ""}],
        }
    }
    assert not SandboxOrder.objects.exists()


@pytest.mark.parametrize(
    ("case", "change", "code", "field"),
    [
        (
            "no expiration",
            lambda b: b.pop("expirationDate"),
            "wrong_expiration_date",
            "expirationDate",
        ),
        (
            "garbage expiration",
            lambda b: b.update(expirationDate="soon"),
            "wrong_expiration_date",
            "expirationDate",
        ),
        (
            "numeric expiration",
            lambda b: b.update(expirationDate=12345),
            "wrong_expiration_date",
            "expirationDate",
        ),
        (
            "past expiration",
            lambda b: b.update(expirationDate="2020-12-22T00:00:00+00:00"),
            "wrong_expiration_date",
            "expirationDate",
        ),
        (
            "expiration at the end of time",
            lambda b: b.update(expirationDate="9999-12-31T23:59:59-01:00"),
            "wrong_expiration_date",
            "expirationDate",
        ),
        ("unknown currency", lambda b: b.update(currencyId="XXX"), "wrong_currency", "currencyId"),
        (
            "lowercase currency",
            lambda b: b.update(currencyId="rub"),
            "wrong_currency",
            "currencyId",
        ),
        (
            "unknown language",
            lambda b: b.update(languageId="de"),
            "language_not_found",
            "languageId",
        ),
        (
            "unknown VAT code",
            lambda b: _item(b).update(vatCode="RUS_VAT18"),
            "wrong_vat_code",
            "basketItems[0].vatCode",
        ),
    ],
)
def test_documented_422_codes(
    http: Http, case: str, change: Callable[[dict[str, Any]], None], code: str, field: str
) -> None:
    body = reference_order()
    change(body)

    response = http("POST", ORDERS, body)

    assert response.status_code == 422, case
    error = _error(response)
    assert error["code"] == code
    assert [f["name"] for f in error["fields"]] == [field]
    assert not SandboxOrder.objects.exists()


@pytest.mark.parametrize(
    ("case", "overrides", "item"),
    [
        ("VAT within one kopeck", {"vatAmount": D("61.99")}, {"totalVatAmount": D("61.99")}),
        (
            "no VAT",
            {"vatAmount": D(0)},
            {"vatCode": "VATNONE", "totalVatAmount": D(0), "amountWoVat": D("123.96")},
        ),
        (
            "22 % added is checked as included",
            {"amount": D("122.00"), "vatAmount": D("22.00")},
            {
                "vatCode": "RUS_VAT22_ADDED",
                "quantity": 1,
                "amount": D("122.00"),
                "totalAmount": D("122.00"),
                "totalVatAmount": D("22.00"),
                "amountWoVat": D("100.00"),
            },
        ),
        (
            "rounded unit price without VAT, ten units",
            {"amount": D("9.90"), "vatAmount": D("1.65")},
            {
                "quantity": 10,
                "amount": D("0.99"),
                "totalAmount": D("9.90"),
                "totalVatAmount": D("1.65"),
                "amountWoVat": D("0.83"),
            },
        ),
        (
            "fractional quantity",
            {"amount": D("150.00"), "vatAmount": D("25.00")},
            {
                "quantity": D("1.5"),
                "measure": "кг",
                "measureCode": "166",
                "amount": D("100.00"),
                "totalAmount": D("150.00"),
                "totalVatAmount": D("25.00"),
                "amountWoVat": D("83.33"),
            },
        ),
        ("trailing zero decimals", {"amount": D("371.880")}, {}),
    ],
)
def test_consistent_orders_pass_the_arithmetic(
    http: Http, case: str, overrides: dict[str, Any], item: dict[str, Any]
) -> None:
    body = reference_order(**overrides)
    _item(body).update(item)

    response = http("POST", ORDERS, body)

    assert response.status_code == 200, (case, response.content)


def test_missing_and_ill_typed_fields_are_listed_one_by_one(http: Http) -> None:
    body = reference_order(amount="371.88")
    del body["description"]
    del _item(body)["sku"]
    _item(body)["quantity"] = True

    response = http("POST", ORDERS, body)

    assert response.status_code == 422
    error = _error(response)
    assert error["code"] == "validation"
    assert {(f["name"], f["code"]) for f in error["fields"]} == {
        ("description", "required"),
        ("amount", "wrong_type"),
        ("basketItems[0].sku", "required"),
        ("basketItems[0].quantity", "wrong_type"),
    }


@pytest.mark.parametrize(
    ("where", "value"),
    [("amount", D("371.875")), ("basketItems[0].amount", D("123.955"))],
)
def test_money_with_three_decimals_is_refused(http: Http, where: str, value: Decimal) -> None:
    body = reference_order()
    if where == "amount":
        body["amount"] = value
    else:
        _item(body)["amount"] = value

    response = http("POST", ORDERS, body)

    assert response.status_code == 422
    error = _error(response)
    assert error["code"] == "validation"
    assert [f["name"] for f in error["fields"]] == [where]


def test_duplicate_merchant_order_id_is_refused_per_merchant(http: Http, contour: Contour) -> None:
    first = _create(http, merchantOrderId="gw-dup-1")

    again = http("POST", ORDERS, reference_order(merchantOrderId="gw-dup-1"))
    elsewhere = http(
        "POST",
        ORDERS,
        reference_order(contour.merchant_id, merchantOrderId="gw-dup-1"),
        token=contour.token,
    )

    assert again.status_code == 422
    assert _error(again) == {
        "message": "Duplicate merchant order id",
        "code": "merchant_order_id_duplicate",
        "fields": [{"name": "merchantOrderId", "code": "wrong_value", "message": ""}],
    }
    assert SandboxOrder.objects.filter(merchant_id=DEMO_MERCHANT_ID).get().order_id == uuid.UUID(
        first["id"]
    )
    assert elsewhere.status_code == 200


def test_duplicate_inside_the_callers_transaction_leaves_it_usable(ib: httpx.Client) -> None:
    body = reference_order()
    with transaction.atomic():
        assert post_order(ib, body).status_code == 200
        duplicate = post_order(ib, body)
        # The IntegrityError was contained in the sandbox's savepoint.
        assert SandboxOrder.objects.count() == 1

    assert duplicate.json()["error"]["code"] == "merchant_order_id_duplicate"


@pytest.mark.django_db(transaction=True)
def test_in_process_transport_outside_a_transaction_keeps_the_connection() -> None:
    connection.ensure_connection()
    raw_connection = connection.connection
    body = reference_order()
    with httpx.Client(
        transport=InProcessTransport(),
        base_url="http://testserver/sandbox/invoicebox",
        headers={"Authorization": f"Bearer {DEMO_TOKEN}", "User-Agent": USER_AGENT},
    ) as client:
        created = post_order(client, body)
        duplicate = post_order(client, body)

    assert created.status_code == 200
    assert duplicate.json()["error"]["code"] == "merchant_order_id_duplicate"
    assert connection.connection is raw_connection
    assert SandboxOrder.objects.count() == 1


# --------------------------------------------------------------------------- auth


def test_auth_check_with_a_valid_token_names_the_user(http: Http) -> None:
    first = http("GET", AUTH)
    second = http("GET", AUTH)

    assert first.status_code == 200
    body = loads(first.content)
    assert body["extendedData"] == []
    assert body["data"]["profile"] is None
    assert body["data"]["accessToken"] is None
    assert uuid.UUID(body["data"]["userId"])
    assert loads(second.content)["data"]["userId"] == body["data"]["userId"]


def test_auth_check_without_a_token_answers_200_with_no_user(http: Http) -> None:
    response = http("GET", AUTH, token=None)

    assert response.status_code == 200
    assert loads(response.content) == {
        "data": {"userId": None, "profile": None, "accessToken": None},
        "extendedData": [],
    }


@pytest.mark.parametrize("path", [AUTH, FILTER])
def test_bad_token_is_unauthorized(http: Http, path: str) -> None:
    response = http("GET", path, token="0" * 32)

    assert response.status_code == 401
    assert loads(response.content) == {"error": {"message": "Unauthorized", "code": "unauthorized"}}


@pytest.mark.parametrize("authorization", [None, "Basic Zm9vOmJhcg==", "Bearer", "Bearer   "])
def test_create_without_a_usable_token_is_unauthorized(
    client: Any, authorization: str | None
) -> None:
    extra = {"HTTP_USER_AGENT": USER_AGENT}
    if authorization is not None:
        extra["HTTP_AUTHORIZATION"] = authorization

    response = client.post(
        ORDERS, data=dumps(reference_order()), content_type="application/json", **extra
    )

    assert response.status_code == 401
    assert _error(response)["code"] == "unauthorized"
    assert not SandboxOrder.objects.exists()


def test_registered_contour_token_is_its_own_user(http: Http, contour: Contour) -> None:
    demo_user = loads(http("GET", AUTH).content)["data"]["userId"]
    response = http("GET", AUTH, token=contour.token)

    assert response.status_code == 200
    assert loads(response.content)["data"]["userId"] not in (None, demo_user)


def test_register_account_stores_only_a_hash_of_the_token(contour: Contour) -> None:
    account = SandboxAccount.objects.get(
        token_sha256=hashlib.sha256(contour.token.encode()).hexdigest()
    )

    assert str(account.merchant_id) == contour.merchant_id
    stored = [str(getattr(account, f.attname)) for f in SandboxAccount._meta.fields]
    assert all(contour.token not in value for value in stored)


def test_register_account_refuses_junk() -> None:
    with pytest.raises(ValueError):
        register_account("", str(uuid.uuid4()))
    with pytest.raises(ValueError):
        register_account("tok", "not-a-uuid")
    with pytest.raises(ValueError):
        register_account(DEMO_TOKEN, str(uuid.uuid4()))


def test_tokens_from_settings_are_accepted(http: Http, settings: Any) -> None:
    merchant = str(uuid.uuid4())
    settings.INVOICEBOX_SANDBOX_TOKENS = [f"29078-API:abc:{merchant}"]

    response = http("POST", ORDERS, reference_order(merchant), token="29078-API:abc")

    assert response.status_code == 200


def test_other_merchant_id_is_forbidden(http: Http, contour: Contour) -> None:
    response = http("POST", ORDERS, reference_order(contour.merchant_id))

    assert response.status_code == 403
    assert loads(response.content) == {"error": {"message": "Forbidden", "code": "forbidden"}}
    assert not SandboxOrder.objects.exists()


def test_a_request_without_user_agent_is_served(http: Http, ib: httpx.Client) -> None:
    # The docs ask for a User-Agent; no source shows the API refusing a request without one.
    over_http = http("POST", ORDERS, reference_order(), user_agent=None)
    in_process = ib.get("/v3/security/api/auth/auth", headers={"User-Agent": ""})

    assert over_http.status_code == 200, over_http.content
    assert in_process.status_code == 200


# --------------------------------------------------------------------------- read


def test_get_order_by_id(http: Http) -> None:
    created = _create(http)

    response = http("GET", f"{ORDERS}/{created['id']}")

    assert response.status_code == 200
    body = loads(response.content)
    assert body["data"] == created
    assert body["extendedData"] == []


@pytest.mark.parametrize("order_id", [UNKNOWN_ORDER_ID, "not-a-uuid"])
def test_get_unknown_order_is_not_found(http: Http, order_id: str) -> None:
    response = http("GET", f"{ORDERS}/{order_id}")

    assert response.status_code == 404
    assert loads(response.content) == {"error": {"message": "Not Found", "code": "not_found"}}


def test_another_merchants_order_is_not_found(http: Http, contour: Contour) -> None:
    theirs = _create(http, contour)

    response = http("GET", f"{ORDERS}/{theirs['id']}")
    cancel = http("DELETE", f"{ORDERS}/{theirs['id']}")

    assert response.status_code == 404
    assert cancel.status_code == 404
    assert SandboxOrder.objects.get(order_id=theirs["id"]).status == "created"


@pytest.fixture
def three_orders(http: Http, contour: Contour) -> dict[str, dict[str, Any]]:
    """A created, a paid and a canceled order of the contour, created one month apart."""
    orders = {
        name: _create(http, contour, merchantOrderId=f"gw-{name}") for name in ("a", "b", "c")
    }
    pay_order(orders["b"]["id"])
    assert http("DELETE", f"{ORDERS}/{orders['c']['id']}", token=contour.token).status_code == 200
    for month, name in enumerate(("a", "b", "c"), start=1):
        SandboxOrder.objects.filter(order_id=orders[name]["id"]).update(
            created_at=dt.datetime(2026, month, 1, tzinfo=dt.UTC)
        )
    _create(http)  # the demo merchant's order must never show up in the contour's lists
    return orders


def _list(http: Http, contour: Contour, query: dict[str, Any] | str) -> Any:
    if isinstance(query, str):
        return http("GET", f"{FILTER}?{query}", token=contour.token)
    return http("GET", FILTER, token=contour.token, query=query)


def _ids(response: Any) -> list[str]:
    return [order["merchantOrderId"] for order in loads(response.content)["data"]]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["gw-c", "gw-b", "gw-a"]),
        ({"status[]": ["created", "completed"]}, ["gw-b", "gw-a"]),
        ({"status": "canceled"}, ["gw-c"]),
        ({"status[_ne]": "canceled"}, ["gw-b", "gw-a"]),
        # PHP reads a repeated key without brackets as its last value.
        ("status=created&status=completed", ["gw-b"]),
        ({"merchantOrderId": "gw-a"}, ["gw-a"]),
        ({"merchantOrderId[_start]": "gw-"}, ["gw-c", "gw-b", "gw-a"]),
        (
            {
                "createdAt[_ge]": "2026-01-15T00:00:00+00:00",
                "createdAt[_le]": "2026-02-15T00:00:00+03:00",
            },
            ["gw-b"],
        ),
        ({"createdAt[_gt]": "2026-02-01T00:00:00+00:00"}, ["gw-c"]),
        ({"createdAt[_lt]": "2026-02-01T00:00:00"}, ["gw-a"]),
        ({"paidAt[_ge]": "2020-01-01T00:00:00+00:00"}, ["gw-b"]),
        ({"_order[createdAt]": "asc"}, ["gw-a", "gw-b", "gw-c"]),
        ({"_order[createdAt]": "desc"}, ["gw-c", "gw-b", "gw-a"]),
        ({"expirationDate[_ge]": "2000-01-01T00:00:00+00:00"}, ["gw-c", "gw-b", "gw-a"]),
        ({"expirationDate[_lt]": "2000-01-01T00:00:00+00:00"}, []),
    ],
)
def test_list_filters_and_sorts(
    http: Http, contour: Contour, three_orders: dict[str, Any], query: Any, expected: list[str]
) -> None:
    response = _list(http, contour, query)

    assert response.status_code == 200, response.content
    assert _ids(response) == expected
    assert loads(response.content)["metaData"]["totalCount"] == len(expected)


def test_list_by_id_finds_one(http: Http, contour: Contour, three_orders: dict[str, Any]) -> None:
    response = _list(http, contour, {"id": three_orders["a"]["id"]})

    assert _ids(response) == ["gw-a"]


@pytest.mark.parametrize(
    ("query", "meta", "expected"),
    [
        ({}, {"totalCount": 3, "pageSize": 30, "page": 1}, ["gw-c", "gw-b", "gw-a"]),
        ({"_page": 2, "_pageSize": 2}, {"totalCount": 3, "pageSize": 2, "page": 2}, ["gw-a"]),
        ({"page": 1, "pageSize": 2}, {"totalCount": 3, "pageSize": 2, "page": 1}, ["gw-c", "gw-b"]),
        (
            {"_page": 2, "page": 2, "_pageSize": 1},
            {"totalCount": 3, "pageSize": 1, "page": 2},
            ["gw-b"],
        ),
        ({"_page": 9}, {"totalCount": 3, "pageSize": 30, "page": 9}, []),
        (
            {"_pageSize": 5000},
            {"totalCount": 3, "pageSize": 100, "page": 1},
            ["gw-c", "gw-b", "gw-a"],
        ),
    ],
)
def test_list_paging_meta_data(
    http: Http,
    contour: Contour,
    three_orders: dict[str, Any],
    query: dict[str, Any],
    meta: dict[str, int],
    expected: list[str],
) -> None:
    response = _list(http, contour, query)

    assert response.status_code == 200
    body = loads(response.content)
    assert body["metaData"] == meta
    assert body["extendedData"] == []
    assert _ids(response) == expected


@pytest.mark.parametrize(
    "query",
    [
        "_order=createdAt:desc",
        "_order[amount]=desc",
        "_order[createdAt]=sideways",
        "_order[]=createdAt",
        "_page=abc",
        "_pageSize=0",
        "_page=99999999999",
        "id=not-a-uuid",
        "createdAt[_ge]=yesterday",
        "createdAt[_xx]=2026-01-01",
        "status[_start]=c",
        # An unencoded "+" is a space once decoded, so the offset no longer parses.
        "createdAt[_ge]=2026-01-15T00:00:00+00:00",
        "merchantOrderId=%00",
        # A name off the contract is refused, never silently ignored.
        "unknownFilter=x",
        "limit=5",
        "per_page=5",
        # The two paging spellings (docs: page, vendor code: _page) disagreeing.
        "_page=1&page=2",
        "_pageSize=5&pageSize=6",
    ],
)
def test_malformed_list_queries_are_422(http: Http, contour: Contour, query: str) -> None:
    response = _list(http, contour, query)

    assert response.status_code == 422
    # backend-test-app's WrongFilterFormat: the vendor's code for a malformed list query.
    assert _error(response)["code"] == "wrong_filter_format"


# --------------------------------------------------------------------------- cancel, pay, expire


def test_cancel_a_created_order(http: Http) -> None:
    created = _create(http)

    response = http("DELETE", f"{ORDERS}/{created['id']}")
    again = http("DELETE", f"{ORDERS}/{created['id']}")

    assert response.status_code == 200
    assert loads(response.content)["data"]["status"] == "canceled"
    assert again.status_code == 422
    assert _error(again) == {
        "message": "Wrong order status",
        "code": "wrong_order_status",
        "fields": [{"name": "status", "code": "wrong_value", "message": ""}],
    }
    assert loads(http("GET", f"{ORDERS}/{created['id']}").content)["data"]["status"] == "canceled"


def test_sandbox_pay_marks_the_order_paid(http: Http) -> None:
    created = _create(http)
    out = io.StringIO()

    call_command("sandbox_pay", created["id"], stdout=out)

    order = loads(http("GET", f"{ORDERS}/{created['id']}").content)["data"]
    assert order["status"] == "completed"
    assert ATOM.fullmatch(order["paidAt"])
    assert simplejson.loads(out.getvalue())["status"] == "completed"
    with pytest.raises(CommandError, match="completed"):
        call_command("sandbox_pay", created["id"], stdout=io.StringIO())


@pytest.mark.parametrize("order_id", [UNKNOWN_ORDER_ID, "junk"])
def test_sandbox_pay_of_an_unknown_order_fails(order_id: str) -> None:
    with pytest.raises(CommandError):
        call_command("sandbox_pay", order_id, stdout=io.StringIO())


def test_cancel_a_paid_order_is_wrong_order_status(http: Http) -> None:
    created = _create(http)
    pay_order(created["id"])

    response = http("DELETE", f"{ORDERS}/{created['id']}")

    assert response.status_code == 422
    assert _error(response)["code"] == "wrong_order_status"
    assert SandboxOrder.objects.get(order_id=created["id"]).status == "completed"


def test_an_order_past_its_expiry_reads_expired(http: Http, contour: Contour) -> None:
    created = _create(http, contour)
    SandboxOrder.objects.filter(order_id=created["id"]).update(
        expiration_date=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)
    )

    order = loads(http("GET", f"{ORDERS}/{created['id']}", token=contour.token).content)["data"]
    expired = _list(http, contour, {"status": "expired"})
    still_created = _list(http, contour, {"status": "created"})
    cancel = http("DELETE", f"{ORDERS}/{created['id']}", token=contour.token)

    assert order["status"] == "expired"
    assert _ids(expired) == [created["merchantOrderId"]]
    assert _ids(still_created) == []
    assert cancel.status_code == 422
    assert _error(cancel)["code"] == "wrong_order_status"
    with pytest.raises(CommandError, match="expired"):
        call_command("sandbox_pay", created["id"], stdout=io.StringIO())


# --------------------------------------------------------------------------- faults


def test_latency_fault_slows_the_answer(http: Http, contour: Contour) -> None:
    set_faults(contour.token, latency_ms=300)

    started = time.monotonic()
    response = http("GET", AUTH, token=contour.token)

    assert response.status_code == 200
    assert time.monotonic() - started >= 0.3


def test_error_rate_one_always_fails_and_only_that_account(http: Http, contour: Contour) -> None:
    set_faults(contour.token, error_rate=1.0)

    failures = [http("GET", AUTH, token=contour.token) for _ in range(3)]
    create = http("POST", ORDERS, reference_order(contour.merchant_id), token=contour.token)
    demo = http("GET", AUTH)

    assert [r.status_code for r in failures] == [500, 500, 500]
    assert _error(failures[0]) == {"message": "Internal Server Error", "code": "internal_error"}
    assert create.status_code == 500
    assert not SandboxOrder.objects.exists()
    assert demo.status_code == 200


def test_fail_next_fails_exactly_n_requests(http: Http, contour: Contour) -> None:
    set_faults(contour.token, fail_next=2)

    statuses = [http("GET", AUTH, token=contour.token).status_code for _ in range(3)]

    assert statuses == [503, 503, 200]
    assert SandboxFaults.objects.get(account__merchant_id=contour.merchant_id).fail_next == 0


def test_list_faults_repeat_rows_and_loop_pages(in_process: InProcess, contour: Contour) -> None:
    """Issue 39.5: the switches the chaos campaign turns on at run time (harness/chaos_scenarios)."""
    client = in_process(contour.token)
    made = [reference_order(contour.merchant_id) for _ in range(3)]
    for body in made:
        assert post_order(client, body).status_code == 200

    def ids(page: int) -> tuple[list[str], dict[str, Any]]:
        answer = client.get("/v3/filter/api/order/order", params={"page": page, "pageSize": 5})
        assert answer.status_code == 200, answer.text
        envelope = answer.json()
        return [row["id"] for row in envelope["data"]], envelope["metaData"]

    honest, _ = ids(1)
    set_faults(contour.token, repeat_rows=True)
    twice, meta = ids(1)
    set_faults(contour.token, loop_pages=True)
    first, first_meta = ids(1)
    second, second_meta = ids(2)

    assert len(set(honest)) == 3 and twice == [row for row in honest for _ in (1, 2)]
    assert meta["totalCount"] == 3
    # A stuck pager: small pages, each named as asked, every one the first page's rows.
    assert len(first) == 2 and second == first
    assert (first_meta["page"], second_meta["page"], second_meta["pageSize"]) == (1, 2, 2)


def test_dropped_response_in_process_raises_read_timeout_but_keeps_the_order(
    in_process: InProcess, contour: Contour
) -> None:
    client = in_process(contour.token)
    set_faults(contour.token, drop_response_after_create=True)
    body = reference_order(contour.merchant_id)

    with pytest.raises(httpx.ReadTimeout):
        post_order(client, body)

    found = client.get(
        "/v3/filter/api/order/order", params={"merchantOrderId": body["merchantOrderId"]}
    )
    assert [o["merchantOrderId"] for o in found.json()["data"]] == [body["merchantOrderId"]]


def test_dropped_response_over_http_is_a_504_html_page(http: Http, contour: Contour) -> None:
    set_faults(contour.token, drop_response_after_create=True)
    body = reference_order(contour.merchant_id)

    response = http("POST", ORDERS, body, token=contour.token)

    assert response.status_code == 504
    assert response["Content-Type"].startswith("text/html")
    with pytest.raises(ValueError):
        simplejson.loads(response.content)
    assert SandboxOrder.objects.filter(merchant_order_id=body["merchantOrderId"]).exists()


def test_latency_beyond_the_client_timeout_is_a_read_timeout_in_process(
    in_process: InProcess, contour: Contour
) -> None:
    client = in_process(contour.token, timeout=0.1)
    set_faults(contour.token, latency_ms=500)
    body = reference_order(contour.merchant_id)

    # ReadTimeout, not an answer after 0.5 s: the client's timeout fired first.
    with pytest.raises(httpx.ReadTimeout):
        post_order(client, body)

    # Like a slow real server, the sandbox still handled the request.
    assert SandboxOrder.objects.filter(merchant_order_id=body["merchantOrderId"]).exists()


def test_clear_faults_restores_normal_answers(http: Http, contour: Contour) -> None:
    set_faults(contour.token, error_rate=1.0, fail_next=5)

    clear_faults(contour.token)

    assert http("GET", AUTH, token=contour.token).status_code == 200


def test_set_faults_refuses_unknown_tokens_and_bad_values(contour: Contour) -> None:
    with pytest.raises(ValueError, match="unknown"):
        set_faults("f" * 32, error_rate=1.0)
    with pytest.raises(ValueError, match="error_rate"):
        set_faults(contour.token, error_rate=1.5)
    with pytest.raises(ValueError, match="latency_ms"):
        set_faults(contour.token, latency_ms=-1)
    assert not SandboxFaults.objects.exists()


def test_faults_endpoint_configures_the_account_over_http(http: Http, contour: Contour) -> None:
    put = http("PUT", FAULTS, {"error_rate": 1, "fail_next": 0}, token=contour.token)
    failing = http("GET", AUTH, token=contour.token)
    read_back = http("GET", FAULTS, token=contour.token)
    cleared = http("DELETE", FAULTS, token=contour.token)
    healthy = http("GET", AUTH, token=contour.token)

    assert put.status_code == 200
    assert loads(put.content)["data"] == {
        "latency_ms": 0,
        "error_rate": 1.0,
        "fail_next": 0,
        "drop_response_after_create": False,
        "fail_after_create": False,
        "wrong_order_after_create": False,
        "notify_before_answer": False,
        "rate_limit_next": 0,
        "reset_next": 0,
        "repeat_rows": False,
        "loop_pages": False,
    }
    assert failing.status_code == 500
    assert loads(read_back.content)["data"]["error_rate"] == 1.0
    assert cleared.status_code == 200
    assert healthy.status_code == 200


@pytest.mark.parametrize(
    "body",
    [{"error_rate": 2}, {"latency_ms": "100"}, {"bogus": 1}, {"drop_response_after_create": 1}],
)
def test_faults_endpoint_refuses_bad_values(
    http: Http, contour: Contour, body: dict[str, Any]
) -> None:
    response = http("PUT", FAULTS, body, token=contour.token)

    assert response.status_code == 422
    assert _error(response)["code"] == "validation"
    assert not SandboxFaults.objects.exists()


def test_faults_endpoint_needs_a_token(http: Http) -> None:
    assert http("PUT", FAULTS, {"error_rate": 1}, token=None).status_code == 401


# --------------------------------------------------------------------------- protocol


def test_every_response_carries_a_unique_request_id(http: Http, ib: httpx.Client) -> None:
    responses = [
        http("GET", AUTH),
        http("GET", AUTH, token="bad"),
        http("GET", "/sandbox/invoicebox/v3/nothing"),
        http("PATCH", ORDERS, {}),
        http("POST", ORDERS, raw="nope"),
    ]
    in_process = ib.get("/v3/security/api/auth/auth")

    ids = [r["X-Request-Id"] for r in responses] + [in_process.headers["X-Request-Id"]]
    assert all(ids)
    assert len(set(ids)) == len(ids)


def test_unknown_path_is_a_json_404(http: Http) -> None:
    response = http("GET", "/sandbox/invoicebox/v3/billing/api/nothing/here")

    assert response.status_code == 404
    assert _error(response)["code"] == "not_found"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PATCH", ORDERS),
        ("GET", ORDERS),
        ("POST", FILTER),
        ("PATCH", f"{ORDERS}/{UNKNOWN_ORDER_ID}"),
    ],
)
def test_wrong_method_is_a_json_405(http: Http, method: str, path: str) -> None:
    response = http(method, path, {})

    assert response.status_code == 405
    assert _error(response)["code"] == "method_not_allowed"
    assert response["Allow"]


def test_transport_refuses_urls_outside_the_mount(db: None) -> None:
    with httpx.Client(transport=InProcessTransport(), base_url="http://testserver") as client:
        response = client.get("/elsewhere/v3/security/api/auth/auth")

    assert response.status_code == 404


def test_payment_page_lists_the_order(http: Http) -> None:
    created = _create(http)
    path = created["paymentUrl"].removeprefix(settings.INVOICEBOX_SANDBOX_BASE_URL)

    response = http("GET", f"/sandbox/invoicebox{path}", token=None, user_agent=None)

    assert response.status_code == 200
    assert created["id"] in response.content.decode()


def test_handle_takes_plain_mappings() -> None:
    response = handle(
        "GET",
        "/v3/security/api/auth/auth",
        [],
        {
            "authorization": f"Bearer {DEMO_TOKEN}",
            "user-agent": USER_AGENT,
            "content-type": "application/json",
        },
        b"",
    )

    assert response.status == 200
    assert response.json()["data"]["userId"]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/v3/filter/api/order/order", 200),
        ("GET", "/v3/security/api/auth/auth", 200),
        ("DELETE", f"/v3/billing/api/order/order/{UNKNOWN_ORDER_ID}", 404),
    ],
)
@pytest.mark.parametrize("content_type", [None, "text/plain"])
def test_a_request_without_a_body_needs_no_content_type(
    method: str, path: str, status: int, content_type: str | None
) -> None:
    # The MCP server sends Content-Type only with a body (src/api/client.ts:170).
    headers = {"authorization": f"Bearer {DEMO_TOKEN}", "user-agent": USER_AGENT}
    if content_type:
        headers["content-type"] = content_type

    response = handle(method, path, [], headers, b"")

    assert response.status == status


@pytest.mark.parametrize("content_type", [None, "text/plain"])
def test_a_body_not_declared_json_is_refused(content_type: str | None) -> None:
    headers = {"authorization": f"Bearer {DEMO_TOKEN}", "user-agent": USER_AGENT}
    if content_type:
        headers["content-type"] = content_type

    response = handle(
        "POST", "/v3/billing/api/order/order", [], headers, dumps(reference_order()).encode()
    )

    assert response.status == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert not SandboxOrder.objects.exists()


def _deep(levels: int) -> str:
    return '{"metaData":' * levels + "{}" + "}" * levels


def _body_with(**overrides: Any) -> str:
    return dumps(reference_order(**overrides))


def _with_item(**item: Any) -> str:
    body = reference_order()
    _item(body).update(item)
    return dumps(body)


GARBAGE: list[tuple[str, bytes | str, str]] = [
    ("empty body", b"", "application/json"),
    ("not JSON", b"not json", "application/json"),
    ("a JSON array", b"[]", "application/json"),
    ("JSON null", b"null", "application/json"),
    ("a JSON string", b'"order"', "application/json"),
    ("NaN", b'{"amount": NaN}', "application/json"),
    ("Infinity", b'{"amount": Infinity}', "application/json"),
    ("not UTF-8", b"\xff\xfe{}", "application/json"),
    ("unterminated nesting", b"[" * 5000, "application/json"),
    ("deep nesting", _deep(200), "application/json"),
    ("huge integer", b'{"amount": ' + b"9" * 5000 + b"}", "application/json"),
    ("text/plain", _body_with(), "text/plain"),
    ("an empty object", b"{}", "application/json"),
    ("huge exponent", _body_with(amount=D("1e999999999")), "application/json"),
    ("tiny exponent", _body_with(amount=D("1e-999999999")), "application/json"),
    ("negative amount", _body_with(amount=D("-371.88")), "application/json"),
    ("boolean amount", _body_with(amount=True), "application/json"),
    ("merchantId not a UUID", _body_with(merchantId="shop-1"), "application/json"),
    ("merchantId a number", _body_with(merchantId=7), "application/json"),
    ("NUL in merchantOrderId", _body_with(merchantOrderId="a\x00b"), "application/json"),
    ("lone surrogate", b'{"merchantOrderId": "\\ud800"}', "application/json"),
    ("long merchantOrderId", _body_with(merchantOrderId="x" * 257), "application/json"),
    ("basketItems a string", _body_with(basketItems="x"), "application/json"),
    ("basketItems empty", _body_with(basketItems=[]), "application/json"),
    ("basketItems of junk", _body_with(basketItems=[1, None, "x"]), "application/json"),
    ("an empty basket item", _body_with(basketItems=[{}]), "application/json"),
    ("customer a list", _body_with(customer=[]), "application/json"),
    ("customer type", _body_with(customer={"type": "robot"}), "application/json"),
    ("zero quantity", _with_item(quantity=0), "application/json"),
    ("huge quantity", _with_item(quantity=D("1e30")), "application/json"),
    ("item type", _with_item(type="goods"), "application/json"),
    ("item type code", _with_item(type=34), "application/json"),
    ("payment type", _with_item(paymentType="credit"), "application/json"),
    ("vatCode a number", _with_item(vatCode=20), "application/json"),
    ("currency a number", _body_with(currencyId=643), "application/json"),
    ("expiration a list", _body_with(expirationDate=["2030-01-01"]), "application/json"),
    ("processable a string", _body_with(processable="yes"), "application/json"),
]


@pytest.mark.parametrize(("case", "raw", "content_type"), GARBAGE, ids=[g[0] for g in GARBAGE])
def test_garbage_bodies_get_a_4xx_json_error_never_a_500(
    http: Http, caplog: pytest.LogCaptureFixture, case: str, raw: bytes | str, content_type: str
) -> None:
    caplog.set_level(logging.ERROR, logger="sandbox")

    response = http("POST", ORDERS, raw=raw, content_type=content_type)

    assert 400 <= response.status_code < 500, (case, response.status_code)
    assert _error(response)["code"]
    assert UNHANDLED not in caplog.text
    assert not SandboxOrder.objects.exists()


@pytest.mark.parametrize(
    "query",
    [
        "_order[createdAt][x]=desc",
        "%00=1",
        "status[]=",
        "id[]=x",
        "a[b]=1&a[]=2",
        "createdAt=",
        "&&&==&",
    ],
)
def test_garbage_queries_never_500(
    http: Http, caplog: pytest.LogCaptureFixture, query: str
) -> None:
    caplog.set_level(logging.ERROR, logger="sandbox")

    response = http("GET", f"{FILTER}?{query}")

    assert response.status_code < 500
    assert loads(response.content)
    assert UNHANDLED not in caplog.text


def test_garbage_through_the_transport_never_500(
    ib: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="sandbox")

    statuses = [
        ib.post(
            "/v3/billing/api/order/order",
            content=b"\x00\x01",
            headers={"Content-Type": "application/json"},
        ),
        ib.delete("/v3/billing/api/order/order/%00"),
        ib.request("BREW", "/v3/billing/api/order/order"),
        ib.get("/v3/filter/api/order/order?createdAt[_ge]=%ED%A0%80&merchantOrderId=%FF"),
    ]

    assert all(400 <= r.status_code < 500 for r in statuses), [r.status_code for r in statuses]
    assert UNHANDLED not in caplog.text
