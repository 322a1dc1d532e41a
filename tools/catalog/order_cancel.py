"""cancel_order: cancel an unpaid order, two-phase; an order in hold needs an operator."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from invoicebox import statuses
from invoicebox.client import Order
from tools.catalog.order_parts import load_order, order_row
from tools.errors import ToolError
from tools.params import StrictModel, format_rub
from tools.pipeline import facts
from tools.spec import CallContext, Example, Summary, ToolSpec


class CancelOrderParams(StrictModel):
    order_id: UUID = Field(description="Неоплаченный счёт.")
    reason: str | None = Field(
        None,
        min_length=1,
        max_length=500,
        description="Для человека; в Инвойсбокс не уходит.",
    )
    confirmation_token: str | None = Field(
        None,
        max_length=200,
        description="Токен из первого вызова. Без него счёт не отменяется, а готовится сводка.",
    )
    # Docs order/delete.md:52-54: a paid order whose payment is a guarantee one (promised
    # payment, guarantee fund, overdraft) and has no shipment is cancelled by the same DELETE,
    # which returns the whole payment. Named by the paid order's hint, not offered (budget).
    reverse_guarantee: SkipJsonSchema[bool] = False


GUARANTEE_REASON = (
    "отмена гарантийной оплаты возвращает плательщику всю сумму: её одобряет оператор"
)


def ensure_cancellable(order: Order, reverse_guarantee: bool = False) -> None:
    if order.status == statuses.PAID and reverse_guarantee:
        return
    if order.status == statuses.PAID:
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} оплачен, отмена к нему не применяется",
            hint="деньги возвращают через create_refund; если оплата гарантийная "
            "(гарантийный фонд, обещанный платёж, овердрафт) и отгрузки не было, "
            "её отменяет cancel_order с reverse_guarantee=true, с одобрения "
            "оператора",
        )
    if reverse_guarantee:
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} не оплачен (статус {order.status}): "
            "гарантийной оплаты для отмены нет",
            hint="неоплаченный счёт отменяют без reverse_guarantee",
        )
    if order.status not in statuses.OPEN:
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} уже в статусе {order.status}: отменять нечего",
        )


# An order in hold carries a pre-authorised or guarantee payment: cancelling it returns the
# money to the payer (the official docs), so it is a money operation for an operator.
HOLDS_MONEY = ("hold",)
HOLD_REASON = (
    "счёт в статусе hold держит деньги плательщика: отмена вернёт их, поэтому её одобряет оператор"
)


def ensure_unshipped(ctx: CallContext, order: Order) -> None:
    """A guarantee payment is reversed only while nothing is shipped (docs delete.md:52-54)."""
    if ctx.client.all_shipments(order.id):
        raise ToolError(
            "precondition_failed",
            f"по счёту {order.merchant_order_id} уже есть отгрузка: гарантийную оплату не отменить",
            hint="деньги возвращают через create_refund",
        )


def summarize_reversal(ctx: CallContext, params: CancelOrderParams, order: Order) -> Summary:
    ensure_unshipped(ctx, order)
    text = (
        f"Отменить гарантийную оплату счёта {order.merchant_order_id} на "
        f"{format_rub(order.amount, order.currency)} "
        f"({order.customer_name or 'покупатель не указан'}): Инвойсбокс вернёт плательщику "
        "всю сумму. Только для гарантийной оплаты без отгрузки; иначе Инвойсбокс откажет"
        + (f". Причина: {params.reason}" if params.reason else "")
        + "."
    )
    return Summary(
        text=text,
        data={
            "order": order_row(order, "concise"),
            "reason": params.reason,
            "returns_held_money": True,
            "reverses_guarantee": True,
        },
        operator_reason=GUARANTEE_REASON,
        facts=facts.of_order(order),
    )


def summarize_cancel_order(ctx: CallContext, params: CancelOrderParams) -> Summary:
    order = load_order(ctx, params.order_id)
    ensure_cancellable(order, params.reverse_guarantee)
    if params.reverse_guarantee:
        return summarize_reversal(ctx, params, order)
    who = order.customer_name or "покупатель не указан"
    holds = order.status in HOLDS_MONEY
    text = (
        f"Отменить {'счёт с удержанной оплатой' if holds else 'неоплаченный счёт'} "
        f"{order.merchant_order_id} на {format_rub(order.amount, order.currency)} ({who})"
        + (": удержанные деньги вернутся плательщику" if holds else "")
        + (f". Причина: {params.reason}" if params.reason else "")
        + "."
    )
    return Summary(
        text=text,
        data={
            "order": order_row(order, "concise"),
            "reason": params.reason,
            "returns_held_money": holds,
        },
        operator_reason=HOLD_REASON if holds else "",
        facts=facts.of_order(order),
    )


def cancel_order(ctx: CallContext, params: CancelOrderParams) -> dict[str, Any]:
    # The order may have been paid since the first call: check again right before DELETE.
    order = load_order(ctx, params.order_id)
    ensure_cancellable(order, params.reverse_guarantee)
    if params.reverse_guarantee:
        # Fail closed: a reversal returns money, so it goes only with an operator's approval.
        if not ctx.operator_approved:
            raise ToolError(
                "precondition_failed",
                "отмену гарантийной оплаты должен одобрить оператор; счёт не отменён",
                hint="вызовите cancel_order без токена: сводка уйдёт оператору на одобрение",
            )
        ensure_unshipped(ctx, order)
    elif order.status in HOLDS_MONEY and not ctx.operator_approved:
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} с тех пор перешёл в hold: отмена "
            "вернёт удержанные деньги, и её должен одобрить оператор; счёт не "
            "отменён",
            hint="вызовите cancel_order без токена: новая сводка уйдёт оператору на одобрение",
        )
    order = ctx.client.cancel_order(str(params.order_id))
    return {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status or "canceled",
    }


def recover_cancel_order(ctx: CallContext, params: CancelOrderParams) -> dict[str, Any] | None:
    order = load_order(ctx, params.order_id)
    if order.status != "canceled":
        return None
    return {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status,
    }


CANCEL_ORDER = ToolSpec(
    name="cancel_order",
    title="Отменить неоплаченный счёт",
    kind="write",
    toolset="write",
    params=CancelOrderParams,
    handler=cancel_order,
    summarize=summarize_cancel_order,
    recover=recover_cancel_order,
    destructive=True,
    idempotent=True,
    description_ru=(
        "Отменяет неоплаченный счёт Инвойсбокс (статус created, hold или draft), чтобы по нему "
        "больше нельзя было заплатить. Работает в два шага: первый вызов проверяет счёт и "
        "возвращает сводку и одноразовый confirmation_token; отмена происходит только вторым "
        "вызовом с тем же order_id и этим токеном, после согласия человека. Оплаченный счёт "
        "не отменяется — для него есть create_refund; гарантийную оплату без отгрузки "
        "отменяет вызов с reverse_guarantee, с одобрения оператора. reason попадает только в "
        "сводку. "
        "Возвращает order_id, merchant_order_id и status."
    ),
    success_ru="Счёт отменён.",
    summary_ru=(
        "Отменить неоплаченный счёт: два шага, первый вызов даёт сводку и confirmation_token, "
        "второй с токеном отменяет. Оплаченный не отменяется."
    ),
    examples_ru=(
        Example(
            "Отмени счёт 017f038f-c78b-736d-dc00-8bce30bd0f9f, клиент передумал",
            {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f", "reason": "Клиент передумал"},
        ),
    ),
)
