"""Targets invoicebox-demo and invoicebox-production: the tools a user calls, through
`POST /api/v1/call` of the gateway, against the contour's Invoicebox account."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
from django.utils import timezone

from audit.models import JournalEntry
from conformance.gateway import GatewayLink, KitError
from conformance.report import Report
from invoicebox.client import make_client

# A known-valid INN (checksum holds): the counterparty lookup asks the directory about it.
PROBE_INN = "7710044140"
# A few roubles, no VAT: the smallest order a shop can issue and cancel.
PROBE_KOPECKS = "1000"


def probe_order(run: str) -> dict[str, Any]:
    expires = (timezone.now() + timedelta(days=1)).replace(microsecond=0).isoformat()
    return {
        "description": f"Проверка совместимости шлюза {run}",
        "customer": {"type": "legal", "name": "ООО «Проверка»", "vat_number": PROBE_INN},
        "basket_items": [
            {
                "sku": "CONFORMANCE",
                "name": "Проверка совместимости",
                "type": "service",
                "measure_code": "796",
                "quantity": 1,
                "amount": PROBE_KOPECKS,
                "total_amount": PROBE_KOPECKS,
                "total_vat_amount": "0",
                "vat_code": "VATNONE",
            }
        ],
        "amount": PROBE_KOPECKS,
        "vat_amount": "0",
        "currency_id": "RUB",
        "expiration_date": expires,
    }


def request_ids(*envelopes: dict[str, Any]) -> list[str]:
    """The upstream request ids of the calls, read from their journal entries."""
    ids = [e.get("journal_id") for e in envelopes if isinstance(e.get("journal_id"), int)]
    rows = JournalEntry.objects.filter(id__in=ids).values_list("upstream_request_id", flat=True)
    return [r for r in rows if r]


def explain(envelope: dict[str, Any]) -> str:
    parts = [str(envelope.get(k)) for k in ("status", "code", "message") if envelope.get(k)]
    return " · ".join(parts)


def two_phase(
    link: GatewayLink, http: httpx.Client, name: str, arguments: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first call (summary and token), then the second one with the token."""
    first = link.call(http, name, arguments)
    token = (first.get("confirmation") or {}).get("token")
    if first.get("status") != "confirmation_required" or not token:
        return first, first
    return first, link.call(http, name, {**arguments, "confirmation_token": token})


def run(report: Report, link: GatewayLink, *, allow_write: bool) -> None:
    contour = link.contour
    secrets = [contour.api_token, link.key]
    try:
        with make_client(
            base_url=contour.base_url,
            token=contour.api_token,
            merchant_id=contour.merchant_id,
            api_prefix=contour.api_prefix,
        ) as client:
            user_id = client.check_auth()
        report.add("auth", bool(user_id), "токен принят Инвойсбокс", secrets=secrets)
    except Exception as error:  # any failure of the first contact is the finding
        report.add("auth", False, f"{type(error).__name__}: {error}", secrets=secrets)
        return
    with link.http() as http:
        lookup = link.call(http, "lookup_company_by_inn", {"inn": PROBE_INN})
        report.add(
            "lookup_company_by_inn",
            lookup.get("status") == "ok",
            explain(lookup),
            request_ids(lookup),
            secrets,
        )
        found = link.call(http, "find_orders", {})
        report.add(
            "find_orders", found.get("status") == "ok", explain(found), request_ids(found), secrets
        )
        if not allow_write:
            report.skip("create_order", WRITE_NEEDS_FLAG)
            _read_existing(report, link, http, found, secrets)
            return
        _write_cycle(report, link, http, secrets)


def _read_existing(
    report: Report, link: GatewayLink, http: httpx.Client, found: dict[str, Any], secrets: list[str]
) -> None:
    orders = (found.get("data") or {}).get("orders") or []
    if not orders:
        report.skip("get_order", "в магазине нет счетов для чтения")
        return
    got = link.call(http, "get_order", {"order_id": orders[0]["order_id"]})
    report.add("get_order", got.get("status") == "ok", explain(got), request_ids(got), secrets)


def _write_cycle(report: Report, link: GatewayLink, http: httpx.Client, secrets: list[str]) -> None:
    run_id = uuid.uuid4().hex[:8]
    first, created = two_phase(link, http, "create_order", probe_order(run_id))
    ok = first.get("status") == "confirmation_required" and created.get("status") == "ok"
    report.add(
        "create_order",
        ok,
        f"первый вызов: {explain(first)}; второй: {explain(created)}",
        request_ids(first, created),
        secrets,
    )
    if not ok:
        return
    order = created["data"]
    by_id = link.call(http, "get_order", {"order_id": order["order_id"]})
    report.add(
        "get_order by order_id",
        by_id.get("status") == "ok" and by_id["data"].get("order_id") == order["order_id"],
        explain(by_id),
        request_ids(by_id),
        secrets,
    )
    by_number = link.call(http, "get_order", {"merchant_order_id": order["merchant_order_id"]})
    report.add(
        "get_order by merchant_order_id",
        by_number.get("status") == "ok" and by_number["data"].get("order_id") == order["order_id"],
        explain(by_number),
        request_ids(by_number),
        secrets,
    )
    first, cancelled = two_phase(link, http, "cancel_order", {"order_id": order["order_id"]})
    report.add(
        "cancel_order",
        cancelled.get("status") == "ok",
        f"первый вызов: {explain(first)}; второй: {explain(cancelled)}",
        request_ids(first, cancelled),
        secrets,
    )
    again = link.call(http, "find_orders", {"merchant_order_id": order["merchant_order_id"]})
    rows = (again.get("data") or {}).get("orders") or []
    seen = [row.get("status") for row in rows if row.get("order_id") == order["order_id"]]
    report.add(
        "find_orders after cancel",
        seen == ["canceled"],
        f"{explain(again)}; статусы: {seen}",
        request_ids(again),
        secrets,
    )


SELF_CONFIRMED = (
    "кит сам подтверждает свои записи: он выставляет проверочный счёт "
    "(create_order) и отменяет его (cancel_order), передавая confirmation_token "
    "без человека"
)


WRITE_NEEDS_FLAG = "только чтение: запись вне песочницы включает --allow-write"


def may_write(contour_mode: str, allow_write: bool) -> bool:
    """Whether a target may write: on the bundled sandbox always, anywhere else only when
    --allow-write was given. A demo, production or custom contour may be the real API (a custom
    base URL can be a proxy in front of it), and the kit confirms its own writes."""
    return contour_mode == "sandbox" or allow_write


def check_contour_mode(target: str, contour_mode: str) -> None:
    """production runs only on a production contour; the demo never on one."""
    if target == "invoicebox-production" and contour_mode != "production":
        raise KitError(
            "invoicebox-production проверяет контур в режиме production (--contour <slug>)"
        )
    if target == "invoicebox-demo" and contour_mode == "production":
        raise KitError(
            "invoicebox-demo не запускается на контуре production: "
            "выберите демо- или песочный контур"
        )
