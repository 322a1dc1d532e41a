"""A refund's line as the assistant gives it: the gateway's short shape, or a full basket item
as the vendor's server takes it, whose extra fields are checked against the paid line."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from invoicebox.client import RefundableItem
from invoicebox.fiscal import CategoryType
from tools.errors import Problem
from tools.order_rules import quantity_decimal, resolve_unit
from tools.params import (
    ItemType,
    Kopecks,
    PaymentType,
    StrictModel,
    Tag1212,
    VatCode,
    format_rub,
    round_kopecks,
)


class RefundLineParams(StrictModel):
    sku: str = Field(min_length=1, max_length=36, description="Артикул в оплаченном счёте.")
    quantity: float = Field(gt=0, description="Сколько единиц вернуть.")
    total_amount: Kopecks = Field(description="Возврат по позиции с НДС, копейки.")
    total_vat_amount: Kopecks | None = Field(
        None, description="НДС, копейки; иначе по ставке позиции."
    )
    # A full basket item (the vendor's server's shape) is accepted: each extra field is checked
    # against the paid line (`_mismatches`), never a reason to refuse the shape. Validated,
    # bound to the token like any argument, but left out of the advertised schema: the line
    # needs none of them, and the catalog stays within its size budget
    # (tests/tools/formats/test_sizes.py).
    name: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=300)
    type: SkipJsonSchema[ItemType | Tag1212 | None] = None
    measure: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=10)
    measure_code: SkipJsonSchema[str | None] = Field(None, pattern=r"^[0-9]{3}$")
    amount: SkipJsonSchema[Kopecks | None] = None
    amount_wo_vat: SkipJsonSchema[Kopecks | None] = None
    vat_code: SkipJsonSchema[VatCode | None] = None
    payment_type: SkipJsonSchema[PaymentType | None] = None
    group_name: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=500)
    service_date: SkipJsonSchema[date | None] = None
    excise: SkipJsonSchema[Kopecks | None] = None
    category: SkipJsonSchema[str | None] = Field(None, min_length=1, max_length=20)
    category_type: SkipJsonSchema[CategoryType | None] = None


def _folded(value: object) -> str:
    return " ".join(str(value).split()).casefold() if value is not None else ""


def mismatches(
    line: RefundLineParams, item: RefundableItem, where: str, total: int, vat: int, currency: str
) -> list[Problem]:
    """The extra fields of a line given as a full basket item, against the paid line. The
    refund repeats the sale's line: payment_type is the sale's and is not compared."""
    problems = []
    for name in ("name", "type", "vat_code", "category", "category_type"):
        given, paid = getattr(line, name), getattr(item, name)
        if given is not None and _folded(given) != _folded(paid):
            shown = f"{name} = «{paid}»" if paid is not None else f"нет {name}"
            problems.append(
                Problem(f"{where}.{name}", f"в оплаченном счёте у позиции {item.sku} {shown}")
            )
    if line.excise is not None and (item.excise is None or int(line.excise) > item.excise):
        paid_excise = (
            "акциза нет" if item.excise is None else f"акциз {format_rub(item.excise, currency)}"
        )
        problems.append(
            Problem(f"{where}.excise", f"в оплаченном счёте у позиции {item.sku} {paid_excise}")
        )
    if line.measure is not None or line.measure_code is not None:
        unit = resolve_unit(line)
        if isinstance(unit, str) or unit.measure_code != item.measure_code:
            problems.append(
                Problem(
                    f"{where}.measure",
                    f"в оплаченном счёте у позиции "
                    f"{item.sku} единица {item.measure} "
                    f"({item.measure_code})",
                )
            )
    quantity = quantity_decimal(line.quantity)
    for name, expected in (
        ("amount", Decimal(total) / quantity),
        ("amount_wo_vat", Decimal(total - vat) / quantity),
    ):
        given = getattr(line, name)
        if given is not None and abs(Decimal(int(given)) - expected) > 1:
            problems.append(
                Problem(
                    f"{where}.{name}",
                    f"с возвратом {format_rub(total, currency)}"
                    f" за {quantity} ед. цена — "
                    f"{format_rub(round_kopecks(expected), currency)}",
                )
            )
    return problems
