"""Orders (счета): get_order, find_orders, create_order."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from pydantic import Field

from adapters.invoicebox.client import BasketLine, Customer, NewOrder, Order
from tools.errors import Problem, ToolError
from tools.models import TrackedOrder
from tools.order_rules import (
    check_basket,
    check_customer,
    check_future,
    check_url,
    default_amount_wo_vat,
    quantity_decimal,
    quantity_text,
    resolve_unit,
)
from tools.params import (
    Currency,
    CustomerType,
    Inn,
    ItemType,
    Kopecks,
    Kpp,
    Language,
    OrderStatus,
    PaymentType,
    ResponseFormat,
    StrictModel,
    Timestamp,
    VatCode,
    format_rub,
    vat_rate,
)
from tools.spec import CallContext, Example, Summary, ToolSpec

if TYPE_CHECKING:
    from tools.models import Contour


# -- results ----------------------------------------------------------------------------------

def money(kopecks: int | None, currency: str) -> dict[str, str | None]:
    if kopecks is None:
        return {"value": None, "human": None}
    return {"value": str(kopecks), "human": format_rub(kopecks, currency)}


def order_row(order: Order, response_format: str) -> dict[str, Any]:
    amount = money(order.amount, order.currency)
    row: dict[str, Any] = {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status,
        "amount": amount["value"],
        "amount_human": amount["human"],
        "currency": order.currency,
        "created_at": order.created_at,
    }
    if response_format == "detailed":
        vat = money(order.vat_amount, order.currency)
        row.update({
            "vat_amount": vat["value"],
            "vat_amount_human": vat["human"],
            "description": order.description,
            "expiration_date": order.expiration_date,
            "paid_at": order.paid_at,
            "payment_url": order.payment_url,
            "customer": {"name": order.customer_name, "vat_number": order.customer_vat_number},
        })
    return row


# -- get_order --------------------------------------------------------------------------------

class GetOrderParams(StrictModel):
    # Both given: order_id wins (the tool's description says so).
    order_id: UUID | None = None
    merchant_order_id: str | None = Field(
        None, min_length=1, max_length=256, description="Номер счёта в магазине."
    )
    response_format: ResponseFormat = Field(
        "concise", description="detailed — ещё НДС, описание, срок, ссылка на оплату и "
        "покупатель."
    )


def check_get_order(params: GetOrderParams, contour: Contour) -> list[Problem]:
    if params.order_id is None and params.merchant_order_id is None:
        return [Problem("order_id", "нужен order_id или merchant_order_id")]
    return []


def get_order(ctx: CallContext, params: GetOrderParams) -> dict[str, Any]:
    if params.order_id is not None:
        order = ctx.client.get_order(str(params.order_id))
        if order is None:
            raise ToolError("not_found", f"счёт {params.order_id} не найден",
                            hint="проверьте идентификатор или найдите счёт через find_orders")
        return order_row(order, params.response_format)
    number = params.merchant_order_id or ""
    page = ctx.client.find_orders(merchant_order_id=number, page_size=5)
    if not page.orders:
        raise ToolError("not_found", f"счёт с номером {number} не найден")
    if len(page.orders) > 1:
        raise ToolError(
            "precondition_failed", f"по номеру {number} нашлось {page.total_count} счетов",
            hint="повторите запрос с order_id одного из кандидатов",
            data={"candidates": [order_row(o, "concise") for o in page.orders]},
        )
    return order_row(page.orders[0], params.response_format)


# -- find_orders ------------------------------------------------------------------------------

class FindOrdersParams(StrictModel):
    merchant_order_id: str | None = Field(
        None, min_length=1, max_length=256, description="Номер счёта в магазине."
    )
    status: list[OrderStatus] | None = Field(
        None, max_length=6, description="created — не оплачен, completed — оплачен."
    )
    # Bounds of the creation, payment deadline and payment dates; the names say which.
    created_from: Timestamp | None = None
    created_to: Timestamp | None = None
    expiration_from: Timestamp | None = None
    expiration_to: Timestamp | None = None
    paid_from: Timestamp | None = None
    paid_to: Timestamp | None = None
    page: int = Field(1, ge=1, le=1000)
    page_size: int = Field(20, ge=1, le=50)
    response_format: ResponseFormat = Field("concise")


def check_find_orders(params: FindOrdersParams, contour: Contour) -> list[Problem]:
    problems = []
    for name in ("created", "expiration", "paid"):
        low, high = getattr(params, f"{name}_from"), getattr(params, f"{name}_to")
        if low and high and low > high:
            problems.append(Problem(f"{name}_from",
                                    f"{name}_from позже {name}_to: пустой интервал"))
    return problems


def find_orders(ctx: CallContext, params: FindOrdersParams) -> dict[str, Any]:
    page = ctx.client.find_orders(
        merchant_order_id=params.merchant_order_id,
        statuses=params.status or (),
        created_from=params.created_from,
        created_to=params.created_to,
        expiration_from=params.expiration_from,
        expiration_to=params.expiration_to,
        paid_from=params.paid_from,
        paid_to=params.paid_to,
        page=params.page,
        page_size=params.page_size,
    )
    shown = (params.page - 1) * params.page_size + len(page.orders)
    truncated = shown < page.total_count
    result: dict[str, Any] = {
        "orders": [order_row(o, params.response_format) for o in page.orders],
        "page": params.page,
        "page_size": params.page_size,
        "total_count": page.total_count,
        "truncated": truncated,
    }
    if truncated:
        result["note"] = (f"показано {len(page.orders)} из {page.total_count}: уточните фильтр "
                          "или запросите следующую страницу")
    return result


# -- create_order -----------------------------------------------------------------------------

class CustomerParams(StrictModel):
    type: CustomerType = Field(
        "legal", description="legal — организация или ИП, private — физлицо."
    )
    name: str | None = Field(None, min_length=1, max_length=500, description="Название или ФИО.")
    vat_number: Inn | None = Field(None, description="ИНН.")
    tax_registration_reason_code: Kpp | None = Field(
        None, description="КПП; только при ИНН из 10 цифр."
    )
    registration_address: str | None = Field(None, min_length=1, max_length=1000)
    email: str | None = Field(None, max_length=100, pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
    phone: str | None = Field(None, pattern=r"^[0-9]{10,15}$", description="Например 79001112233.")


class BasketItemParams(StrictModel):
    sku: str = Field(min_length=1, max_length=36)
    name: str = Field(
        min_length=1, max_length=300,
        description="Название для чека: конкретное, не «Заказ №123».",
    )
    type: ItemType = Field("commodity", description="commodity — товар, service — услуга.")
    measure: str | None = Field(
        None, min_length=1, max_length=10,
        description="Знак ОКЕИ (шт, кг, ч, мес...) — или measure_code.",
    )
    measure_code: str | None = Field(
        None, pattern=r"^[0-9]{3}$", description="Код ОКЕИ: 796 — шт, 166 — кг, 356 — ч."
    )
    quantity: float = Field(gt=0, le=1_000_000)
    amount: Kopecks = Field(description="Цена за единицу с НДС, копейки.")
    amount_wo_vat: Kopecks | None = Field(
        None, description="Цена за единицу без НДС; по умолчанию вычисляется."
    )
    total_amount: Kopecks = Field(description="amount × quantity, копейки.")
    total_vat_amount: Kopecks = Field(description="НДС позиции, копейки.")
    vat_code: VatCode
    payment_type: PaymentType = Field(
        "full_prepayment", description="full_prepayment: при оплате чек 100 % предоплаты, при "
        "отгрузке — полного расчёта.",
    )


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
    return_url: str | None = Field(None, max_length=1000, description="Кнопка «вернуться в магазин».")
    notification_url: str | None = Field(None, max_length=1000)
    confirmation_token: str | None = Field(
        None, max_length=200,
        description="Токен из первого вызова. Без него счёт не выставляется, а готовится сводка.",
    )
    confirm_amount: Kopecks | None = Field(
        None, description="Для совместимости: сумма счёта, повторённая для подтверждения."
    )
    allow_duplicate: bool = Field(
        False, description="true — осознанно выставить второй такой же счёт (по умолчанию "
        "повтор в окне защиты от дублей возвращает уже выставленный)."
    )


URL_FIELDS = ("success_url", "fail_url", "return_url", "notification_url")


def check_create_order(params: CreateOrderParams, contour: Contour) -> list[Problem]:
    problems = check_basket(params.basket_items, params.amount, params.vat_amount,
                            params.currency_id)
    customer_problems, _ = check_customer(params.customer)
    problems += customer_problems
    problems += check_future(params.expiration_date, "expiration_date")
    for name in URL_FIELDS:
        value = getattr(params, name)
        if value is not None:
            problems += check_url(value, name, allow_loopback_http=contour.mode == "sandbox")
    if params.confirm_amount is not None and params.confirm_amount != params.amount:
        problems.append(Problem("confirm_amount", f"confirm_amount {params.confirm_amount} не "
                                                  f"равен сумме счёта {params.amount}"))
    return problems


def summarize_create_order(ctx: CallContext, params: CreateOrderParams) -> Summary:
    currency = params.currency_id
    customer = params.customer
    who = customer.name or "покупатель без названия"
    ids = ", ".join(part for part in (
        f"ИНН {customer.vat_number}" if customer.vat_number else "",
        f"КПП {customer.tax_registration_reason_code}" if customer.tax_registration_reason_code
        else "",
    ) if part)
    lines = []
    for index, item in enumerate(params.basket_items, start=1):
        unit = resolve_unit(item)
        unit_name = unit.measure if not isinstance(unit, str) else ""
        lines.append(
            f"{index}) {item.name} — {quantity_text(item.quantity)} {unit_name} × "
            f"{format_rub(int(item.amount), currency)} = {format_rub(int(item.total_amount), currency)}"
            f", НДС {_vat_label(item.vat_code)} {format_rub(int(item.total_vat_amount), currency)}"
        )
    _, warnings = check_customer(customer)
    text = (
        f"Выставить счёт на {format_rub(int(params.amount), currency)} "
        f"(НДС {format_rub(int(params.vat_amount), currency)}) для {who}"
        + (f" ({ids})" if ids else "") + f": «{params.description}». "
        f"Позиции: {'; '.join(lines)}. "
        f"Оплатить до {_moment(params.expiration_date)}."
    )
    data = {
        "customer": {"type": customer.type, "name": customer.name, "inn": customer.vat_number,
                     "kpp": customer.tax_registration_reason_code},
        "amount": params.amount,
        "amount_human": format_rub(int(params.amount), currency),
        "vat_amount": params.vat_amount,
        "vat_amount_human": format_rub(int(params.vat_amount), currency),
        "currency": currency,
        "description": params.description,
        "expiration_date": params.expiration_date.isoformat(),
        "positions": len(params.basket_items),
    }
    return Summary(text=text, data=data, warnings=warnings, amount=int(params.amount),
                   currency=currency)


def _moment(value: datetime) -> str:
    offset = value.strftime("%z")
    return f"{value:%d.%m.%Y %H:%M} (UTC{offset[:3]}:{offset[3:]})"


def _vat_label(code: str) -> str:
    if code == "VATNONE":
        return "без НДС"
    rate = vat_rate(code)
    return f"{rate}%" + (" сверху" if code.endswith("_ADDED") else "")


def basket_lines(items: list[BasketItemParams]) -> list[BasketLine]:
    """Checked basket items as the client sends them: units resolved, defaults computed."""
    lines = []
    for item in items:
        unit = resolve_unit(item)
        assert not isinstance(unit, str), "units are checked before execution"
        lines.append(BasketLine(
            sku=item.sku, name=item.name, measure=unit.measure, measure_code=unit.measure_code,
            quantity=quantity_decimal(item.quantity), amount=int(item.amount),
            amount_wo_vat=int(item.amount_wo_vat) if item.amount_wo_vat is not None
            else default_amount_wo_vat(item),
            total_amount=int(item.total_amount), total_vat_amount=int(item.total_vat_amount),
            vat_code=item.vat_code, type=item.type, payment_type=item.payment_type,
        ))
    return lines


def build_new_order(params: CreateOrderParams, merchant_order_id: str) -> NewOrder:
    c = params.customer
    return NewOrder(
        merchant_order_id=merchant_order_id,
        description=params.description,
        amount=int(params.amount),
        vat_amount=int(params.vat_amount),
        currency_id=params.currency_id,
        language_id=params.language_id,
        expiration_date=params.expiration_date,
        basket=basket_lines(params.basket_items),
        customer=Customer(
            type=c.type, name=c.name, vat_number=c.vat_number,
            tax_registration_reason_code=c.tax_registration_reason_code,
            registration_address=c.registration_address, email=c.email, phone=c.phone,
        ),
        urls={name: getattr(params, name) for name in URL_FIELDS if getattr(params, name)},
    )


def created_result(order: Order, warnings: list[str]) -> dict[str, Any]:
    return {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status,
        "payment_url": order.payment_url,
        "amount": str(order.amount),
        "amount_human": format_rub(order.amount, order.currency),
        "currency": order.currency,
        "warnings": warnings,
    }


def track(ctx: CallContext, order: Order) -> None:
    """Remember an order this gateway issued, for notifications and status refreshes.

    One upsert statement (INSERT ... ON CONFLICT DO UPDATE), not update_or_create's
    transaction, locked read and savepoint: this runs inside every order's execution."""
    TrackedOrder.objects.bulk_create(
        [TrackedOrder(contour=ctx.contour, order_id=order.id,
                      merchant_order_id=order.merchant_order_id, amount=order.amount,
                      currency=order.currency, status=order.status)],
        update_conflicts=True, unique_fields=["contour", "order_id"],
        update_fields=["merchant_order_id", "amount", "currency", "status", "updated_at"],
    )


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


GET_ORDER = ToolSpec(
    name="get_order",
    title="Счёт по идентификатору",
    kind="read",
    toolset="read",
    params=GetOrderParams,
    handler=get_order,
    check=check_get_order,
    description_ru=(
        "Показывает один счёт Инвойсбокс по идентификатору order_id (UUID) или по номеру "
        "магазина merchant_order_id. Если заданы оба, используется order_id. concise возвращает "
        "order_id, merchant_order_id, status, amount, amount_human, currency, created_at; "
        "detailed добавляет vat_amount, description, expiration_date, paid_at, payment_url и "
        "customer (name, vat_number). Суммы — копейки строкой. Ничего не меняет."
    ),
    summary_ru=("Счёт по order_id или merchant_order_id (order_id главнее): статус, сумма в "
                "копейках, дата. Только чтение."),
    # The shop's number, not a UUID, goes to merchant_order_id: the mapping worth showing.
    examples_ru=(Example("Покажи подробно счёт № 1042",
                         {"merchant_order_id": "1042", "response_format": "detailed"}),),
)

FIND_ORDERS = ToolSpec(
    name="find_orders",
    title="Срез по счетам",
    kind="read",
    toolset="read",
    params=FindOrdersParams,
    handler=find_orders,
    check=check_find_orders,
    description_ru=(
        "Ищет счета магазина по номеру merchant_order_id, статусам (created — не оплачен, "
        "completed — оплачен, hold, canceled, expired, draft), датам создания created_from/"
        "created_to, срока оплаты expiration_from/expiration_to и оплаты paid_from/paid_to, "
        "новые первыми. Страницы: page с 1, page_size до 50. Возвращает orders, "
        "page, page_size, total_count и truncated — признак, что показаны не все. В кратком "
        "виде данных покупателя нет. Ничего не меняет."
    ),
    summary_ru="Список счетов по номеру, статусам и датам, постранично. Только чтение.",
    examples_ru=(Example("Какие счета ещё не оплачены?", {"status": ["created"]}),),
)

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
        "токеном, после согласия человека. Суммы — копейки строкой (\"12200\" — это 122,00 ₽). "
        "amount каждой позиции — цена за единицу с НДС, total_amount — цена × количество, "
        "total_vat_amount — НДС позиции по ставке vat_code; amount счёта — сумма позиций, "
        "vat_amount — сумма их НДС. Единица: measure или measure_code (ОКЕИ). Валюта и срок "
        "оплаты (expiration_date в будущем, с часовым поясом) обязательны. Возвращает order_id, "
        "merchant_order_id, status, payment_url — ссылку на оплату, amount и warnings."
    ),
    summary_ru=(
        "Выставить счёт: два шага, первый вызов даёт сводку и confirmation_token, второй с "
        "токеном выставляет. Суммы — копейки строкой; позиции должны сходиться с суммой."
    ),
    examples_ru=(Example(
        "Выставь ООО «Ромашка», ИНН 7710044140, счёт за 3 ночи в номере по 122 рубля с НДС 22%, "
        "оплатить до конца 2099 года",
        {
            "description": "Бронирование номера, 3 ночи",
            "customer": {"type": "legal", "name": "ООО «Ромашка»", "vat_number": "7710044140"},
            "basket_items": [{"sku": "ROOM-STD", "name": "Бронирование номера", "type": "service",
                              "measure": "шт", "quantity": 3, "amount": "12200",
                              "total_amount": "36600", "total_vat_amount": "6600",
                              "vat_code": "RUS_VAT22"}],
            "amount": "36600", "vat_amount": "6600", "currency_id": "RUB",
            "expiration_date": "2099-12-31T23:59:00+03:00",
        },
    ),),
)


# -- cancel_order -----------------------------------------------------------------------------

def load_order(ctx: CallContext, order_id: UUID | str) -> Order:
    order = ctx.client.get_order(str(order_id))
    if order is None:
        raise ToolError("not_found", f"счёт {order_id} не найден",
                        hint="проверьте идентификатор или найдите счёт через find_orders")
    return order


CANCELLABLE = ("created", "hold", "draft")


class CancelOrderParams(StrictModel):
    order_id: UUID = Field(description="Неоплаченный счёт.")
    reason: str | None = Field(
        None, min_length=1, max_length=500,
        description="Причина для человека; в Инвойсбокс не передаётся.",
    )
    confirmation_token: str | None = Field(
        None, max_length=200,
        description="Токен из первого вызова. Без него счёт не отменяется, а готовится сводка.",
    )


def ensure_cancellable(order: Order) -> None:
    if order.status == "completed":
        raise ToolError("precondition_failed",
                        f"счёт {order.merchant_order_id} оплачен, отмена к нему не применяется",
                        hint="деньги возвращают через create_refund")
    if order.status not in CANCELLABLE:
        raise ToolError("precondition_failed",
                        f"счёт {order.merchant_order_id} уже в статусе {order.status}: "
                        "отменять нечего")


# An order in hold carries a pre-authorised or guarantee payment: cancelling it returns the
# money to the payer (the official docs), so it is a money operation for an operator.
HOLDS_MONEY = ("hold",)
HOLD_REASON = ("счёт в статусе hold держит деньги плательщика: отмена вернёт их, поэтому её "
               "одобряет оператор")


def summarize_cancel_order(ctx: CallContext, params: CancelOrderParams) -> Summary:
    order = load_order(ctx, params.order_id)
    ensure_cancellable(order)
    who = order.customer_name or "покупатель не указан"
    holds = order.status in HOLDS_MONEY
    text = (f"Отменить {'счёт с удержанной оплатой' if holds else 'неоплаченный счёт'} "
            f"{order.merchant_order_id} на {format_rub(order.amount, order.currency)} ({who})"
            + (": удержанные деньги вернутся плательщику" if holds else "")
            + (f". Причина: {params.reason}" if params.reason else "") + ".")
    return Summary(text=text, data={"order": order_row(order, "concise"),
                                    "reason": params.reason, "returns_held_money": holds},
                   operator_reason=HOLD_REASON if holds else "")


def cancel_order(ctx: CallContext, params: CancelOrderParams) -> dict[str, Any]:
    # The order may have been paid since the first call: check again right before DELETE.
    order = load_order(ctx, params.order_id)
    ensure_cancellable(order)
    if order.status in HOLDS_MONEY and not ctx.operator_approved:
        raise ToolError("precondition_failed",
                        f"счёт {order.merchant_order_id} с тех пор перешёл в hold: отмена "
                        "вернёт удержанные деньги, и её должен одобрить оператор; счёт не "
                        "отменён", hint="вызовите cancel_order без токена: новая сводка уйдёт "
                        "оператору на одобрение")
    order = ctx.client.cancel_order(str(params.order_id))
    return {"order_id": order.id, "merchant_order_id": order.merchant_order_id,
            "status": order.status or "canceled"}


def recover_cancel_order(ctx: CallContext, params: CancelOrderParams) -> dict[str, Any] | None:
    order = load_order(ctx, params.order_id)
    if order.status != "canceled":
        return None
    return {"order_id": order.id, "merchant_order_id": order.merchant_order_id,
            "status": order.status}


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
        "не отменяется — для него есть create_refund. reason попадает только в сводку. "
        "Возвращает order_id, merchant_order_id и status."
    ),
    summary_ru=(
        "Отменить неоплаченный счёт: два шага, первый вызов даёт сводку и confirmation_token, "
        "второй с токеном отменяет. Оплаченный не отменяется."
    ),
    examples_ru=(Example("Отмени счёт 017f038f-c78b-736d-dc00-8bce30bd0f9f, клиент передумал",
                         {"order_id": "017f038f-c78b-736d-dc00-8bce30bd0f9f",
                          "reason": "Клиент передумал"}),),
)
