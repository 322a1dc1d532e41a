"""What the order tools share (and shipments reuse): the customer and basket parameters, an
order as a result row, loading and tracking an order, a moment as a summary writes it."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any, Self
from uuid import UUID

from pydantic import Field, model_validator
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from invoicebox.client import BasketLine, Customer, Order
from invoicebox.fiscal import EXCISABLE, HONEST_SIGN, HONEST_SIGN_GROUPS, TAG_1212, CategoryType
from tools.errors import ToolError
from tools.models import TrackedOrder
from tools.money import kopecks
from tools.order_rules import default_amount_wo_vat, quantity_decimal, resolve_unit
from tools.params import (
    CustomerType,
    Inn,
    ItemType,
    Kopecks,
    Kpp,
    PaymentType,
    StrictModel,
    Tag1212,
    VatCode,
    format_rub,
    vat_rate,
)
from tools.spec import CallContext


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


def customer_of(c: CustomerParams) -> Customer:
    return Customer(
        type=c.type,
        name=c.name,
        vat_number=c.vat_number,
        tax_registration_reason_code=c.tax_registration_reason_code,
        registration_address=c.registration_address,
        email=c.email,
        phone=c.phone,
    )


def _mark_problem(message: str) -> PydanticCustomError:
    return PydanticCustomError("item_marks", message)


class BasketItemParams(StrictModel):
    sku: str = Field(min_length=1, max_length=36)
    name: str = Field(
        min_length=1,
        max_length=300,
        description="Название для чека: конкретное, не «Заказ №123».",
    )
    # A tag-1212 code is accepted and sent as given, not offered (the size budget).
    type: ItemType | SkipJsonSchema[Tag1212] = Field(
        "commodity", description="commodity — товар, service — услуга."
    )
    measure: str | None = Field(
        None,
        min_length=1,
        max_length=10,
        description="Знак ОКЕИ (шт, кг, ч, мес...) — или measure_code.",
    )
    measure_code: str | None = Field(
        None, pattern=r"^[0-9]{3}$", description="Код ОКЕИ: 796 — шт, 166 — кг, 356 — ч."
    )
    quantity: float = Field(gt=0)
    amount: Kopecks = Field(description="Цена за единицу с НДС, копейки.")
    amount_wo_vat: Kopecks | None = Field(
        None, description="Цена единицы без НДС; по умолчанию вычисляется."
    )
    total_amount: Kopecks = Field(description="amount × quantity, копейки.")
    total_vat_amount: Kopecks = Field(description="НДС позиции, копейки.")
    vat_code: VatCode
    payment_type: PaymentType = Field(
        "full_prepayment",
        description="full_prepayment: чек предоплаты при оплате, полного расчёта при отгрузке.",
    )
    # The vendor's server's fields (docs BasketItem groupName, serviceDate), sent on the line
    # when given; accepted for prompts written for it, not offered (like confirm_amount,
    # tools/formats/schema.py HIDDEN): the catalog's size budget (tests/tools/formats).
    group_name: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=500)
    service_date: SkipJsonSchema[date | None] = None
    # Excise in the line (docs `excise`) and its marking group (`category`, `categoryType`):
    # accepted and sent, not offered; docs/invoicebox-api.md, "Capabilities".
    excise: SkipJsonSchema[Kopecks | None] = None
    category: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=20)
    category_type: SkipJsonSchema[CategoryType | None] = None

    @model_validator(mode="after")
    def _marks(self) -> Self:
        if self.excise is not None:
            if self.type not in EXCISABLE:
                raise _mark_problem(
                    "excise — только у подакцизного товара: type 2, 30 или 31 (тег 1212)"
                )
            if int(self.excise) > int(self.total_amount):
                raise _mark_problem("excise больше суммы позиции total_amount")
        if self.category_type is not None and self.category is None:
            raise _mark_problem("category_type без category: укажите товарную группу")
        if self.category is not None:
            if self.category_type is None:
                # The docs make categoryType required with a category; Честный знак's own
                # group names say which map they belong to.
                if self.category not in HONEST_SIGN_GROUPS:
                    raise _mark_problem(
                        "category не из справочника Честного знака: для своей карты "
                        "категорий магазина укажите category_type: merchantHonestSignMap"
                    )
                self.category_type = HONEST_SIGN
            elif self.category_type == HONEST_SIGN and self.category not in HONEST_SIGN_GROUPS:
                raise _mark_problem(
                    "category не из справочника Честного знака: "
                    + ", ".join(sorted(HONEST_SIGN_GROUPS))
                )
        return self


def marks_text(item: BasketItemParams, currency: str) -> str:
    """What a line carries beyond its sums, as the summary names it: ", признак 33 (ТМ), акциз
    10,00 ₽, маркировка milk (honestSign)"; empty for a plain line."""
    parts = []
    if isinstance(item.type, int):
        parts.append(f"признак предмета расчёта {item.type} ({TAG_1212[item.type]})")
    if item.excise is not None:
        parts.append(f"акциз {format_rub(int(item.excise), currency)}")
    if item.category is not None:
        parts.append(f"маркировка {item.category} ({item.category_type})")
    return "".join(f", {part}" for part in parts)


def basket_lines(items: list[BasketItemParams]) -> list[BasketLine]:
    """Checked basket items as the client sends them: units resolved, defaults computed."""
    lines = []
    for item in items:
        unit = resolve_unit(item)
        assert not isinstance(unit, str), "units are checked before execution"
        lines.append(
            BasketLine(
                sku=item.sku,
                name=item.name,
                measure=unit.measure,
                measure_code=unit.measure_code,
                quantity=quantity_decimal(item.quantity),
                amount=int(item.amount),
                amount_wo_vat=int(item.amount_wo_vat)
                if item.amount_wo_vat is not None
                else default_amount_wo_vat(item),
                total_amount=int(item.total_amount),
                total_vat_amount=int(item.total_vat_amount),
                vat_code=item.vat_code,
                type=item.type,
                payment_type=item.payment_type,
                group_name=item.group_name,
                service_date=item.service_date,
                excise=int(item.excise) if item.excise is not None else None,
                category=item.category,
                category_type=item.category_type,
            )
        )
    return lines


def vat_label(code: str) -> str:
    if code == "VATNONE":
        return "без НДС"
    rate = vat_rate(code)
    return f"{rate}%" + (" сверху" if code.endswith("_ADDED") else "")


def moment(value: datetime) -> str:
    """A deadline as a summary shows it: "31.12.2099 23:59 (UTC+03:00)"."""
    offset = value.strftime("%z")
    return f"{value:%d.%m.%Y %H:%M} (UTC{offset[:3]}:{offset[3:]})"


def order_row(order: Order, response_format: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "order_id": order.id,
        "merchant_order_id": order.merchant_order_id,
        "status": order.status,
        **kopecks(order.currency, amount=order.amount),
        "currency": order.currency,
        "created_at": order.created_at,
    }
    if response_format == "detailed":
        row.update(
            {
                **kopecks(order.currency, vat_amount=order.vat_amount),
                "description": order.description,
                "expiration_date": order.expiration_date,
                "paid_at": order.paid_at,
                "payment_url": order.payment_url,
                "customer": {"name": order.customer_name, "vat_number": order.customer_vat_number},
            }
        )
    return row


def load_order(ctx: CallContext, order_id: UUID | str) -> Order:
    order = ctx.client.get_order(str(order_id))
    if order is None:
        raise ToolError(
            "not_found",
            f"счёт {order_id} не найден",
            hint="проверьте идентификатор или найдите счёт через find_orders",
        )
    return order


def track(ctx: CallContext, order: Order) -> None:
    """Remember an order this gateway issued, for notifications and status refreshes.

    One upsert statement (INSERT ... ON CONFLICT DO UPDATE), not update_or_create's
    transaction, locked read and savepoint: this runs inside every order's execution."""
    TrackedOrder.objects.bulk_create(
        [
            TrackedOrder(
                contour=ctx.contour,
                order_id=order.id,
                merchant_order_id=order.merchant_order_id,
                amount=order.amount,
                currency=order.currency,
                status=order.status,
            )
        ],
        update_conflicts=True,
        unique_fields=["contour", "order_id"],
        update_fields=["merchant_order_id", "amount", "currency", "status", "updated_at"],
    )
