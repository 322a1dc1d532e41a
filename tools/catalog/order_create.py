"""create_order: issue an order (счёт) to a payer, two-phase."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from invoicebox.client import NewOrder, Order
from tools.catalog.order_parts import (
    BasketItemParams,
    CustomerParams,
    basket_lines,
    customer_of,
    marks_text,
    moment,
    track,
    vat_label,
)
from tools.errors import Problem
from tools.money import kopecks
from tools.order_rules import (
    check_basket,
    check_customer,
    check_future,
    check_url,
    quantity_text,
    resolve_unit,
    round_policy_for,
)
from tools.params import Currency, Kopecks, Language, StrictModel, Timestamp, format_rub
from tools.spec import CallContext, Example, Summary, ToolSpec

if TYPE_CHECKING:
    from tools.models import Contour


LockableField = Literal[
    "type",
    "name",
    "phone",
    "email",
    "vat_number",
    "registration_address",
    "tax_registration_reason_code",
]


class CreateOrderParams(StrictModel):
    description: str = Field(min_length=1, max_length=1000, description="Назначение счёта.")
    customer: CustomerParams
    basket_items: list[BasketItemParams] = Field(min_length=1, max_length=100)
    amount: Kopecks = Field(description="Сумма позиций с НДС, копейки.")
    vat_amount: Kopecks = Field(description="Сумма НДС позиций, копейки.")
    currency_id: Currency
    language_id: Language = Field("ru", description="Язык страницы оплаты.")
    expiration_date: Timestamp = Field(description="Оплатить до; в будущем.")
    success_url: str | None = Field(None, max_length=1000)
    fail_url: str | None = Field(None, max_length=1000)
    return_url: str | None = Field(
        None, max_length=1000, description="Кнопка «вернуться в магазин»."
    )
    notification_url: str | None = Field(None, max_length=1000)
    confirmation_token: str | None = Field(
        None,
        max_length=200,
        description="Токен из первого вызова. Без него счёт не выставляется, а готовится сводка.",
    )
    confirm_amount: Kopecks | None = Field(
        None, description="Для совместимости: сумма счёта, повторённая для подтверждения."
    )
    # Docs create.md:103 merchantOrderIdVisible, :190-192 InvoiceSetting customerLocked and
    # customerLockedFields. Accepted and named in description_ru, not offered in the schemas:
    # the reference tools' size budget (tests/tools/formats/test_sizes.py) has no room.
    merchant_order_id_visible: SkipJsonSchema[str | None] = Field(
        None, min_length=1, max_length=256
    )
    lock_customer: SkipJsonSchema[bool] = False
    locked_customer_fields: SkipJsonSchema[list[LockableField] | None] = Field(
        None, min_length=1, max_length=7
    )
    allow_duplicate: bool = Field(
        False,
        description="true — осознанно выставить второй такой же счёт (по умолчанию "
        "повтор в окне защиты от дублей возвращает уже выставленный).",
    )


URL_FIELDS = ("success_url", "fail_url", "return_url", "notification_url")
CUSTOMER_API_NAMES = {
    "type": "type",
    "name": "name",
    "phone": "phone",
    "email": "email",
    "vat_number": "vatNumber",
    "registration_address": "registrationAddress",
    "tax_registration_reason_code": "taxRegistrationReasonCode",
}


def invoice_setting_of(params: CreateOrderParams) -> dict[str, Any] | None:
    """InvoiceSetting (docs create.md:187-195): the payer's requisites locked on the page."""
    setting: dict[str, Any] = {}
    if params.lock_customer:
        setting["customerLocked"] = True
    if params.locked_customer_fields:
        setting["customerLockedFields"] = [
            CUSTOMER_API_NAMES[name] for name in params.locked_customer_fields
        ]
    return setting or None


def check_create_order(params: CreateOrderParams, contour: Contour) -> list[Problem]:
    problems = check_basket(
        params.basket_items, params.amount, params.vat_amount, params.currency_id
    )
    customer_problems, _ = check_customer(params.customer)
    problems += customer_problems
    problems += check_future(params.expiration_date, "expiration_date")
    for name in URL_FIELDS:
        value = getattr(params, name)
        if value is not None:
            problems += check_url(value, name, allow_loopback_http=contour.mode == "sandbox")
    if params.confirm_amount is not None and params.confirm_amount != params.amount:
        problems.append(
            Problem(
                "confirm_amount",
                f"confirm_amount {params.confirm_amount} не равен сумме счёта {params.amount}",
            )
        )
    return problems


def summarize_create_order(ctx: CallContext, params: CreateOrderParams) -> Summary:
    currency = params.currency_id
    customer = params.customer
    who = customer.name or "покупатель без названия"
    ids = ", ".join(
        part
        for part in (
            f"ИНН {customer.vat_number}" if customer.vat_number else "",
            f"КПП {customer.tax_registration_reason_code}"
            if customer.tax_registration_reason_code
            else "",
        )
        if part
    )
    lines = []
    for index, item in enumerate(params.basket_items, start=1):
        unit = resolve_unit(item)
        unit_name = unit.measure if not isinstance(unit, str) else ""
        lines.append(
            f"{index}) {item.name} — {quantity_text(item.quantity)} {unit_name} × "
            f"{format_rub(int(item.amount), currency)} = {format_rub(int(item.total_amount), currency)}"
            f", НДС {vat_label(item.vat_code)} {format_rub(int(item.total_vat_amount), currency)}"
            + marks_text(item, currency)
        )
    _, warnings = check_customer(customer)
    text = (
        f"Выставить счёт на {format_rub(int(params.amount), currency)} "
        f"(НДС {format_rub(int(params.vat_amount), currency)}) для {who}"
        + (f" ({ids})" if ids else "")
        + f": «{params.description}». "
        f"Позиции: {'; '.join(lines)}. "
        f"Оплатить до {moment(params.expiration_date)}."
        + (
            f" Номер для плательщика: {params.merchant_order_id_visible}."
            if params.merchant_order_id_visible
            else ""
        )
        + (
            " Реквизиты плательщика на странице оплаты менять нельзя."
            if params.lock_customer
            else ""
        )
        + (
            f" Плательщик не сможет изменить: {', '.join(params.locked_customer_fields)}."
            if params.locked_customer_fields and not params.lock_customer
            else ""
        )
    )
    data = {
        "customer": {
            "type": customer.type,
            "name": customer.name,
            "inn": customer.vat_number,
            "kpp": customer.tax_registration_reason_code,
        },
        **kopecks(currency, amount=int(params.amount), vat_amount=int(params.vat_amount)),
        "currency": currency,
        "description": params.description,
        "expiration_date": params.expiration_date.isoformat(),
        "positions": len(params.basket_items),
        "merchant_order_id_visible": params.merchant_order_id_visible,
        "invoice_setting": invoice_setting_of(params),
    }
    return Summary(
        text=text, data=data, warnings=warnings, amount=int(params.amount), currency=currency
    )


def build_new_order(params: CreateOrderParams, merchant_order_id: str) -> NewOrder:
    return NewOrder(
        merchant_order_id=merchant_order_id,
        description=params.description,
        amount=int(params.amount),
        vat_amount=int(params.vat_amount),
        currency_id=params.currency_id,
        language_id=params.language_id,
        expiration_date=params.expiration_date,
        basket=basket_lines(params.basket_items),
        customer=customer_of(params.customer),
        urls={name: getattr(params, name) for name in URL_FIELDS if getattr(params, name)},
        round_policy=round_policy_for(params.basket_items),
        merchant_order_id_visible=params.merchant_order_id_visible,
        invoice_setting=invoice_setting_of(params),
    )


def created_result(order: Order, warnings: list[str]) -> dict[str, Any]:
    return {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status,
        "payment_url": order.payment_url,
        **kopecks(order.currency, amount=order.amount),
        "currency": order.currency,
        "warnings": warnings,
    }


def create_order(ctx: CallContext, params: CreateOrderParams) -> dict[str, Any]:
    order = ctx.client.create_order(build_new_order(params, ctx.merchant_order_id))
    track(ctx, order)
    return created_result(order, check_customer(params.customer)[1])


def recover_create_order(ctx: CallContext, params: CreateOrderParams) -> dict[str, Any] | None:
    """After a lost response: the order exists upstream iff its merchantOrderId is found."""
    page = ctx.client.find_orders(merchant_order_id=ctx.merchant_order_id, page_size=5)
    if not page.orders:
        return None
    track(ctx, page.orders[0])
    return created_result(page.orders[0], check_customer(params.customer)[1])


CREATE_ORDER = ToolSpec(
    name="create_order",
    title="Выставить счёт",
    kind="write",
    toolset="write",
    params=CreateOrderParams,
    handler=create_order,
    check=check_create_order,
    summarize=summarize_create_order,
    recover=recover_create_order,
    idempotent=True,
    description_ru=(
        "Выставляет покупателю счёт на оплату в Инвойсбокс. Работает в два шага: первый вызов "
        "ничего не создаёт, а проверяет данные и возвращает сводку и одноразовый "
        "confirmation_token; счёт выставляется только вторым вызовом с теми же параметрами и этим "
        'токеном, после согласия человека. Суммы — копейки строкой ("12200" — это 122,00 ₽). '
        "amount каждой позиции — цена за единицу с НДС, total_amount — цена × количество, "
        "total_vat_amount — НДС позиции по ставке vat_code; amount счёта — сумма позиций, "
        "vat_amount — сумма их НДС. Единица: measure или measure_code (ОКЕИ). Валюта и срок "
        "оплаты (expiration_date в будущем, с часовым поясом) обязательны. Необязательно: "
        "merchant_order_id_visible — номер для плательщика, lock_customer (да/нет) или "
        "locked_customer_fields — запрет менять реквизиты на странице оплаты. Возвращает order_id, "
        "merchant_order_id, status, payment_url — ссылку на оплату, amount и warnings."
    ),
    success_ru="Счёт выставлен.",
    summary_ru=(
        "Выставить счёт: два шага, первый вызов даёт сводку и confirmation_token, второй с "
        "токеном выставляет. Суммы — копейки строкой; позиции сходятся с суммой."
    ),
    examples_ru=(
        Example(
            "Выставь ООО «Ромашка», ИНН 7710044140, счёт за 3 ночи в номере по 122 рубля с НДС 22%, "
            "оплатить до конца 2099 года",
            {
                "description": "Бронирование номера, 3 ночи",
                "customer": {"type": "legal", "name": "ООО «Ромашка»", "vat_number": "7710044140"},
                "basket_items": [
                    {
                        "sku": "ROOM-STD",
                        "name": "Бронирование номера",
                        "type": "service",
                        "measure": "шт",
                        "quantity": 3,
                        "amount": "12200",
                        "total_amount": "36600",
                        "total_vat_amount": "6600",
                        "vat_code": "RUS_VAT22",
                    }
                ],
                "amount": "36600",
                "vat_amount": "6600",
                "currency_id": "RUB",
                "expiration_date": "2099-12-31T23:59:00+03:00",
            },
        ),
    ),
)
