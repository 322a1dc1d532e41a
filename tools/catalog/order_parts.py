"""What the order tools share (and shipments reuse): the customer and basket parameters, an
order as a result row, loading and tracking an order, a moment as a summary writes it."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any
from uuid import UUID

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from invoicebox.client import BasketLine, Customer, Order
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
    VatCode,
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


class BasketItemParams(StrictModel):
    sku: str = Field(min_length=1, max_length=36)
    name: str = Field(
        min_length=1,
        max_length=300,
        description="Название для чека: конкретное, не «Заказ №123».",
    )
    type: ItemType = Field("commodity", description="commodity — товар, service — услуга.")
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
