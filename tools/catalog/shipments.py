"""Shipments (отгрузки): find_shipments and create_shipment, which starts the closing documents."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any
from uuid import UUID

from pydantic import Field

from invoicebox.client import NewShipment, Order, Shipment
from tools.catalog.order_parts import BasketItemParams, basket_lines, load_order
from tools.errors import ToolError
from tools.money import kopecks
from tools.order_rules import check_basket
from tools.params import ResponseFormat, StrictModel, format_rub
from tools.pipeline import facts
from tools.spec import NOT_PROVEN, CallContext, Counted, Summary, ToolSpec

SHIPPABLE = ("completed", "hold")
DOCUMENTS_NOTE = (
    "отгрузка запускает закрывающие документы: акт или ТОРГ-12, счёт-фактуру или УПД, "
    "и чек полного расчёта"
)
# `final` is the official MCP server's field, absent from the docs: nothing beyond the mark is
# promised (docs/invoicebox-api.md, "Shipment final").
FINAL_NOTE = (
    "отметка «последняя отгрузка» уходит в Инвойсбокс; что она меняет на его стороне, "
    "документация API не описывает"
)


def shipment_row(shipment: Shipment, currency: str, response_format: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "shipment_id": shipment.id,
        "order_id": shipment.order_id,
        "status": shipment.status,
        "final": shipment.final,
        **kopecks(currency, amount=shipment.amount),
        "created_at": shipment.created_at,
    }
    if response_format == "detailed":
        row.update(
            {
                **kopecks(currency, vat_amount=shipment.vat_amount),
                "document_number": shipment.document_number,
                "document_date": shipment.document_date,
                "merchant_id": shipment.merchant_id,
                "basket_items": [
                    {
                        "sku": i.sku,
                        "name": i.name,
                        "quantity": str(i.quantity),
                        **kopecks(currency, total_amount=i.total_amount),
                    }
                    for i in shipment.items[:5]
                ],
            }
        )
        if len(shipment.items) > 5:
            row["basket_items_note"] = f"показано 5 позиций из {len(shipment.items)}"
    return row


def order_shipments(ctx: CallContext, order_id: str) -> tuple[list[Shipment], int]:
    """All shipments of one order; rows of other orders or shops (a leaky filter, a token of
    several shops) are dropped, counted. The client refuses repeated rows and an unfinished
    list: then nothing is counted."""
    return ctx.client.order_shipments(order_id)


# -- find_shipments ---------------------------------------------------------------------------


class FindShipmentsParams(StrictModel):
    order_id: UUID | None = None
    page: int = Field(1, ge=1, le=1000)
    page_size: int = Field(20, ge=1, le=50)
    response_format: ResponseFormat = Field(
        "concise", description="detailed — ещё НДС, документ и 5 позиций."
    )


def find_shipments(ctx: CallContext, params: FindShipmentsParams) -> dict[str, Any]:
    start = (params.page - 1) * params.page_size
    if params.order_id is not None:
        # One order's shipments are read whole (checked like the shipped sum), then paged here.
        order = load_order(ctx, params.order_id)
        every, foreign = order_shipments(ctx, order.id)
        shown, total = every[start : start + params.page_size], len(every)
        covered = start + len(shown)
        currency = {order.id.lower(): order.currency}
    else:
        page = ctx.client.find_shipments(page=params.page, page_size=params.page_size)
        shown, total = page.shipments[: params.page_size], page.total_count
        foreign = page.dropped_foreign
        # total_count is the server's, foreign rows included: so is how far this page reached
        covered = start + len(shown) + foreign
        # A shipment's sums are in its order's currency: each order on the page is read once.
        currency = {}
        for shipment in shown:
            if shipment.order_id.lower() not in currency:
                currency[shipment.order_id.lower()] = load_order(ctx, shipment.order_id).currency
    result: dict[str, Any] = {
        "shipments": [
            shipment_row(s, currency[s.order_id.lower()], params.response_format) for s in shown
        ],
        "page": params.page,
        "page_size": params.page_size,
        "total_count": total,
        "truncated": covered < total,
        "dropped_foreign": foreign,
    }
    if params.order_id is not None:
        result = {"order_id": str(params.order_id), **result}
    return result


FIND_SHIPMENTS = ToolSpec(
    name="find_shipments",
    title="Отгрузки по заказу",
    kind="read",
    toolset="read",
    params=FindShipmentsParams,
    handler=find_shipments,
    description_ru=(
        "Показывает отгрузки по счёту Инвойсбокс (order_id) или, без него, все отгрузки "
        "магазина; page с 1, page_size до 50. Для каждой: shipment_id, order_id, status, final, "
        "amount, amount_human, created_at; detailed добавляет vat_amount, document_number, "
        "document_date, merchant_id и первые 5 позиций. Возвращает shipments, page, page_size, "
        "total_count, truncated и dropped_foreign — сколько строк чужого магазина или счёта "
        "Инвойсбокс прислал и шлюз отбросил. Ничего не меняет."
    ),
    success_ru=Counted(
        "shipments", "отгрузка", "отгрузки", "отгрузок", "Отгрузок по этому заказу нет."
    ),
    summary_ru="Отгрузки счёта (order_id) или магазина: суммы, статусы. Только чтение.",
    # No few-shot example: copying an id into order_id is what the schema says already.
)


# -- create_shipment --------------------------------------------------------------------------


class CreateShipmentParams(StrictModel):
    order_id: UUID = Field(description="Оплаченный счёт.")
    basket_items: list[BasketItemParams] = Field(
        min_length=1, max_length=100, description="Что отгружено, как в счёте."
    )
    final: bool = Field(False, description="true — последняя отгрузка (в API не описано).")
    document_number: str | None = Field(None, min_length=1, max_length=36)
    document_date: date | None = None
    confirmation_token: str | None = Field(
        None,
        max_length=200,
        description="Токен из первого вызова. Без него отгрузка не создаётся, а готовится сводка.",
    )
    allow_duplicate: bool = Field(
        False, description="true — осознанно создать вторую такую же отгрузку."
    )


def _totals(params: CreateShipmentParams) -> tuple[int, int]:
    return (
        sum(int(i.total_amount) for i in params.basket_items),
        sum(int(i.total_vat_amount) for i in params.basket_items),
    )


def _checked(ctx: CallContext, params: CreateShipmentParams) -> tuple[Order, int, int, int]:
    """The order, what is already shipped, and this shipment's totals — or a refusal."""
    order = load_order(ctx, params.order_id)
    if order.status not in SHIPPABLE:
        raise ToolError(
            "precondition_failed",
            f"отгрузка возможна только по оплаченному счёту; счёт "
            f"{order.merchant_order_id} в статусе {order.status}",
        )
    this, vat = _totals(params)
    problems = check_basket(params.basket_items, str(this), str(vat), order.currency)
    if problems:
        raise ToolError(
            "invalid_arguments",
            "состав отгрузки не принят: " + "; ".join(p.message for p in problems[:3]),
            problems=problems,
        )
    shipments, _ = order_shipments(ctx, order.id)
    active = [s for s in shipments if s.status != "canceled"]
    if params.document_number and any(
        s.document_number == params.document_number for s in shipments
    ):
        # Recovery finds a shipment by its number: two with one number would be confused.
        raise ToolError(
            "precondition_failed",
            f"по счёту {order.merchant_order_id} уже есть отгрузка с номером "
            f"документа {params.document_number}",
            hint="укажите другой document_number или не указывайте его вовсе",
        )
    if any(s.final for s in active):
        raise ToolError(
            "precondition_failed", f"по счёту {order.merchant_order_id} уже была финальная отгрузка"
        )
    shipped = sum(s.amount for s in active)
    if shipped + this > order.amount:
        raise ToolError(
            "precondition_failed",
            f"отгрузка выходит за остаток: по заказу {format_rub(order.amount, order.currency)}, "
            f"уже отгружено {format_rub(shipped, order.currency)}, в этой отгрузке "
            f"{format_rub(this, order.currency)}",
        )
    return order, shipped, this, vat


def summarize_create_shipment(ctx: CallContext, params: CreateShipmentParams) -> Summary:
    order, shipped, this, vat = _checked(ctx, params)
    c = order.currency
    text = (
        f"Подтвердить отгрузку по счёту {order.merchant_order_id} на {format_rub(this, c)} "
        f"(НДС {format_rub(vat, c)}): по заказу {format_rub(order.amount, c)}, уже отгружено "
        f"{format_rub(shipped, c)}"
        + ("; финальная" if params.final else "")
        + ". "
        + DOCUMENTS_NOTE[0].upper()
        + DOCUMENTS_NOTE[1:]
        + "."
    )
    data = {
        **kopecks(
            c,
            order_amount=order.amount,
            already_shipped=shipped,
            this_shipment=this,
            vat_amount=vat,
        ),
        "final": params.final,
        "documents_note": DOCUMENTS_NOTE,
    }
    if params.final:
        data["final_note"] = FINAL_NOTE
    # No money moves: a shipment weighs on the hourly count, not on amount ceilings.
    return Summary(text=text, data=data, facts=facts.of_order(order, already_shipped=shipped))


def shipment_result(shipment: Shipment, currency: str) -> dict[str, Any]:
    return {
        "shipment_id": shipment.id,
        "order_id": shipment.order_id,
        "status": shipment.status,
        **kopecks(currency, amount=shipment.amount),
        "final": shipment.final,
        "document_number": shipment.document_number,
        "documents_note": DOCUMENTS_NOTE,
    }


def document_number(ctx: CallContext, params: CreateShipmentParams) -> str | None:
    """The shipment's own key upstream: the assistant's number, else the operation's minted
    id (Operation.merchant_order_id, minted before the call and unique), which the docs'
    documentNumber (string(36)) carries. Recovery finds the shipment by it."""
    return params.document_number or ctx.merchant_order_id or None


def create_shipment(ctx: CallContext, params: CreateShipmentParams) -> dict[str, Any]:
    order, _, _, _ = _checked(ctx, params)
    shipment = ctx.client.create_shipment(
        NewShipment(
            order_id=order.id,
            basket=basket_lines(params.basket_items),
            final=params.final,
            document_number=document_number(ctx, params),
            document_date=params.document_date,
        )
    )
    return shipment_result(shipment, order.currency)


def recover_create_shipment(
    ctx: CallContext, params: CreateShipmentParams
) -> dict[str, Any] | None:
    """Find the shipment by the documentNumber it was sent with; None only when the list
    proves it absent.

    A row without a documentNumber could be ours if the API dropped the number: unless the
    list shows it keeps numbers (some row carries one) or the row can't be ours (another
    total, or created before this operation began), the outcome stays unknown: sending again
    could ship twice."""
    order = load_order(ctx, params.order_id)
    key = document_number(ctx, params)
    this, _ = _totals(params)
    since = (ctx.operation_started - timedelta(seconds=60)) if ctx.operation_started else None
    shipments, _ = order_shipments(ctx, order.id)
    if key:
        for shipment in shipments:
            if shipment.document_number == key:
                return shipment_result(shipment, order.currency)
    numbers_kept = key is not None and any(s.document_number for s in shipments)
    for shipment in shipments:
        if shipment.document_number and numbers_kept:
            continue  # numbered, and not ours
        if shipment.amount != this or (since and _created_before(shipment, since)):
            continue
        if not key and since and _created_after(shipment, since):
            return shipment_result(shipment, order.currency)  # an operation sent with no key
        raise ToolError(
            "outcome_unknown",
            f"в Инвойсбокс есть отгрузка {shipment.id} на ту же сумму без номера документа: "
            f"наша ли она (номер {key or '—'}), по ответу не понять",
            data={"lookup": NOT_PROVEN},
            upstream_request_id=ctx.client.last_request_id,
        )
    return None


def _created_at(shipment: Shipment) -> datetime | None:
    try:
        created = datetime.fromisoformat(shipment.created_at or "")
    except ValueError:
        return None
    return created if created.tzinfo else created.replace(tzinfo=UTC)


def _created_after(shipment: Shipment, since: datetime) -> bool:
    created = _created_at(shipment)
    return created is not None and created >= since


def _created_before(shipment: Shipment, since: datetime) -> bool:
    created = _created_at(shipment)
    return created is not None and created < since


CREATE_SHIPMENT = ToolSpec(
    name="create_shipment",
    title="Подтвердить отгрузку",
    kind="write",
    toolset="write",
    params=CreateShipmentParams,
    handler=create_shipment,
    summarize=summarize_create_shipment,
    recover=recover_create_shipment,
    idempotent=True,
    description_ru=(
        "Подтверждает в Инвойсбокс отгрузку товара или оказание услуги по оплаченному счёту. "
        "Отгрузка запускает закрывающие документы: акт или ТОРГ-12, счёт-фактуру или УПД, и "
        "чек полного расчёта. Работает в два шага: первый вызов проверяет счёт и остаток и "
        "возвращает сводку и одноразовый confirmation_token; отгрузка создаётся только вторым "
        "вызовом с теми же параметрами и этим токеном, после согласия человека. Позиции как в "
        "счёте (суммы — копейки строкой); отгрузить больше суммы счёта нельзя; final — отметка "
        "последней отгрузки, её действие в API не описано. Возвращает shipment_id, order_id, "
        "status, amount, final и document_number."
    ),
    success_ru="Отгрузка подтверждена.",
    summary_ru=(
        "Подтвердить отгрузку по оплаченному счёту (акт, ТОРГ-12, УПД): первый "
        "вызов даёт сводку и confirmation_token, второй с токеном создаёт."
    ),
)
