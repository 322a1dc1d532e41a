"""update_order: change an unpaid order (PUT /billing/api/order/order/{id}), two-phase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import Field

from invoicebox.client import Order, OrderUpdate
from tools.catalog.order_parts import (
    BasketItemParams,
    CustomerParams,
    basket_lines,
    customer_of,
    load_order,
    moment,
    order_row,
    track,
)
from tools.errors import Problem, ToolError
from tools.order_rules import check_basket, check_customer, check_future
from tools.params import Kopecks, StrictModel, Timestamp, format_rub
from tools.pipeline import facts
from tools.spec import CallContext, ChangedOrder, Example, Summary, ToolSpec

if TYPE_CHECKING:
    from tools.models import Contour

# The docs: an order is changed only until it is paid (merchant/order/update.md).
UPDATABLE = ("created",)
CHANGES = ("description", "basket_items", "expiration_date", "customer")


class UpdateOrderParams(StrictModel):
    order_id: UUID = Field(description="Неоплаченный счёт.")
    description: str | None = Field(
        None, min_length=1, max_length=1000, description="Новое назначение счёта."
    )
    basket_items: list[BasketItemParams] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="Новый состав целиком; тогда нужны amount и vat_amount.",
    )
    amount: Kopecks | None = Field(None, description="Новая сумма — сумма позиций, копейки.")
    vat_amount: Kopecks | None = Field(None, description="Новый НДС — сумма НДС позиций, копейки.")
    expiration_date: Timestamp | None = Field(None, description="Новый срок оплаты, в будущем.")
    customer: CustomerParams | None = Field(None, description="Покупатель целиком.")
    confirmation_token: str | None = Field(
        None,
        max_length=200,
        description="Токен из первого вызова. Без него счёт не меняется, а готовится сводка.",
    )
    allow_duplicate: bool = Field(
        False, description="true — осознанно повторить такое же изменение в окне защиты от дублей."
    )


def check_update_order(params: UpdateOrderParams, contour: Contour) -> list[Problem]:
    problems: list[Problem] = []
    if all(getattr(params, name) is None for name in CHANGES):
        problems.append(
            Problem(
                "order_id",
                "нечего менять: передайте description, basket_items, expiration_date или customer",
            )
        )
    money = (params.amount, params.vat_amount)
    if params.basket_items is not None and None in money:
        problems.append(Problem("amount", "с новым составом нужны amount и vat_amount"))
    if params.basket_items is None and money != (None, None):
        problems.append(Problem("amount", "сумма меняется только вместе с составом basket_items"))
    if params.expiration_date is not None:
        problems += check_future(params.expiration_date, "expiration_date")
    if params.customer is not None:
        problems += check_customer(params.customer)[0]
    return problems


def _checked(ctx: CallContext, params: UpdateOrderParams) -> Order:
    """The order as it is now, if it may still change, with the new basket reconciled."""
    order = load_order(ctx, params.order_id)
    if order.status not in UPDATABLE:
        raise ToolError(
            "precondition_failed",
            f"счёт {order.merchant_order_id} в статусе {order.status}: менять можно "
            "только неоплаченный счёт (created)",
            hint="оплаченный счёт не меняют; деньги возвращают через create_refund",
        )
    if params.basket_items is not None:
        problems = check_basket(
            params.basket_items, params.amount or "0", params.vat_amount or "0", order.currency
        )
        if problems:
            raise ToolError(
                "invalid_arguments",
                "новый состав не принят: " + "; ".join(p.message for p in problems[:3]),
                problems=problems,
            )
    return order


def summarize_update_order(ctx: CallContext, params: UpdateOrderParams) -> Summary:
    order = _checked(ctx, params)
    c = order.currency
    parts = []
    if params.basket_items is not None:
        parts.append(
            f"сумма {format_rub(order.amount, c)} → {format_rub(int(params.amount or 0), c)}"
            f" (НДС {format_rub(int(params.vat_amount or 0), c)}), позиций "
            f"{len(params.basket_items)}"
        )
    if params.description is not None:
        parts.append(f"назначение «{params.description}»")
    if params.expiration_date is not None:
        parts.append(f"оплатить до {moment(params.expiration_date)}")
    if params.customer is not None:
        parts.append(
            f"покупатель {params.customer.name or 'без названия'}"
            + (f" (ИНН {params.customer.vat_number})" if params.customer.vat_number else "")
        )
    text = (
        f"Изменить неоплаченный счёт {order.merchant_order_id} на сумму "
        f"{format_rub(order.amount, c)} "
        f"({order.customer_name or 'покупатель не указан'}): " + "; ".join(parts) + "."
    )
    warnings = check_customer(params.customer)[1] if params.customer is not None else []
    new_amount = int(params.amount) if params.amount is not None else None
    # A new amount weighs on the ceilings like a new order (the old one is not subtracted).
    return Summary(
        text=text,
        data={
            "order": order_row(order, "concise"),
            "new_amount": params.amount,
            "new_vat_amount": params.vat_amount,
        },
        warnings=warnings,
        amount=new_amount,
        currency=c if new_amount else None,
        changes=ChangedOrder(order.merchant_order_id, order.amount, c),
        # The text names the order's amount and customer: the confirmation binds to them.
        facts=facts.of_order(order),
    )


def _update(params: UpdateOrderParams) -> OrderUpdate:
    c = params.customer
    return OrderUpdate(
        description=params.description,
        amount=int(params.amount) if params.amount is not None else None,
        vat_amount=int(params.vat_amount) if params.vat_amount is not None else None,
        expiration_date=params.expiration_date,
        basket=basket_lines(params.basket_items) if params.basket_items is not None else None,
        customer=customer_of(c) if c is not None else None,
    )


def _result(order: Order) -> dict[str, Any]:
    return {**order_row(order, "detailed"), "updated": True}


def update_order(ctx: CallContext, params: UpdateOrderParams) -> dict[str, Any]:
    # The order may have been paid since the first call: check again right before PUT.
    _checked(ctx, params)
    order = ctx.client.update_order(str(params.order_id), _update(params))
    track(ctx, order)
    return _result(order)


def recover_update_order(ctx: CallContext, params: UpdateOrderParams) -> dict[str, Any] | None:
    """The order already shows the change: answer it. Otherwise None, and the PUT (the same
    full values, so repeating it is harmless) is sent again after the usual re-checks."""
    order = load_order(ctx, params.order_id)
    shows = (params.amount is None or order.amount == int(params.amount)) and (
        params.description is None or order.description == params.description
    )
    if not shows or params.customer is not None or params.expiration_date is not None:
        return None
    track(ctx, order)
    return _result(order)


UPDATE_ORDER = ToolSpec(
    name="update_order",
    title="Изменить неоплаченный счёт",
    kind="write",
    toolset="write",
    params=UpdateOrderParams,
    handler=update_order,
    check=check_update_order,
    summarize=summarize_update_order,
    recover=recover_update_order,
    # It overwrites what the order said (purpose, items, amounts, customer): the old content
    # is gone, so a host that skips its own confirmation for non-destructive tools must not.
    destructive=True,
    idempotent=True,
    description_ru=(
        "Меняет неоплаченный счёт Инвойсбокс (статус created): назначение, состав с суммами, срок "
        "оплаты или покупателя. Два шага: первый вызов проверяет счёт и данные и возвращает "
        "сводку и confirmation_token; изменение — только вторым вызовом с теми же параметрами и "
        "токеном, после согласия человека. Новый состав передаётся целиком с amount и vat_amount, "
        "по тем же правилам, что в create_order; валюту не меняют. Возвращает счёт со всеми "
        "полями get_order и updated."
    ),
    # Today's wording, from before the phrase moved onto the spec.
    success_ru="Сделано: изменить неоплаченный счёт.",
    summary_ru=(
        "Изменить неоплаченный счёт: два шага, первый вызов даёт сводку и confirmation_token, "
        "второй с токеном меняет. Оплаченный не меняется."
    ),
    examples_ru=(
        Example(
            "Продли оплату счёта 017f038f-c78b-736d-dc00-8bce30bd0f9f до конца 2099 года",
            {
                "order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f",
                "expiration_date": "2099-12-31T23:59:00+03:00",
            },
        ),
    ),
)
