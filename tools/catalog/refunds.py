"""Refunds (возвраты): create_refund — money leaves the merchant, so a human always approves."""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any
from uuid import UUID

from pydantic import Field

from invoicebox.client import BasketLine, NewRefund, Order, Refund, RefundableItem
from tools.catalog.order_parts import load_order
from tools.catalog.refund_lines import RefundLineParams, mismatches
from tools.errors import Problem, ToolError
from tools.money import kopecks
from tools.order_rules import expected_vat, quantity_decimal
from tools.params import (
    Kopecks,
    StrictModel,
    format_rub,
    round_kopecks,
)
from tools.pipeline import facts
from tools.spec import CallContext, Summary, ToolSpec

TIMING_NOTE = (
    "деньги зачисляются покупателю до двух рабочих дней, в зависимости от банка; "
    "чек возврата Инвойсбокс выдаст сам"
)


class CreateRefundParams(StrictModel):
    parent_order_id: UUID = Field(description="Оплаченный счёт.")
    description: str = Field(min_length=1, max_length=1000, description="Причина возврата.")
    amount: Kopecks | None = Field(None, description="Копейки; без состава — только вся доступная.")
    vat_amount: Kopecks | None = Field(None, description="Копейки.")
    basket_items: list[RefundLineParams] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Частичный возврат: позиции и суммы; без него — полный.",
    )
    confirmation_token: str | None = Field(
        None,
        max_length=200,
        description="Токен из первого вызова; исполняется только после одобрения оператора.",
    )
    allow_duplicate: bool = Field(False, description="true — осознанно второй такой же возврат.")


@dataclass(frozen=True)
class Plan:
    order: Order
    available: int
    lines: list[BasketLine]
    amount: int
    vat: int
    by_composition: bool


def _line(item: RefundableItem, quantity: Decimal, total: int, vat: int) -> BasketLine:
    return BasketLine(
        sku=item.sku,
        name=item.name,
        measure=item.measure,
        measure_code=item.measure_code,
        quantity=quantity,
        amount=round_kopecks(Decimal(total) / quantity),
        amount_wo_vat=round_kopecks(Decimal(total - vat) / quantity),
        total_amount=total,
        total_vat_amount=vat,
        vat_code=item.vat_code,
        type=item.type,
        payment_type=item.payment_type,
        # The refund repeats the sale's marking group; its excise is not sent (docs/invoicebox-api.md).
        category=item.category,
        category_type=item.category_type,
    )


def _remainder_line(item: RefundableItem) -> BasketLine:
    """The whole remainder of a line: the item itself when nothing of it was refunded yet, so
    the receipt repeats the sale's quantity and unit price; else 1 × what is left."""
    if item.available_amount == item.total_amount:
        vat = (
            item.total_vat_amount
            if item.available_vat_amount is None
            else (item.available_vat_amount)
        )
        return BasketLine(
            sku=item.sku,
            name=item.name,
            measure=item.measure,
            measure_code=item.measure_code,
            quantity=item.quantity,
            amount=item.amount,
            amount_wo_vat=item.amount_wo_vat,
            total_amount=item.total_amount,
            total_vat_amount=vat,
            vat_code=item.vat_code,
            type=item.type,
            payment_type=item.payment_type,
            category=item.category,
            category_type=item.category_type,
        )
    return _line(item, Decimal(1), item.available_amount, _item_vat(item, item.available_amount))


def refundable(ctx: CallContext, order_id: str) -> list[RefundableItem]:
    """The order's items with what is still refundable: the API's availableAmount when it sends
    it; otherwise each line less the refunds made of it (every one but a canceled one), read
    whole; a refund whose lines are unknown leaves no line's remainder known, so it refuses."""
    items = ctx.client.refundable_items(order_id)
    if all(item.available_sent for item in items):
        return items
    taken: dict[str, list[int]] = {}
    for refund in ctx.client.find_refunds(parent_id=order_id):
        if refund.status == "canceled":
            continue
        if refund.items is None:
            raise ToolError(
                "upstream_unavailable",
                f"Инвойсбокс не прислал ни остатков к возврату, ни состава возврата "
                f"{refund.merchant_order_id}: сколько осталось по позициям, не "
                "установить",
                hint="повторите позже или проверьте в личном кабинете",
            )
        for line in refund.items:
            sums = taken.setdefault(line.sku, [0, 0])
            sums[0] += line.total_amount
            sums[1] += line.total_vat_amount
    out = []
    for item in items:
        if item.available_sent:
            out.append(item)
            continue
        sums = taken.get(item.sku, [0, 0])
        amount, vat = min(item.total_amount, sums[0]), min(item.total_vat_amount, sums[1])
        sums[0] -= amount
        sums[1] -= vat
        out.append(
            replace(
                item,
                available_amount=item.total_amount - amount,
                available_vat_amount=item.total_vat_amount - vat,
            )
        )
    return out


def _item_vat(item: RefundableItem, total: int) -> int:
    if item.available_vat_amount is not None and total == item.available_amount:
        return item.available_vat_amount
    return expected_vat(total, item.vat_code)


def plan(ctx: CallContext, params: CreateRefundParams) -> Plan:
    """What would be refunded, checked against what is still refundable — or a refusal."""
    order = load_order(ctx, params.parent_order_id)
    if order.status != "completed":
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} не оплачен (статус {order.status}): "
            "возврат делают по оплаченному счёту",
            hint="неоплаченный счёт отменяют через cancel_order",
        )
    items = {item.sku: item for item in refundable(ctx, order.id)}
    available = sum(item.available_amount for item in items.values())
    c = order.currency
    if available == 0:
        raise ToolError(
            "precondition_failed",
            f"по счёту {order.merchant_order_id} возвращать нечего: всё уже возвращено",
        )
    if params.basket_items is None:
        lines = [_remainder_line(item) for item in items.values() if item.available_amount > 0]
        if params.amount is not None and int(params.amount) != available:
            raise ToolError(
                "invalid_arguments",
                f"частичный возврат нужно перечислить составом: доступно "
                f"{format_rub(available, c)}, запрошено {format_rub(int(params.amount), c)}",
                problems=[Problem("basket_items", "перечислите позиции и суммы возврата")],
            )
        by_composition = False
    else:
        lines = _composition(params.basket_items, items, c)
        by_composition = True
    amount = sum(line.total_amount for line in lines)
    vat = sum(line.total_vat_amount for line in lines)
    problems = []
    if params.amount is not None and int(params.amount) != amount:
        problems.append(
            Problem(
                "amount",
                f"сумма возврата {format_rub(int(params.amount), c)} "
                f"не сходится с составом {format_rub(amount, c)}",
            )
        )
    if params.vat_amount is not None and int(params.vat_amount) != vat:
        problems.append(
            Problem(
                "vat_amount",
                f"НДС возврата {format_rub(int(params.vat_amount), c)}"
                f" не сходится с составом {format_rub(vat, c)}",
            )
        )
    if problems:
        raise ToolError(
            "invalid_arguments", "; ".join(p.message for p in problems), problems=problems
        )
    if amount > available:
        raise ToolError(
            "precondition_failed",
            f"к возврату доступно {format_rub(available, c)}, запрошено {format_rub(amount, c)}",
        )
    return Plan(order, available, lines, amount, vat, by_composition)


def _composition(
    requested: list[RefundLineParams], items: dict[str, RefundableItem], currency: str
) -> list[BasketLine]:
    problems: list[Problem] = []
    lines: list[BasketLine] = []
    seen: set[str] = set()
    for index, line in enumerate(requested):
        where = f"basket_items[{index}]"
        item = items.get(line.sku)
        if item is None:
            problems.append(
                Problem(
                    f"{where}.sku",
                    f"позиции {line.sku} нет среди оплаченных; есть: {', '.join(items) or '—'}",
                )
            )
            continue
        if line.sku in seen:
            problems.append(Problem(f"{where}.sku", f"позиция {line.sku} указана дважды"))
            continue
        seen.add(line.sku)
        quantity = quantity_decimal(line.quantity)
        total = int(line.total_amount)
        if quantity > item.quantity:
            problems.append(
                Problem(
                    f"{where}.quantity",
                    f"по позиции {line.sku} оплачено {item.quantity}, запрошено {quantity}",
                )
            )
        if total > item.available_amount:
            problems.append(
                Problem(
                    f"{where}.total_amount",
                    f"по позиции {line.sku} доступно {format_rub(item.available_amount, currency)}, "
                    f"запрошено {format_rub(total, currency)}",
                )
            )
        vat = _item_vat(item, total)
        if line.total_vat_amount is not None:
            if abs(int(line.total_vat_amount) - vat) > 1:
                problems.append(
                    Problem(
                        f"{where}.total_vat_amount",
                        f"по ставке {item.vat_code} НДС с {format_rub(total, currency)} — "
                        f"{format_rub(vat, currency)}, передано "
                        f"{format_rub(int(line.total_vat_amount), currency)}",
                    )
                )
            vat = int(line.total_vat_amount)
        if round_kopecks(Decimal(round_kopecks(Decimal(total) / quantity)) * quantity) != total:
            problems.append(
                Problem(
                    f"{where}.total_amount",
                    f"сумма {format_rub(total, currency)} не делится на "
                    f"{quantity} ед. без остатка в копейках",
                )
            )
        problems += mismatches(line, item, where, total, vat, currency)
        lines.append(
            replace(
                _line(item, quantity, total, vat),
                group_name=line.group_name,
                service_date=line.service_date,
            )
        )
    if problems:
        raise ToolError(
            "invalid_arguments",
            "состав возврата не принят: " + "; ".join(p.message for p in problems[:3]),
            problems=problems,
        )
    return lines


def summarize_create_refund(ctx: CallContext, params: CreateRefundParams) -> Summary:
    p = plan(ctx, params)
    c = p.order.currency
    kind = "частичный, по составу" if p.by_composition else "полный"
    text = (
        f"Вернуть {format_rub(p.amount, c)} (НДС {format_rub(p.vat, c)}) по счёту "
        f"{p.order.merchant_order_id} ({p.order.customer_name or 'покупатель не указан'}); "
        f"возврат {kind}, доступно к возврату {format_rub(p.available, c)}. "
        f"Причина: {params.description}. Нужно одобрение оператора."
    )
    data = {
        **kopecks(c, available_total=p.available, refund_amount=p.amount, vat_amount=p.vat),
        "by_composition": p.by_composition,
        "positions": len(p.lines),
        "timing_note": TIMING_NOTE,
    }
    return Summary(
        text=text,
        data=data,
        amount=p.amount,
        currency=c,
        facts=facts.of_order(p.order, available=p.available),
    )


def refund_result(refund: Refund, currency: str) -> dict[str, Any]:
    return {
        "refund_id": refund.id,
        "parent_order_id": refund.parent_id,
        "merchant_order_id": refund.merchant_order_id,
        "status": refund.status,
        **kopecks(currency, amount=refund.amount),
        "timing_note": TIMING_NOTE,
    }


def create_refund(ctx: CallContext, params: CreateRefundParams) -> dict[str, Any]:
    p = plan(ctx, params)
    refund = ctx.client.create_refund(
        NewRefund(
            parent_id=p.order.id,
            merchant_order_id=ctx.merchant_order_id,
            description=params.description,
            amount=p.amount,
            vat_amount=p.vat,
            basket=p.lines,
        )
    )
    return refund_result(refund, p.order.currency)


def recover_create_refund(ctx: CallContext, params: CreateRefundParams) -> dict[str, Any] | None:
    found = ctx.client.find_refunds(merchant_order_id=ctx.merchant_order_id)
    if not found:
        return None
    return refund_result(found[0], found[0].currency)


CREATE_REFUND = ToolSpec(
    name="create_refund",
    title="Вернуть деньги по счёту",
    kind="money",
    toolset="refund",
    params=CreateRefundParams,
    handler=create_refund,
    summarize=summarize_create_refund,
    recover=recover_create_refund,
    # Money leaves the merchant and can't be taken back by another call.
    destructive=True,
    idempotent=True,
    description_ru=(
        "Возвращает покупателю деньги по оплаченному счёту Инвойсбокс: полностью (без "
        "basket_items) или частично, перечислив позиции. Работает в два шага и всегда с "
        "человеком: первый вызов проверяет, сколько ещё можно вернуть, и возвращает сводку, "
        "одноразовый confirmation_token и ссылку для оператора; деньги уходят только вторым "
        "вызовом с теми же параметрами и токеном после одобрения оператора в веб-интерфейсе. "
        "Суммы — копейки строкой. Неоплаченный счёт не возвращают, а отменяют (cancel_order). "
        "Возвращает refund_id, parent_order_id, merchant_order_id, status и amount."
    ),
    success_ru="Возврат оформлен.",
    summary_ru=(
        "Вернуть деньги по оплаченному счёту: первый вызов даёт сводку и confirmation_token, "
        "второй — после одобрения оператора. Суммы — копейки строкой."
    ),
)


# -- find_refunds, get_refundable -------------------------------------------------------------


class RefundsOfOrderParams(StrictModel):
    order_id: UUID = Field(description="Оплаченный счёт.")


def find_refunds(ctx: CallContext, params: RefundsOfOrderParams) -> dict[str, Any]:
    order = load_order(ctx, params.order_id)
    c = order.currency
    found = ctx.client.find_refunds(parent_id=order.id)  # every page: the sum is never partial
    refunded = sum(r.amount for r in found if r.status != "canceled")
    return {
        "order_id": order.id,
        "refunds": [
            {
                "refund_id": r.id,
                "merchant_order_id": r.merchant_order_id,
                "status": r.status,
                **kopecks(c, amount=r.amount, vat_amount=r.vat_amount),
                "created_at": r.created_at,
            }
            for r in found
        ],
        "total_count": len(found),
        **kopecks(c, refunded_amount=refunded),
    }


def get_refundable(ctx: CallContext, params: RefundsOfOrderParams) -> dict[str, Any]:
    order = load_order(ctx, params.order_id)
    c = order.currency
    items = refundable(ctx, order.id) if order.status == "completed" else []
    available = sum(i.available_amount for i in items)
    return {
        "order_id": order.id,
        "status": order.status,
        "lines": [
            {
                "sku": i.sku,
                "name": i.name,
                "quantity": str(i.quantity),
                **kopecks(
                    c,
                    total_amount=i.total_amount,
                    available_amount=i.available_amount,
                    available_vat_amount=_item_vat(i, i.available_amount),
                ),
            }
            for i in items
        ],
        **kopecks(c, available_amount=available),
    }


FIND_REFUNDS = ToolSpec(
    name="find_refunds",
    title="Возвраты по счёту",
    kind="read",
    toolset="read",
    params=RefundsOfOrderParams,
    handler=find_refunds,
    description_ru=(
        "Показывает все возвраты по одному счёту Инвойсбокс (order_id): для каждого refund_id, "
        "merchant_order_id, status, amount, amount_human, vat_amount, created_at. Возвращает "
        "refunds, total_count и refunded_amount — сумму всех, кроме отменённых. Ничего не меняет."
    ),
    # Today's wording, from before the phrase moved onto the spec.
    success_ru="Возвраты по счёту: вот что удалось получить.",
    summary_ru="Возвраты по счёту: статусы и суммы. Только чтение.",
)

GET_REFUNDABLE = ToolSpec(
    name="get_refundable",
    title="Что ещё можно вернуть",
    kind="read",
    toolset="read",
    params=RefundsOfOrderParams,
    handler=get_refundable,
    description_ru=(
        "Показывает, что ещё можно вернуть по оплаченному счёту Инвойсбокс (order_id), по "
        "позициям: lines с sku, name, quantity, total_amount, available_amount и "
        "available_vat_amount; всего available_amount. У неоплаченного счёта lines пуст. "
        "Ничего не меняет."
    ),
    success_ru="Что ещё можно вернуть: вот что удалось получить.",
    summary_ru="Остаток к возврату по позициям счёта. Только чтение.",
)
